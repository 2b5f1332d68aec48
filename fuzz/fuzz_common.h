/*
 * fuzz_common.h — what every fuzz target shares: the one-time process setup
 * run by LLVMFuzzerInitialize (libFuzzer) and by the replay driver.
 */
#ifndef ATTN_FUZZ_COMMON_H
#define ATTN_FUZZ_COMMON_H

#include "../harness/case/case.h"
#include "../harness/host/engine_host.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* OpenMP workers that spin after a parallel region (the default, both in
 * libgomp and libomp) compete with the harness thread for the two cores and
 * cut exec/s several-fold; a passive wait policy costs nothing for the tiny
 * shapes fuzzed.  Must run before the first parallel region; an explicit
 * setting in the environment wins. */
/* At exit: which inputs the engine could not express, and why (the
 * engine is $ATTNGUARD_ENGINE; cases needing a capability it lacks are
 * skipped, never judged). */
static inline void fuzz_common_print_skips(void) { engine_host_print_skips(stderr, "attnguard: "); }

static inline void fuzz_common_init(void) {
    setenv("OMP_WAIT_POLICY", "passive", 0);
    setenv("KMP_BLOCKTIME", "0", 0);
    atexit(fuzz_common_print_skips);
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
 * one does not (ATTN_MAX_SEQ_LEN and the overflow checks are reached with
 * few requests). */
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

/* LeakSanitizer's default suppressions for every target binary.  clang's
 * OpenMP runtime (libomp) keeps a few KiB of worker-thread bookkeeping alive
 * until exit without a pointer LSan can see, which the end-of-run leak check
 * reports (seen in the campaign's false-alarm runs after 60 s).  The engine
 * allocates only outside parallel regions, so no leak of ours has a libomp
 * frame and none is hidden by this. */
const char *__lsan_default_suppressions(void);

#define FUZZ_DEFINE_LSAN_SUPPRESSIONS                         \
    const char *__lsan_default_suppressions(void) {           \
        return "leak:libomp.so\n";                            \
    }

#define FUZZ_DEFINE_INITIALIZE                                \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {       \
        (void)argc;                                           \
        (void)argv;                                           \
        fuzz_common_init();                                   \
        return 0;                                             \
    }

#endif /* ATTN_FUZZ_COMMON_H */
