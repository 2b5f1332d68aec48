/*
 * bench/rows.h — the benchmark's rows (one table for `make bench` and
 * `make bench-peer` alike: decode, prefill, the Laguna-shaped mixed batch,
 * fp8 decode) and how one row runs through one or more configurations of
 * engines by the adapter ABI (harness/session.h): its case and problem
 * (rows.c), sessions on huge pages (one per cold rotation, shared by the
 * configurations of one engine), untimed passes, timed runs interleaved
 * configuration by configuration round by round, and a check of every
 * configuration's output against the fp64 reference (harness/ref.c) on
 * sampled query rows (row_run.c).
 */
#ifndef AG_BENCH_ROWS_H
#define AG_BENCH_ROWS_H

#include "../harness/host/engine_host.h"

#include <stddef.h>

typedef enum row_kind { ROW_DECODE, ROW_PREFILL, ROW_LAGUNA } row_kind;

typedef struct row_spec {
    const char *part;        /* its BENCH_ONLY word: decode1, decode8, prefill, laguna, fp8 */
    row_kind kind;
    int batch;               /* decode: requests of 4096 keys */
    ag_dtype kv;
    int hkv, block_size;
    int cold;                /* rotate through >= 1.5 GiB of distinct KV */
} row_spec;

extern const row_spec bench_rows[];
extern const int bench_num_rows;

/* The row's name, stable across runs (scripts/bench_ab.sh and
 * bench/peer.py join on it): "decode B=8 kv4096 f32 cold", "prefill
 * L=2048 H=32 Hkv=8 bf16", "laguna mixed (48 full + 64 w512) bf16". */
void row_name(const row_spec *r, char *buf, size_t cap);

/* The q and out dtype of a row: the KV dtype (bf16 for fp8 KV, as fp8
 * caches serve bf16 models). */
ag_dtype row_io_dtype(const row_spec *r);

/* ---- what a row's work is, for its figures ---- */

/* One item of a row's roofline: a request of one group. */
typedef struct row_item {
    char what[48];           /* "48 heads full: decode" */
    int count;               /* identical items */
    double bytes;            /* K and V bytes it must read, each */
    double flops;            /* useful flops (4 D per visible (row, head, key)), each */
} row_item;

#define ROW_MAX_ITEMS 4
/* The items of row r (decode and prefill: one kind; Laguna: four).
 * Returns the count. */
int row_items(const row_spec *r, row_item *items);
/* Totals over the items. */
double row_bytes(const row_spec *r);
double row_flops(const row_spec *r);

/* ---- running it ---- */

#define ROW_MAX_CONFIGS 16
#define ROW_MAX_ROUNDS 16

/* One configuration of one engine: a variant's option words.  The
 * configurations of one engine host share its caches (the ABI: the cache
 * layout depends on the KV spec only). */
typedef struct row_config {
    const engine_host *E;
    const char *options;     /* group options; NULL: the default variant */
    const char *label;       /* for reports: the words that name it ("" default) */
} row_config;

typedef struct row_result {
    int ran;                 /* 0: skipped or failed (why says which) */
    char why[200];
    char kernels[32], detail[96];
    double sec;              /* median seconds of one batch (every group) */
    int rounds;              /* timed rounds */
    double round_sec[ROW_MAX_ROUNDS];   /* each timed round's batch, in order */
    double cpu_share;        /* process CPU / (threads x wall) while timed */
    double max_abs_err;      /* over the sampled rows, all heads and dims */
    double max_rel_err;      /* max_abs_err / the largest |reference| there (inf for NaN) */
    int err_rows;            /* sampled query rows (per group) */
    size_t nan_count;        /* NaN or unwritten elements in the whole output */
    int rotations;
} row_result;

/* A peer timed outside the adapter ABI in the same rounds (bench-peer's
 * PyTorch): called at the end of every round, it 0 being the warm-up. */
typedef struct row_extra {
    void *ctx;
    void (*round)(void *ctx, int it);
} row_extra;

/* Run row r on n configurations C[0..n) with `threads` threads and q/out
 * dtype io: reps (at most ROW_MAX_ROUNDS) timed batches per configuration
 * after one untimed pass over every rotation and one warm-up round,
 * configuration after configuration within each round, then `extra` (may
 * be NULL): a phase of the machine touches every one alike.  A
 * configuration that cannot express the row is skipped (res[e].why).  0,
 * or -1 when the row's own inputs cannot be built (out of memory:
 * res[0].why). */
int row_run(const row_spec *r, const row_config *C, int n, int threads, int reps, ag_dtype io,
            row_result *res, const row_extra *extra);

#endif /* AG_BENCH_ROWS_H */
