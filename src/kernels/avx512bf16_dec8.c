/*
 * avx512bf16_dec8.c — the decode tile's dot-product path for fp8 caches
 * (e4m3fn, e5m2): the slice layouts and the two micro-kernels that
 * avx512_decode.c's driver calls through attn__dec_dot.  Compiled with
 * the avx512bf16 flags (VDPBF16PS, and VBMI's two-table byte permute);
 * the avx512bf16 table routes single-token fp8 items here under the AMD
 * tuning profile when the builder allows rounding (table_avx512bf16.c).
 *
 * Why: the exact decode tile widens every code to fp32 and spends one FMA
 * per element and query row; at D 128 and 4 rows per KV head that is 64
 * FMAs a key, which bounds it by its arithmetic, not by the bytes it reads,
 * so fp8's half-size rows do not make it faster than bf16
 * (docs/perf-notes.md, "e4m3 in the decode tile").  Here
 *
 *   codes -> bf16: every fp8 code has an exact bf16 image (3 or 2
 *        mantissa bits, exponents well inside bf16's, subnormals
 *        included).  Two VPERMI2B on 128-entry tables give the image's
 *        low and high bytes of 64 codes, one VPTERNLOGD adds the sign, two
 *        byte unpacks make the words: 5 instructions per 64 codes.
 *   Q.K  q rounded to bf16 once; per 64-dim slice and key, 2 VDPBF16PS
 *        per row (32 products each); 4 keys x 4 rows of accumulators and
 *        the transpose-and-add tree of the exact tile (fold4, fold16).
 *   P.V  two keys at a time: their V codes interleaved byte by byte
 *        before the lookup, so each word pair holds one dim of both keys
 *        and one VDPBF16PS against the pair of their weights adds 16 dims
 *        of both.  Odd counts pair the last key with a row of zero codes.
 *
 * Numerics (docs/engine.md, "Rounding"): q and the weights rounded to
 * bf16, as the bf16 prefill tile on this profile rounds them, and the
 * softmax's l sums the rounded weights (softmax_rows_pf, round).  K and V
 * are exact.  VDPBF16PS reads bf16 subnormals as zero and flushes
 * subnormal results (|x| < 2^-126: no fp8 image is that small).  NaN codes
 * have NaN images and propagate as in the exact tile: no NaN test per step.
 */
#include "avx512_inl.h"

#define AVX512BF16_DR 4 /* rows per block, Q.K and P.V */
#define DK ATTN__AVX512_DEC_KEYS

/* --------------------------------------------------- the bf16 images */

/* The bf16 bits of fp8 magnitude c (0..127: the code without its sign),
 * as constant expressions.  NaN images keep the code's payload where the
 * fp32 widening (dtype.h) puts it: the image is that fp32's top half. */
/* (unsigned: the branches not taken may not shift a negative value) */
#define E4_E(c) ((unsigned)(c) >> 3)
#define E4_M(c) ((unsigned)(c) & 7u)
#define E4M3_IMG(c)                                                                      \
    ((c) == 0x7f ? 0x7ff0                                                                \
     : E4_E(c)   ? (E4_E(c) + 120) << 7 | E4_M(c) << 4         /* 2^(e-7) (1 + m/8) */  \
     : E4_M(c) == 0 ? 0                                                                  \
     : E4_M(c) == 1 ? 118 << 7                                 /* m 2^-9 */              \
     : E4_M(c) < 4  ? (119 << 7 | (E4_M(c) - 2) << 6)                                    \
                    : (120 << 7 | (E4_M(c) - 4) << 5))
#define E5_E(c) ((unsigned)(c) >> 2)
#define E5_M(c) ((unsigned)(c) & 3u)
#define E5M2_IMG(c)                                                                      \
    (E5_E(c) == 31  ? (E5_M(c) ? 0x7fc0 | E5_M(c) << 5 : 0x7f80)                         \
     : E5_E(c)      ? (E5_E(c) + 112) << 7 | E5_M(c) << 5      /* 2^(e-15) (1 + m/4) */ \
     : E5_M(c) == 0 ? 0                                                                  \
     : E5_M(c) == 1 ? 111 << 7                                 /* m 2^-16 */             \
     : E5_M(c) == 2 ? 112 << 7                                                           \
                    : (112 << 7 | 1 << 6))
