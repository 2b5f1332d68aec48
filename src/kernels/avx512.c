/*
 * avx512.c — the AVX-512 (F/BW/VL/DQ) twins of the portable kernels,
 * listed by the "avx512" table (table_avx512.c, which also routes each item
 * to one of the tiles).  Compiled with the avx512 -m flags of mk/isa.mk;
 * dispatch.c uses the table only on a CPU that has every one of them.
 *
 * Owns: attn_flash_{f32,bf16,f16}__avx512 (the general tile),
 * attn_load_q_*__avx512, attn_store_*__avx512, and attn__avx512_tile(), the
 * flash-style tile driver that avx512bf16.c reuses with its own K packing
 * and Q.K micro-kernel.  Shared primitives (exp, tanh, softmax, P.V, key
 * addresses) are in avx512_inl.h.  Decode items go to avx512_decode.c,
 * many-row fp32 items to avx512_lanes.c; merge stays the portable one.
 *
 * Tile algorithm (one item = n_tok * g query rows of one KV head over the
 * keys [k0, k1)), per chunk of AVX512_TILE = 64 keys:
 *   1. skip the chunk if no row sees any of it (window, split, causal);
 *   2. pack K transposed into the thread's KV work area, Kt[d][64] fp32
 *      (16x16 in-register transposes, bf16/f16 widened on the way); V is
 *      read in place or, for bf16/f16 items with many rows, widened once
 *      into the second half of the KV area;
 *   3. Q.K: blocks of up to AVX512_QR = 6 rows x 64 keys = 24 zmm accumulators;
 *   4. online softmax a block of rows at a time, vectorised over the 64
 *      keys: soft cap, ALiBi, the exact visibility mask, max, exp, sum;
 *   5. P.V on the same 6 rows: 24 zmm accumulators rescaled on load.
 *   Steps 3-5 run phase by phase over groups of row blocks so that the
 *   packed K and the V rows stay in L1; the next chunk's lines are
 *   prefetched one per load (the paged layout puts a head's consecutive
 *   blocks Hkv blocks apart, so the hardware streamer restarts at each).
 *
 * Masking is the portable kernel's rule (mask.h): masked keys get exactly
 * zero weight, a row that sees nothing of a chunk keeps its state bit for
 * bit.  For finite inputs the result equals the portable kernel's up to
 * fp32 rounding.  One documented difference: a non-finite V value of a key
 * masked for one row of a block but visible to another reaches the masked
 * row as 0 * inf; the portable kernel never reads it.
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "avx512_inl.h"
#include "cvt_gen.h"
#include "mask.h"

#define SB 8 /* row blocks per phase group (see the chunk loop) */

/* Items with more rows than this widen V to fp32 once per chunk (the
 * widening is then shared by many row blocks); smaller (decode) items
 * widen V on the fly inside P.V, which saves a 2 x D x AVX512_TILE x 4 byte
 * round trip through L1/L2 per chunk. */
#define WIDEN_V_ROWS 8

/* ------------------------------------------------------------- packing */

/* K of the chunk's n keys (row pointers krow) -> Kt[d][AVX512_TILE] fp32.  Key
 * lanes >= n of a partial 16-key group are zero; groups wholly past n are
 * not written (their scores are masked to -inf before any use). */
INLINE void avx512_pack_kt(attn_dtype dt, const attn_tile_args *a, const void *const *krow,
                           const void *const *kpf, int32_t n, float *kt) {
    const size_t D = (size_t)a->head_dim, es = attn__dtype_size(dt);
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
        for (size_t d0 = 0; d0 < D; d0 += 16) {
            const __mmask16 m = tail_mask(D - d0);
            __m512 r[16];
            UNROLL
            for (int i = 0; i < 16; i++)
                r[i] = (i0 + i < n)
                           ? load16(dt, (const unsigned char *)krow[i0 + i] + d0 * es, m)
                           : _mm512_setzero_ps();
            /* the same bytes of the next chunk's keys: one prefetch per
             * load, spread through the work instead of a burst */
            if (kpf && (d0 * es) % 64 == 0)
                for (int i = 0; i < 16; i++)
                    if (kpf[i0 + i])
                        _mm_prefetch((const char *)kpf[i0 + i] + d0 * es, _MM_HINT_T1);
            transpose16(r);
            const size_t nd = D - d0 < 16 ? D - d0 : 16;
            for (size_t j = 0; j < nd; j++) _mm512_store_ps(kt + (d0 + j) * AVX512_TILE + i0, r[j]);
        }
    }
}

