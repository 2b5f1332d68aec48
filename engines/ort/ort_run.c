/*
 * engines/ort/ort_run.c — one layer of a planned batch through ORT: per
 * shape class, gather the requests' keys and values from the paged cache
 * into the dense tensors of the plan's regions, stage the queries, fill
 * the lengths (and the mask), wrap it all as ORT tensors over the
 * harness's memory, Run, and copy the rows back where they are staged.
 *
 * ORT computes on the harness's buffers only: every tensor is made with
 * CreateTensorWithDataAsOrtValue over the scratch, the query or the
 * output, and every output (present K/V included) is pre-bound, so Run
 * allocates nothing of them; its kernels' temporaries come from the
 * group's allocator (ort_alloc.c).
 */
#include <stdio.h>
#include <string.h>

#include "ort_group.h"

typedef struct og_ctx {
    const og_plan *P;
    const og_class *c;
    const ag_run_args *a;
    char *scratch;
    int32_t layer, hq;
} og_ctx;

static int32_t q_len(const ag_batch *b, int32_t r) {
    return b->query_start_loc[r + 1] - b->query_start_loc[r];
}

static void *region(const og_ctx *x, int r) { return x->scratch + x->c->off[r]; }

/* Cell of key t of request r: [Hkv][D] in the cache's dtype. */
static const char *cell(const og_ctx *x, const void *cache, int32_t r, int32_t t) {
    const og_group *g = x->P->g;
    const int32_t *bt = x->P->b.block_table + (size_t)r * (size_t)x->P->b.block_table_stride;
    const size_t slot = (size_t)bt[t / g->bs] * (size_t)g->bs + (size_t)(t % g->bs);
    return (const char *)cache + slot * (size_t)g->hkv * (size_t)g->d * ag_dtype_size(g->kv_dt);
}

/* K or V of every member through its block table.  GQA: keys before the
 * new rows into the past tensor [B][Hkv][M][D], the new rows into the
 * key/value input [B][S][Hkv][D]; Attention: every key into [B][T][Hkv][D].
 * That input is zeroed first: its padding rows (past a request's own
 * rows) hold 0, never stale scratch.  Past rows beyond a request's own
 * are left as they are: no visible key lies there. */
static void gather(const og_ctx *x, const void *cache, int past_r, int new_r) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const size_t D = (size_t)g->d, hkv = (size_t)g->hkv, es = ag_dtype_size(g->t_dt);
    const size_t kd = ag_dtype_size(g->kv_dt);
    char *past = past_r >= 0 && c->size[past_r] ? region(x, past_r) : NULL;
    char *fresh = region(x, new_r);
    const size_t rows = g->op == OG_GQA ? (size_t)c->S : (size_t)c->T;
    memset(fresh, 0, c->size[new_r]);
    for (int32_t i = 0; i < c->nreq; i++) {
        const int32_t r = x->P->req[c->first + i], sl = x->P->b.seq_lens[r];
        const int32_t np = g->op == OG_GQA ? sl - q_len(&x->P->b, r) : 0;
        for (int32_t t = 0; t < sl; t++) {
            const char *src = cell(x, cache, r, t);
            for (size_t h = 0; h < hkv; h++) {
                char *dst = t < np ? past + (((size_t)i * hkv + h) * (size_t)c->M + (size_t)t) * D * es
                                   : fresh + (((size_t)i * rows + (size_t)(t - np)) * hkv + h) * D * es;
                og_convert(dst, g->t_dt, src + h * D * kd, g->kv_dt, D);
            }
        }
    }
}

/* Query rows into [B][S][hq][D] (padding rows zero), or in place. */
static void *stage_q(const og_ctx *x) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const size_t row = (size_t)x->hq * (size_t)g->d;
    const int32_t tok0 = x->P->b.query_start_loc[x->P->req[c->first]];
    if (c->direct) return (char *)(uintptr_t)x->a->q + (size_t)tok0 * row * ag_dtype_size(g->q_dt);
    char *q = region(x, OG_R_Q);
    const size_t es = ag_dtype_size(g->t_dt);
    memset(q, 0, (size_t)c->nreq * (size_t)c->S * row * es);
    for (int32_t i = 0; i < c->nreq; i++) {
        const int32_t r = x->P->req[c->first + i], t0 = x->P->b.query_start_loc[r];
        og_convert(q + (size_t)i * (size_t)c->S * row * es, g->t_dt,
                   (const char *)x->a->q + (size_t)t0 * row * ag_dtype_size(g->q_dt), g->q_dt,
                   (size_t)q_len(&x->P->b, r) * row);
    }
    return q;
}

