/*
 * bench/run_judge.h — what a measured row of `make bench` is worth: its
 * figure (GB/s or GFLOP/s) against its ceiling (run_ceiling.h), per
 * CPU-second granted and against the ceiling measured next to it; its
 * target and verdict (bench_row's fields, report_bench.h).  Called by
 * run_bench.c.
 */
#ifndef AG_BENCH_RUN_JUDGE_H
#define AG_BENCH_RUN_JUDGE_H

#include "report_bench.h"

/* Fill b's figures, target and verdict from b->r (it ran), b->ceil, b->adj
 * (the binding ceiling next to it, 0: none) and the limits L, measured
 * when `limits` (else every share of a ceiling is 0 and no row has a
 * target). */
void bench_figures(bench_row *b, const bench_limits *L, int limits);

/* A row counts as met only at or above its target against both the ceiling
 * measured at the start of the run and the one measured next to the row
 * (where there is one): on a shared VM either can be low for a moment,
 * which flatters the row.  Returns the verdict's words. */
const char *bench_verdict(double target, double pct, double pct_next, int has_next);

#endif /* AG_BENCH_RUN_JUDGE_H */
