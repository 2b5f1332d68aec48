/*
 * fuzz_plan.c — the fast builder/sizing target: bytes -> case -> builder +
 * plan, judged by the mixed-heads, bad-input and sizing oracles (no
 * kernels run, so this is the target that finds the model-wide head-count
 * bug in seconds).  One engine-neutral entry point; libFuzzer links it
 * directly, fuzz/replay.c replays corpora through it.
 *
 * The case's own `expect` is dropped: a mutated refusal case keeps an expect
 * that its mutated-away defect no longer deserves, and the defect model in
 * oracles.c judges every status the engine returns anyway.
 */
#include "../harness/case/case.h"
#include "../harness/case/case_bytes.h"
#include "../harness/judge/oracles.h"
#include "fuzz_common.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


FUZZ_DEFINE_INITIALIZE

FUZZ_DEFINE_LSAN_SUPPRESSIONS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    case_spec c;
    case_decode(data, size, &c);
    c.expect = AG_R_NONE;
    if (fuzz_common_skip(&c)) return 0;
    finding f;
    if (check_case(&c, CHECK_PLAN, &f) != ORACLE_NONE) oracle_fire(&f);
    if (f.skipped[0]) engine_host_count_skip(f.skipped);
    return 0;
}
