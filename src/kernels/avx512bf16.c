/*
 * avx512bf16.c — the pairs tile of the "avx512bf16" table (table_avx512bf16.c:
 * the avx512 table plus bf16-KV tiles on VDPBF16PS): the general tile with
 * its Q.K dot products on VDPBF16PS.  Compiled with the avx512 flags plus
 * -mavx512bf16 (mk/isa.mk); dispatch.c selects the table only on a CPU with
 * AVX512_BF16 and every avx512 feature.
 *
 * Owns: attn_pairs_bf16__avx512bf16 (K packing into bf16 pairs, Q split
 * into bf16 terms, the VDPBF16PS micro-kernel).  Which bf16 items take it
 * is the table's routing.  Everything else (chunk loop, masking, softmax,
 * P.V, load_q, store, the f32/f16 tiles) is avx512.c's: the driver
 * attn__avx512_tile takes this file's pack/dots as callbacks.
 *
 * Numerics (what differs from the fp32 twins):
 *   - VDPBF16PS multiplies bf16 pairs exactly and accumulates in fp32 with
 *     round-to-nearest-even; it treats bf16 subnormals as zero and flushes
 *     subnormal results, which only matters for |values| < 2^-126.
 *   - K is bf16 already (exact).  Q is split into two bf16 terms,
 *     q = hi + lo + e with hi = bf16(q), lo = bf16(q - hi), |e| <= 2^-16 |q|:
 *     two VDPBF16PS per pair and a logit error far inside the fp32
 *     tolerance; one rounding of q would cost ~30x that tolerance on
 *     uniform inputs.
 *   - P.V stays fp32 (V widened exactly, p not rounded).
 *   - Prefill on the AMD tuning profile takes avx512bf16_lanes.c instead,
 *     which rounds q (one term) and the softmax weights to bf16 for twice
 *     the speed there; attn_builder_info.bf16_rounding says so, and the
 *     harness holds those runs to the bound derived for that rounding
 *     (ATTN_PRECISION_EXACT forbids it).
 */
/* AVX512_TILE, AVX512_NV, AVX512_QR and the driver attn__avx512_tile: avx512_inl.h */
#include "avx512_inl.h"

/* 32 bf16 elements starting at element e of a row of D (zeros past D). */
static inline __mmask32 tail_mask32(size_t left) {
    return left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1u);
}

/* 16x16 transpose of 32-bit lanes (one bf16 pair per lane). */
INLINE void transpose16i(__m512i r[16]) {
    __m512i t[16];
    UNROLL
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    UNROLL
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    UNROLL
    for (int i = 0; i < 2; i++) {
        UNROLL
        for (int k = 0; k < 4; k++) {
            t[8 * i + k] = _mm512_shuffle_i32x4(r[8 * i + k], r[8 * i + k + 4], 0x88);
            t[8 * i + k + 4] = _mm512_shuffle_i32x4(r[8 * i + k], r[8 * i + k + 4], 0xDD);
        }
    }
    UNROLL
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_i32x4(t[k], t[k + 8], 0xDD);
    }
}

/* K of the chunk -> Kp[d/2][AVX512_TILE] pairs (K[i][d], K[i][d+1]) per 32-bit
 * lane, the operand layout of VDPBF16PS with keys in lanes.  An odd D gets
 * a zero partner in its last pair (the masked 16-bit load zeroes it). */
static void pack_pairs(const attn_tile_args *a, const void *const *krow,
                       const void *const *kpf, int32_t n, void *w) {
    const size_t D = (size_t)a->head_dim, D2 = (D + 1) / 2;
    uint32_t *kp = w;
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
        for (size_t p0 = 0; p0 < D2; p0 += 16) {
            const __mmask32 m = tail_mask32(D - 2 * p0);
            __m512i r[16];
            UNROLL
            for (int i = 0; i < 16; i++)
                r[i] = (i0 + i < n)
                           ? _mm512_maskz_loadu_epi16(m, (const uint16_t *)krow[i0 + i] + 2 * p0)
                           : _mm512_setzero_si512();
            /* next chunk's same bytes (see avx512.c) */
            if (kpf && (p0 * 4) % 64 == 0)
                for (int i = 0; i < 16; i++)
                    if (kpf[i0 + i])
                        _mm_prefetch((const char *)kpf[i0 + i] + p0 * 4, _MM_HINT_T1);
            transpose16i(r);
            const size_t np = D2 - p0 < 16 ? D2 - p0 : 16;
            for (size_t j = 0; j < np; j++)
                _mm512_store_si512((void *)(kp + (p0 + j) * AVX512_TILE + i0), r[j]);
        }
    }
}

/* Q terms per dot: Q split into bf16 hi + lo (the numerics note at the
 * top says why one rounding of Q is not enough). */
#define TERMS 2

