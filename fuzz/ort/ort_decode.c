/*
 * ort_decode.c — owns how fuzz_ort_contract decodes its input into a case
 * (ort_case.h): which op, the shapes and lengths of a prompt, a token
 * generation or a chunk (GQA) or of new keys over a past (Attention), the
 * attributes (mostly left out, sometimes just outside their documented
 * range), the one relation between dims and lengths the case breaks, and
 * FUZZ_ORT_SET's triage overrides.  Every byte string decodes to a case;
 * the tables weight the ordinary forms above the edge ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_case.h"

const char *const ortc_rel_name[R_COUNT] = {
    "none", "seqlens-beyond-capacity", "seqlens-negative", "seqlens-near-int32-max",
    "seqlens-below-query-length", "seqlens-beyond-total", "total-inconsistent",
    "seqlens-misshapen", "total-misshapen", "key-rows-differ", "kv-hidden-not-heads-x-d",
    "q-hidden-not-heads-x-d", "past-dims-mismatch", "past-key-without-value",
    "past-shorter-than-seqlens", "head-sink-misshapen", "bias-misshapen", "cos-cache-short",
    "present-bound-misshapen", "zero-batch-huge-dims", "mask-last-dim-short-or-long",
    "mask-dim-not-broadcastable", "nonpad-out-of-range", "nonpad-with-past",
    "nonpad-misshapen", "v-rows-differ", "qk-output-misshapen"};

/* GQA: a prompt (S == total, per-entry lengths up to S), token generation
 * (S == 1 over a past) or a chunk (B == 1, S > 1 over a past); the cache
 * one buffer of capacity M (past = present) or two (past P, present
 * max(total, P)).  Capacities reach 2^24 with short sequences: the
 * products B x N x S x capacity cross 2^31 with few pages touched. */
