/*
 * ggml_run.c — fuzz_ggml_contract's graph, buffers and values
 * (ggml_run.h).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/fz_judge.h"
#include "ggml_run.h"

agg_lib *ggc_lib;
ggc_fns ggc_more;

void ggc_load(void) {
    ag_msg msg;
    if (agg_load(NULL, &ggc_lib, &msg) != AG_OK) {
        fprintf(stderr, "fuzz_ggml_contract: %s\n", msg.text);
        exit(1);
    }
    *(void **)&ggc_more.ggml_view_4d = dlsym(ggc_lib->base_handle, "ggml_view_4d");
    *(void **)&ggc_more.ggml_nbytes = dlsym(ggc_lib->base_handle, "ggml_nbytes");
    *(void **)&ggc_more.ggml_prec_set_acc = dlsym(ggc_lib->base_handle, "ggml_prec_set_acc");
    *(void **)&ggc_more.ggml_fp16_to_fp32 = dlsym(ggc_lib->base_handle, "ggml_fp16_to_fp32");
    *(void **)&ggc_more.ggml_is_contiguous = dlsym(ggc_lib->base_handle, "ggml_is_contiguous");
    if (!ggc_more.ggml_view_4d || !ggc_more.ggml_nbytes || !ggc_more.ggml_fp16_to_fp32 ||
        !ggc_more.ggml_is_contiguous) {
        fprintf(stderr, "fuzz_ggml_contract: ggml lacks a needed symbol\n");
        exit(1);
    }
}

char *ggc_buffer(guard *g, const char *label, size_t bytes, int front, int misalign) {
    char *p = fz_guarded(g, label, bytes, front, misalign,
                         strcmp(label, "work") ? ORACLE_INPUT_BOUNDS : ORACLE_SCRATCH_BOUNDS);
    if (!p) abort();
    return p;
}

/* ---- values ---- */

/* f stored at p as type t (f32, f16 by ggml, bf16 rounded to nearest
 * even); other types are not written here. */
static void put(enum ggml_type t, char *p, float f) {
    if (t == GGML_TYPE_F32) memcpy(p, &f, 4);
    else if (t == GGML_TYPE_F16) {
        ggml_fp16_t h = ggc_lib->base.ggml_fp32_to_fp16(f);
        memcpy(p, &h, 2);
    } else if (t == GGML_TYPE_BF16) {
        const uint16_t h = ag_encode_bf16(f);   /* the ABI's bf16 (dtype.h) */
        memcpy(p, &h, 2);
    }
}

/* Fills every element of view x, amp times a uniform draw, or (mask_fill
 * >= 0) a mask entry of that class (random bytes for block-quantized
 * types). */
static void fill(struct ggml_tensor *x, float amp, int mask_fill, fz_rng *g) {
    const int64_t *ne = x->ne;
    const size_t es = x->type == GGML_TYPE_F32 ? 4 : 2;
    if (x->type != GGML_TYPE_F32 && x->type != GGML_TYPE_F16 && x->type != GGML_TYPE_BF16) {
        size_t n = ggc_more.ggml_nbytes(x);
        for (size_t i = 0; i < n; i++)
            ((unsigned char *)x->data)[i] = (unsigned char)(g->s >> 24), fz_frand(g);
        return;
    }
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                    char *p = (char *)x->data + i0 * es + i1 * x->nb[1] + i2 * x->nb[2] +
                              i3 * x->nb[3];
                    float f = amp * fz_frand(g);
                    if (mask_fill >= 0) {   /* a mask: 0, -inf, finite biases, NaN / +inf */
                        float u = fz_frand(g);
                        f = mask_fill == 0 ? 0.0f
                            : u < -0.3f    ? -INFINITY
                            : mask_fill == 1 ? 0.0f
                            : mask_fill == 3 && u > 0.9f ? (u > 0.95f ? NAN : INFINITY)
                                                         : 8.0f * (u - 1.0f) * 0.5f;
                    }
                    put(x->type, p, f);
                }
}

/* A [d, rows, heads, n3] operand: contiguous, or (layout 1) a view of
 * [d, heads, rows, n3] as llama.cpp permutes q, k and v, optionally with
 * padded rows (non-contiguous). */