/* qb: per row, TERMS arrays of D2 pairs (hi first, then lo). */
INLINE void dots_pairs_rows(int R, const uint32_t *qb, size_t D2, const uint32_t *kp, float *s) {
    __m512 c[AVX512_QR][AVX512_NV];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int j = 0; j < AVX512_NV; j++) c[r][j] = _mm512_setzero_ps();
    for (size_t d = 0; d < D2; d++) {
        const uint32_t *kd = kp + d * AVX512_TILE;
        const __m512bh k0 = (__m512bh)_mm512_load_si512((const void *)kd);
        const __m512bh k1 = (__m512bh)_mm512_load_si512((const void *)(kd + 16));
        const __m512bh k2 = (__m512bh)_mm512_load_si512((const void *)(kd + 32));
        const __m512bh k3 = (__m512bh)_mm512_load_si512((const void *)(kd + 48));
        UNROLL
        for (int r = 0; r < R; r++) {
            UNROLL
            for (int u = 0; u < TERMS; u++) {
                const __m512bh b =
                    (__m512bh)_mm512_set1_epi32((int)qb[((size_t)r * TERMS + (size_t)u) * D2 + d]);
                c[r][0] = _mm512_dpbf16_ps(c[r][0], b, k0);
                c[r][1] = _mm512_dpbf16_ps(c[r][1], b, k1);
                c[r][2] = _mm512_dpbf16_ps(c[r][2], b, k2);
                c[r][3] = _mm512_dpbf16_ps(c[r][3], b, k3);
            }
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int j = 0; j < AVX512_NV; j++) _mm512_store_ps(s + (size_t)r * AVX512_TILE + 16 * j, c[r][j]);
}

/* 16 bf16 (low or high half of a pair vector) -> fp32, exact. */
INLINE __m512 avx512bf16_widen16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rows [r0, r0 + R): Q converted to bf16 pairs on the stack (re-done per
 * chunk: ~D/16 instructions against 2*D*TERMS dot instructions per row),
 * then the micro-kernel. */
static void dots_pairs(const attn_tile_args *a, int32_t r0, int32_t R, const void *w, float *s) {
    const size_t D = (size_t)a->head_dim, D2 = (D + 1) / 2;
    uint32_t qb[AVX512_QR * TERMS * (ATTN_MAX_HEAD_DIM / 2)] __attribute__((aligned(64)));
    for (int32_t r = 0; r < R; r++) {
        const float *q = a->q + (size_t)(r0 + r) * D;
        uint32_t *dst = qb + (size_t)r * TERMS * D2;
        for (size_t d = 0; d < D; d += 32) {
            const size_t left = D - d;
            const __mmask16 mlo = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1u);
            const __mmask16 mhi = left >= 32 ? 0xffff
                                  : left > 16 ? (__mmask16)((1u << (left - 16)) - 1u)
                                              : 0;
            const __m512 lo = _mm512_maskz_loadu_ps(mlo, q + d);
            const __m512 hi = _mm512_maskz_loadu_ps(mhi, q + d + 16);
            /* RNE to bf16; element 2i is the low half of pair i */
            const __m512i pairs = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            const size_t np = (left + 1) / 2 < 16 ? (left + 1) / 2 : 16;
            const __mmask16 pm = (__mmask16)((1u << np) - 1u);
            _mm512_mask_storeu_epi32(dst + d / 2, pm, pairs);
            /* lo = bf16(q - hi): q - hi is exact in fp32 (Sterbenz-like:
             * hi is q rounded to 8 bits), so hi + lo carries 16 bits */
            const __m512 rlo = _mm512_sub_ps(lo, avx512bf16_widen16(_mm512_castsi512_si256(pairs)));
            const __m512 rhi = _mm512_sub_ps(hi, avx512bf16_widen16(_mm512_extracti64x4_epi64(pairs, 1)));
            _mm512_mask_storeu_epi32(dst + D2 + d / 2, pm, (__m512i)_mm512_cvtne2ps_pbh(rhi, rlo));
        }
    }
    const uint32_t *kp = w;
    switch (R) {
    case 1: dots_pairs_rows(1, qb, D2, kp, s); break;
    case 2: dots_pairs_rows(2, qb, D2, kp, s); break;
    case 3: dots_pairs_rows(3, qb, D2, kp, s); break;
    case 4: dots_pairs_rows(4, qb, D2, kp, s); break;
    case 5: dots_pairs_rows(5, qb, D2, kp, s); break;
    default: dots_pairs_rows(6, qb, D2, kp, s); break;
    }
}

/* The general tile with the chunk's K packed in bf16 pairs and Q.K on
 * VDPBF16PS (the table routes short multi-token bf16 items here). */
void attn_pairs_bf16__avx512bf16(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_BF16, pack_pairs, dots_pairs);
}
