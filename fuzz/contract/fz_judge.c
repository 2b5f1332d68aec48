/*
 * fz_judge.c — the contract targets' shared judging (fz_judge.h).
 */
#include "fz_judge.h"

#include "../../harness/judge/reach.h"

#include <stdlib.h>
#include <string.h>

int fz_judged_alloc(fz_judged *J, int64_t nreq, int64_t rows, int64_t hq, int64_t hkv, int64_t D,
                    int masked) {
    /* the +4 / +1: an empty op (no rows, no keys) still gets non-NULL
     * arrays, which the reference requires */
    const size_t nt = (size_t)rows, kv = (size_t)(nreq * J->blk * hkv * D) + 1;
    J->q = malloc(nt * (size_t)(hq * D) * sizeof(float) + 4);
    J->k = malloc(kv * sizeof(float));
    J->v = malloc(kv * sizeof(float));
    J->mask = masked ? malloc(nt * (size_t)(hq * J->blk) * sizeof(float) + 4) : NULL;
    J->qsl = malloc((size_t)(nreq + 1) * sizeof(int32_t));
    J->seq = malloc((size_t)nreq * sizeof(int32_t) + 4);
    J->bt = malloc((size_t)nreq * sizeof(int32_t) + 4);
    J->tok_of = malloc(nt * sizeof(int32_t) + 4);
    J->causal = calloc((size_t)nreq + 1, 1);
    return J->q && J->k && J->v && (!masked || J->mask) && J->qsl && J->seq && J->bt &&
           J->tok_of && J->causal ? 0 : -1;
}

void fz_judged_free(fz_judged *J) {
    free(J->q), free(J->k), free(J->v), free(J->mask), free(J->slopes), free(J->sinks);
    free(J->qsl), free(J->seq), free(J->bt), free(J->tok_of), free(J->causal);
}

void fz_judged_ref(fz_judged *J, int64_t nreq, int64_t hq, int64_t hkv, int64_t D, double softcap,
                   double scale) {
    ref_input *in = &J->in;
    in->num_reqs = (int32_t)nreq;
    in->query_start_loc = J->qsl;
    in->seq_lens = J->seq;
    in->causal = J->causal;
    in->block_table = J->bt;
    in->block_table_stride = 1;
    in->num_blocks = (int32_t)nreq;
    in->num_heads = (int32_t)hq;
    in->num_kv_heads = (int32_t)hkv;
    in->head_dim = (int32_t)D;
    in->block_size = J->blk;
    in->window_left = in->window_right = -1;
    in->softcap = softcap;
    in->scale = scale;
    in->q = J->q, in->q_dtype = AG_F32;
    /* K and V widened to f32 exactly, whatever the op's types: one
     * kv_dtype serves ops whose K and V types differ */
    in->k_rows = J->k, in->v_rows = J->v, in->kv_dtype = AG_F32;
    in->k_scale = in->v_scale = 1.0;
    in->mask = J->mask;
    in->mask_tstride = hq * J->blk;
    in->mask_hstride = J->blk;
}

int fz_range_of(fz_range *R, const ref_input *in, ref_model md, size_t n, finding *f) {
    R->n = n;
    R->val = malloc(n * sizeof(double) + 8);
    R->lo = malloc(n * sizeof(double) + 8);
    R->hi = malloc(n * sizeof(double) + 8);
    if (!R->val || !R->lo || !R->hi) abort();
    oracle_clean(f);
    /* what the reference leaves open counts in the target's unjudged
     * share (the fuzz summary), by reason */
    ref_unjudged why;
    memset(&why, 0, sizeof why);
    if (ref_attention_range_why(in, md, R->val, R->lo, R->hi, &why) == 0) {
        reach_judged(n, &why);
        return 0;
    }
    oracle_found(f, ORACLE_BAD_INPUT, "the reference refused an input the contract fuzzer "
                 "calls judgeable (harness bug)");
    return -1;
}

void fz_range_free(fz_range *R) { free(R->val), free(R->lo), free(R->hi); }

void *fz_guarded(guard *g, const char *label, size_t bytes, int front, int misalign, oracle_id o) {
    if (guard_init_placed(g, label, bytes + (front ? (size_t)misalign : 0), front) != 0)
        return NULL;
    g->oracle = oracle_name(o);
    return (char *)g->buf + (front ? misalign : 0);
}

int fz_triaged(const char *env, const char *dflt, const char *name) {
    const char *skip = getenv(env);
    if (!skip) skip = dflt;
    /* a substring test, as the lists are written: "a,b,c" */
    return strstr(skip, name) != NULL;
}