#define R4(f, b) f((b)), f((b) + 1), f((b) + 2), f((b) + 3)
#define R16(f, b) R4(f, b), R4(f, (b) + 4), R4(f, (b) + 8), R4(f, (b) + 12)
#define R64(f, b) R16(f, b), R16(f, (b) + 16), R16(f, (b) + 32), R16(f, (b) + 48)
#define E4_HI(c) (uint8_t)(E4M3_IMG(c) >> 8)
#define E4_LO(c) (uint8_t)(E4M3_IMG(c) & 0xff)
#define E5_HI(c) (uint8_t)(E5M2_IMG(c) >> 8)
#define E5_LO(c) (uint8_t)(E5M2_IMG(c) & 0xff)

/* [format][hi, lo][c] */
static const uint8_t img_bytes[2][2][128] __attribute__((aligned(64))) = {
    {{R64(E4_HI, 0), R64(E4_HI, 64)}, {R64(E4_LO, 0), R64(E4_LO, 64)}},
    {{R64(E5_HI, 0), R64(E5_HI, 64)}, {R64(E5_LO, 0), R64(E5_LO, 64)}},
};

typedef struct img_tab {
    __m512i h0, h1, l0, l1; /* high and low bytes of magnitudes 0-63, 64-127 */
} img_tab;

INLINE img_tab img_tab_of(int e5m2) {
    const uint8_t(*t)[128] = img_bytes[e5m2];
    img_tab r = {_mm512_load_si512(t[0]), _mm512_load_si512(t[0] + 64), _mm512_load_si512(t[1]),
                 _mm512_load_si512(t[1] + 64)};
    return r;
}

/* The images of 64 codes x: w0 the words of bytes 0-7 of each 128-bit
 * lane, w1 those of bytes 8-15 (VPERMI2B reads the low 7 bits of each
 * index; the sign goes on the high byte afterwards). */
INLINE void img64(const img_tab *t, __m512i x, __m512i *w0, __m512i *w1) {
    const __m512i h = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(t->h0, x, t->h1), x,
                                                _mm512_set1_epi8((char)0x80), 0xF8); /* h | x & 80 */
    const __m512i l = _mm512_permutex2var_epi8(t->l0, x, t->l1);
    *w0 = _mm512_unpacklo_epi8(l, h);
    *w1 = _mm512_unpackhi_epi8(l, h);
}

/* ------------------------------------------------------ the layouts */

/* q: dim e of a slice pairs with the code img64 puts at the same word,
 * w0 (words 0-31) then w1 (words 32-63). */
static size_t q_pos(size_t e) { return e % 16 / 8 * 32 + e / 16 * 8 + e % 8; }

/* the accumulators: P.V's vector j (of 4) holds dims 16 l + 4 j + t of the
 * slice in lane 4 l + t (the interleaved pair of keys, looked up and
 * unpacked as above). */
static size_t acc_pos(size_t e) { return e % 16 / 4 * 16 + e / 16 * 4 + e % 4; }

/* q_pos for ns whole slices of a row: each 16 dims rounded to bf16 (RNE,
 * as attn__f32_to_bf16 for every value VDPBF16PS does not read as zero),
 * the low 8 of each 16 into w0, the high 8 into w1. */
static void q_whole(const float *q, size_t ns, size_t R, uint16_t *blk) {
    for (size_t sl = 0; sl < ns; sl++, q += 64, blk += R * 64) {
        const __m512i x01 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(q + 16), _mm512_loadu_ps(q));
        const __m512i x23 = (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(q + 48), _mm512_loadu_ps(q + 32));
        _mm512_storeu_si512(blk, _mm512_shuffle_i64x2(x01, x23, 0x88));
        _mm512_storeu_si512(blk + 32, _mm512_shuffle_i64x2(x01, x23, 0xDD));
    }
}

/* acc_pos for ns whole slices: vector j of a slice holds 4 dims of each
 * 16, a 4 x 4 transpose of 128-bit blocks (its own inverse). */
