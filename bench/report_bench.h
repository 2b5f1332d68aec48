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

typedef struct bench_row {
    char name[96];
    const row_spec *spec;
    int threads;
    row_result r;
    double gbs, gflops, pct, pct_c, pct_fma_c, adj, pct_adj, target;
    /* Decode rows: the most of the row's limit its arithmetic allows, in
     * %: the limit's time over the time its flops take at the row's
     * compute peak (row_peak), both measured at the start of the run, at
     * most 100.  A target above it cannot be met by any kernel of that
     * instruction path on this machine.  0: not a decode row. */
    double ceil_pct;
    /* Decode rows: the paged K/V read with as many FMAs per 64-byte line
     * as the row does (g x elements per line / lanes: the limits' "paged
     * + N FMA" rows), in % of the DRAM read; 0 where N is not one of them.
     * The stream a kernel doing exactly that arithmetic and nothing else
     * reached here. */
    double stream_pct;
    int stream_fmas;
    const char *metric, *limit, *verdict;
    /* Laguna: the roofline's items, each at its bound */
    row_item items[ROW_MAX_ITEMS];
    int n_items;
    double item_s[ROW_MAX_ITEMS];   /* each item's bound time (x count), seconds */
    int item_bw[ROW_MAX_ITEMS];     /* 1: bandwidth-bound, 0: compute-bound */
    double roof_s, roof_bw, roof_peak;
} bench_row;

/* The targets, % of the limit each row names (run_judge.c), per instruction
 * set of the limits' loops (limits_isa(): the engine's avx2 table is
 * measured against the AVX2 loops, util_limits.c): AVX-512's from issue 39,
 * AVX2's from issue 44. */
typedef struct bench_target_set {
    const char *source;   /* "issue 39" */
    double decode;        /* cold decode: of the DRAM read */
    double prefill_f32;   /* of the fp32 FMA peak */
    double prefill_f16;   /* of the fp32 FMA peak */
    double prefill_bf16;  /* of the faster of the FMA and VDPBF16PS peaks */
    double laguna;        /* of its roofline */
    double fp8;           /* fp8 decode: of the plain read's rate (run_fp8.c) */
} bench_target_set;
const bench_target_set *bench_targets(void);
#define BENCH_TARGET_DECODE (bench_targets()->decode)
#define BENCH_TARGET_PREFILL_F32 (bench_targets()->prefill_f32)
#define BENCH_TARGET_PREFILL_F16 (bench_targets()->prefill_f16)
#define BENCH_TARGET_PREFILL_BF16 (bench_targets()->prefill_bf16)
#define BENCH_TARGET_LAGUNA (bench_targets()->laguna)

/* fp8 decode in rounds against a plain read of its layout (run_fp8.c) */
#define FP8_ROUNDS 3
#define FP8_TARGET_PCT (bench_targets()->fp8)   /* % of the plain read's rate */
typedef struct fp8_cmp {
    int threads, ran;
    double bf16_ms[FP8_ROUNDS], ms[2][FP8_ROUNDS]; /* [e4m3, e5m2][round] */
    double read_ms[FP8_ROUNDS];                     /* the plain read of the fp8 layout */
    double ratio[2];                                /* bf16 ms over the fp8 row's: the rate ratio */
    double pct[2];                                  /* % of the plain read's rate (0: none) */
    double ceil_pct;                                /* the compute ceiling (bench_row's), of the read */
    const char *verdict[2];
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
