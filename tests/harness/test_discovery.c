/*
 * test_discovery.c — the parts that make the fuzzer find things from
 * nothing: the structure-aware mutator (harness/case/mutate.c), the reach
 * table (judge/reach.c), the schedule's perturbation and watchdog
 * (judge/schedule.c) and the allocator that guards an engine's internal
 * buffers (judge/guard_alloc.c).
 *
 * Covers: mutated cases always encode back to what they decode to, stay
 * under the cost budget (but for the one in sixteen allowed sixteen times
 * it), are mostly valid and sometimes invalid, and reach every feature the
 * reach table expects within a few thousand edits from the default case;
 * cross-over mixes two cases; the reach table counts what a case holds and
 * writes JSON, the capability skips by capability among it; the watchdog fires on an overdue run and not on a finished
 * one; the guarded allocator catches a write past a block and judges a run
 * that asked for less than it needs.
 */
#include <criterion/criterion.h>

#include "../../harness/case/case_bytes.h"
#include "../../harness/case/mutate.h"
#include "../../harness/case/rng.h"
#include "../../harness/case/validity.h"
#include "../../harness/judge/guard_alloc.h"
#include "../../harness/judge/reach.h"
#include "../../harness/judge/schedule.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ag_caps k_caps = {.max_heads = 1024, .max_head_dim = 1024, .max_block_size = 4096,
                               .max_threads = 256, .max_seq_len = 1 << 28, .max_splits = 64};
static const ag_variant k_vars[3] = {{"isa=a tune=x", AG_VARIANT_DEFAULT, NULL},
                                     {"isa=b", AG_VARIANT_KERNELS, NULL},
                                     {"tune=y", AG_VARIANT_TUNING, NULL}};