static void acc_whole(float *acc, size_t ns, float *accp, int to_slices) {
    for (size_t sl = 0; sl < ns; sl++, acc += 64, accp += 64) {
        const float *src = to_slices ? acc : accp;
        float *dst = to_slices ? accp : acc;
        const __m512 n0 = _mm512_loadu_ps(src), n1 = _mm512_loadu_ps(src + 16);
        const __m512 n2 = _mm512_loadu_ps(src + 32), n3 = _mm512_loadu_ps(src + 48);
        const __m512 a = _mm512_shuffle_f32x4(n0, n1, 0x44), b = _mm512_shuffle_f32x4(n0, n1, 0xEE);
        const __m512 c = _mm512_shuffle_f32x4(n2, n3, 0x44), d = _mm512_shuffle_f32x4(n2, n3, 0xEE);
        _mm512_storeu_ps(dst, _mm512_shuffle_f32x4(a, c, 0x88));
        _mm512_storeu_ps(dst + 16, _mm512_shuffle_f32x4(a, c, 0xDD));
        _mm512_storeu_ps(dst + 32, _mm512_shuffle_f32x4(b, d, 0x88));
        _mm512_storeu_ps(dst + 48, _mm512_shuffle_f32x4(b, d, 0xDD));
    }
}

/* ---------------------------------------------------------- Q.K block */

/* Raw dots of R rows of q (bf16, slice-major: attn__dec_dot) with keys
 * [0, n) of the chunk into s; keys of the last group of 4 past n repeat
 * key n - 1 (the softmax masks them).  FULL: every slice whole (D a
 * multiple of 64), so K loads unmasked; else every load is masked. */
INLINE void qk8_block(int R, int FULL, int e5m2, const uint16_t *qb, size_t nc, uint64_t tm,
                      const void *const *krow, const void *const *kpf, int32_t n, float *s) {
    const img_tab t = img_tab_of(e5m2);
    __m512 u[AVX512BF16_DR][DK / 4];
    for (int32_t i0 = 0; i0 < n; i0 += 4) {
        const unsigned char *kr[4];
        const char *pk[4];
        dec_group_rows(krow, kpf, i0, n, kr, pk);
        __m512 c[AVX512BF16_DR][4];
        UNROLL
        for (int r = 0; r < R; r++)
            UNROLL
            for (int j = 0; j < 4; j++) c[r][j] = _mm512_setzero_ps();
        const uint16_t *qv = qb;
        for (size_t sl = 0; sl < nc; sl++, qv += (size_t)R * 64) {
            const __mmask64 m = sl + 1 == nc ? tm : ~(__mmask64)0;
            __m512i w0[4], w1[4];
            UNROLL
            for (int j = 0; j < 4; j++) {
                if (kpf) prefetch_hint(pk[j] + sl * 64, 1); /* one line per load */
                const __m512i x = FULL ? _mm512_loadu_si512(kr[j] + sl * 64)
                                       : _mm512_maskz_loadu_epi8(m, kr[j] + sl * 64);
                img64(&t, x, &w0[j], &w1[j]);
            }
            UNROLL
            for (int r = 0; r < R; r++) {
                const __m512bh q0 = (__m512bh)_mm512_load_si512(qv + 64 * r);
                const __m512bh q1 = (__m512bh)_mm512_load_si512(qv + 64 * r + 32);
                UNROLL
                for (int j = 0; j < 4; j++) {
                    c[r][j] = _mm512_dpbf16_ps(c[r][j], (__m512bh)w0[j], q0);
                    c[r][j] = _mm512_dpbf16_ps(c[r][j], (__m512bh)w1[j], q1);
                }
            }
        }
        UNROLL
        for (int r = 0; r < R; r++) u[r][i0 / 4] = fold4(c[r][0], c[r][1], c[r][2], c[r][3]);
    }
    fold_store(R, u, n, s);
}

#define QK8_FN(name_, F_, E5_)                                                            \
    static void name_(int32_t R, const uint16_t *qb, size_t nc, uint64_t tm,              \
                      const void *const *krow, const void *const *kpf, int32_t n, float *s) { \
        switch (R) {                                                                      \
        case 1: qk8_block(1, F_, E5_, qb, nc, tm, krow, kpf, n, s); break;                \
        case 2: qk8_block(2, F_, E5_, qb, nc, tm, krow, kpf, n, s); break;                \
        case 3: qk8_block(3, F_, E5_, qb, nc, tm, krow, kpf, n, s); break;                \
        default: /* (D 128 with the slice count a constant: the loop unrolls) */          \
            if (nc == 2) qk8_block(4, F_, E5_, qb, 2, tm, krow, kpf, n, s);                \
            else qk8_block(4, F_, E5_, qb, nc, tm, krow, kpf, n, s);                       \
            break;                                                                        \
        }                                                                                 \
    }
