/*
 * ort_stats.c — fuzz_ort_contract's counters and their summary at exit
 * (ort_stats.h).
 */
#include <stdio.h>

#include "ort_stats.h"

ortc_stats ortc_st;

void ortc_print_stats(void) {
    const ortc_stats *s = &ortc_st;
    fprintf(stderr,
            "fuzz_ort_contract: %lu inputs: %lu over the memory cap (not run); refusals: %lu at "
            "graph build, %lu at session creation, %lu at Run (%lu of them inside the contract); "
            "%lu ran (%lu judged against the reference: %lu elements compared, %lu left open "
            "(padding or fully masked rows); %lu present outputs checked as copies; %lu inside "
            "the contract but not judged; %lu outside the contract accepted without a fault); "
            "%lu allocator refusals; %lu skipped (triaged classes); sessions: %lu made, %lu reused\n",
            s->execs, s->over_cap, s->refused_build, s->refused_session, s->refused_run,
            s->refused_inside, s->ran, s->judged, s->elems, s->elems_unjudged, s->present_checked,
            s->unjudged_out, s->ran_outside, s->resource, s->skipped, s->sess_made, s->sess_hits);
    fprintf(stderr, "  ran with B x N x S x T >= 2^31: %lu (>= 2^32: %lu)\n", s->big31, s->big32);
    fz_tally_print("refusals", &s->refusals);
    fz_tally_print("refusals of inputs inside the contract", &s->inside_refusals);
    fz_tally_print("not judged (why)", &s->unjudged);
}