/* The packed query input: per row its q heads (as stage_q left them, at
 * q), then its new K and V heads (gather's key/value rows), one row after
 * another in the plan's QKV region. */
static void *pack_qkv(const og_ctx *x, const char *q) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const size_t es = ag_dtype_size(g->t_dt);
    const size_t qb = (size_t)x->hq * (size_t)g->d * es, kb = (size_t)g->hkv * (size_t)g->d * es;
    const char *k = region(x, OG_R_K), *v = region(x, OG_R_V);
    char *o = region(x, OG_R_QKV);
    for (size_t r = 0; r < (size_t)c->nreq * (size_t)c->S; r++) {
        char *row = o + r * (qb + 2 * kb);
        memcpy(row, q + r * qb, qb);
        memcpy(row + qb, k + r * kb, kb);
        memcpy(row + qb + kb, v + r * kb, kb);
    }
    return o;
}

/* The rotary step's inputs: the staged q rows and the new K rows turned
 * back by their positions' angles, and the cos/sin caches (ort_rotary.c),
 * so that ORT's rotation hands its kernels the case's q and K. */
static void unrotate_class(const og_ctx *x, void *q) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const size_t es = ag_dtype_size(g->t_dt), D = (size_t)g->d;
    char *k = region(x, OG_R_K);
    for (int32_t i = 0; i < c->nreq; i++) {
        const int32_t r = x->P->req[c->first + i], ql = q_len(&x->P->b, r);
        const int32_t p0 = x->P->b.seq_lens[r] - ql;
        const size_t row0 = (size_t)i * (size_t)c->S;
        og_unrotate(g, (char *)q + row0 * (size_t)x->hq * D * es, ql, x->hq, p0);
        og_unrotate(g, k + row0 * (size_t)g->hkv * D * es, ql, g->hkv, p0);
    }
    og_rot_caches(g, c->T, region(x, OG_R_COS), region(x, OG_R_SIN));
}

static void *out_ptr(const og_ctx *x) {
    const og_class *c = x->c;
    const size_t row = (size_t)x->hq * (size_t)x->P->g->d;
    const int32_t tok0 = x->P->b.query_start_loc[x->P->req[c->first]];
    if (c->direct) return (char *)x->a->out + (size_t)tok0 * row * ag_dtype_size(x->P->g->out_dt);
    return region(x, OG_R_OUT);
}

static void unstage_out(const og_ctx *x) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    if (c->direct) return;
    const size_t row = (size_t)x->hq * (size_t)g->d, es = ag_dtype_size(g->t_dt);
    const char *o = region(x, OG_R_OUT);
    for (int32_t i = 0; i < c->nreq; i++) {
        const int32_t r = x->P->req[c->first + i], t0 = x->P->b.query_start_loc[r];
        og_convert((char *)x->a->out + (size_t)t0 * row * ag_dtype_size(g->out_dt), g->out_dt,
                   o + (size_t)i * (size_t)c->S * row * es, g->t_dt,
                   (size_t)q_len(&x->P->b, r) * row);
    }
}

/* The visibility of docs/design.md §2 for causal rows: key t is seen from query
 * row s (position p = seq_len - q_len + s) when t <= p and, with a window
 * of w keys, t > p - w.  Padding rows see key 0 alone, so no row is all
 * masked. */
static void fill_mask(const og_ctx *x) {
    const og_class *c = x->c;
    const int32_t w = x->P->g->layers[x->layer].key.window;
    uint8_t *m = region(x, OG_R_MASK);
    for (int32_t i = 0; i < c->nreq; i++) {
        const int32_t r = x->P->req[c->first + i], ql = q_len(&x->P->b, r);
        const int32_t sl = x->P->b.seq_lens[r];
        for (int32_t s = 0; s < c->S; s++) {
            uint8_t *row = m + ((size_t)i * (size_t)c->S + (size_t)s) * (size_t)c->T;
            const int64_t p = (int64_t)sl - ql + s;
            for (int32_t t = 0; t < c->T; t++)
                row[t] = s < ql ? t <= p && (w < 0 || t > p - w) : t == 0;
        }
    }
}

