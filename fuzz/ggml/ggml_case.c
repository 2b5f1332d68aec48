/*
 * ggml_case.c — owns fuzz_ggml_contract's cases (ggml_case.h): decoding
 * the input into one ggml_flash_attn_ext call, the contract ggml.h
 * documents for it, the classes already reported, the description printed
 * before a finding fires.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/fz_judge.h"
#include "ggml_case.h"

void ggc_decode(fz_rd *r, fcase *c) {
    static const int64_t D[] = {1, 2, 3, 7, 8, 16, 32, 40, 64, 80, 96, 112, 128, 256, 0, 576};
    static const int64_t T[] = {1, 1, 1, 2, 3, 5, 8, 16, 63, 64, 65, 100, 128, 0, 1, 7};
    static const int64_t H[] = {1, 2, 3, 4, 6, 8, 12, 16};
    static const int64_t N[] = {1, 2, 17, 63, 64, 65, 100, 256, 511, 512, 513, 700, 1024, 1025, 0, 3};
    static const enum ggml_type TQ[] = {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32,
                                        GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
    static const enum ggml_type TK[] = {GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F32,
                                        GGML_TYPE_F32, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
    static const enum ggml_type TM[] = {GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16,
                                        GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_COUNT, GGML_TYPE_F32};
    static const int dM0[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 7, -100000, 64, 3};
    static const int dM1[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 63, -100000, 2, 5};
    static const float SC[] = {0, 0, 0, 0, 0, 0, 0, 0, 0.1f, 1, -1, 1e30f, NAN, 1e-30f, 2, 0};
    static const float MB[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 1, 16, -1, NAN, 0.5f};
    static const float CAP[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 50, 1, -5, NAN, 1e-3f};
    static const int SINKS[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 3};
    static const int PREC[] = {-1, -1, -1, -1, -1, -1, -1, -1, GGML_PREC_F32, GGML_PREC_F32,
                               GGML_PREC_F32, GGML_PREC_F32, GGML_PREC_DEFAULT, GGML_PREC_F16,
                               GGML_PREC_BF16, 7};
    static const float AMP[] = {1, 1, 4, 0.01f}, AMPV[] = {1, 1, 16, 1000};
    c->variant = (int)(fz_u8(r) % (unsigned)ggc_lib->nvar);
    /* one input in four runs threaded too: a disposable ggml threadpool per
     * compute costs ~20 ms on a loaded 2-core machine */
    static const int THR[] = {1, 1, 1, 1, 1, 2, 3, 4};
    c->threads = FZ_PICK(r, THR);
    c->dk = FZ_PICK(r, D);
    c->dv = fz_u8(r) % 8 != 7 ? c->dk : FZ_PICK(r, D);
    c->T = FZ_PICK(r, T);
    c->hq = FZ_PICK(r, H);
    unsigned hsel = fz_u8(r);
    c->hk = hsel % 8 != 7 ? c->hq / (int64_t)(1u << (hsel % 3)) : 1 + (int64_t)(hsel % 5);
    if (c->hk < 1) c->hk = 1;
    c->hv = fz_u8(r) % 8 != 7 ? c->hk : 1 + (int64_t)(fz_u8(r) % 5);
    c->nkv = FZ_PICK(r, N);
    c->nkv_v = fz_u8(r) % 16 != 15 ? c->nkv : c->nkv + (int64_t)(fz_u8(r) % 3) - 1;
    unsigned n3 = fz_u8(r) % 16;
    c->n3q = n3 >= 14 ? 2 : 1;
    c->n3k = n3 == 15 ? 1 : c->n3q;
    c->n3v = c->n3k;
    c->tq = FZ_PICK(r, TQ);
    c->tk = FZ_PICK(r, TK);
    c->tv = fz_u8(r) % 8 != 7 ? c->tk : FZ_PICK(r, TK);
    c->tm = FZ_PICK(r, TM);
    c->m0 = c->nkv + FZ_PICK(r, dM0);
    c->m1 = c->T + FZ_PICK(r, dM1);
    if (c->m0 < 0) c->m0 = 0;
    if (c->m1 < 0) c->m1 = 0;
    unsigned m2 = fz_u8(r) % 16;
    c->m2 = m2 < 11 ? 1 : m2 < 13 ? c->hq : m2 < 14 ? 2 : m2 < 15 ? 3 : 2 * c->hq;
    c->m3 = fz_u8(r) % 8 != 7 ? 1 : c->n3q + 1;
    c->mask_fill = (int)(fz_u8(r) % 4);
    c->scale = FZ_PICK(r, SC);
    if (c->scale == 0 && c->dk > 0) c->scale = 1.0f / sqrtf((float)c->dk);
    c->max_bias = FZ_PICK(r, MB);
    c->softcap = FZ_PICK(r, CAP);
    c->sinks = FZ_PICK(r, SINKS);
    c->prec = FZ_PICK(r, PREC);
    c->layout = (int)(fz_u8(r) % 2);
    c->pad = fz_u8(r) % 8 != 7 ? 0 : 1 + (int)(fz_u8(r) % 16);
    c->misalign = fz_u8(r) % 16 != 15 ? 0 : 1 + (int)(fz_u8(r) % 4);
    c->guard_front = (int)(fz_u8(r) % 2);
    c->amp_q = FZ_PICK(r, AMP), c->amp_k = FZ_PICK(r, AMP), c->amp_v = FZ_PICK(r, AMPV);
    c->seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 8; i++) c->seed = c->seed * 131 + fz_u8(r);
    /* keep one input's arithmetic (and the fp64 check) near 2^21 MACs */
    while (c->T * c->hq * c->nkv * (c->dk + c->dv + 1) * c->n3q > ((int64_t)1 << 21))
        c->nkv > c->T ? (c->nkv /= 2, c->nkv_v /= 2, c->m0 /= 2) : (c->T /= 2, c->m1 /= 2);
}