static void pack_f32(const attn_tile_args *a, const void *const *krow, const void *const *kpf,
                     int32_t n, void *w) {
    avx512_pack_kt(ATTN_DTYPE_F32, a, krow, kpf, n, w);
}
static void pack_bf16(const attn_tile_args *a, const void *const *krow, const void *const *kpf,
                     int32_t n, void *w) {
    avx512_pack_kt(ATTN_DTYPE_BF16, a, krow, kpf, n, w);
}
static void pack_f16(const attn_tile_args *a, const void *const *krow, const void *const *kpf,
                     int32_t n, void *w) {
    avx512_pack_kt(ATTN_DTYPE_F16, a, krow, kpf, n, w);
}
static void pack_fp8e4m3(const attn_tile_args *a, const void *const *krow,
                         const void *const *kpf, int32_t n, void *w) {
    avx512_pack_kt(ATTN_DTYPE_FP8_E4M3, a, krow, kpf, n, w);
}
static void pack_fp8e5m2(const attn_tile_args *a, const void *const *krow,
                         const void *const *kpf, int32_t n, void *w) {
    avx512_pack_kt(ATTN_DTYPE_FP8_E5M2, a, krow, kpf, n, w);
}

/* ------------------------------------------------------- Q.K micro-kernel */

/* Raw dots of R rows (q, stride D) with the 64 packed keys: s[r][AVX512_TILE]. */
INLINE void avx512_dots_rows(int R, const float *q, size_t D, const float *kt, float *s) {
    __m512 c[AVX512_QR][AVX512_NV];
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int j = 0; j < AVX512_NV; j++) c[r][j] = _mm512_setzero_ps();
    for (size_t d = 0; d < D; d++) {
        const float *kd = kt + d * AVX512_TILE;
        const __m512 k0 = _mm512_load_ps(kd), k1 = _mm512_load_ps(kd + 16);
        const __m512 k2 = _mm512_load_ps(kd + 32), k3 = _mm512_load_ps(kd + 48);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m512 b = _mm512_set1_ps(q[(size_t)r * D + d]);
            c[r][0] = _mm512_fmadd_ps(b, k0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(b, k1, c[r][1]);
            c[r][2] = _mm512_fmadd_ps(b, k2, c[r][2]);
            c[r][3] = _mm512_fmadd_ps(b, k3, c[r][3]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++)
        UNROLL
        for (int j = 0; j < AVX512_NV; j++) _mm512_store_ps(s + (size_t)r * AVX512_TILE + 16 * j, c[r][j]);
}

static void dots_f32(const attn_tile_args *a, int32_t r0, int32_t R, const void *w, float *s) {
    const size_t D = (size_t)a->head_dim;
    const float *q = a->q + (size_t)r0 * D;
    switch (R) {
    case 1: avx512_dots_rows(1, q, D, w, s); break;
    case 2: avx512_dots_rows(2, q, D, w, s); break;
    case 3: avx512_dots_rows(3, q, D, w, s); break;
    case 4: avx512_dots_rows(4, q, D, w, s); break;
    case 5: avx512_dots_rows(5, q, D, w, s); break;
    default: avx512_dots_rows(6, q, D, w, s); break;
    }
}


/* ------------------------------------------------------------- driver */

void attn__avx512_tile(const attn_tile_args *a, attn_dtype vdt, attn__avx512_pack_fn pack,
                       attn__avx512_dots_fn dots) {
    ATTN_ASSERT(a->n_tok >= 1 && a->g >= 1 && a->head_dim >= 1);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    /* k1 and the key limit come from mask.h (the plan's values, see there). */
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    /* The work areas: every plan sizes them from its own table's kv_tile
     * (AVX512_TILE here), and every scratch region starts
     * ATTN_ALIGN-aligned; the packed K and the scores rows are read with
     * aligned loads. */
    ATTN_ASSERT(a->kv_tile >= AVX512_TILE && (uintptr_t)a->kv % 64 == 0 &&
                (uintptr_t)a->scores % 64 == 0);
    const int32_t g = a->g, rows = a->n_tok * g;
    const size_t D = (size_t)a->head_dim, es = attn__dtype_size(vdt);
    float *vconv = a->kv + (size_t)AVX512_TILE * D;
    const void *krow[AVX512_TILE], *vrow[AVX512_TILE];
    const void *kpf[AVX512_TILE], *vpf[AVX512_TILE]; /* next chunk's rows (prefetch), NULL past k1 */
    /* P.V reads V as: fp32 cache rows, widened rows in the KV area, or raw
     * bf16/f16 cache rows widened on the fly */
    const int widen = vdt != ATTN_DTYPE_F32 && rows > WIDEN_V_ROWS;
    void (*pv)(int32_t, float *, size_t, const float *, const float *, size_t,
               const void *const *, const void *const *, int32_t, int32_t) = pv_block_f32;
    if (!widen && vdt == ATTN_DTYPE_BF16) pv = pv_block_bf16;
    if (!widen && vdt == ATTN_DTYPE_F16) pv = pv_block_f16;
    if (!widen && vdt == ATTN_DTYPE_FP8_E4M3) pv = pv_block_fp8e4m3;
    if (!widen && vdt == ATTN_DTYPE_FP8_E5M2) pv = pv_block_fp8e5m2;

    for (int32_t c0 = a->k0; c0 < k1; c0 += AVX512_TILE) {
        const int32_t n = (k1 - c0 < AVX512_TILE) ? k1 - c0 : AVX512_TILE;
        const int64_t c1 = (int64_t)c0 + n;
        int any = 0;
        for (int32_t t = 0; t < a->n_tok && !any; t++) {
            int64_t lo, hi;
            attn__row_interval((int64_t)a->pos0 + t, key_limit, a->causal,
                               a->window_left, a->window_right, &lo, &hi);
            if (lo < c1 && hi > c0 && lo < hi) any = 1;
        }
        if (!any) continue;

        /* The next chunk's rows are prefetched while this one computes,
         * interleaved with the loads of the pack and P.V loops: the paged
         * layout jumps Hkv blocks between consecutive blocks of a head, so
         * the hardware streamer restarts at every block. */
        for (int32_t i = 0; i < AVX512_TILE; i++) {
            const int64_t k = c1 + i;
            kpf[i] = vpf[i] = NULL;
            if (k >= k1) continue;
            const size_t off = ((size_t)a->blocks[k / a->block_size] * a->block_stride +
                                a->head_offset + (size_t)(k % a->block_size) * D) * es;
            kpf[i] = (const char *)a->k_cache + off;
            vpf[i] = (const char *)a->v_cache + off;
        }
        for (int32_t i = 0; i < n; i++) {
            const int32_t k = c0 + i;
            const int32_t blk = a->blocks[k / a->block_size];
            ATTN_ASSERT(blk >= 0);
            const size_t off = (size_t)blk * a->block_stride + a->head_offset +
                               (size_t)(k % a->block_size) * D;
            krow[i] = (const unsigned char *)a->k_cache + off * es;
            if (!widen) {
                vrow[i] = (const unsigned char *)a->v_cache + off * es;
            } else {
                /* Widen V once per chunk: every row block reuses it.
                 * The next chunk's V row of this key is prefetched here,
                 * one line per 64 bytes read, in address order; P.V then
                 * reads only the widened rows and prefetches nothing. */
                float *dst = vconv + (size_t)i * D;
                const unsigned char *src = (const unsigned char *)a->v_cache + off * es;
                for (size_t d = 0; d < D; d += 16) {
                    const __mmask16 m = tail_mask(D - d);
                    if (vpf[i] && (d * es) % 64 == 0) _mm_prefetch((const char *)vpf[i] + d * es, _MM_HINT_T1);
                    _mm512_mask_storeu_ps(dst + d, m, load16(vdt, src + d * es, m));
                }
                vrow[i] = dst;
            }
        }
        pack(a, krow, kpf, n, a->kv);

        /* Row blocks go in groups of SB: Q.K of every block of the group,
         * then their softmax, then their P.V.  Interleaving the three per
         * block would alternate between the packed K (AVX512_TILE x D x 4 bytes)
         * and the V rows (as much again), which do not fit L1 together;
         * grouped, each phase keeps its operand in L1 across the group. */
        for (int32_t sb0 = 0; sb0 < rows; sb0 += SB * AVX512_QR) {
            const int32_t sb1 = rows - sb0 < SB * AVX512_QR ? rows : sb0 + SB * AVX512_QR;
            int32_t ilo[SB * AVX512_QR], ihi[SB * AVX512_QR], blo[SB], bhi[SB];
            float alpha[SB * AVX512_QR];
            for (int32_t r0 = sb0; r0 < sb1; r0 += AVX512_QR) {
                const int32_t R = sb1 - r0 < AVX512_QR ? sb1 - r0 : AVX512_QR;
                const int32_t b = (r0 - sb0) / AVX512_QR;
                blo[b] = AVX512_TILE, bhi[b] = 0;
                for (int32_t r = 0; r < R; r++) {
                    int64_t lo, hi;
                    attn__row_interval((int64_t)a->pos0 + (r0 + r) / g, key_limit, a->causal,
                                       a->window_left, a->window_right, &lo, &hi);
                    lo = lo > c0 ? lo - c0 : 0;
                    hi = hi < c1 ? hi - c0 : n;
                    if (lo >= hi) lo = hi = 0;
                    ilo[r0 - sb0 + r] = (int32_t)lo;
                    ihi[r0 - sb0 + r] = (int32_t)hi;
                    if (lo < hi) {
                        if (lo < blo[b]) blo[b] = (int32_t)lo;
                        if (hi > bhi[b]) bhi[b] = (int32_t)hi;
                    }
                }
                if (blo[b] < bhi[b]) dots(a, r0, R, a->kv, a->scores + (size_t)r0 * AVX512_TILE);
            }
            for (int32_t r0 = sb0; r0 < sb1; r0 += AVX512_QR) {
                const int32_t R = sb1 - r0 < AVX512_QR ? sb1 - r0 : AVX512_QR, i = r0 - sb0;
                if (blo[i / AVX512_QR] >= bhi[i / AVX512_QR]) continue; /* P.V skips the block too */
                int32_t jh[AVX512_QR];
                int64_t kp0[AVX512_QR];
                for (int32_t r = 0; r < R; r++) {
                    jh[r] = (r0 + r) % g;
                    kp0[r] = (int64_t)c0 - (a->pos0 + (r0 + r) / g);
                }
                softmax_rows(a, R, AVX512_NV, ilo + i, ihi + i, jh, kp0,
                             a->scores + (size_t)r0 * AVX512_TILE, AVX512_TILE, a->m + r0,
                             a->l + r0, alpha + i);
            }
            for (int32_t r0 = sb0; r0 < sb1; r0 += AVX512_QR) {
                const int32_t R = sb1 - r0 < AVX512_QR ? sb1 - r0 : AVX512_QR;
                const int32_t b = (r0 - sb0) / AVX512_QR;
                if (blo[b] >= bhi[b]) continue;
                /* prefetch from the first row block only: later blocks
                 * would re-issue the same lines */
                pv(R, a->acc + (size_t)r0 * D, D, alpha + (r0 - sb0),
                   a->scores + (size_t)r0 * AVX512_TILE, AVX512_TILE, vrow,
                   r0 == 0 && !widen ? vpf : NULL, blo[b], bhi[b]);
            }
        }
    }
}

void attn_flash_f32__avx512(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_F32, pack_f32, dots_f32);
}
void attn_flash_bf16__avx512(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_BF16, pack_bf16, dots_f32);
}
void attn_flash_f16__avx512(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_F16, pack_f16, dots_f32);
}
void attn_flash_fp8e4m3__avx512(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_FP8_E4M3, pack_fp8e4m3, dots_f32);
}
void attn_flash_fp8e5m2__avx512(const attn_tile_args *a) {
    attn__avx512_tile(a, ATTN_DTYPE_FP8_E5M2, pack_fp8e5m2, dots_f32);
}