/* The tensors of one call, made over our buffers; released by the caller. */
typedef struct og_call {
    const char *in_names[12], *out_names[3];
    OrtValue *in[12], *out[3];
    size_t nin, nout;
} og_call;

static OrtStatus *tensor(const og_ctx *x, void *p, int et, const int64_t *shape, size_t rank,
                         OrtValue **v) {
    static int64_t dummy;   /* zero-sized tensors still want a data pointer */
    size_t n = 1;
    for (size_t i = 0; i < rank; i++) n *= (size_t)shape[i];
    const size_t es = et == ORTA_T_FLOAT || et == ORTA_T_INT32 ? 4
                    : et == ORTA_T_INT64 ? 8 : et == ORTA_T_BOOL ? 1 : 2;
    return x->P->g->lib->f.CreateTensorWithDataAsOrtValue(x->P->g->lib->cpu, p ? p : &dummy,
                                                          n * es, shape, rank, et, v);
}

#define IN(name, p, et, ...)                                                             \
    do {                                                                                \
        const int64_t sh_[] = {__VA_ARGS__};                                            \
        k->in_names[k->nin] = (name);                                                   \
        if (!s) s = tensor(x, (p), (et), sh_, sizeof sh_ / sizeof sh_[0], &k->in[k->nin++]); \
    } while (0)
#define OUT(name, p, et, ...)                                                            \
    do {                                                                                \
        const int64_t sh_[] = {__VA_ARGS__};                                            \
        k->out_names[k->nout] = (name);                                                 \
        if (!s) s = tensor(x, (p), (et), sh_, sizeof sh_ / sizeof sh_[0], &k->out[k->nout++]); \
    } while (0)

static OrtStatus *gqa_call(const og_ctx *x, og_call *k) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const og_layer *L = &g->layers[x->layer];
    const int et = g->t_dt == AG_F16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const int64_t B = c->nreq, S = c->S, hq = x->hq, hkv = g->hkv, D = g->d;
    const int64_t M = c->M, sep = g->io == OG_IO_GQA_SEPARATE, packed = g->io == OG_IO_GQA_PACKED;
    int32_t *lens = region(x, OG_R_LENS);
    for (int32_t i = 0; i < c->nreq; i++) lens[i] = x->P->b.seq_lens[x->P->req[c->first + i]] - 1;
    lens[c->nreq] = c->T;   /* total_sequence_length: the longest request */
    OrtStatus *s = NULL;
    void *q = stage_q(x);
    if (g->rotary != OG_ROT_NONE) unrotate_class(x, q);
    if (packed) {
        IN("query", pack_qkv(x, q), et, B, S, (hq + 2 * hkv) * D);
    } else {
        IN("query", q, et, B, S, hq * D);
        IN("key", region(x, OG_R_K), et, B, S, hkv * D);
        IN("value", region(x, OG_R_V), et, B, S, hkv * D);
    }
    void *pk = c->size[OG_R_PAST_K] ? region(x, OG_R_PAST_K) : NULL;
    void *pv = c->size[OG_R_PAST_V] ? region(x, OG_R_PAST_V) : NULL;
    IN("past_key", pk, et, B, hkv, M, D);
    IN("past_value", pv, et, B, hkv, M, D);
    IN("seqlens_k", lens, ORTA_T_INT32, B);
    k->in_names[k->nin] = "total_sequence_length";
    if (!s) s = tensor(x, lens + c->nreq, ORTA_T_INT32, NULL, 0, &k->in[k->nin++]);
    if (g->rotary != OG_ROT_NONE) {
        IN("cos_cache", region(x, OG_R_COS), et, c->T, D / 2);
        IN("sin_cache", region(x, OG_R_SIN), et, c->T, D / 2);
    }
    if (L->key.sink == OG_SINK_HEAD)
        IN("head_sink", g->t_dt == AG_F16 ? (void *)L->sinks_h : (void *)L->sinks, et, hq);
    OUT("output", out_ptr(x), et, B, S, hq * D);
    /* shared: present is past, the same memory, which is how ORT knows */
    OUT("present_key", sep ? region(x, OG_R_PRES_K) : pk, et, B, hkv, sep ? c->T : M, D);
    OUT("present_value", sep ? region(x, OG_R_PRES_V) : pv, et, B, hkv, sep ? c->T : M, D);
    return s;
}

