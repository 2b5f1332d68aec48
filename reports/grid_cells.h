/*
 * grid_cells.h — the cells of the differential grid (reports/grid.c runs
 * them): the grid's dimensions, the seeded selection of cells in blocks,
 * each cell as a case (harness/case.h), and what its problem looks like
 * for the JSON.  A cell is one problem; every engine and variant that runs
 * it runs exactly the same inputs.
 */
#ifndef AG_REPORT_GRID_CELLS_H
#define AG_REPORT_GRID_CELLS_H

#include "../harness/case/case.h"

#include <stdint.h>

#define GRID_MAX_CELLS 1024

typedef struct grid_group {
    const char *label;
    int32_t heads, kv_heads;
} grid_group;

extern const grid_group grid_groups[];
extern const char *const grid_mode_names[];     /* "decode", "prefill", "mixed" */
extern const char *const grid_split_names[];    /* "auto", "off", "on", "fixed3" */
extern const char *const grid_caus_names[];     /* "causal", "noncausal", "mixed" */

typedef struct grid_cell {
    int id;
    const char *origin;   /* its block: crossed, fp8, causality, window-lr, prefill-normal,
                             laguna-xs */
    ag_dtype kv, q, out;
    int32_t head_dim, group, wl, wr, threads, block_size;   /* group: into grid_groups */
    int mode, split, sinks, alibi, dist, caus, io;           /* indices into the name tables;
                                                                dist a case_dist */
    float softcap, k_scale, v_scale;
    int every_variant;    /* 1: runs on every variant of every engine; 0: on one variant
                             per engine, dealt out (such cells come first) */
} grid_cell;

/* What a cell's problem looks like, shared by every engine's result. */
typedef struct grid_cell_info {
    int32_t num_reqs, num_tokens;
    int64_t pairs;              /* (query row, visible key) pairs per head */
    int nc_positions;           /* a non-causal row's position changes its output */
    char reqs[200];             /* "q/kv,q/kv,..." */
    char causal_flags[64];      /* one 0/1 per request */
    double ref_ms;              /* CPU ms of the problem, its fp64 reference and the
                                   baseline's check against it (grid.c) */
    double naive_check;         /* grid.c's check of the baseline; -1: not built */
} grid_cell_info;

/* The grid's cells for a seed, into cells[GRID_MAX_CELLS]; returns the
 * count.  The same seed gives the same cells. */
int grid_build_cells(grid_cell *cells, uint64_t seed);
/* Cell ce as a case (its values seeded from seed and the cell's id). */
void grid_cell_case(const grid_cell *ce, uint64_t seed, case_spec *c);
/* The shape of the cell's case for the JSON. */
void grid_describe(const grid_cell *ce, const case_spec *c, grid_cell_info *ci);
/* A balanced assignment: a seeded permutation of 0..n-1 mapped to k
 * buckets (out[n]). */
void grid_deal(int *out, int n, int k, uint64_t *rng);

#endif /* AG_REPORT_GRID_CELLS_H */
