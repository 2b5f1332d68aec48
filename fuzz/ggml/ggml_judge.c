/*
 * ggml_judge.c — fuzz_ggml_contract's verdicts (ggml_judge.h): the op's
 * operands read back from ggml's tensors into the reference's layout,
 * ggml's declared rounding, the comparison, the reach rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engines/ggml/ggml_branches.h"
#include "../../harness/judge/compare.h"
#include "../contract/fz_judge.h"
#include "ggml_judge.h"

/* Element of type t (f32, f16 or bf16) at p, widened exactly. */
static double get(enum ggml_type t, const char *p) {
    if (t == GGML_TYPE_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    if (t == GGML_TYPE_F16) return ggc_more.ggml_fp16_to_fp32(h);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}


/* Byte offset of element (i0, i1, i2, i3) of view x. */
static int64_t idx(const struct ggml_tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return i0 * (int64_t)x->nb[0] + i1 * (int64_t)x->nb[1] + i2 * (int64_t)x->nb[2] +
           i3 * (int64_t)x->nb[3];
}

/* The ABI dtype of ggml type t (f16, bf16; f32 for the rest). */
static ag_dtype ag_of(enum ggml_type t) {
    return t == GGML_TYPE_F16 ? AG_F16 : t == GGML_TYPE_BF16 ? AG_BF16 : AG_F32;
}

/* Element (i0, i1, i2, i3) of view x (f32, f16 or bf16: each exact in f32). */
static float elem(const struct ggml_tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (float)get(x->type, (const char *)x->data + idx(x, i0, i1, i2, i3));
}

/* ggml's ALiBi slope of head h of n_head (ggml_flash_attn_ext's
 * max_bias rule, in f32 as ggml computes it). */
static float ggml_slope(float max_bias, uint32_t n_head, uint32_t h) {
    const uint32_t nl = 1u << (uint32_t)floor(log2(n_head));
    const float m0 = powf(2.0f, -(max_bias) / nl), m1 = powf(2.0f, -(max_bias / 2.0f) / nl);
    return h < nl ? powf(m0, h + 1) : powf(m1, 2 * (h - nl) + 1);
}

/* The op's inputs as the reference reads them: each of the n3 batch
 * entries a non-causal request of T queries over its n_kv keys (one block
 * of n_kv slots), q [tokens][hq][dk] and K/V rows [slot][hk][dk] widened to
 * f32 (exactly: K and V may differ in type), the mask made dense
 * [tokens][hq][n_kv], ggml's ALiBi slopes scaling it, the sinks, and a
 * negative scale moved onto q (a sign flip). */
static void judged_init(const ggc_run *R, fz_judged *J) {
    const fcase *c = &R->c;
    const int64_t n3 = c->n3q, T = c->T, hq = c->hq, hk = c->hk, nkv = c->nkv, D = c->dk;
    const struct ggml_tensor *q = R->t[B_Q], *k = R->t[B_K], *v = R->t[B_V], *m = R->t[B_MASK];
    memset(J, 0, sizeof *J);
    const double sign = c->scale < 0 ? -1.0 : 1.0;
    J->blk = (int32_t)nkv;
    if (fz_judged_alloc(J, n3, n3 * T, hq, hk, D, m != NULL) != 0) abort();
    if (c->max_bias > 0) J->slopes = malloc((size_t)hq * sizeof(float));
    if (c->sinks) J->sinks = malloc((size_t)hq * sizeof(float));
    if ((c->max_bias > 0 && !J->slopes) || (c->sinks && !J->sinks)) abort();
    for (int64_t r = 0; r < n3; r++) {
        J->qsl[r] = (int32_t)(r * T);
        J->seq[r] = (int32_t)nkv;
        J->bt[r] = (int32_t)r;
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((r * T + t) * hq + h) * D + d] = (float)(sign * elem(q, d, t, h, r));
        for (int64_t j = 0; j < nkv; j++)
            for (int64_t h = 0; h < hk; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((r * nkv + j) * hk + h) * D + d);
                    J->k[at] = elem(k, d, j, h, r);
                    J->v[at] = elem(v, d, j, h, r);
                }
        for (int64_t t = 0; m && t < T; t++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t j = 0; j < nkv; j++)
                    J->mask[((r * T + t) * hq + h) * nkv + j] = (float)ggc_more.ggml_fp16_to_fp32(
                        *(const ggml_fp16_t *)((const char *)m->data +
                                               idx(m, j, t, h % c->m2, r % c->m3)));
    }
    J->qsl[n3] = (int32_t)(n3 * T);
    for (int64_t h = 0; J->slopes && h < hq; h++)
        J->slopes[h] = ggml_slope(c->max_bias, (uint32_t)hq, (uint32_t)h);
    for (int64_t h = 0; J->sinks && h < hq; h++)
        J->sinks[h] = (float)get(R->t[B_SINKS]->type,
                                 (const char *)R->t[B_SINKS]->data + h * R->t[B_SINKS]->nb[0]);
    fz_judged_ref(J, n3, hq, hk, D, c->softcap, fabs((double)c->scale));
    ref_input *in = &J->in;
    in->block_size = nkv > 0 ? (int32_t)nkv : 1;   /* n_kv 0: a request with no key */
    in->alibi_slopes = J->slopes;
    in->sinks = J->sinks;
    /* ggml scales the mask by the head's slope (its ALiBi), no positions */
    in->mask_times_slope = 1;
}

