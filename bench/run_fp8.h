/*
 * bench/run_fp8.h — `make bench`'s fp8 rounds (run_fp8.c): the cold B=8
 * decode rows of the bf16, e4m3 and e5m2 caches against a plain read of
 * the fp8 layout, in the same rounds (fp8_cmp, report_bench.h).
 */
#ifndef AG_BENCH_RUN_FP8_H
#define AG_BENCH_RUN_FP8_H

#include "report_bench.h"

/* The fp8 rounds for 1 (and 2) threads, out[threads - 1]: engine E[0]. */
void bench_fp8_rounds(const engine_host *const *E, const bench_limits *L, fp8_cmp *out);

#endif /* AG_BENCH_RUN_FP8_H */