static struct ggml_tensor *leaf(ggc_run *R, int i, enum ggml_type t, int64_t d, int64_t rows,
                                    int64_t heads, int64_t n3) {
    const fcase *c = &R->c;
    const int plain = t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
    const int64_t pad = plain ? c->pad : 0;
    struct ggml_tensor *b = ggc_lib->base.ggml_new_tensor_4d(
        R->ctx, t, d + pad, c->layout ? heads : rows, c->layout ? rows : heads, n3);
    R->base[i] = b;
    if (!pad && !c->layout) return R->t[i] = b;
    return R->t[i] = ggc_more.ggml_view_4d(R->ctx, b, d, rows, heads, n3,
                                        c->layout ? b->nb[2] : b->nb[1],
                                        c->layout ? b->nb[1] : b->nb[2], b->nb[3], 0);
}

void ggc_build(ggc_run *R) {
    const agg_base *f = &ggc_lib->base;
    const fcase *c = &R->c;
    size_t mem = 24 * f->ggml_tensor_overhead() + f->ggml_graph_overhead_custom(16, false) + 4096;
    R->ctx = f->ggml_init((struct ggml_init_params){mem, NULL, true});
    struct ggml_tensor *q = leaf(R, B_Q, c->tq, c->dk, c->T, c->hq, c->n3q);
    struct ggml_tensor *k = leaf(R, B_K, c->tk, c->dk, c->nkv, c->hk, c->n3k);
    struct ggml_tensor *v = leaf(R, B_V, c->tv, c->dv, c->nkv_v, c->hv, c->n3v);
    struct ggml_tensor *m = NULL;
    if (c->tm != GGML_TYPE_COUNT)
        m = R->t[B_MASK] = R->base[B_MASK] =
            f->ggml_new_tensor_4d(R->ctx, c->tm, c->m0, c->m1, c->m2, c->m3);
    R->t[B_OUT] = R->base[B_OUT] =
        f->ggml_flash_attn_ext(R->ctx, q, k, v, m, c->scale, c->max_bias, c->softcap);
    if (c->sinks) {
        R->t[B_SINKS] = R->base[B_SINKS] = f->ggml_new_tensor_1d(
            R->ctx, c->sinks == 3 ? GGML_TYPE_F16 : GGML_TYPE_F32, c->hq + (c->sinks == 2));
        f->ggml_flash_attn_ext_add_sinks(R->t[B_OUT], R->t[B_SINKS]);
    }
    if (c->prec >= 0 && ggc_more.ggml_prec_set_acc)
        ggc_more.ggml_prec_set_acc(R->t[B_OUT], (enum ggml_prec)c->prec);
    R->gf = f->ggml_new_graph_custom(R->ctx, 16, false);
    f->ggml_build_forward_expand(R->gf, R->t[B_OUT]);
}

/* Every operand and the output get a guarded buffer of exactly their size. */
void ggc_place(ggc_run *R) {
    const fcase *c = &R->c;
    static const char *const label[B_OUT + 1] = {"q", "k", "v", "mask", "sinks", "out"};
    for (int i = 0; i <= B_OUT; i++) {
        if (!R->base[i]) continue;
        const int mis = i <= B_V ? c->misalign : 0;
        R->base[i]->data =
            ggc_buffer(&R->buf[i], label[i], ggc_more.ggml_nbytes(R->base[i]), c->guard_front, mis);
        R->t[i]->data = (char *)R->base[i]->data + R->t[i]->view_offs;
    }
    /* one stream for the input, drawn in this order: the values are the
     * input's, whatever else it ran */
    fz_rng g;
    fz_rng_seed(&g, c->seed);
    fill(R->t[B_Q], c->amp_q, -1, &g);
    fill(R->t[B_K], c->amp_k, -1, &g);
    fill(R->t[B_V], c->amp_v, -1, &g);
    if (R->t[B_MASK]) fill(R->t[B_MASK], 1, c->mask_fill, &g);
    if (R->t[B_SINKS]) fill(R->t[B_SINKS], 3, -1, &g);
}

void ggc_teardown(ggc_run *R) {
    for (int i = 0; i < B_COUNT; i++) guard_free(&R->buf[i]);
    if (R->ctx) ggc_lib->base.ggml_free(R->ctx);
    memset(R, 0, sizeof *R);
}