QK8_FN(qk_e4m3_part, 0, 0)
QK8_FN(qk_e4m3_full, 1, 0)
QK8_FN(qk_e5m2_part, 0, 1)
QK8_FN(qk_e5m2_full, 1, 1)

/* ---------------------------------------------------------- P.V block */

static const uint8_t zero_row[64] __attribute__((aligned(64)));

/* acc = acc alpha + sum over keys [ilo, ihi) of the weights pp (key pairs,
 * row r's pair j at pp[r * DK / 2 + j]) times V, slice sl of R rows.
 * The next chunk's V lines (vpf) in address order, one per key and
 * slice, as the exact tile's P.V (pv_pf). */
INLINE void pv8_slice(int R, int FULL, int e5m2, float *accp, size_t qs, size_t nc, size_t sl,
                      uint64_t ml, const float *alpha, const uint32_t *pp,
                      const void *const *vrow, const void *const *vpf, int32_t ilo, int32_t ihi) {
    const img_tab t = img_tab_of(e5m2);
    pv_pf pc = pv_pf_start((int32_t)sl, (int32_t)nc, ilo, ihi);
    __m512 c[AVX512BF16_DR][4];
    UNROLL
    for (int r = 0; r < R; r++) {
        const __m512 al = _mm512_set1_ps(alpha[r]);
        UNROLL
        for (int v = 0; v < 4; v++)
            c[r][v] = _mm512_mul_ps(_mm512_load_ps(accp + (size_t)r * qs + sl * 64 + 16 * (size_t)v), al);
    }
    for (int32_t i = ilo, j = 0; i < ihi; i += 2, j++) {
        const int two = i + 1 < ihi;
        const unsigned char *va = (const unsigned char *)vrow[i] + sl * 64;
        const unsigned char *vb = two ? (const unsigned char *)vrow[i + 1] + sl * 64 : zero_row;
        if (vpf) {
            UNROLL
            for (int k = 0; k < 2; k++) {
                if (k == 1 && !two) break;
                if (vpf[pc.key]) prefetch_hint((const char *)vpf[pc.key] + (size_t)pc.part * 64, 1);
                pv_pf_next(&pc);
            }
        }
        const __m512i a = FULL ? _mm512_loadu_si512(va) : _mm512_maskz_loadu_epi8(ml, va);
        const __m512i b = FULL ? _mm512_loadu_si512(vb) : _mm512_maskz_loadu_epi8(ml, vb);
        __m512i w[4];
        img64(&t, _mm512_unpacklo_epi8(a, b), &w[0], &w[1]);
        img64(&t, _mm512_unpackhi_epi8(a, b), &w[2], &w[3]);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m512bh pb = (__m512bh)_mm512_set1_epi32((int)pp[(size_t)r * (DK / 2) + (size_t)j]);
            UNROLL
            for (int v = 0; v < 4; v++) c[r][v] = _mm512_dpbf16_ps(c[r][v], (__m512bh)w[v], pb);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int v = 0; v < 4; v++)
            _mm512_store_ps(accp + (size_t)r * qs + sl * 64 + 16 * (size_t)v, c[r][v]);
}

/* The weights of keys [ilo, ihi) of R rows as bf16 key pairs (exact: the
 * softmax rounded them; the pair past an odd count holds 0). */
static void weight_pairs(int32_t R, const float *p, int32_t ilo, int32_t ihi, uint32_t *pp) {
    for (int32_t r = 0; r < R; r++)
        for (int32_t k = ilo; k < ihi; k += 32) {
            const int32_t left = ihi - k;
            const __mmask16 m0 = tail_mask((size_t)left);
            const __mmask16 m1 = left > 16 ? tail_mask((size_t)(left - 16)) : 0;
            const float *pr = p + (size_t)r * DK + k;
            const __m512bh w = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, pr + 16),
                                                   _mm512_maskz_loadu_ps(m0, pr));
            _mm512_storeu_si512(pp + (size_t)r * (DK / 2) + (size_t)(k - ilo) / 2, (__m512i)w);
        }
}

