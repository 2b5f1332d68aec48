/*
 * bench/report_peer.h — what `make bench-peer` measured (run_peer.c)
 * as its reports need it (report_peer.c): the engines and their
 * configurations, and per row every configuration's result, each peer's
 * fastest correct configuration (its winner), the best peer and
 * attnguard's verdict against it.
 */
#ifndef AG_BENCH_REPORT_PEER_H
#define AG_BENCH_REPORT_PEER_H

#include "util_rows.h"

#define PEER_MAX_ENGINES 6
#define PEER_MAX_CELLS (ROW_MAX_CONFIGS + TORCH_MAX_FORMS)
#define PEER_LABEL_LEN 96

/* An engine of the comparison: engine 0 is the one judged (attnguard, in
 * its default variant), the others are peers in every configuration
 * tried; PyTorch's configurations are each row's formulations. */
typedef struct peer_engine {
    char name[32];
    char summary[160];
    int first, count;        /* its row_configs (not PyTorch's) */
    int torch;
} peer_engine;

/* One engine-0 cell against one peer cell, round by round. */
typedef struct peer_cmp {
    int us, them;                            /* cells, or -1 */
    double ratio, rmin, rmax;                /* us's median over them's; per round */
    const char *verdict;                     /* "ahead", ..., or why there is none */
} peer_cmp;

typedef struct peer_row {
    char name[96];
    const row_spec *spec;
    int threads;
    ag_dtype io;
    int ncell;                               /* configurations, then PyTorch's formulations */
    row_result r[PEER_MAX_CELLS];
    char label[PEER_MAX_CELLS][PEER_LABEL_LEN];
    int engine_of[PEER_MAX_CELLS];
    int correct[PEER_MAX_CELLS];
    int winner[PEER_MAX_ENGINES];            /* each engine's fastest correct cell, or -1 */
    int best;                                /* the fastest peer winner, or -1 */
    double ratio, rmin, rmax;                /* engine 0's time over the best's; per round */
    const char *verdict;
    peer_cmp vs_default[PEER_MAX_ENGINES];   /* engine 0's default against each peer's */
    peer_cmp isa;                            /* engine 0 held to the ISA against the fastest
                                                correct held peer cell */
    char torch_why[200];                     /* PyTorch skipped the row: why */
} peer_row;

typedef struct peer_run {
    peer_engine eng[PEER_MAX_ENGINES];
    int neng;
    row_config cfg[ROW_MAX_CONFIGS];         /* every engine's configurations, in order */
    char words[ROW_MAX_CONFIGS][PEER_LABEL_LEN];
    int ncfg;
    int held[ROW_MAX_CONFIGS];               /* its words hold it to the compared ISA */
    /* each configuration's place in the race (row_race) */
    int pool[ROW_MAX_CONFIGS], keep[ROW_MAX_CONFIGS], ref[ROW_MAX_CONFIGS];
    int race_after;                          /* BENCH_PEER_RACE: rounds before the race drops */
    double race_margin, race_far;            /*   configurations, and by how much slower */
    int settle_ms;                           /* BENCH_PEER_SETTLE_MS */
    char torch_info[160];                    /* "" without PyTorch */
    peer_row *rows;
    int nrows;
} peer_run;

/* The sanity bound of a correct output: its largest error over the
 * largest reference value (f32 KV 1e-3; 16-bit and fp8 KV 1e-1).  Both
 * reports print it; run_peer.c judges each configuration by it. */
double peer_bound(const row_spec *s);
/* GB/s (decode) or GFLOP/s of row s at `sec` seconds a batch. */
double peer_figure(const row_spec *s, double sec);

/* OUTDIR/bench-peer.md and bench-peer.json. */
void peer_write(const char *outdir, const peer_run *run);

#endif /* AG_BENCH_REPORT_PEER_H */
