/*
 * ort_buffers.c — owns the buffers fuzz_ort_contract hands ORT and the
 * values in them (ort_run.h): what one input may cost (over the caps it
 * is not run), every tensor of ours in a guarded mapping of exactly its
 * size, and the inputs' values.
 */
#include <math.h>
#include <string.h>

#include "../contract/fz_judge.h"
#include "ort_run.h"

/* ---- limits: what one input may cost ---- */
#define TOUCH_CAP ((size_t)384 << 20)    /* bytes written by us or ORT's contract */
#define VIRT_CAP ((size_t)24 << 30)      /* bytes mapped (untouched pages cost nothing) */
#define REF_CAP ((size_t)1 << 22)        /* reference multiply-adds */

/* Element i of an f32 or f16 buffer p set to f (rounded to nearest). */
static void put_t(int et, void *p, size_t i, float f) {
    if (et == ORTA_T_FLOAT) ((float *)p)[i] = f;
    else ((uint16_t *)p)[i] = ag_encode_f16(f);
}


/* Bytes of every buffer we map and of what is written (by us, or by ORT
 * as the contract says), and ORT's own largest buffers (probabilities,
 * transposes, presents it allocates): an input over the caps is not run. */
int ortc_over_cap(call *K) {
    const fcase *c = &K->c;
    size_t virt = 0;
    for (int i = 0; i < SLOTS; i++) {
        const tens *t = &K->t[i];
        if (!t->name || (K->pk_alias && (i == K->nin + O_PK || i == K->nin + O_PV)))
            continue;   /* a present sharing the past's buffer maps nothing more */
        const size_t n = ortc_elems(t);
        if (n == SIZE_MAX || n > VIRT_CAP) return 1;
        virt += n * ortc_et_size(t->et);
    }
    const double e = c->f16 ? 2 : 4, B = (double)c->B, S = (double)c->S, hq = (double)c->hq;
    const double hkv = (double)c->hkv, D = (double)c->D;
    double live = 0, tl = 0;
    if (c->op == OP_GQA) {
        tl = (double)(c->total > 0 ? c->total : 0);
        const double plen = (double)(c->shared ? c->M : c->P);
        tl = tl > plen ? tl : plen;
        live = (double)ortc_max_len(c);
        live = live < tl ? live : tl;
        if (live < 0) live = 0;
    } else {
        tl = live = (double)(c->P + c->T);
    }
    const double probs = B * hq * S * tl * 4, used = B * hq * S * live * 4;
    K->product = B * hq * S * tl;
    const double kvio = B * S * (hq + 2 * hkv) * D * e * 2;
    const double pres = c->shared ? 0 : 2 * B * hkv * tl * D * e;
    /* the logits (GQA's f16, soft-cap and sink paths; Attention always;
     * written row by row up to each entry's length, never cleared whole),
     * the transposes, the presents ORT clears when not shared, the f32 output */
    const double ort_virt = probs + kvio + pres + B * S * hq * D * 4;
    /* GQA touches memory in proportion to the capacity, not to the
     * sequences (measured with 4 x 64 heads over 2^24 rows): the f32
     * flash path 614 MB (1/27 of the logits' bytes), the soft-cap, sink
     * and f16 paths 2.4-2.7 GB (1/6); taken as 1/24 and 1/4 */
    const int qk = c->op == OP_GQA && c->a_qk != NOATTR && c->a_qk != 0;
    const int flash = c->op == OP_GQA && !c->f16 && !(c->a_softcap > 0) && !c->sink &&
                      c->a_smooth != 1 && !qk;
    /* with qk_output every logit, in full (seen: +0.6 GB for 16 heads x 3
     * rows over 2^22 rows, the peak-RSS report below) */
    const double gqa_touch = qk ? probs : flash ? probs / 24 : probs / 4;
    const double ort_touch = (c->op == OP_GQA ? gqa_touch + 2 * used : 2 * used) + kvio + pres +
                             B * S * hq * D * 4;
    /* what we fill: every input but the caches' unused capacity */
    double ours = 0;
    for (int i = 0; i < K->nin; i++) {
        const tens *t = &K->t[i];
        if (!t->name) continue;
        const double n = (double)ortc_elems(t) * (double)ortc_et_size(t->et);
        ours += (i == G_PK || i == G_PV) && c->op == OP_GQA ? B * hkv * live * D * e : n;
    }
    for (int i = K->nin; i < SLOTS; i++)
        if (K->t[i].name && !(K->pk_alias && (i == K->nin + O_PK || i == K->nin + O_PV)))
            ours += (double)ortc_elems(&K->t[i]) * (double)ortc_et_size(K->t[i].et);
    return (double)virt + ort_virt > (double)VIRT_CAP ||
           ours + ort_touch > (double)TOUCH_CAP ||
           B * hq * S * (live > 0 ? live : 1) * D > (double)REF_CAP;
}

