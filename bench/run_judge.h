/*
 * bench/run_judge.h — what a measured row of `make bench` is worth: its
 * figure (GB/s or GFLOP/s) against its ceiling (run_ceiling.h), also per
 * CPU-second granted; its target and verdict (bench_row's fields, report_bench.h).  Called by
 * run_bench.c.
 */
#ifndef AG_BENCH_RUN_JUDGE_H
#define AG_BENCH_RUN_JUDGE_H

#include "report_bench.h"

/* Fill b's figures, target and verdict from b->r (it ran), b->ceil and
 * the limits L, measured when `limits` (else every share of a ceiling is
 * 0 and no row has a target).  A row meets its target at or above it
 * against its ceiling (each candidate at the better of its measurements next to the row). */
void bench_figures(bench_row *b, const bench_limits *L, int limits);

#endif /* AG_BENCH_RUN_JUDGE_H */
