/*
 * fuzz_attention.c — the full target: bytes -> case -> builder, plan,
 * guarded kernel runs of every layer against the double reference
 * (scratch-bounds, differential), plus the metamorphic runs (split, threads,
 * permuted blocks, bitwise rerun) for about one input in eight, chosen by
 * the case's seed so that a crash file reproduces the same checks.
 *
 * Runs no kernels for inputs whose cost would be absurd (they still get the
 * builder/plan oracles): the
 * estimate (query tokens x keys x query heads x head_dim, summed over
 * requests and layers, plus the KV cache size) is computed with saturating
 * arithmetic, so no product can overflow into a small number.  The case's
 * `expect` is dropped for the reason given in fuzz_plan.c.
 */
#include "../harness/case/case.h"
#include "../harness/case/case_bytes.h"
#include "../harness/judge/oracles.h"
#include "fuzz_common.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Multiply-adds (engine + reference) above which no kernel runs.  Under
 * libFuzzer the small default keeps exec/s high (mutants of a large corpus
 * case would otherwise dominate the run); the replay driver raises it through
 * ATTN_FUZZ_MAX_MACS so that `make regress` runs the large shipped shapes
 * (Laguna decode at 4097 keys) through every oracle. */
#define ATT_MAX_MACS_DEFAULT ((uint64_t)4 << 20)
/* K (or V) cache elements above which no kernel runs: a quarter of the
 * multiply-add budget, within [2^18, 2^24].  Every run writes the whole
 * cache through write_kv and the generator fills it, so a long context
 * behind a few query rows cost the fuzzer more than its attention did. */
#define ATT_MAX_CACHE_LO ((uint64_t)1 << 18)
#define ATT_MAX_CACHE_HI ((uint64_t)1 << 24)
#define ATT_MAX_THREADS 8                      /* more only multiplies barrier cost */

static uint64_t g_max_macs = ATT_MAX_MACS_DEFAULT;

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t at_least_1(int64_t v) { return v > 0 ? (uint64_t)v : 1; }

/* Multiply-adds of the case (case_cost) and the size of its caches. */
static int too_costly(const case_spec *c) {
    if (c->threads > ATT_MAX_THREADS) return 1;
    uint64_t keys = 0;
    for (int32_t r = 0; r < c->num_reqs && r < CASE_MAX_REQS; r++)
        keys = sat_add(keys, sat_add(at_least_1(c->kv_len[r]), at_least_1(c->block_size)));
    uint64_t cache = sat_mul(sat_mul(keys, at_least_1(c->num_kv_heads)), at_least_1(c->head_dim));
    uint64_t cache_max = g_max_macs / 4;
    if (cache_max < ATT_MAX_CACHE_LO) cache_max = ATT_MAX_CACHE_LO;
    if (cache_max > ATT_MAX_CACHE_HI) cache_max = ATT_MAX_CACHE_HI;
    return case_cost(c) > g_max_macs || cache > cache_max;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_common_init();
    const char *e = getenv("ATTN_FUZZ_MAX_MACS");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0) g_max_macs = v;
    }
    return 0;
}

FUZZ_DEFINE_LSAN_SUPPRESSIONS

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    case_spec c;
    case_decode(data, size, &c);
    c.expect = AG_R_NONE;
    if (fuzz_common_skip(&c)) return 0;
    /* Too costly to run: still judged by the builder/plan oracles. */
    unsigned what = CHECK_PLAN;
    if (!too_costly(&c)) {
        what |= CHECK_RUN;
        if (c.seed % 8 == 7) what |= CHECK_INVARIANCE;
    }
    finding f;
    if (check_case(&c, what, &f) != ORACLE_NONE) oracle_fire(&f);
    if (f.skipped[0]) engine_host_count_skip(f.skipped);
    return 0;
}