/* --------------------------------------------------------------- load_q */

INLINE uint32_t avx512_load_q(attn_dtype dt, const void *src, size_t token_stride, int32_t n_tok, int32_t g,
                              int32_t head_dim, float scale, float *dst) {
    const size_t width = (size_t)g * (size_t)head_dim, es = attn__dtype_size(dt);
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    __m512i mb = _mm512_setzero_si512(); /* |x| bits, NaN as 0 */
    for (int32_t t = 0; t < n_tok; t++) {
        const unsigned char *s = (const unsigned char *)src + (size_t)t * token_stride * es;
        float *d = dst + (size_t)t * width;
        for (size_t i = 0; i < width; i += 16) {
            const __mmask16 m = tail_mask(width - i);
#ifdef ATTN_INJECT_q_tail_lane
            /* INJECTED BUG (q_tail_lane): the tail's load mask one lane
             * wider than the row group; the store keeps the right one. */
            const __mmask16 ml = m == 0xffff ? m : (__mmask16)((m << 1) | 1u);
#else
            const __mmask16 ml = m;
#endif
            /* convert, then one fp32 multiply: the portable rounding */
            __m512 x = _mm512_mul_ps(load16(dt, s + i * es, ml), sc);
#ifdef ATTN_INJECT_scale_twice_tail
            /* INJECTED BUG (scale_twice_tail): the masked tail of a row
             * group multiplied by the scale a second time. */
            if (m != 0xffff) x = _mm512_mul_ps(x, sc);
#endif
            /* (lanes past width loaded as zeros: the maximum stays) */
            const __m512i b = _mm512_and_si512(_mm512_castps_si512(x), abs);
            mb = _mm512_mask_max_epu32(mb, _mm512_cmple_epu32_mask(b, inf), mb, b);
            _mm512_mask_storeu_ps(d + i, m, x);
        }
    }
    return (uint32_t)_mm512_reduce_max_epu32(mb);
}

