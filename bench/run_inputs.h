/*
 * bench/run_inputs.h — between run_inputs.c and run_rows.c: a row's
 * groups (its problems, the query every configuration shares, the
 * sampled tokens and their fp64 reference), built by run_inputs.c and run
 * by run_rows.c.
 */
#ifndef AG_BENCH_RUN_INPUTS_H
#define AG_BENCH_RUN_INPUTS_H

#include "util_rows.h"

#include "../harness/case/problem.h"

#define COLD_BYTES (1.5 * 1024 * 1024 * 1024)   /* several times any L3 of ours */
#define MAX_ROT 256
#define MAX_GROUPS 2
#define SAMPLE_ROWS 48                           /* reference rows per group */

typedef struct row_group {
    problem p;
    int built;
    void *q;                 /* the query on huge pages, shared by every engine */
    size_t q_bytes, out_bytes;
    int32_t tok[SAMPLE_ROWS];
    int n_tok;
    double *ref;             /* [n_tok][H][D] */
} row_group;

/* The groups of row r with q/out dtype io (grp[MAX_GROUPS], zeroed):
 * problems materialized, the query on huge pages, the sampled tokens'
 * reference computed.  0, or -1 with why. */
int row_build_groups(const row_spec *r, ag_dtype io, row_group *grp, int *ngroups, char *why,
                     size_t cap);
void row_group_free(row_group *g);

#endif /* AG_BENCH_RUN_INPUTS_H */