/* The rounding ggml declares (the adapter's, docs/engines.md): q in K's
 * type before Q.K, f32 weights, an f16 V accumulated in f16. */
static ag_precision ggml_precision(const fcase *c) {
    const ag_dtype kt = ag_of(c->tk);
    return (ag_precision){kt, AG_F32, c->tv == GGML_TYPE_F16 ? AG_F16 : AG_F32, 1};
}

void ggc_judge(const ggc_run *R, const float *out, const char *which) {
    const fcase *c = &R->c;
    fz_judged J;
    judged_init(R, &J);
    const size_t n = (size_t)(c->n3q * c->T * c->hq * c->dv);
    const ref_model md =
        cmp_error_model(ggml_precision(c), J.in.q_dtype, J.in.kv_dtype, (int32_t)c->dk);
    fz_range rg;
    finding f;
    if (fz_range_of(&rg, &J.in, md, n, &f) == 0) {
        cmp_result res;
        const double *val = rg.val, *lo = rg.lo, *hi = rg.hi;
        if (!cmp_compare(val, lo, hi, out, AG_F32, n, cmp_tolerance(AG_F32), &res)) {
            const size_t w = res.worst, dv = (size_t)c->dv, hq = (size_t)c->hq;
            oracle_found(&f, ORACLE_DIFFERENTIAL,
                         "ggml_flash_attn_ext (%s run, variant %s): %zu of %zu elements outside "
                         "the reference's range; worst at n3 %zu, row %zu, head %zu, dim %zu: "
                         "got %.9g want %.9g (ggml's rounding allows [%.9g, %.9g])",
                         which, ggc_lib->var[c->variant].name, res.bad, n,
                         w / (dv * hq * (size_t)c->T), (w / (dv * hq)) % (size_t)c->T,
                         (w / dv) % hq, w % dv, (double)out[w], val[w], lo[w], hi[w]);
        }
    }
    fz_range_free(&rg);
    fz_judged_free(&J);
    /* fired once the buffers are freed: the abort's report is the last word */
    if (f.oracle != ORACLE_NONE) {
        ggc_describe(c);
        oracle_fire(&f);
    }
}

void ggc_refused_inside(const fcase *c, enum ggml_status st, int inside, const char *which) {
    if (st == GGML_STATUS_SUCCESS || !inside) return;
    finding f;
    oracle_found(&f, ORACLE_BAD_INPUT, "ggml_graph_compute (%s run) returned status %d on an "
                 "input inside the documented contract", which, (int)st);
    ggc_describe(c);
    oracle_fire(&f);
}

/* The reach table's class of ggml type t. */
static int ggp_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? GGP_F32 : t == GGML_TYPE_F16 ? GGP_F16 : t == GGML_TYPE_BF16 ? GGP_BF16
                                                                                          : GGP_OTHER;
}

void ggc_op_branches(const fcase *c, int threads, int *on) {
    const ggp_op o = {c->T, c->hq, c->n3q, c->nkv, c->dk, c->dv, c->hk,
                      ggp_type(c->tq), ggp_type(c->tk), ggp_type(c->tv),
                      c->tm != GGML_TYPE_COUNT, c->sinks != 0, c->softcap, c->max_bias,
                      threads, ggp_simd_width(ggc_lib->var[c->variant].name)};
    ggp_op_branches(&o, on);
}

const char *ggc_known_wrong(const fcase *c) {
    int on[GGP_COUNT] = {0};
    ggc_op_branches(c, 1, on);   /* the tiled choice does not depend on the threads */
    /* reports/findings/ggml-006: the last KV tile's padding (-inf) goes
     * through the soft cap and comes out as -softcap, a weight */
    if (on[P_TILED] && on[P_TILE_KV_SHORT] && on[P_CAP_TILED] &&
        ggc_triaged("softcap-tiled-kv-short"))
        return "ggml-006";
    return NULL;
}
