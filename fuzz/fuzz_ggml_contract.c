/*
 * fuzz_ggml_contract.c — contract fuzzing of ggml's CPU flash attention
 * itself (not of the adapter): ggml_flash_attn_ext built and computed
 * through ggml's public API, loaded with dlopen from the packaged
 * libraries, with inputs inside and just outside what ggml.h documents
 * (q [Dk, T, Hq, n3], k [Dk, n_kv, Hkv, n3], v [Dv, n_kv, Hkv, n3], an f16
 * mask [n_kv, T, m2, m3] with Hq % m2 == 0, n3 % m3 == 0).  Built when ggml
 * is (make engines); its limits are fuzz_ggml_contract.options.
 *
 * Verdicts.  A GGML_ASSERT / GGML_ABORT is ggml refusing by design: the
 * abort callback longjmps back here (graph construction and planning run on
 * this thread; compute runs first with one thread, which is this thread)
 * and the abort is counted, not reported.  Findings are what ggml does not
 * refuse, judged by the harness's own parts: every buffer ggml gets is a
 * guarded mapping (judge/guard.c: ggml is not instrumented, so an access
 * out of bounds shows on its PROT_NONE pages as input-bounds or
 * scratch-bounds), an output of an input inside the contract is compared
 * with the harness's reference (judge/ref.c, fed the op's own mask) within
 * the error model of ggml's rounding (judge/compare.c): differential; a
 * compute that fails inside the contract: bad-input; a hang: -timeout.
 * What the reference cannot express (K and V head sizes or head counts
 * that differ, quantized caches, NaN or infinite mask entries) is computed
 * under guard but not compared, and counted as such (docs/engines.md).
 * The counts print at exit.
 *
 * This file is the target's entry points, its counters and the order of
 * one input's phases (the abort callback's longjmp lands here); the rooms
 * are under fuzz/ggml/ (the case: ggml_case.h; running it on ggml:
 * ggml_run.h; the verdicts: ggml_judge.h) and what it shares with
 * fuzz_ort_contract under fuzz/contract/.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engines/ggml/ggml_branches.h"
#include "../harness/judge/guard.h"
#include "../harness/judge/reach.h"
#include "contract/fz_reach.h"
#include "contract/fz_tally.h"
#include "ggml/ggml_case.h"
#include "ggml/ggml_judge.h"
#include "ggml/ggml_run.h"

/* ---- verdict counters, printed at exit ---- */
static struct {
    unsigned long execs, aborts_build, aborts_plan, aborts_compute, computed, checked,
        accepted_outside, skipped, unjudgeable, known_wrong;
    fz_tally msgs;   /* ggml's abort messages, from its source path on */
} stats;

/* Counts abort message m from "ggml/src/" on (the file and line tell the
 * asserts apart; what precedes is the build's own path). */
static void count_msg(const char *m) {
    const char *s = strstr(m, "ggml/src/");
    fz_tally_exact(&stats.msgs, s ? s : m);
}

static void print_stats(void) {
    fprintf(stderr,
            "fuzz_ggml_contract: %lu inputs: %lu GGML_ASSERT/ABORT at graph build, %lu at plan, "
            "%lu at compute (clean refusals); %lu computed (%lu checked against the reference, "
            "%lu inside the contract but outside what the reference expresses, %lu outside the "
            "contract accepted without a fault, %lu not judged: a wrong result already "
            "written up), %lu skipped (triaged classes)\n",
            stats.execs, stats.aborts_build, stats.aborts_plan, stats.aborts_compute,
            stats.computed, stats.checked, stats.unjudgeable, stats.accepted_outside,
            stats.known_wrong, stats.skipped);
    fz_tally_print(NULL, &stats.msgs);
}

/* ---- the abort callback: longjmp on this thread, a crash elsewhere ---- */
static _Thread_local int armed;
static jmp_buf on_abort;
static char abort_text[512];