int ggc_judgeable(const fcase *c) { return c->dk == c->dv && c->hk == c->hv && c->T >= 1; }

int ggc_in_contract(const fcase *c, int *exact, char *why, size_t cap) {
    const int quant_k = c->tk == GGML_TYPE_Q8_0 || c->tk == GGML_TYPE_Q4_0;
    const int quant_v = c->tv == GGML_TYPE_Q8_0 || c->tv == GGML_TYPE_Q4_0;
    const struct { int ok; const char *name; } cond[] = {
        {c->tq == GGML_TYPE_F32, "q-not-f32"},
        {c->dk >= 1 && c->dv >= 1, "zero-head-dim"},
        {c->nkv_v == c->nkv, "v-rows-differ-from-k"},
        {c->hq % c->hk == 0, "hq-not-multiple-of-k-heads"},
        {c->hq % c->hv == 0, "hq-not-multiple-of-v-heads"},
        {c->n3q == c->n3k && c->n3q == c->n3v, "dim3-mismatch"},
        {isfinite(c->scale), "scale-not-finite"},
        {isfinite(c->softcap) && c->softcap >= 0, "softcap-negative-or-nan"},
        {isfinite(c->max_bias) && c->max_bias >= 0, "max-bias-negative-or-nan"},
        {c->max_bias <= 0 || c->tm != GGML_TYPE_COUNT, "alibi-without-mask"},
        {c->sinks == 0 || c->sinks == 1, "sinks-misshapen"},
        {c->prec == -1 || c->prec == GGML_PREC_F32 || c->prec == GGML_PREC_DEFAULT, "prec-not-f32"},
        {c->tm == GGML_TYPE_COUNT || c->tm == GGML_TYPE_F16, "mask-not-f16"},
        {c->tm == GGML_TYPE_COUNT || c->m0 >= c->nkv, "mask-row-shorter-than-n-kv"},
        {c->tm == GGML_TYPE_COUNT || c->m1 >= c->T, "mask-fewer-rows-than-queries"},
        {c->tm == GGML_TYPE_COUNT || (c->m2 >= 1 && c->hq % c->m2 == 0), "mask-dim2-not-dividing-hq"},
        {c->tm == GGML_TYPE_COUNT || (c->m3 >= 1 && c->n3q % c->m3 == 0), "mask-dim3-not-dividing"},
    };
    int ok = 1;
    why[0] = '\0';
    for (size_t i = 0; i < sizeof cond / sizeof cond[0]; i++) {
        if (cond[i].ok) continue;
        ok = 0;
        size_t u = strlen(why);
        snprintf(why + u, cap - u, "%s%s", u ? "," : "", cond[i].name);
    }
    *exact = ok && !quant_k && !quant_v && c->mask_fill != 3 && ggc_judgeable(c);
    return ok;
}

void ggc_describe(const fcase *c) {
    char why[256];
    int exact, inside = ggc_in_contract(c, &exact, why, sizeof why);
    fprintf(stderr, "  contract: %s%s\n", inside ? "inside" : "outside: ", why);
    fprintf(stderr,
            "  case: variant %s, threads %d, dk %lld dv %lld, T %lld, hq %lld hk %lld hv %lld, "
            "n_kv %lld (v %lld), n3 %lld/%lld/%lld, types q %d k %d v %d mask %d [%lld %lld %lld "
            "%lld] fill %d, scale %g max_bias %g softcap %g, sinks %d, prec %d, layout %d pad %d "
            "misalign %d guard %s, amp %g/%g/%g\n",
            ggc_lib->var[c->variant].name, c->threads, (long long)c->dk, (long long)c->dv,
            (long long)c->T, (long long)c->hq, (long long)c->hk, (long long)c->hv,
            (long long)c->nkv, (long long)c->nkv_v, (long long)c->n3q, (long long)c->n3k,
            (long long)c->n3v, c->tq, c->tk, c->tv, c->tm, (long long)c->m0, (long long)c->m1,
            (long long)c->m2, (long long)c->m3, c->mask_fill, (double)c->scale,
            (double)c->max_bias, (double)c->softcap, c->sinks, c->prec, c->layout, c->pad,
            c->misalign, c->guard_front ? "front" : "back", (double)c->amp_q, (double)c->amp_k,
            (double)c->amp_v);
}

/* The conditions of reports/findings/ggml-001..003 (contract breaks) and
 * ggml-006 (a wrong result inside the contract). */
static const char *const k_triaged = "q-not-f32,v-rows-differ-from-k,hq-not-multiple-of-v-heads,"
                                     "mask-row-shorter-than-n-kv,mask-fewer-rows-than-queries,"
                                     "softcap-tiled-kv-short";

int ggc_triaged(const char *name) { return fz_triaged("FUZZ_GGML_SKIP", k_triaged, name); }

int ggc_skipped(const fcase *c) {
    char why[256], *save = NULL;
    int exact;
    if (ggc_in_contract(c, &exact, why, sizeof why)) return 0;
    for (char *w = strtok_r(why, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (ggc_triaged(w)) return 1;
    return 0;
}