static void decode_gqa(fz_rd *r, fcase *c) {
    static const int64_t Bs[] = {1, 1, 1, 2, 2, 3, 4, 1};
    static const int64_t Ds[] = {8, 8, 16, 32, 64, 128, 16, 12};
    static const int64_t HKV[] = {1, 1, 2, 2, 4, 1, 3, 8};
    static const int64_t RATIO[] = {1, 2, 4, 1, 2, 8, 3, 1, 2, 16, 1, 64};
    static const int64_t SP[] = {1, 2, 3, 4, 5, 8, 16, 31};
    static const int64_t SC[] = {2, 3, 4, 7, 8, 5};
    static const int32_t PAST[] = {0, 1, 2, 5, 16, 63, 100, 300};
    static const int64_t EXTRA[] = {0, 0, 0, 1, 3, 17, 1 << 16, 1 << 20, 1 << 22, 1 << 24};
    static const int64_t WIN[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, -1, 1, 2, 3, 8, 0, -2,
                                  INT32_MAX, 5};
    static const float SCALE[] = {NAN, NAN, NAN, NAN, NAN, 0.125f, 0.5f, 0, -0.25f, 2.0f, 1e30f,
                                  INFINITY};
    static const float CAP[] = {NAN, NAN, NAN, NAN, NAN, NAN, 0, 5, 30, 1, -1, NAN};
    static const int64_t SMOOTH[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 1, 1, -1, 2};
    static const int64_t ROT[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 0, 1, 1};
    static const int64_t QK[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 1, 2, 0};
    const int mode = (int)(fz_u8(r) % 8);   /* 0..2 prompt, 3..5 generation, 6..7 chunk */
    c->B = mode >= 6 ? 1 : FZ_PICK(r, Bs);
    c->D = FZ_PICK(r, Ds);
    c->hkv = FZ_PICK(r, HKV);
    c->hq = c->hkv * FZ_PICK(r, RATIO);
    if (c->hq > 64) c->hq = 64;
    c->a_hq = c->hq, c->a_hkv = c->hkv;
    c->S = mode < 3 ? FZ_PICK(r, SP) : mode < 6 ? 1 : FZ_PICK(r, SC);
    c->P = 0;
    for (int64_t b = 0; b < c->B; b++) {
        const int32_t past = mode < 3 ? 0 : FZ_PICK(r, PAST) + (mode >= 6);
        c->len[b] = mode < 3 ? (b == 0 ? (int32_t)c->S : (int32_t)c->S - (int32_t)(fz_u8(r) % c->S))
                             : past + (int32_t)c->S;
        if (past > c->P) c->P = past;
    }
    c->total = ortc_max_len(c);
    c->past = mode < 3 ? fz_u8(r) % 4 == 3 : 1;   /* a prompt may carry an empty past */
    c->shared = c->past && fz_u8(r) % 2;
    const int64_t extra = FZ_PICK(r, EXTRA);
    /* shared: capacity >= total; separate: past buffer holds the longest
     * past, present max(total, P) */
    c->M = c->shared ? c->total + extra : c->total > c->P ? c->total : c->P;
    if (!c->shared && c->past) c->P += extra > 64 ? 0 : extra;
    if (!c->past) c->P = 0;
    static const int BIND[] = {BIND_OURS, BIND_OURS, BIND_ORT, BIND_NONE, BIND_OURS,
                               BIND_UNDECLARED};
    c->pres_bind = c->shared ? BIND_OURS : FZ_PICK(r, BIND);
    c->packed = fz_u8(r) % 8 == 7;
    c->sink = fz_u8(r) % 4 == 3;
    c->bias = fz_u8(r) % 6 == 5;
    c->a_window = FZ_PICK(r, WIN);
    c->a_scale = FZ_PICK(r, SCALE);
    c->a_softcap = FZ_PICK(r, CAP);
    c->a_smooth = FZ_PICK(r, SMOOTH);
    c->a_rotary = FZ_PICK(r, ROT);
    c->a_qk = FZ_PICK(r, QK);
    c->qk_bind = fz_u8(r) % 3 ? BIND_OURS : BIND_ORT;
    c->cos = c->a_rotary == 1 ? fz_u8(r) % 8 != 7 : fz_u8(r) % 16 == 15;
    /* one input in eight: token generation of 4 entries, 64 query heads
     * over one KV head, short sequences in a shared cache of 2^22..2^24
     * rows: B x N x S x capacity is 2^30..2^32 (those whose touched
     * memory, over_cap, would pass the cap run) */
    const unsigned big = fz_u8(r);
    if (big % 8 == 7) {
        /* f32: ORT's f16 path touches memory in proportion to the
         * capacity (2.4 GB here), its f32 path to the sequences (77 MB) */
        c->f16 = 0;
        c->B = 4, c->hkv = c->a_hkv = 1, c->hq = c->a_hq = 64, c->D = 8, c->S = 1;
        c->past = c->shared = 1, c->pres_bind = BIND_OURS, c->cos = 0, c->a_rotary = NOATTR;
        for (int64_t b = 0; b < c->B; b++) c->len[b] = 1 + (int32_t)((big >> 3) * (b + 1) % 40);
        c->total = ortc_max_len(c);
        c->M = c->total + ((int64_t)1 << (22 + (big >> 3) % 3));
    }
    /* an additive bias (B or 1, N or 1, S, total) */
    c->mrank = 4;
    c->mdim[0] = fz_u8(r) % 2 ? c->B : 1;
    c->mdim[1] = fz_u8(r) % 2 ? c->hq : 1;
    c->mdim[2] = c->S;
    c->mdim[3] = c->total;
}

/* Attention (opset 24): K/V of T new keys over an optional past of P,
 * 3-D (B, S, N*D) or 4-D (B, N, S, D); a boolean or additive mask of any
 * broadcastable shape; nonpad_kv_seqlen (external cache, no past). */
