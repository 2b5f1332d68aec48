/*
 * bench/util_rows.h — the benchmark's rows, one table for `make bench` and
 * `make bench-peer` alike (decode, prefill, the Laguna-shaped mixed batch,
 * fp8 decode), and what every layer of the bench says about them: a row's
 * name, its q/out dtype, its work (bytes and flops, item by item), the row
 * as a harness case, and what running it through a configuration of an
 * engine yields (row_result; the running is run_rows.h's).
 */
#ifndef AG_BENCH_UTIL_ROWS_H
#define AG_BENCH_UTIL_ROWS_H

#include "../harness/case/case.h"
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

/* Group g of row r as a case with q/out dtype io (Laguna's rows have two
 * groups, each with its own KV cache; the others one).  Returns the
 * row's group count. */
int row_case(const row_spec *r, int g, ag_dtype io, case_spec *c);

/* ---- what running it yields ---- */

#define ROW_MAX_CONFIGS 24   /* engine configurations one row runs side by side */
#define TORCH_MAX_FORMS 4    /* PyTorch formulations it runs beside them (run_torch.c) */
#define ROW_MAX_ROUNDS 16    /* timed rounds kept per configuration */

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
    int stopped;             /* a race (row_race) stopped it after `rounds` timed rounds (0:
                                after its check, whose run gives sec) */
    int outrun;              /*   because another of its pool was faster in each */
} row_result;

#endif /* AG_BENCH_UTIL_ROWS_H */
