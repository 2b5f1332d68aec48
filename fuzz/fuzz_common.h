/*
 * fuzz_common.h — what the case-driven fuzz targets share: the one-time
 * process setup (LLVMFuzzerInitialize and the replay driver), the limits
 * on absurd inputs, the tier choice (a deterministic share of inputs by a
 * hash of their bytes, and every input that reached coverage no earlier
 * input did), the structure-aware mutator hooks, and the reach table's
 * output.  The entry points libFuzzer and the sanitizers call
 * (LLVMFuzzerInitialize, the custom mutator and cross-over, the LSan and
 * ASan defaults) are declared here and written out in each target, each a
 * call of what is shared here.
 */
#ifndef ATTN_FUZZ_COMMON_H
#define ATTN_FUZZ_COMMON_H

#include "../harness/case/case.h"
#include "../harness/case/mutate.h"
#include "../harness/host/engine_host.h"
#include "../harness/judge/novelty.h"
#include "../harness/judge/reach.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A check loop whose branches say nothing about the engine: no coverage
 * feedback (and no comparison tracing) there. */
#if defined(__clang__)
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* At exit: which inputs the engine could not express, and why (the
 * engine is $ATTNGUARD_ENGINE; cases needing a capability it lacks are
 * skipped, never judged), and the reach table's last counts. */
static const char *g_fuzz_target = "?";

static inline void fuzz_common_at_exit(void) {
    engine_host_print_skips(stderr, "attnguard: ");
    reach_write(getenv("ATTNGUARD_REACH"), g_fuzz_target);
}

/* OpenMP workers that spin after a parallel region (the default, both in
 * libgomp and libomp) compete with the harness thread for the two cores and
 * cut exec/s several-fold; a passive wait policy costs nothing for the tiny
 * shapes fuzzed.  Must run before the first parallel region; an explicit
 * setting in the environment wins. */
static inline void fuzz_common_init(const char *target) {
    g_fuzz_target = target;
    setenv("OMP_WAIT_POLICY", "passive", 0);
    setenv("KMP_BLOCKTIME", "0", 0);
    atexit(fuzz_common_at_exit);
}

/* Query tokens above which an input is skipped: planning is linear in them,
 * and a hundred million tokens says nothing that a million does not (it only
 * stalls the fuzzer for seconds per input). */
#define FUZZ_MAX_TOKENS ((int64_t)1 << 20)
/* Block-table entries (requests x the longest request's blocks) above
 * which only one input in FUZZ_BIG_EVERY is planned: the table is built,
 * copied and checked entry by entry, and a few such inputs took most of
 * fuzz_plan's time (page faults, memset and memmove of multi-megabyte
 * tables); the limits they exercise stay reachable through those kept. */
#define FUZZ_MAX_CELLS ((int64_t)1 << 14)
/* ... and above which none is: a 16 MiB table checks no limit a smaller
 * one does not (the length limits and the overflow checks are reached
 * with few requests). */
#define FUZZ_MAX_CELLS_EVER ((int64_t)1 << 22)
#define FUZZ_BIG_EVERY 16

/* 1 when the fuzz targets skip this input (see the two limits above). */
static inline int fuzz_common_skip(const case_spec *c) {
    int64_t tokens = 0, longest = 0;
    for (int32_t r = 0; r < c->num_reqs && r < CASE_MAX_REQS; r++) {
        tokens += c->q_len[r] > 0 ? c->q_len[r] : 0;
        if (c->kv_len[r] > longest) longest = c->kv_len[r];
    }
    if (tokens > FUZZ_MAX_TOKENS) return 1;
    const int64_t bs = c->block_size > 0 ? c->block_size : 1;
    const int64_t cells = (int64_t)(c->num_reqs > 0 ? c->num_reqs : 1) * (longest / bs + 2);
    if (cells > FUZZ_MAX_CELLS_EVER) return 1;
    return cells > FUZZ_MAX_CELLS && c->seed % FUZZ_BIG_EVERY != 0;
}

/* FNV-1a of the input: what picks the deterministic share of inputs that
 * get the deep tier, so that a finding reproduces from its bytes alone. */
static inline uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

/* The structure-aware mutator (harness/case/mutate.c) with the engine's
 * own limits and words; libFuzzer's byte mutator keeps a share (weak: the
 * replay driver has none). */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max) __attribute__((weak));
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                 uint8_t *out, size_t max, unsigned int seed);

static inline mutate_ctx fuzz_mutate_ctx(uint64_t budget) {
    mutate_ctx m = {NULL, NULL, 0, budget};
    const engine_host *E = engine_host_current(NULL, 0);
    if (E) m.caps = &E->caps, m.variants = E->variants, m.n_variants = E->n_variants;
    return m;
}

/* The structure-aware mutator and cross-over with a budget of `budget`
 * multiply-adds per input: each case-driven target's
 * LLVMFuzzerCustomMutator and LLVMFuzzerCustomCrossOver return these. */
static inline size_t fuzz_case_mutate(uint8_t *data, size_t size, size_t max, unsigned int seed,
                                      uint64_t budget) {
    const mutate_ctx m = fuzz_mutate_ctx(budget);
    return case_mutate_bytes(data, size, max, seed, &m, LLVMFuzzerMutate);
}
static inline size_t fuzz_case_cross(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
                                     uint8_t *out, size_t max, unsigned int seed, uint64_t budget) {
    const mutate_ctx m = fuzz_mutate_ctx(budget);
    return case_cross_bytes(d1, s1, d2, s2, out, max, seed, &m);
}

/* LeakSanitizer's default suppressions for every target binary (each
 * case-driven target's __lsan_default_suppressions returns them).  clang's
 * OpenMP runtime (libomp) keeps a few KiB of worker-thread bookkeeping alive
 * until exit without a pointer LSan can see, which the end-of-run leak check
 * reports (seen in the campaign's false-alarm runs after 60 s).  The engine
 * allocates only outside parallel regions, so no leak of ours has a libomp
 * frame and none is hidden by this.  ONNX Runtime likewise keeps small
 * objects of its own (14 and 152 bytes seen, allocated deep inside
 * libonnxruntime.so while sessions are made) beyond the last pointer LSan
 * can see; its leaks are ORT's to fix and fuzz_ort_contract's to find, not
 * a finding of the adapter (whose own allocations have no ORT frame).
 * torch 2.13's torch_call_dispatcher (the vllm adapter's door into vLLM's
 * ops) leaks a 32-byte copy of every str argument in its to_ivalue: the
 * adapter's own string handles are consumed (deleting them after the call
 * is a double free), the copy is torch's. */
const char *__lsan_default_suppressions(void);
#define FUZZ_LSAN_SUPPRESSIONS "leak:libomp.so\nleak:libonnxruntime.so\nleak:to_ivalue\n"

/* ASan records a stack for every allocation and keeps freed memory in a
 * quarantine; the harness makes a few dozen allocations per input, and
 * the defaults (30 frames, 256 MB) cost a fifth of a small input's time in
 * unwinding and in page faults on fresh memory.  While fuzzing, two frames
 * and 32 MB (still many inputs' worth of freed buffers for use-after-free);
 * attnguard repro reruns a crash with the full 30 frames.  Each
 * case-driven target's __asan_default_options returns them. */
const char *__asan_default_options(void);
#define FUZZ_ASAN_OPTIONS "malloc_context_size=2:quarantine_size_mb=32"

#endif /* ATTN_FUZZ_COMMON_H */