static void fuzz_on_abort(const char *m) {
    snprintf(abort_text, sizeof abort_text, "%s", m);
    if (armed) {
        armed = 0;
        longjmp(on_abort, 1);
    }
    /* a GGML_ASSERT on a worker thread after the one-thread run passed:
     * ggml refused late and aborts (a finding to triage) */
    fprintf(stderr, "fuzz_ggml_contract: GGML abort outside the caught phases: %s\n", m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ggc_load();
    ggc_lib->base.ggml_set_abort_callback(fuzz_on_abort);
    guard_install_fault_handler();
    /* ggml's branches at zero: the layouts are the adapter's, not ggml's */
    for (int i = 0; i < GGP_COUNT; i++)
        if (i != P_UNIFIED && i != P_STREAMS) reach_enter("path", &ggp_names[i], 1);
    atexit(print_stats);
    return 0;
}

/* A GGML_ASSERT caught by longjmp leaves what ggml allocated on its way
 * there (context memory freed below, a threadpool's bookkeeping) behind by
 * design: the fuzzer counts those aborts, not leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libggml\nleak:libomp.so\n"; }

/* ---- one input ---- */
static ggc_run R;              /* static: valid after longjmp */
static volatile int phase;     /* 0 build, 1 plan, 2 compute */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_rd r = {data, size};
    memset(&R, 0, sizeof R);
    ggc_decode(&r, &R.c);
    stats.execs++;
    reach_exec();
    static int on[GGP_COUNT];   /* the branches this input's computes took (static: the
                                   abort's longjmp returns here) */
    memset(on, 0, sizeof on);
    const agg_cpu *cpu = &ggc_lib->var[R.c.variant].cpu;
    if (getenv("FUZZ_GGML_VERBOSE")) ggc_describe(&R.c);
    if (ggc_skipped(&R.c)) {
        stats.skipped++;
        return 0;
    }
    if (setjmp(on_abort)) {
        count_msg(abort_text);
        phase == 0 ? stats.aborts_build++ : phase == 1 ? stats.aborts_plan++ : stats.aborts_compute++;
        ggc_teardown(&R);
        fz_reach_flush("fuzz_ggml_contract", "path", ggp_names, on, GGP_COUNT);
        return 0;
    }
    phase = 0, armed = 1;
    ggc_build(&R);
    phase = 1;
    struct ggml_cplan cp = cpu->ggml_graph_plan(R.gf, 1, NULL);
    armed = 0;
    ggc_place(&R);
    cp.work_data =
        (uint8_t *)ggc_buffer(&R.buf[B_WORK1], "work", cp.work_size, R.c.guard_front, 0);
    phase = 2, armed = 1;
    enum ggml_status st = cpu->ggml_graph_compute(R.gf, &cp);
    armed = 0;
    stats.computed++;
    if (st == GGML_STATUS_SUCCESS) ggc_op_branches(&R.c, 1, on);
    char why[256];
    int exact, inside = ggc_in_contract(&R.c, &exact, why, sizeof why);
    const int known = exact && ggc_known_wrong(&R.c) != NULL;
    if (known) {
        exact = 0;   /* computed under the guards, the output not judged */
        stats.known_wrong++;
    }
    const size_t ob = ggc_more.ggml_nbytes(R.t[B_OUT]);
    float *out1 = malloc(ob ? ob : 1);
    memcpy(out1, R.t[B_OUT]->data, ob);
    ggc_refused_inside(&R.c, st, inside, "1-thread");
    if (exact) ggc_judge(&R, out1, "1-thread");
    if (R.c.threads > 1) {
        phase = 1, armed = 1;
        struct ggml_cplan cpn = cpu->ggml_graph_plan(R.gf, R.c.threads, NULL);
        armed = 0;
        cpn.work_data =
            (uint8_t *)ggc_buffer(&R.buf[B_WORKN], "work", cpn.work_size, R.c.guard_front, 0);
        st = cpu->ggml_graph_compute(R.gf, &cpn);   /* a GGML_ASSERT here aborts: a finding */
        if (st == GGML_STATUS_SUCCESS) ggc_op_branches(&R.c, R.c.threads, on);
        ggc_refused_inside(&R.c, st, inside, "multi-thread");
        /* the same as the one-thread run, or within the range on its own */
        if (exact && memcmp(out1, R.t[B_OUT]->data, ob))
            ggc_judge(&R, R.t[B_OUT]->data, "multi-thread");
    }
    if (!inside) stats.accepted_outside++;
    if (exact) stats.checked++;
    else if (inside && !known) stats.unjudgeable++;
    free(out1);
    ggc_teardown(&R);
    fz_reach_flush("fuzz_ggml_contract", "path", ggp_names, on, GGP_COUNT);
    return 0;
}
