/*
 * fuzz_common.h — what every fuzz target shares: the one-time process setup
 * run by LLVMFuzzerInitialize (libFuzzer) and by the replay driver.
 */
#ifndef ATTN_FUZZ_COMMON_H
#define ATTN_FUZZ_COMMON_H

#include "../harness/engine_host.h"

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
