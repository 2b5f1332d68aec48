/*
 * fuzz_attention.c — the full target: bytes -> case -> builder, plan,
 * guarded kernel runs of every layer against the fp64 reference, in two
 * tiers.
 *
 *   every input   the plan oracles (mixed heads, bad input, sizing), then,
 *                 when it is cheap enough, one guarded run of each layer on
 *                 one engine variant chosen by its seed (scratch bounds,
 *                 input bounds, internal buffers, differential, finite
 *                 output);
 *   the deep tier every variant as the primary path and the metamorphic
 *                 runs (split off/on/fixed, another thread count, permuted
 *                 blocks, a bitwise rerun), and a larger cost cap: for one
 *                 input in FUZZ_DEEP_EVERY chosen by a hash of its bytes (so
 *                 a finding reproduces from the file alone), and for every
 *                 input that reached coverage no earlier one did (up to
 *                 FUZZ_NOVEL_MACS: the deep cap is the hash's to give).
 *
 * One input in FUZZ_PERTURB_EVERY (by its hash) runs with its threads
 * delayed at the engine's synchronisation points, and every run is
 * watched: one that outlasts the bound for its size is the hang oracle.
 *
 * The custom mutator (fuzz_common.h, harness/case/mutate.c) keeps most
 * inputs under FUZZ_CHEAP_MACS.  Costs are case_cost's saturating
 * products, so no size can wrap into a small number.  The case's own
 * `expect` is dropped: the defect model judges every status.
 */
#include "../harness/case/case.h"
#include "../harness/case/case_bytes.h"
#include "../harness/judge/oracles.h"
#include "fuzz_common.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Multiply-adds (one run of every layer) of the cheap tier's run, and of
 * the deep tier.  The replay driver raises the deep cap through
 * ATTN_FUZZ_MAX_MACS and makes every input deep (ATTN_FUZZ_DEEP=1), so
 * that `make regress` runs the large shipped shapes through every oracle. */
#define FUZZ_CHEAP_MACS ((uint64_t)1 << 18)
#define FUZZ_DEEP_MACS_DEFAULT ((uint64_t)4 << 20)
#define FUZZ_NOVEL_MACS ((uint64_t)1 << 20)
#define FUZZ_DEEP_EVERY 8
#define FUZZ_PERTURB_EVERY 4
/* K (or V) cache elements above which no kernel runs: a quarter of the
 * multiply-add cap, within [2^16, 2^24].  Every run writes the whole cache
 * through write_kv and the generator fills it, so a long context behind a
 * few query rows cost more than its attention did. */
#define FUZZ_CACHE_LO ((uint64_t)1 << 16)
#define FUZZ_CACHE_HI ((uint64_t)1 << 24)
/* Threads above which a case runs only in the deep tier: each run wakes
 * that many workers (more threads than cores is right for correctness,
 * and slow). */
#define FUZZ_CHEAP_THREADS 8
/* Threads above which no case runs at all (its plan oracles still do):
 * the counts a sizing can depend on are drawn from 1 to 64, and beyond
 * that an engine that spins at its barriers (ggml's pool) takes minutes
 * on two cores for nothing a smaller count would not show. */
#define FUZZ_MAX_RUN_THREADS 64

static uint64_t g_deep_macs = FUZZ_DEEP_MACS_DEFAULT;
static int g_always_deep;

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t at_least_1(int64_t v) { return v > 0 ? (uint64_t)v : 1; }

/* 1 when the case fits the cap: its multiply-adds and its cache size. */
static int fits(const case_spec *c, uint64_t macs) {
    uint64_t keys = 0;
    for (int32_t r = 0; r < c->num_reqs && r < CASE_MAX_REQS; r++)
        keys = sat_add(keys, sat_add(at_least_1(c->kv_len[r]), at_least_1(c->block_size)));
    uint64_t cache = sat_mul(sat_mul(keys, at_least_1(c->num_kv_heads)), at_least_1(c->head_dim));
    uint64_t cache_max = macs / 4;
    if (cache_max < FUZZ_CACHE_LO) cache_max = FUZZ_CACHE_LO;
    if (cache_max > FUZZ_CACHE_HI) cache_max = FUZZ_CACHE_HI;
    return case_cost(c) <= macs && cache <= cache_max;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_common_init("fuzz_attention");
    const char *e = getenv("ATTN_FUZZ_MAX_MACS");
    if (e && *e) {
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == '\0' && v > 0) g_deep_macs = v;
    }
    g_always_deep = getenv("ATTN_FUZZ_DEEP") && atoi(getenv("ATTN_FUZZ_DEEP")) > 0;
    return 0;
}