static void decode_att(fz_rd *r, fcase *c) {
    static const int64_t Bs[] = {1, 1, 1, 2, 2, 3};
    static const int64_t Ss[] = {1, 1, 2, 3, 4, 8, 16, 5};
    static const int64_t Ts[] = {1, 2, 3, 4, 8, 16, 33, 1};
    static const int64_t Ps[] = {0, 0, 0, 0, 1, 2, 5, 16};
    static const int64_t Ds[] = {8, 16, 32, 64, 5, 3, 128, 24};
    static const int64_t HKV[] = {1, 1, 2, 2, 4, 1, 3, 8};
    static const int64_t RATIO[] = {1, 2, 4, 1, 2, 8, 3, 1};
    static const int64_t CAUSAL[] = {NOATTR, NOATTR, 0, 1, 1, 1, 2, 0};
    static const float SCALE[] = {NAN, NAN, NAN, NAN, 0.125f, 0.5f, 2.0f, -0.5f, 0, 1e30f};
    static const float CAP[] = {NAN, NAN, NAN, NAN, NAN, 0, 5, 30, 1, -1};
    static const int64_t SPREC[] = {NOATTR, NOATTR, NOATTR, 1, 1, 10, 16, 11};
    static const int64_t QK[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 1, 2, 3};
    c->B = FZ_PICK(r, Bs);
    c->S = FZ_PICK(r, Ss);
    c->T = FZ_PICK(r, Ts);
    c->P = FZ_PICK(r, Ps);
    c->past = c->P > 0;
    c->D = FZ_PICK(r, Ds);
    c->Dv = fz_u8(r) % 8 == 7 ? FZ_PICK(r, Ds) : c->D;
    c->hkv = FZ_PICK(r, HKV);
    c->hq = c->hkv * FZ_PICK(r, RATIO);
    c->rank4 = fz_u8(r) % 3 == 2;
    /* 3-D needs the head counts; 4-D may leave them out */
    c->a_hq = c->rank4 && fz_u8(r) % 2 ? NOATTR : c->hq;
    c->a_hkv = c->a_hq == NOATTR ? NOATTR : c->hkv;
    c->a_causal = FZ_PICK(r, CAUSAL);
    c->a_scale = FZ_PICK(r, SCALE);
    c->a_softcap = FZ_PICK(r, CAP);
    c->a_sprec = FZ_PICK(r, SPREC);
    c->a_qk = FZ_PICK(r, QK);
    c->qk_bind = fz_u8(r) % 3 ? BIND_OURS : BIND_ORT;
    c->mask = (int)(fz_u8(r) % 3);          /* none, bool, additive */
    c->nonpad = !c->past && fz_u8(r) % 3 == 2;
    for (int64_t b = 0; b < c->B; b++)
        c->nonpad_v[b] = c->T - (int64_t)(fz_u8(r) % (unsigned)c->T);
    static const int BIND[] = {BIND_OURS, BIND_OURS, BIND_ORT, BIND_NONE, BIND_UNDECLARED};
    c->pres_bind = FZ_PICK(r, BIND);
    /* mask rank 2..4, each leading dim full or 1 (numpy broadcasting) */
    c->mrank = 2 + (int)(fz_u8(r) % 3);
    const unsigned bc = fz_u8(r);
    c->mdim[0] = bc & 1 ? c->B : 1;
    c->mdim[1] = bc & 2 ? c->hq : 1;
    c->mdim[2] = bc & 4 ? c->S : (bc & 8 ? 1 : c->S);
    c->mdim[3] = c->P + c->T;
}

/* Triage: FUZZ_ORT_SET="field=value,..." overrides decoded fields (the
 * ones a bisection of a finding varies); unknown fields are ignored. */
static void overrides(fcase *c) {
    const char *e = getenv("FUZZ_ORT_SET");
    char buf[256], *save = NULL;
    if (!e) return;
    snprintf(buf, sizeof buf, "%s", e);
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(w, '=');
        if (!eq) continue;
        *eq = '\0';
        const double v = atof(eq + 1);
        const struct { const char *n; int64_t *p; } I[] = {
            {"B", &c->B}, {"S", &c->S}, {"D", &c->D}, {"Dv", &c->Dv}, {"hq", &c->hq},
            {"hkv", &c->hkv}, {"P", &c->P}, {"T", &c->T}, {"M", &c->M}, {"a_hq", &c->a_hq},
            {"a_hkv", &c->a_hkv}, {"window", &c->a_window}, {"smooth", &c->a_smooth},
            {"rotary", &c->a_rotary}, {"qk", &c->a_qk}, {"causal", &c->a_causal},
            {"sprec", &c->a_sprec}};
        const struct { const char *n; int *p; } N[] = {
            {"f16", &c->f16}, {"threads", &c->threads}, {"packed", &c->packed}, {"past", &c->past},
            {"sink", &c->sink}, {"bias", &c->bias}, {"cos", &c->cos}, {"mask", &c->mask},
            {"nonpad", &c->nonpad}, {"rank4", &c->rank4}, {"pres", &c->pres_bind},
            {"shared", &c->shared}, {"rel", &c->rel}};
        for (size_t i = 0; i < sizeof I / sizeof I[0]; i++)
            if (!strcmp(w, I[i].n)) *I[i].p = (int64_t)v;
        for (size_t i = 0; i < sizeof N / sizeof N[0]; i++)
            if (!strcmp(w, N[i].n)) *N[i].p = (int)v;
        if (!strcmp(w, "scale")) c->a_scale = (float)v;
        if (!strcmp(w, "softcap")) c->a_softcap = (float)v;
        if (!strcmp(w, "amp")) c->amp_q = c->amp_k = c->amp_v = (float)v;
        if (!strcmp(w, "noscale")) c->a_scale = NAN;
        if (!strcmp(w, "nocap")) c->a_softcap = NAN;
        if (!strcmp(w, "len0")) c->len[0] = (int32_t)v;
        if (!strcmp(w, "total")) c->total = (int32_t)v;
    }
}

