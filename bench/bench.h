/*
 * bench/bench.h — what the benchmark's two commands share: the row
 * narrowing of the environment (BENCH_ONLY, BENCH_DTYPE, BENCH_HKV,
 * BENCH_THREADS), the repetitions per row, opening an engine, JSON
 * strings and the median.  `make bench` is bench.c, `make bench-peer`
 * side_by_side.c.
 */
#ifndef AG_BENCH_BENCH_H
#define AG_BENCH_BENCH_H

#include "rows.h"
#include "util.h"

#include <stdio.h>

#define BENCH_MAX_RESULTS 128

int bench_skip_row(const row_spec *r);      /* 1: the environment leaves row r out */
int bench_threads_max(void);                /* 2, or 1 with BENCH_THREADS=1 */
int bench_row_reps(const row_spec *r);      /* timed batches of row r */
/* engine_host_open, printing why it failed; 0 or -1. */
int bench_open_engine(engine_host *h, const char *name);
void bench_json_str(FILE *f, const char *s);   /* a JSON string literal */
void bench_json_num(FILE *f, double x);        /* %.3g, or null when not finite */

/* `bench --peer`: the first engine of the comma-separated list (its
 * default variant) against every other in each configuration it offers,
 * and PyTorch when torch_cmd (the command line of bench/peer.py --serve)
 * is not NULL or "", on every row, in turn round by round; writes
 * OUTDIR/bench-peer.{md,json}.  0 or 1. */
int bench_side_by_side(const char *engines, const char *torch_cmd, const char *outdir);

#endif /* AG_BENCH_BENCH_H */