const char *__lsan_default_suppressions(void) { return FUZZ_LSAN_SUPPRESSIONS; }
const char *__asan_default_options(void) { return FUZZ_ASAN_OPTIONS; }

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed) {
    return fuzz_case_mutate(data, size, max, seed, FUZZ_CHEAP_MACS);
}
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                 uint8_t *out, size_t max, unsigned int seed) {
    return fuzz_case_cross(d1, s1, d2, s2, out, max, seed, FUZZ_CHEAP_MACS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    case_spec c;
    case_decode(data, size, &c);
    c.expect = AG_R_NONE;
    if (fuzz_common_skip(&c)) return 0;
    const engine_host *E = engine_host_current(NULL, 0);
    const int cheap = fits(&c, FUZZ_CHEAP_MACS) && c.threads <= FUZZ_CHEAP_THREADS;
    const uint64_t h = fuzz_hash(data, size);
    int deep = g_always_deep || h % FUZZ_DEEP_EVERY == 0;
    /* one input in FUZZ_PERTURB_EVERY runs with its threads delayed at the
     * engine's synchronisation points (judge/schedule.c) */
    const unsigned perturb = (h >> 16) % FUZZ_PERTURB_EVERY == 0 ? CHECK_PERTURB : 0;
    finding f;
    check_report rep;
    unsigned reach = perturb && c.threads > 1 ? REACH_PERTURBED : 0;
    /* the cheap tier: skipped when the deep tier is already decided */
    if (!deep) {
        const unsigned what = CHECK_PLAN | (cheap ? CHECK_RUN | perturb : 0);
        /* what the engine's own plan may cost: the same cap */
        check_set_run_budget(FUZZ_CHEAP_MACS);
        if (check_case_report(&c, what, &f, &rep) != ORACLE_NONE) oracle_fire(&f);
        reach |= cheap ? REACH_RAN : REACH_PLAN_ONLY;
        deep = novelty_new_coverage();
    }
    if (deep) {
        /* novelty alone does not lift the cap beyond FUZZ_NOVEL_MACS: early
         * in a session most inputs are novel, and a costly one would make
         * every one of them pay the deep tier's ten runs */
        const int by_hash = g_always_deep || h % FUZZ_DEEP_EVERY == 0;
        const int runs = fits(&c, by_hash ? g_deep_macs : FUZZ_NOVEL_MACS) &&
                         c.threads <= FUZZ_MAX_RUN_THREADS;
        /* a novel input too costly to run has had its plan oracles above */
        if (runs || by_hash) {
            check_set_run_budget(by_hash ? g_deep_macs : FUZZ_NOVEL_MACS);
            const unsigned what = CHECK_PLAN | (runs ? CHECK_RUN | CHECK_EVERY_VARIANT |
                                                           CHECK_INVARIANCE | perturb
                                                     : 0);
            if (check_case_report(&c, what, &f, &rep) != ORACLE_NONE) oracle_fire(&f);
            reach |= runs ? REACH_RAN | REACH_DEEP : REACH_PLAN_ONLY;
        }
    }
    /* every configuration past the engine's own budget: the plan alone */
    if (rep.over_budget && rep.runs == 0)
        reach = (reach & ~(unsigned)(REACH_RAN | REACH_DEEP)) | REACH_PLAN_ONLY;
    if (f.skipped[0]) engine_host_count_skip(f.skipped);
    reach_count(&c, &rep, E, reach);
    reach_flush_every(getenv("ATTNGUARD_REACH"), "fuzz_attention", 2.0);
    return 0;
}