/* Whether relation rel changes anything for case c (else the case keeps
 * every relation): a perturbation of an input or output the case does not
 * have, or of an output ORT allocates (its shape is ORT's to choose), is
 * none. */
static int rel_applies(const fcase *c, int rel) {
    const int gqa = c->op == OP_GQA;
    switch (rel) {
    case R_SEQ_OVER_CAP: case R_SEQ_NEG: case R_SEQ_HUGE: case R_SEQ_OVER_TOTAL: case R_TOTAL_OFF:
    case R_SEQ_SHAPE: case R_TOTAL_SHAPE: case R_SINK_LEN: case R_BIAS_SHAPE: case R_COS_ROWS:
        return gqa && (rel != R_SINK_LEN || c->sink) && (rel != R_BIAS_SHAPE || c->bias) &&
               (rel != R_COS_ROWS || c->cos);
    case R_SEQ_BELOW_S: return gqa && c->S > 1;
    case R_KEY_ROWS: return gqa && !c->packed;
    case R_KV_HIDDEN: case R_Q_HIDDEN: return gqa ? !c->packed || rel == R_Q_HIDDEN : !c->rank4;
    case R_PAST_DIMS: case R_PAST_ONE: return c->past;
    case R_PAST_SHORT: return gqa && c->past && !c->shared && c->P > 0;
    case R_PRES_LEN: return c->pres_bind == BIND_OURS && !c->shared && (gqa || c->past);
    case R_QK_LEN: return c->a_qk != NOATTR && (!gqa || c->a_qk != 0) && c->qk_bind == BIND_OURS;
    case R_ZERO_BIG: return 1;
    case R_MASK_LAST: case R_MASK_DIM: return !gqa && c->mask;
    case R_NONPAD_BAD: case R_NONPAD_LEN: return !gqa && c->nonpad;
    case R_NONPAD_PAST: return !gqa && c->past;
    case R_V_ROWS: return !gqa;
    default: return 0;
    }
}

void ortc_decode(fz_rd *r, fcase *c) {
    static const float AMP[] = {1, 1, 4, 30}, AMPV[] = {1, 1, 16, 1000};
    static const int THR[] = {1, 1, 1, 2};
    memset(c, 0, sizeof *c);
    c->op = (int)(fz_u8(r) % 2);
    c->f16 = fz_u8(r) % 3 == 2;
    c->threads = FZ_PICK(r, THR);
    c->front = (int)(fz_u8(r) % 2);
    c->a_smooth = c->a_rotary = c->a_window = c->a_causal = c->a_sprec = c->a_qk = NOATTR;
    c->a_scale = c->a_softcap = NAN;
    if (c->op == OP_GQA) decode_gqa(r, c);
    else decode_att(r, c);
    c->amp_q = FZ_PICK(r, AMP), c->amp_k = FZ_PICK(r, AMP), c->amp_v = FZ_PICK(r, AMPV);
    /* half the inputs keep every relation, the rest break one */
    const unsigned rel = fz_u8(r);
    c->relv = fz_u8(r);
    c->rel = rel < 128 ? R_NONE : 1 + (int)(rel % (R_COUNT - 1));
    if (!rel_applies(c, c->rel)) c->rel = R_NONE;
    overrides(c);
    /* rotate and xor: no arithmetic overflow (OSS-Fuzz's UBSan build
     * traps unsigned overflow too) */
    c->seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 8; i++) c->seed = (c->seed << 9 | c->seed >> 55) ^ fz_u8(r);
}
