/*
 * bench/report_bench.h — what `make bench` measured, as its reports need
 * it: one engine's rows with their figures against this machine's limits,
 * each row's target and verdict, and the fp8 rounds.  run_bench.c
 * measures, run_judge.c judges, run_fp8.c runs the fp8 rounds;
 * report_bench.c writes all of it as bench.md and bench.json (and the
 * terminal's fp8 lines).
 */
#ifndef AG_BENCH_REPORT_BENCH_H
#define AG_BENCH_REPORT_BENCH_H

#include "util_limits.h"
#include "util_rows.h"

#include <stdio.h>

/* A row's ceiling (run_ceiling.c): its candidates, each in the row's
 * metric (decode: GB/s of the K and V bytes it must read; prefill and
 * Laguna: GFLOP/s of its useful flops), each measured at the start of the
 * run and again right before and right after the row; each candidate
 * counts at the better of the two measurements next to the row (on a
 * shared machine noise only ever lowers a measurement, which would
 * flatter the row; the start of the run can be minutes and a bandwidth
 * phase away), and the lowest binds. */
#define CEIL_MAX 4
typedef enum ceil_kind {
    CEIL_READ, CEIL_LAYOUT, CEIL_STREAM, CEIL_PEAK, CEIL_STEP, CEIL_ROOF, CEIL_ROOF_STEP
} ceil_kind;
typedef struct bench_ceiling {
    int n;                        /* 0: none measured */
    ceil_kind kind[CEIL_MAX];
    char what[CEIL_MAX][96];      /* "DRAM read", "its layout's walk (f16, bs 16, 64 keys a step)" */
    double start[CEIL_MAX];       /* at the start of the run */
    double best[CEIL_MAX];        /* the better of before and after the row */
    int bind;                     /* the lowest best */
    int again;                    /* measurements next to the row so far */
} bench_ceiling;

typedef struct bench_row {
    char name[96];
    const row_spec *spec;
    int threads;
    row_result r;
    /* pct: of the ceiling (ceil.best[ceil.bind]: the verdict's figure);
     * pct_start: of the lowest candidate at the start of the run alone;
     * pct_c: per CPU-second granted where the ceiling is one of the
     * machine-wide limits (else 0) */
    double gbs, gflops, pct, pct_start, pct_c, pct_fma_c, target;
    bench_ceiling ceil;
    const char *metric, *limit, *verdict;
    /* Laguna: the roofline's items, each at its bound */
    row_item items[ROW_MAX_ITEMS];
    int n_items;
    double item_s[ROW_MAX_ITEMS];   /* each item's bound time (x count), seconds */
    int item_bw[ROW_MAX_ITEMS];     /* 1: bandwidth-bound, 0: compute-bound */
    double roof_s, roof_bw, roof_peak;
} bench_row;

/* The targets (issue 60), % of each row's ceiling, the same on every
 * instruction set (each table judged against its own loops: limits_isa()):
 * decode, every cache, hot and cold; prefill against the compute peak of
 * its path, f32 and f16 per thread count; the Laguna batch against its
 * roofline. */
typedef struct bench_target_set {
    const char *source;   /* "issue 60" */
    double decode;        /* every decode row but fp8 */
    double fp8;           /* fp8 decode */
    double prefill[3];    /* f32 and f16: [threads] (1, 2) */
    double prefill_bf16;  /* of the faster of the FMA and VDPBF16PS peaks */
    double laguna;
} bench_target_set;
const bench_target_set *bench_targets(void);

/* fp8 decode in rounds against a plain read of its layout (run_fp8.c):
 * information beside the fp8 rows' verdicts (their rate against bf16's
 * and a read of their layout in the same rounds) */
#define FP8_ROUNDS 3
typedef struct fp8_cmp {
    int threads, ran;
    double bf16_ms[FP8_ROUNDS], ms[2][FP8_ROUNDS]; /* [e4m3, e5m2][round] */
    double read_ms[FP8_ROUNDS];                     /* the plain read of the fp8 layout */
    double ratio[2];                                /* bf16 ms over the fp8 row's: the rate ratio */
    double pct[2];                                  /* % of the plain read's rate (0: none) */
} fp8_cmp;

/* The fp8 rounds (run_fp8.c) of n thread counts; f: the markdown report,
 * or NULL for the terminal's lines */
void bench_fp8_write(FILE *f, const fp8_cmp *c, int n);
/* The fp8 rounds as a JSON array (its own key of bench.json). */
void bench_fp8_json(FILE *f, const fp8_cmp *c, int n);

void bench_write_json(FILE *f, const bench_limits *L, const char *tune, const char *engine,
                      const bench_row *rows, int n, const fp8_cmp *fp8, int n_fp8);
void bench_write_md(FILE *f, const bench_limits *L, const char *tune, const char *engine,
                    const bench_row *rows, int n);

#endif /* AG_BENCH_REPORT_BENCH_H */