/* A written-out reach table row's count, or -1 when absent. */
static long row_count(const char *json, const char *row) {
    char key[96];
    snprintf(key, sizeof key, "\"%s\": ", row);
    const char *p = strstr(json, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

Test(discovery, mutator_stays_encodable_cheap_and_mostly_valid) {
    const mutate_ctx m = {&k_caps, k_vars, 3, (uint64_t)1 << 16};
    const validity_engine ve = {&k_caps, k_vars, 3};
    uint64_t rng = 0xd15c0;
    case_spec c;
    case_default(&c);
    int invalid = 0, over = 0, far_over = 0, too_long = 0;
    const int N = 4000;
    for (int i = 0; i < N; i++) {
        case_spec before = c;
        case_mutate(&c, &rng, &m);
        uint8_t buf[CASE_BYTES_MAX];
        char err[200];
        const size_t n = case_encode(&c, buf, sizeof buf, err, sizeof err);
        if (n == 0) {   /* only for want of room (case_mutate_bytes falls back then) */
            cr_assert(strstr(err, "more than"), "edit %d: not encodable: %s", i, err);
            too_long++;
            c = before;
            continue;
        }
        case_spec back;
        case_decode(buf, n, &back);
        cr_assert(case_equal(&c, &back), "edit %d: decode(encode) differs", i);
        case_defects d;
        validity_defects(&c, &ve, &d);
        invalid += d.n > 0;
        const uint64_t cost = case_cost(&c);
        over += cost > m.budget;
        far_over += cost > 16 * m.budget;
        /* walk through valid cases only, as a corpus of valid seeds would:
         * each count is then the share of one edit from a valid case */
        if (d.n > 0) c = before;
    }
    fprintf(stderr, "mutator: %d of %d cases invalid, %d over the budget, %d over 16x, %d "
            "longer than the byte form's room\n", invalid, N, over, far_over, too_long);
    cr_assert(too_long < N / 20, "too long %d of %d", too_long, N);
    cr_assert(invalid > N / 25 && invalid < N / 3, "invalid share %d of %d", invalid, N);
    cr_assert(over < N / 6, "over budget %d of %d", over, N);
}

/* This process's reach table as written for the launcher, into json. */
static void reach_json(char *json, size_t cap) {
    char path[] = "/tmp/attnguard-reach-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(reach_write(path, "test"), 0);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    const size_t n = fread(json, 1, cap - 1, f);
    fclose(f);
    unlink(path);
    json[n] = '\0';
}

/* From the default case, edits alone reach every feature row the reach
 * table expects (the rows a 10-minute campaign must not leave at zero). */
Test(discovery, mutator_reaches_every_expected_feature) {
    const mutate_ctx m = {&k_caps, k_vars, 3, (uint64_t)1 << 16};
    uint64_t rng = 0xfea7;
    case_spec c;
    case_default(&c);
    for (int i = 0; i < 20000; i++) {
        case_spec before = c;
        case_mutate(&c, &rng, &m);
        reach_count(&c, NULL, NULL, 0);
        if (c.num_reqs < 1 || c.num_layers > 12 || case_cost(&c) > ((uint64_t)1 << 22))
            c = before;
    }
    static char json[32768];
    reach_json(json, sizeof json);
    static const char *const features[] = {
        "dtype/q=bf16", "dtype/q=f16", "dtype/kv=fp8e4m3", "dtype/kv=fp8e5m2", "dtype/out=f16",
        "heads/gqa", "heads/mqa", "heads/mixed-group", "heads/model-wide-differs",
        "heads/no-layers", "layers/many", "window/W", "window/left-right",
        "window/global-among-windowed", "logits/softcap", "logits/scale", "logits/huge-scale",
        "logits/alibi-standard", "logits/alibi-list", "logits/sinks-seeded", "logits/sinks-list",
        "logits/fp8-scales", "batch/decode", "batch/prefill", "batch/chunk",
        "batch/non-causal", "batch/mixed-causal", "batch/many-requests", "blocks/shuffled",
        "blocks/shared", "blocks/last-full", "blocks/place-head", "values/normal", "values/heavy",
        "values/const_row", "values/one_hot", "values/denormal", "values/extreme", "threads/1",
        "threads/2-8", "threads/9-64", "split/off", "split/on", "split/fixed"};
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        cr_assert_gt(row_count(json, features[i]), 0, "never reached: %s", features[i]);
}

Test(discovery, cross_over_mixes_two_cases) {
    case_spec a, b, out;
    case_default(&a);
    case_default(&b);
    b.num_reqs = 3;
    for (int r = 0; r < 3; r++) b.q_len[r] = 2, b.kv_len[r] = 40 + r, b.causal[r] = 0;
    b.kv_dtype = AG_FP8_E5M2;
    b.num_layers = 2;
    b.layers[1] = b.layers[0];
    b.layers[1].window = 17;
    const mutate_ctx m = {NULL, NULL, 0, (uint64_t)1 << 20};
    int batch = 0, layers = 0, dtypes = 0;
    for (uint64_t s = 1; s < 64; s++) {
        uint64_t rng = s;
        case_cross(&a, &b, &out, &rng, &m);
        batch |= out.num_reqs == 3 && out.causal[1] == 0;
        layers |= out.num_layers > a.num_layers || out.layers[0].window == 17;
        dtypes |= out.kv_dtype == AG_FP8_E5M2;
    }
    cr_assert(batch && layers && dtypes, "batch %d layers %d dtypes %d", batch, layers, dtypes);
}

Test(discovery, watchdog_leaves_a_finished_run_alone) {
    sched_watch_arm(0.2, "a quick run");
    sched_watch_disarm();
    usleep(400000);   /* past the bound: nothing fires */
}

Test(discovery, watchdog_names_an_overdue_run, .signal = SIGABRT) {
    sched_watch_arm(0.1, "a run that never ends");
    sleep(5);
}

Test(discovery, perturbation_hook_takes_any_site) {
    sched_perturb p = {42, 0};
    for (int32_t site = 0; site < 4; site++)
        for (int i = 0; i < 64; i++) sched_perturb_hook(&p, site);
    cr_assert_eq(p.counter, 256);
    cr_assert(sched_bound_seconds(0, 1) >= 2.0 && sched_bound_seconds((uint64_t)1 << 40, 1) <= 20.0);
    /* more threads than cores: the bound grows with the oversubscription */
    cr_assert(sched_bound_seconds(0, 4096) > sched_bound_seconds(0, 1));
}

Test(discovery, internal_allocator_guards_and_judges) {
    guard_allocator a;
    cr_assert_eq(guard_alloc_init(&a), 0);
    guard_alloc_mark(&a);
    unsigned char *p = a.abi.alloc(a.abi.ctx, 100, 64);
    unsigned char *z = a.abi.alloc(a.abi.ctx, 0, 64);
    cr_assert(p && z && p != z);
    memset(p, 1, 100);
    char msg[600];
    cr_assert_eq(guard_alloc_check(&a, msg, sizeof msg), 0, "%s", msg);
    const size_t needs_ok[2] = {0, 100}, needs_big[1] = {200};
    cr_assert_eq(guard_alloc_judge(&a, needs_ok, 2, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(guard_alloc_judge(&a, needs_big, 1, msg, sizeof msg), 1);
    cr_assert(strstr(msg, "200 bytes"), "%s", msg);
    p[100] = 7;   /* one past the block, in its canary tail (100 is not a multiple of 64) */
    cr_assert_eq(guard_alloc_check(&a, msg, sizeof msg), 1);
    cr_assert(strstr(msg, "internal block"), "%s", msg);
    a.abi.free(a.abi.ctx, z);
    a.abi.free(a.abi.ctx, p);
    guard_alloc_destroy(&a);
}

/* The reach file counts the executions skipped for a capability the
 * engine lacks, by capability: another engine's option words count as one
 * reason whatever the words (the fuzz summary's capability-skip share). */
Test(discovery, reach_file_counts_capability_skips) {
    engine_host_count_skip("another engine's option 'op=gqa'");
    engine_host_count_skip("another engine's option 'xq\"z'");
    engine_host_count_skip("another engine's option 'cut off before its quo");
    engine_host_count_skip("kv dtype q8_0");
    static char json[32768];
    reach_json(json, sizeof json);
    const char *sk = strstr(json, "\"skipped\"");
    cr_assert(sk && strstr(sk, "\"skipped\": {\"execs\": 4, \"reasons\": {\"another engine's "
                               "option\": 3, \"kv dtype q8_0\": 1}}") == sk, "%s", sk ? sk : json);
}
