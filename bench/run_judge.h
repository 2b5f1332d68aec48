/*
 * bench/run_judge.h — what a measured row of `make bench` is worth: its
 * figure (GB/s or GFLOP/s) against the limit it names, per CPU-second
 * granted and against the limit measured next to it; its target and
 * verdict; and for decode rows the compute ceiling and the stream of the
 * limits' paged read with as many FMAs per line (bench_row's fields,
 * report_bench.h).  Called by run_bench.c and run_fp8.c.
 */
#ifndef AG_BENCH_RUN_JUDGE_H
#define AG_BENCH_RUN_JUDGE_H

#include "report_bench.h"

/* Fill b's figures, target and verdict from b->r (it ran), b->adj (the
 * limit next to it, 0: none) and the limits L, measured when `limits`
 * (else every share of a limit is 0 and no row has a target). */
void bench_figures(bench_row *b, const bench_limits *L, int limits);

/* A row counts as met only at or above its target against both the limit
 * measured at the start of the run and the one measured next to the row
 * (where there is one): on a shared VM either can be low for a moment,
 * which flatters the row.  Returns the verdict's words. */
const char *bench_verdict(double target, double pct, double pct_next, int has_next);

/* The compute ceiling of a decode row (bench_row.ceil_pct) whose bytes
 * move at limit_gbs: 100 x (bytes / limit) / (flops / peak), at most 100;
 * 0 without a limit or a peak. */
double bench_ceiling_pct(const row_spec *r, double limit_gbs, const bench_limits *L, int threads);

#endif /* AG_BENCH_RUN_JUDGE_H */