uint32_t attn_load_q_f32__avx512(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                             float scale, float *dst) {
    return avx512_load_q(ATTN_DTYPE_F32, src, ts, n_tok, g, hd, scale, dst);
}
uint32_t attn_load_q_bf16__avx512(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                              float scale, float *dst) {
    return avx512_load_q(ATTN_DTYPE_BF16, src, ts, n_tok, g, hd, scale, dst);
}
uint32_t attn_load_q_f16__avx512(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                             float scale, float *dst) {
    return avx512_load_q(ATTN_DTYPE_F16, src, ts, n_tok, g, hd, scale, dst);
}

/* ---------------------------------------------------------------- store */

/* fp32 -> bf16, round to nearest even, NaN quieted: bit-identical to
 * attn__f32_to_bf16 (dtype.h). */
INLINE __m256i f32_to_bf16_16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
#ifndef ATTN_INJECT_bf16_truncate
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
#else
    /* INJECTED BUG (bf16_truncate): the low half dropped, no rounding */
    (void)lsb;
    __m512i r = _mm512_srli_epi32(u, 16);
#endif
    const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    r = _mm512_mask_mov_epi32(r, nan, q);
    return _mm512_cvtepi32_epi16(r);
}

INLINE void store16(attn_dtype dt, void *p, __mmask16 m, __m512 x) {
    if (dt == ATTN_DTYPE_F32) _mm512_mask_storeu_ps(p, m, x);
    else if (dt == ATTN_DTYPE_BF16) _mm256_mask_storeu_epi16(p, m, f32_to_bf16_16(x));
    else
        _mm256_mask_storeu_epi16(p, m,
                                 _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

INLINE void avx512_store(attn_dtype dt, const float *acc, const float *m, const float *l, int32_t n_tok,
                         int32_t g, int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,
                         size_t token_stride) {
    const size_t D = (size_t)head_dim, es = attn__dtype_size(dt);
    for (int32_t t = 0; t < n_tok; t++) {
        for (int32_t j = 0; j < g; j++) {
            const size_t r = (size_t)t * (size_t)g + (size_t)j;
            unsigned char *o = (unsigned char *)dst + ((size_t)t * token_stride + (size_t)j * D) * es;
            int zero; /* the portable store's factor, the same function */
            const __m512 f = _mm512_set1_ps(
                attn__store_factor(m[r], l[r], sinks != NULL, sinks ? sinks[j] : 0.0f, m_exp, v_scale, &zero));
            const float *ar = acc + r * D;
            for (size_t d = 0; d < D; d += 16) {
                const __mmask16 mk = tail_mask(D - d);
                /* zero rows store exact zeros even if acc held garbage */
                const __m512 x = zero ? _mm512_setzero_ps()
                                      : _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, ar + d), f);
                store16(dt, o + d * es, mk, x);
            }
        }
    }
}