static OrtStatus *attention_call(const og_ctx *x, og_call *k, int masked) {
    const og_group *g = x->P->g;
    const og_class *c = x->c;
    const int et = g->t_dt == AG_F16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const int64_t B = c->nreq, S = c->S, T = c->T, hq = x->hq, hkv = g->hkv, D = g->d;
    int64_t *lens = region(x, OG_R_LENS);
    for (int32_t i = 0; i < c->nreq; i++) lens[i] = x->P->b.seq_lens[x->P->req[c->first + i]];
    OrtStatus *s = NULL;
    IN("Q", stage_q(x), et, B, S, hq * D);
    IN("K", region(x, OG_R_K), et, B, T, hkv * D);
    IN("V", region(x, OG_R_V), et, B, T, hkv * D);
    if (masked) {
        fill_mask(x);
        IN("attn_mask", region(x, OG_R_MASK), ORTA_T_BOOL, B, 1, S, T);
    }
    IN("nonpad_kv_seqlen", lens, ORTA_T_INT64, B);
    OUT("Y", out_ptr(x), et, B, S, hq * D);
    return s;
}

static ag_status run_class(og_ctx *x, ag_msg *msg) {
    const og_group *g = x->P->g;
    const int masked = og_masked(x->P, x->c, x->layer);
    const int io = g->op == OG_GQA ? g->io : masked ? OG_IO_ATT_MASK : OG_IO_ATT_CAUSAL;
    OrtSession *sess;
    ag_status st = og_session((og_group *)g, x->layer, io, &sess, msg);
    if (st != AG_OK) return st;
    gather(x, x->a->k_cache, OG_R_PAST_K, OG_R_K);
    gather(x, x->a->v_cache, OG_R_PAST_V, OG_R_V);
    og_call k = {0};
    const char *what = g->op == OG_GQA ? "GroupQueryAttention" : "Attention";
    OrtStatus *s = g->op == OG_GQA ? gqa_call(x, &k) : attention_call(x, &k, masked);
    og_bridge_take((og_bridge *)&g->bridge);
    if (!s)
        s = g->lib->f.Run(sess, NULL, k.in_names, (const OrtValue *const *)k.in, k.nin,
                          k.out_names, k.nout, k.out);
    for (size_t i = 0; i < k.nin; i++) g->lib->f.ReleaseValue(k.in[i]);
    for (size_t i = 0; i < k.nout; i++) g->lib->f.ReleaseValue(k.out[i]);
    st = og_bridge_verdict((og_bridge *)&g->bridge, orta_check(g->lib, s, msg, what), msg, what);
    if (st != AG_OK) return st;
    unstage_out(x);
    return AG_OK;
}

ag_status og_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const og_plan *P = plan;
    if (!a || !a->q || !a->k_cache || !a->v_cache || !a->out)
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "run: args or a buffer is NULL");
    if (layer < 0 || layer >= P->g->nl)
        return orta_fail(msg, AG_REFUSED, AG_R_MISMATCH, "ORT_BAD_LAYER",
                         "run: layer %d outside 0..%d", (int)layer, (int)P->g->nl - 1);
    if (a->num_tokens != P->T)
        return orta_fail(msg, AG_REFUSED, AG_R_MISMATCH, "ORT_BAD_ARGS",
                         "run: num_tokens %d, the plan's batch has %d", (int)a->num_tokens,
                         (int)P->T);
    if (P->scratch > 0 &&
        (!a->scratch || a->scratch_bytes < P->scratch || (uintptr_t)a->scratch % 64 != 0))
        return orta_fail(msg, AG_REFUSED, AG_R_SCRATCH, "ORT_BAD_SCRATCH",
                         "run: scratch %zu bytes at %p; the plan needs %zu, 64-byte aligned",
                         a->scratch_bytes, a->scratch, P->scratch);
    og_ctx x = {P, NULL, a, a->scratch, layer, P->g->layers[layer].key.hq};
    for (int32_t i = 0; i < P->ncls; i++) {
        x.c = &P->cls[i];
        ag_status st = run_class(&x, msg);
        if (st != AG_OK) return st;
    }
    return orta_ok(msg);
}
