/*
 * bench/run_inputs.c — see run_inputs.h: a row's groups as harness
 * problems (util_rows.c's cases, materialized), the query on huge pages
 * every configuration reads, and the fp64 reference of the sampled query
 * rows that run_rows.c checks every configuration's output against.
 */
#include "run_inputs.h"
#include "util_host.h"

#include "../harness/judge/ref_problem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- the reference check */

/* The query tokens the reference checks: every token of a batch of at
 * most SAMPLE_ROWS, else SAMPLE_ROWS spread evenly (first and last
 * included). */
static int sample_tokens(const problem *p, int32_t *tok) {
    const int32_t T = p->num_tokens;
    if (T <= SAMPLE_ROWS) {
        for (int32_t i = 0; i < T; i++) tok[i] = i;
        return T;
    }
    for (int i = 0; i < SAMPLE_ROWS; i++)
        tok[i] = (int32_t)((int64_t)i * (T - 1) / (SAMPLE_ROWS - 1));
    return SAMPLE_ROWS;
}

/* The fp64 reference of the sampled tokens of a causal problem: each
 * token becomes a one-row request with seq_len p + 1 over its own
 * request's block table, which sees exactly the keys it sees in the batch
 * (docs/design.md §2: k <= p, and the window counted back from p).  out:
 * [n][H][D].  0, or -1. */
static int reference_rows(const problem *p, const int32_t *tok, int n, double *out) {
    const size_t H = (size_t)p->layers[0].num_heads, D = (size_t)p->c.head_dim;
    const size_t row_bytes = H * D * ag_dtype_size(p->c.q_dtype);
    const size_t stride = (size_t)p->bt_stride;
    int32_t *qsl = malloc((size_t)(n + 1) * sizeof *qsl), *seq = malloc((size_t)n * sizeof *seq);
    int32_t *bt = malloc((size_t)n * stride * sizeof *bt);
    uint8_t *causal = malloc((size_t)n);
    unsigned char *q = malloc((size_t)n * row_bytes);
    int rc = -1;
    if (!qsl || !seq || !bt || !causal || !q) goto out;
    for (int j = 0; j < n; j++) {
        int32_t r = 0;
        while (r + 1 < p->c.num_reqs && p->qsl[r + 1] <= tok[j]) r++;
        if (!p->causal[r]) goto out;   /* the bench's rows are causal */
        const int32_t ql = p->qsl[r + 1] - p->qsl[r], i = tok[j] - p->qsl[r];
        qsl[j] = j;
        seq[j] = p->seq_lens[r] - ql + i + 1;
        causal[j] = 1;
        memcpy(bt + (size_t)j * stride, p->block_table + (size_t)r * stride, stride * sizeof *bt);
        memcpy(q + (size_t)j * row_bytes, (const unsigned char *)p->q[0] + (size_t)tok[j] * row_bytes,
               row_bytes);
    }
    qsl[n] = n;
    ref_input in;
    ref_input_of_problem(p, 0, &in);
    in.num_reqs = n;
    in.query_start_loc = qsl;
    in.seq_lens = seq;
    in.causal = causal;
    in.block_table = bt;
    in.q = q;
    rc = ref_attention(&in, out);
out:
    free(qsl), free(seq), free(bt), free(causal), free(q);
    return rc;
}

/* ------------------------------------------------------------- inputs */

void row_group_free(row_group *g) {
    free(g->q);
    free(g->ref);
    if (g->built) problem_free(&g->p);
    memset(g, 0, sizeof *g);
}

int row_build_groups(const row_spec *r, ag_dtype io, row_group *grp, int *ngroups, char *why,
                        size_t cap) {
    case_spec c;
    *ngroups = row_case(r, 0, io, &c);
    for (int g = 0; g < *ngroups; g++) {
        row_case(r, g, io, &c);
        char err[256];
        if (problem_init(&grp[g].p, &c, (size_t)16 << 30, err, sizeof err) != 0 ||
            !grp[g].p.materialized) {
            snprintf(why, cap, "failed: the row's inputs: %.150s",
                     grp[g].p.unmaterialized_reason ? grp[g].p.unmaterialized_reason : err);
            grp[g].built = 1;
            return -1;
        }
        grp[g].built = 1;
        const problem *p = &grp[g].p;
        const size_t n = problem_out_elems(p, 0);
        grp[g].q_bytes = n * ag_dtype_size(c.q_dtype);
        grp[g].out_bytes = n * ag_dtype_size(c.out_dtype);
        grp[g].q = bench_big_alloc(grp[g].q_bytes, 64);
        grp[g].n_tok = sample_tokens(p, grp[g].tok);
        grp[g].ref = malloc((size_t)grp[g].n_tok * (n / (size_t)p->num_tokens) * sizeof(double));
        if (!grp[g].q || !grp[g].ref) {
            snprintf(why, cap, "failed: out of memory for the row's inputs");
            return -1;
        }
        memcpy(grp[g].q, p->q[0], grp[g].q_bytes);
        if (reference_rows(p, grp[g].tok, grp[g].n_tok, grp[g].ref) != 0) {
            snprintf(why, cap, "failed: the reference refused the row's inputs");
            return -1;
        }
    }
    return 0;
}