/* The present outputs of a shared cache take the past's buffer (ORT
 * writes the new rows into it); ORT's own outputs get none. */
int ortc_place(call *K) {
    const fcase *c = &K->c;
    static const char *const outl[O_N] = {"output", "present_key", "present_value", "output_qk"};
    for (int i = 0; i < SLOTS; i++) {
        tens *t = &K->t[i];
        if (!t->name) continue;
        const int out = i >= K->nin;
        if (out && t->bind != BIND_OURS) continue;
        if (out && K->pk_alias && (i - K->nin == O_PK || i - K->nin == O_PV)) {
            const tens *in = &K->t[i - K->nin == O_PK ? G_PK : G_PV];
            t->p = in->p, t->bytes = in->bytes;
            continue;
        }
        t->bytes = ortc_elems(t) * ortc_et_size(t->et);
        t->p = fz_guarded(&t->g, out ? outl[i - K->nin] : t->name, t->bytes, c->front, 0,
                          out ? ORACLE_SCRATCH_BOUNDS : ORACLE_INPUT_BOUNDS);
        if (!t->p) return -1;
        guard_arm(&t->g);   /* canaries around it */
        /* outputs: NaN everywhere, so an element ORT never writes is wrong */
        if (out) memset(t->p, 0xFF, t->bytes);
        t->ro = !out && !(K->pk_alias && (i == G_PK || i == G_PV));
    }
    return 0;
}

/* Values: q, k, v (and caches) uniform times their amplitude; lengths as
 * decoded; masks mostly open.  The caches get their live rows only (their
 * unused capacity stays untouched zero pages). */
void ortc_fill(call *K) {
    const fcase *c = &K->c;
    fz_rng g;
    fz_rng_seed(&g, c->seed);
    tens *t = K->t;
    for (int i = 0; i < K->nin; i++) {
        tens *x = &t[i];
        if (!x->name || !x->p) continue;
        const size_t n = ortc_elems(x);
        if (x->et == ORTA_T_INT32) {
            for (size_t j = 0; j < n; j++)
                ((int32_t *)x->p)[j] = i == G_TOT ? c->total : c->len[j % MAXB] - 1;
        } else if (x->et == ORTA_T_INT64) {
            for (size_t j = 0; j < n; j++) ((int64_t *)x->p)[j] = c->nonpad_v[j % MAXB];
        } else if (x->et == ORTA_T_BOOL) {
            for (size_t j = 0; j < n; j++) {
                fz_frand(&g);
                ((uint8_t *)x->p)[j] = (g.s >> 7 & 3) != 0;
            }
        } else if (c->op == OP_GQA && (i == G_PK || i == G_PV)) {
            /* BNSH: rows below each entry's past length */
            for (int64_t b = 0; b < x->dim[0]; b++)
                for (int64_t h = 0; h < x->dim[1]; h++) {
                    int64_t live = b < MAXB ? c->len[b] - c->S : 0;
                    if (live > x->dim[2]) live = x->dim[2];
                    for (int64_t r = 0; r < live; r++)
                        for (int64_t d = 0; d < x->dim[3]; d++)
                            put_t(x->et, x->p,
                                  (size_t)(((b * x->dim[1] + h) * x->dim[2] + r) * x->dim[3] + d),
                                  fz_frand(&g) * (i == G_PK ? c->amp_k : c->amp_v));
                }
        } else {
            const int is_mask = (c->op == OP_GQA && i == G_BIAS) || (c->op == OP_ATT && i == A_MASK);
            const float amp = i == 0 ? c->amp_q
                            : (c->op == OP_GQA ? i == G_V || i == G_PV : i == A_V || i == A_PV)
                                ? c->amp_v : c->amp_k;
            for (size_t j = 0; j < n; j++) {
                float f = fz_frand(&g) * amp;
                if (is_mask) {
                    const unsigned w = (unsigned)(g.s >> 20) % 8;
                    f = w < 4 ? 0.0f : w == 4 ? -INFINITY : w == 5 ? -3.0f : w == 6 ? 2.0f * f / amp
                                                                                : -1e4f;
                }
                if (c->op == OP_GQA && i == G_SINK) f = fz_frand(&g) * 3.0f;
                put_t(x->et, x->p, j, f);
            }
        }
    }
}

void ortc_teardown(call *K) {
    for (int i = 0; i < SLOTS; i++) {
        if (K->t[i].v) ortc_lib->f.ReleaseValue(K->t[i].v);
        guard_free(&K->t[i].g);
    }
}