void attn_store_f32__avx512(const float *acc, const float *m, const float *l, int32_t n_tok,
                            int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx512_store(ATTN_DTYPE_F32, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}
void attn_store_bf16__avx512(const float *acc, const float *m, const float *l, int32_t n_tok,
                             int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx512_store(ATTN_DTYPE_BF16, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}
void attn_store_f16__avx512(const float *acc, const float *m, const float *l, int32_t n_tok,
                            int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx512_store(ATTN_DTYPE_F16, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}

/* ------------------------------------------------- conversions (test hook) */

/* left elements (16 used at most) through load16 and store16, the
 * kernels' own conversions, masked as the kernels mask a row's tail: the
 * paths below (cvt_gen.h) */
INLINE void avx512_cvt_to_f32(attn_dtype dt, const unsigned char *s, float *d, size_t left) {
    const __mmask16 m = tail_mask(left);
    _mm512_mask_storeu_ps(d, m, load16(dt, s, m));
}
INLINE void avx512_cvt_from_f32(attn_dtype dt, const float *s, unsigned char *d, size_t left) {
    const __mmask16 m = tail_mask(left);
    store16(dt, d, m, _mm512_maskz_loadu_ps(m, s));
}
ATTN__CVT_TO(avx512_cvt_bf16_f32, ATTN_DTYPE_BF16, 16, avx512_cvt_to_f32)
ATTN__CVT_TO(avx512_cvt_f16_f32, ATTN_DTYPE_F16, 16, avx512_cvt_to_f32)
ATTN__CVT_TO(avx512_cvt_e4m3_f32, ATTN_DTYPE_FP8_E4M3, 16, avx512_cvt_to_f32)
ATTN__CVT_TO(avx512_cvt_e5m2_f32, ATTN_DTYPE_FP8_E5M2, 16, avx512_cvt_to_f32)
ATTN__CVT_FROM(avx512_cvt_f32_bf16, ATTN_DTYPE_BF16, 16, avx512_cvt_from_f32)
ATTN__CVT_FROM(avx512_cvt_f32_f16, ATTN_DTYPE_F16, 16, avx512_cvt_from_f32)

/* The decode tile's bf16 widening: 32 elements per load, even and odd
 * halves (bf16_even / bf16_odd), put back in order for the caller. */
static void avx512_cvt_bf16_pairs_f32(const void *s, void *d, size_t n) {
    for (size_t i = 0; i < n; i += 32) {
        const size_t k = n - i < 32 ? n - i : 32;
        const __mmask32 m = k == 32 ? 0xffffffffu : (__mmask32)((1u << k) - 1u);
        const __m512i w = _mm512_maskz_loadu_epi16(m, (const uint16_t *)s + i);
        float e[16], o[16];
        _mm512_storeu_ps(e, bf16_even(w));
        _mm512_storeu_ps(o, bf16_odd(w));
        for (size_t j = 0; j < k; j++) ((float *)d)[i + j] = j % 2 ? o[j / 2] : e[j / 2];
    }
}

static const attn__cvt_path avx512_cvt[] = {
    {"load16 bf16", ATTN_DTYPE_BF16, 1, 0, avx512_cvt_bf16_f32},
    {"load16 f16", ATTN_DTYPE_F16, 1, 0, avx512_cvt_f16_f32},
    {"load16 fp8e4m3", ATTN_DTYPE_FP8_E4M3, 1, 0, avx512_cvt_e4m3_f32},
    {"load16 fp8e5m2", ATTN_DTYPE_FP8_E5M2, 1, 0, avx512_cvt_e5m2_f32},
    {"decode bf16 pairs", ATTN_DTYPE_BF16, 1, 0, avx512_cvt_bf16_pairs_f32},
    {"store16 bf16", ATTN_DTYPE_BF16, 0, 0, avx512_cvt_f32_bf16},
    {"store16 f16", ATTN_DTYPE_F16, 0, 0, avx512_cvt_f32_f16},
};

const attn__cvt_path *attn__cvt_avx512(int *count) {
    *count = (int)(sizeof avx512_cvt / sizeof avx512_cvt[0]);
    return avx512_cvt;
}

/* One VSCALEFPS as the exp and the logit scaling issue it (a test hook,
 * kernels_decl.h): dst[i] = a[i] * 2^floor(b[i]) over 16 lanes. */
void attn__scalef__avx512(float *dst, const float *a, const float *b) {
    _mm512_storeu_ps(dst, _mm512_scalef_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b)));
}