#define PV8_CASE(R_, F_, E5_)                                                             \
    case (R_) * 2 + (F_):                                                                 \
        pv8_slice(R_, F_, E5_, accp, qs, nc, sl, ml, alpha, pp, vrow, vpf, ilo, ihi);      \
        break;
#define PV8_FN(name_, E5_)                                                                \
    static void name_(int32_t R, float *accp, size_t qs, size_t nc, uint64_t tm,          \
                      const float *alpha, const float *p, const void *const *vrow,        \
                      const void *const *vpf, int32_t ilo, int32_t ihi) {                 \
        uint32_t pp[AVX512BF16_DR * DK / 2] __attribute__((aligned(64)));                 \
        weight_pairs(R, p, ilo, ihi, pp);                                                 \
        for (size_t sl = 0; sl < nc; sl++) {                                              \
            const uint64_t ml = sl + 1 == nc ? tm : ~(uint64_t)0;                         \
            switch (R * 2 + (tm == ~(uint64_t)0)) {                                       \
                PV8_CASE(1, 0, E5_) PV8_CASE(1, 1, E5_) PV8_CASE(2, 0, E5_)                \
                PV8_CASE(2, 1, E5_) PV8_CASE(3, 0, E5_) PV8_CASE(3, 1, E5_)                \
                PV8_CASE(4, 0, E5_) PV8_CASE(4, 1, E5_)                                    \
            default: break;                                                               \
            }                                                                             \
        }                                                                                 \
    }
PV8_FN(pv_e4m3, 0)
PV8_FN(pv_e5m2, 1)

/* ------------------------------------------------------------ entries */

static const attn__dec_dot dot_e4m3_part = {q_pos, acc_pos, q_whole, acc_whole, qk_e4m3_part, pv_e4m3};
static const attn__dec_dot dot_e4m3_full = {q_pos, acc_pos, q_whole, acc_whole, qk_e4m3_full, pv_e4m3};
static const attn__dec_dot dot_e5m2_part = {q_pos, acc_pos, q_whole, acc_whole, qk_e5m2_part, pv_e5m2};
static const attn__dec_dot dot_e5m2_full = {q_pos, acc_pos, q_whole, acc_whole, qk_e5m2_full, pv_e5m2};

void attn_decode_fp8e4m3__avx512bf16(const attn_tile_args *a, int32_t n) {
    attn_decode_dot__avx512(a, n, ATTN_DTYPE_FP8_E4M3,
                            a->head_dim % 64 ? &dot_e4m3_part : &dot_e4m3_full);
}
void attn_decode_fp8e5m2__avx512bf16(const attn_tile_args *a, int32_t n) {
    attn_decode_dot__avx512(a, n, ATTN_DTYPE_FP8_E5M2,
                            a->head_dim % 64 ? &dot_e5m2_part : &dot_e5m2_full);
}

/* ------------------------------------------------- conversions (test hook) */

/* The images img64 gives, widened to fp32 (exact) and put back in code
 * order through q_pos: every code must come out as dtype.h widens it. */
INLINE void cvt_images(int e5m2, const void *s, void *d, size_t n) {
    const img_tab t = img_tab_of(e5m2);
    for (size_t i = 0; i < n; i += 64) {
        const size_t k = n - i < 64 ? n - i : 64;
        const __mmask64 m = k == 64 ? ~(__mmask64)0 : ((__mmask64)1 << k) - 1;
        uint16_t w[64] __attribute__((aligned(64)));
        __m512i w0, w1;
        img64(&t, _mm512_maskz_loadu_epi8(m, (const uint8_t *)s + i), &w0, &w1);
        _mm512_store_si512(w, w0);
        _mm512_store_si512(w + 32, w1);
        for (size_t e = 0; e < k; e++) ((uint32_t *)d)[i + e] = (uint32_t)w[q_pos(e)] << 16;
    }
}
void attn__cvt_dec8_e4m3__avx512bf16(const void *s, void *d, size_t n) { cvt_images(0, s, d, n); }
void attn__cvt_dec8_e5m2__avx512bf16(const void *s, void *d, size_t n) { cvt_images(1, s, d, n); }
