/*
 * fuzz_plan.c — the fast builder/sizing target: bytes -> case -> builder +
 * plan, judged by the mixed-heads, bad-input and sizing oracles (no
 * kernels run, so this is the target that finds the model-wide head-count
 * bug in seconds).  One engine-neutral entry point; libFuzzer links it
 * directly, fuzz/replay.c replays corpora through it.
 *
 * The case's own `expect` is dropped: a mutated refusal case keeps an expect
 * that its mutated-away defect no longer deserves, and the bad-input
 * oracle (harness/judge/oracles.c) judges every status the engine returns
 * by the defect model (harness/case/validity.c) anyway.
 */
#include "../harness/case/case.h"
#include "../harness/case/case_bytes.h"
#include "../harness/judge/oracles.h"
#include "fuzz_common.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_common_init("fuzz_plan");
    return 0;
}

const char *__lsan_default_suppressions(void) { return FUZZ_LSAN_SUPPRESSIONS; }
const char *__asan_default_options(void) { return FUZZ_ASAN_OPTIONS; }

/* No kernels run here: the mutator may keep long requests (2^30 MACs,
 * 1 in 16 at 2^34; the overflow checks are reached through huge head
 * counts and dims, which the budget does not shrink).  The planner's
 * time grows with the work items, so not beyond. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed) {
    return fuzz_case_mutate(data, size, max, seed, (uint64_t)1 << 30);
}
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                 uint8_t *out, size_t max, unsigned int seed) {
    return fuzz_case_cross(d1, s1, d2, s2, out, max, seed, (uint64_t)1 << 30);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    case_spec c;
    case_decode(data, size, &c);
    c.expect = AG_R_NONE;
    if (fuzz_common_skip(&c)) return 0;
    finding f;
    check_report rep;
    if (check_case_report(&c, CHECK_PLAN, &f, &rep) != ORACLE_NONE) oracle_fire(&f);
    if (f.skipped[0]) engine_host_count_skip(f.skipped);
    reach_count(&c, &rep, engine_host_current(NULL, 0), REACH_PLAN_ONLY);
    reach_flush_every(getenv("ATTNGUARD_REACH"), "fuzz_plan", 2.0);
    return 0;
}
