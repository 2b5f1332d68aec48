/*
 * ort_stats.h — owns fuzz_ort_contract's counters: what every input came
 * to (not run, refused at which stage, ran, judged, not judged and why),
 * printed at exit (ort_stats.c).
 */
#ifndef ATTNGUARD_ORT_STATS_H
#define ATTNGUARD_ORT_STATS_H

#include "../contract/fz_tally.h"

typedef struct ortc_stats {
    unsigned long execs, over_cap, refused_build, refused_session, refused_run, refused_inside,
        ran, ran_outside, judged, elems, elems_unjudged, present_checked, unjudged_out,
        sess_made, sess_hits, resource, skipped, big31, big32;
    fz_tally refusals, inside_refusals, unjudged;
} ortc_stats;

extern ortc_stats ortc_st;

/* Prints ortc_st to stderr (the target registers it with atexit). */
void ortc_print_stats(void);

#endif
