/*
 * avx2.c — the AVX2 + FMA + F16C twins of the portable kernels, listed by
 * the "avx2" table (table_avx2.c).  Compiled with the avx2 -m flags of
 * mk/isa.mk; dispatch.c uses the table only on a CPU with all of them.
 *
 * Owns: the general (flash-style) tile attn_flash_<dtype>__avx2, which
 * takes every item the decode tile (avx2_decode.c) does not,
 * attn_load_q_*__avx2, attn_store_*__avx2 and their helpers (8x8
 * transpose, K packing, the register-blocked micro-kernels).  The
 * primitives both tiles use are in avx2_inl.h.  Merge stays portable
 * (once per split row, never hot).
 *
 * Same algorithm as avx512.c (read its header for the full
 * story), scaled to 16 ymm registers: chunks of AVX2_TILE = 32 keys; K packed
 * transposed to Kt[d][32] (4 ymm per d); Q.K blocks of 6 rows x 16 keys
 * (12 accumulators, 2 loads + 6 broadcasts per d); online softmax over
 * the 32 keys; P.V blocks of 6 rows x 16 output dims (12 accumulators).
 * Twelve, not eight: eight is exactly the FMA latency times its ports,
 * which leaves no slack for the loads.  The masking rule, the
 * all-masked-row neutrality and the one documented difference for
 * non-finite V (0 * inf in a mixed block) are the same.
 * The next chunk's K/V lines are prefetched to L2 in one burst at chunk
 * start (the avx512 twin interleaves them with its loads instead).
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "avx2_inl.h"
#include "cvt_gen.h"
#include "mask.h"

#define AVX2_QR 6    /* rows per Q.K block: 6 x 16 keys = 12 accumulators */
#define QK 16   /* keys per Q.K register block (two per chunk) */
#define AVX2_PR 6    /* rows per P.V block: 6 x 16 dims = 12 accumulators */
#define AVX2_DV 2    /* output vectors (16 dims) per P.V pass */

INLINE void transpose8(__m256 r[8]) {
    __m256 t[8];
    UNROLL
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    UNROLL
    for (int i = 0; i < 2; i++) {
        r[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    UNROLL
    for (int k = 0; k < 4; k++) {
        t[k] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x20);
        t[k + 4] = _mm256_permute2f128_ps(r[k], r[k + 4], 0x31);
    }
    UNROLL
    for (int k = 0; k < 8; k++) r[k] = t[k];
}

/* K of the chunk -> Kt[d][AVX2_TILE] fp32 (key lanes >= n of a group zeroed). */
INLINE void avx2_pack_kt(attn_dtype dt, size_t D, const void *const *krow, int32_t n, float *kt) {
    const size_t es = attn__dtype_size(dt);
    for (int32_t i0 = 0; i0 < n; i0 += 8) {
        for (size_t d0 = 0; d0 < D; d0 += 8) {
            __m256 r[8];
            UNROLL
            for (int i = 0; i < 8; i++)
                r[i] = (i0 + i < n)
                           ? load8(dt, (const unsigned char *)krow[i0 + i] + d0 * es, D - d0)
                           : _mm256_setzero_ps();
            transpose8(r);
            const size_t nd = D - d0 < 8 ? D - d0 : 8;
            for (size_t j = 0; j < nd; j++) _mm256_store_ps(kt + (d0 + j) * AVX2_TILE + i0, r[j]);
        }
    }
}

/* ------------------------------------------------------- micro-kernels */

/* Raw dots of R (<= AVX2_QR) rows (q row r at q + r D) with the chunk's keys
 * (Kt[d][AVX2_TILE]) into s[r][AVX2_TILE]: QK keys at a time, 12 accumulators, so
 * that the FMAs' latency is hidden with room to spare (8 accumulators are
 * exactly latency x ports, and any other micro-op stalls them). */
INLINE void avx2_dots_rows(int R, const float *q, size_t D, const float *kt, float *s) {
    UNROLL
    for (int h = 0; h < AVX2_TILE / QK; h++) {
        __m256 c[AVX2_QR][2];
        UNROLL
        for (int r = 0; r < R; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
        for (size_t d = 0; d < D; d++) {
            const float *kd = kt + d * AVX2_TILE + QK * h;
            const __m256 k0 = _mm256_load_ps(kd), k1 = _mm256_load_ps(kd + 8);
            UNROLL
            for (int r = 0; r < R; r++) {
                const __m256 b = _mm256_broadcast_ss(q + (size_t)r * D + d);
                c[r][0] = _mm256_fmadd_ps(b, k0, c[r][0]);
                c[r][1] = _mm256_fmadd_ps(b, k1, c[r][1]);
            }
        }
        UNROLL
        for (int r = 0; r < R; r++) {
            _mm256_store_ps(s + (size_t)r * AVX2_TILE + QK * h, c[r][0]);
            _mm256_store_ps(s + (size_t)r * AVX2_TILE + QK * h + 8, c[r][1]);
        }
    }
}

/* acc = alpha acc + p V for R (<= AVX2_PR) rows over keys [ilo, ihi), NVEC
 * vectors of dims from dofs; FULL: every vector whole (plain loads and
 * stores), else the last one masked by tm.  Each row's weight is
 * broadcast where it is used, not hoisted: 12 accumulators, the V vectors
 * and one broadcast are what the 16 registers hold (hoisting all six
 * weights spilled the accumulators to the stack). */
INLINE void avx2_pv_rows(int R, int NVEC, int FULL, float *acc, size_t D, size_t dofs,
                         const float *alpha, const float *p, const float *const *vrow, int32_t ilo,
                         int32_t ihi, __m256i tm) {
    __m256 c[AVX2_PR][AVX2_DV];
    UNROLL
    for (int r = 0; r < R; r++) {
        const __m256 al = _mm256_set1_ps(alpha[r]);
        const float *ar = acc + (size_t)r * D + dofs;
        UNROLL
        for (int v = 0; v < NVEC; v++) {
            const __m256 x = (!FULL && v == NVEC - 1) ? _mm256_maskload_ps(ar + 8 * v, tm)
                                                      : _mm256_loadu_ps(ar + 8 * v);
            c[r][v] = _mm256_mul_ps(x, al);
        }
    }
    for (int32_t i = ilo; i < ihi; i++) {
        const float *vr = vrow[i] + dofs;
        __m256 x[AVX2_DV];
        UNROLL
        for (int v = 0; v < NVEC; v++)
            x[v] = (!FULL && v == NVEC - 1) ? _mm256_maskload_ps(vr + 8 * v, tm)
                                            : _mm256_loadu_ps(vr + 8 * v);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m256 pb = _mm256_broadcast_ss(p + (size_t)r * AVX2_TILE + (size_t)i);
            UNROLL
            for (int v = 0; v < NVEC; v++) c[r][v] = _mm256_fmadd_ps(pb, x[v], c[r][v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++) {
        float *ar = acc + (size_t)r * D + dofs;
        UNROLL
        for (int v = 0; v < NVEC; v++) {
            if (!FULL && v == NVEC - 1) _mm256_maskstore_ps(ar + 8 * v, tm, c[r][v]);
            else _mm256_storeu_ps(ar + 8 * v, c[r][v]);
        }
    }
}

/* (R, vectors, whole) -> one instance */
#define AVX2_PV_CASE(R_, N_)                                                            \
    case ((R_) * 4 + (N_)) * 2:                                                         \
        avx2_pv_rows(R_, N_, 0, acc, D, dofs, alpha, p, vrow, ilo, ihi, tm);            \
        break;                                                                          \
    case ((R_) * 4 + (N_)) * 2 + 1:                                                     \
        avx2_pv_rows(R_, N_, 1, acc, D, dofs, alpha, p, vrow, ilo, ihi, tm);            \
        break;

static void pv_block(int32_t R, float *acc, size_t D, const float *alpha, const float *p,
                     const float *const *vrow, int32_t ilo, int32_t ihi) {
    for (size_t dofs = 0; dofs < D; dofs += 8 * AVX2_DV) {
        const size_t left = D - dofs;
        const int nvec = (int)(left >= 8 * AVX2_DV ? AVX2_DV : (left + 7) / 8);
        const size_t last = left - 8 * (size_t)(nvec - 1); /* lanes of the last vector */
        const __m256i tm = lanes(last);
        switch ((R * 4 + nvec) * 2 + (last >= 8)) {
            AVX2_PV_CASE(1, 1) AVX2_PV_CASE(1, 2) AVX2_PV_CASE(2, 1) AVX2_PV_CASE(2, 2)
            AVX2_PV_CASE(3, 1) AVX2_PV_CASE(3, 2) AVX2_PV_CASE(4, 1) AVX2_PV_CASE(4, 2)
            AVX2_PV_CASE(5, 1) AVX2_PV_CASE(5, 2) AVX2_PV_CASE(6, 1) AVX2_PV_CASE(6, 2)
        default: break;
        }
    }
}

/* ------------------------------------------------------------- driver */

static inline void prefetch_keys(const attn_tile_args *a, size_t es, int32_t c0, int32_t c1) {
    const size_t D = (size_t)a->head_dim;
    for (int32_t k = c0; k < c1;) {
        const int32_t slot = k % a->block_size;
        int32_t run = a->block_size - slot;
        if (run > c1 - k) run = c1 - k;
        const size_t off = ((size_t)a->blocks[k / a->block_size] * a->block_stride +
                            a->head_offset + (size_t)slot * D) * es;
        for (size_t o = 0; o < (size_t)run * D * es; o += 64) {
            _mm_prefetch((const char *)a->k_cache + off + o, _MM_HINT_T1);
            _mm_prefetch((const char *)a->v_cache + off + o, _MM_HINT_T1);
        }
        k += run;
    }
}

INLINE void avx2_tile(attn_dtype dt, const attn_tile_args *a) {
    ATTN_ASSERT(a->n_tok >= 1 && a->g >= 1 && a->head_dim >= 1);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    /* k1 and the key limit come from mask.h (the plan's values, see there). */
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    /* The work areas: every plan sizes them from its own table's kv_tile
     * (AVX2_TILE here), and every scratch region starts ATTN_ALIGN-aligned;
     * the packed K and the scores rows are read with aligned loads. */
    ATTN_ASSERT(a->kv_tile >= AVX2_TILE && (uintptr_t)a->kv % 32 == 0 &&
                (uintptr_t)a->scores % 32 == 0);
    const int32_t g = a->g, rows = a->n_tok * g;
    const size_t D = (size_t)a->head_dim, es = attn__dtype_size(dt);
    float *vconv = a->kv + (size_t)AVX2_TILE * D;
    const void *krow[AVX2_TILE];
    const float *vrow[AVX2_TILE];

    for (int32_t c0 = a->k0; c0 < k1; c0 += AVX2_TILE) {
        const int32_t n = (k1 - c0 < AVX2_TILE) ? k1 - c0 : AVX2_TILE;
        const int64_t c1 = (int64_t)c0 + n;
        int any = 0;
        for (int32_t t = 0; t < a->n_tok && !any; t++) {
            int64_t lo, hi;
            attn__row_interval((int64_t)a->pos0 + t, key_limit, a->causal,
                               a->window_left, a->window_right, &lo, &hi);
            if (lo < c1 && hi > c0 && lo < hi) any = 1;
        }
        if (!any) continue;
        if (c1 < k1) prefetch_keys(a, es, (int32_t)c1, (int32_t)(c1 + AVX2_TILE < k1 ? c1 + AVX2_TILE : k1));

        for (int32_t i = 0; i < n; i++) {
            const int32_t k = c0 + i;
            const int32_t blk = a->blocks[k / a->block_size];
            ATTN_ASSERT(blk >= 0);
            const size_t off = (size_t)blk * a->block_stride + a->head_offset +
                               (size_t)(k % a->block_size) * D;
            krow[i] = (const unsigned char *)a->k_cache + off * es;
            if (dt == ATTN_DTYPE_F32) {
                vrow[i] = (const float *)a->v_cache + off;
            } else {
                float *dst = vconv + (size_t)i * D;
                const unsigned char *src = (const unsigned char *)a->v_cache + off * es;
                for (size_t d = 0; d < D; d += 8) {
                    const __m256 x = load8(dt, src + d * es, D - d);
                    if (D - d >= 8) _mm256_storeu_ps(dst + d, x);
                    else _mm256_maskstore_ps(dst + d, lanes(D - d), x);
                }
                vrow[i] = dst;
            }
        }
        avx2_pack_kt(dt, D, krow, n, a->kv);

        for (int32_t r0 = 0; r0 < rows; r0 += AVX2_QR) {
            const int32_t R = rows - r0 < AVX2_QR ? rows - r0 : AVX2_QR;
            int32_t ilo[AVX2_QR], ihi[AVX2_QR], act = 0;
            for (int32_t r = 0; r < R; r++) {
                int64_t lo, hi;
                attn__row_interval((int64_t)a->pos0 + (r0 + r) / g, key_limit, a->causal,
                                   a->window_left, a->window_right,
                             &lo, &hi);
                lo = lo > c0 ? lo - c0 : 0;
                hi = hi < c1 ? hi - c0 : n;
                if (lo >= hi) lo = hi = 0;
                ilo[r] = (int32_t)lo;
                ihi[r] = (int32_t)hi;
                act |= lo < hi;
            }
            if (!act) continue;
            float *s = a->scores + (size_t)r0 * AVX2_TILE;
            const float *qr = a->q + (size_t)r0 * D;
            switch (R) {
            case 1: avx2_dots_rows(1, qr, D, a->kv, s); break;
            case 2: avx2_dots_rows(2, qr, D, a->kv, s); break;
            case 3: avx2_dots_rows(3, qr, D, a->kv, s); break;
            case 4: avx2_dots_rows(4, qr, D, a->kv, s); break;
            case 5: avx2_dots_rows(5, qr, D, a->kv, s); break;
            default: avx2_dots_rows(6, qr, D, a->kv, s); break;
            }
            float alpha[AVX2_QR];
            int32_t lo = AVX2_TILE, hi = 0;
            for (int32_t r = 0; r < R; r++) {
                const int32_t row = r0 + r;
                if (ilo[r] >= ihi[r]) {
                    UNROLL
                    for (int v = 0; v < AVX2_NV; v++)
                        _mm256_store_ps(s + (size_t)r * AVX2_TILE + 8 * v, _mm256_setzero_ps());
                    alpha[r] = 1.0f;
                    continue;
                }
                alpha[r] = softmax_row(a, row % g, (int64_t)c0 - (a->pos0 + row / g), ilo[r],
                                       ihi[r], s + (size_t)r * AVX2_TILE, a->m + row, a->l + row);
                if (ilo[r] < lo) lo = ilo[r];
                if (ihi[r] > hi) hi = ihi[r];
            }
            pv_block(R, a->acc + (size_t)r0 * D, D, alpha, s, vrow, lo, hi);
        }
    }
}

void attn_flash_f32__avx2(const attn_tile_args *a) { avx2_tile(ATTN_DTYPE_F32, a); }
void attn_flash_bf16__avx2(const attn_tile_args *a) { avx2_tile(ATTN_DTYPE_BF16, a); }
void attn_flash_f16__avx2(const attn_tile_args *a) { avx2_tile(ATTN_DTYPE_F16, a); }
void attn_flash_fp8e4m3__avx2(const attn_tile_args *a) { avx2_tile(ATTN_DTYPE_FP8_E4M3, a); }
void attn_flash_fp8e5m2__avx2(const attn_tile_args *a) { avx2_tile(ATTN_DTYPE_FP8_E5M2, a); }

/* --------------------------------------------------------- load_q, store */

INLINE uint32_t avx2_load_q(attn_dtype dt, const void *src, size_t token_stride, int32_t n_tok, int32_t g,
                            int32_t head_dim, float scale, float *dst) {
    const size_t width = (size_t)g * (size_t)head_dim, es = attn__dtype_size(dt);
    const __m256 sc = _mm256_set1_ps(scale);
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i mb = _mm256_setzero_si256(); /* |x| bits, NaN as 0 (signed compares: all >= 0) */
    for (int32_t t = 0; t < n_tok; t++) {
        const unsigned char *s = (const unsigned char *)src + (size_t)t * token_stride * es;
        float *d = dst + (size_t)t * width;
        for (size_t i = 0; i < width; i += 8) {
            /* (past width load8 reads zeros, which leave the maximum alone) */
            const __m256 x = _mm256_mul_ps(load8(dt, s + i * es, width - i), sc);
            const __m256i b = _mm256_and_si256(_mm256_castps_si256(x), abs);
            mb = _mm256_max_epi32(mb, _mm256_andnot_si256(_mm256_cmpgt_epi32(b, inf), b));
            if (width - i >= 8) _mm256_storeu_ps(d + i, x);
            else _mm256_maskstore_ps(d + i, lanes(width - i), x);
        }
    }
    uint32_t m[8], r = 0;
    _mm256_storeu_si256((__m256i *)m, mb);
    for (int k = 0; k < 8; k++) r = m[k] > r ? m[k] : r;
    return r;
}

uint32_t attn_load_q_f32__avx2(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                           float scale, float *dst) {
    return avx2_load_q(ATTN_DTYPE_F32, src, ts, n_tok, g, hd, scale, dst);
}
uint32_t attn_load_q_bf16__avx2(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                            float scale, float *dst) {
    return avx2_load_q(ATTN_DTYPE_BF16, src, ts, n_tok, g, hd, scale, dst);
}
uint32_t attn_load_q_f16__avx2(const void *src, size_t ts, int32_t n_tok, int32_t g, int32_t hd,
                           float scale, float *dst) {
    return avx2_load_q(ATTN_DTYPE_F16, src, ts, n_tok, g, hd, scale, dst);
}

/* 8 fp32 -> dt at p, `left` of them.  bf16: RNE with NaN quieted, the
 * integer recipe of attn__f32_to_bf16; f16: VCVTPS2PH with RNE, which is
 * bit-identical to attn__f32_to_f16 (NaN payload kept, quiet bit set). */
INLINE void store8(attn_dtype dt, void *p, size_t left, __m256 x) {
    if (dt == ATTN_DTYPE_F32) {
        if (left >= 8) _mm256_storeu_ps(p, x);
        else _mm256_maskstore_ps(p, lanes(left), x);
        return;
    }
    __m128i h;
    if (dt == ATTN_DTYPE_BF16) {
        const __m256i u = _mm256_castps_si256(x);
        const __m256i abs = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
        const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        __m256i r = _mm256_srli_epi32(
            _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
        const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
        r = _mm256_blendv_epi8(r, q, nan);
        /* values < 2^16: unsigned saturation is a no-op; fix the lane order */
        const __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
        h = _mm256_castsi256_si128(pk);
    } else {
        h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    if (left >= 8) {
        _mm_storeu_si128(p, h);
    } else {
        uint16_t tmp[8];
        _mm_storeu_si128((void *)tmp, h);
        memcpy(p, tmp, left * sizeof(uint16_t));
    }
}

INLINE void avx2_store(attn_dtype dt, const float *acc, const float *m, const float *l, int32_t n_tok,
                       int32_t g, int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,
                       size_t token_stride) {
    const size_t D = (size_t)head_dim, es = attn__dtype_size(dt);
    for (int32_t t = 0; t < n_tok; t++) {
        for (int32_t j = 0; j < g; j++) {
            const size_t r = (size_t)t * (size_t)g + (size_t)j;
            unsigned char *o = (unsigned char *)dst + ((size_t)t * token_stride + (size_t)j * D) * es;
            int zero; /* the portable store's factor, the same function */
            const __m256 f = _mm256_set1_ps(
                attn__store_factor(m[r], l[r], sinks != NULL, sinks ? sinks[j] : 0.0f, m_exp, v_scale, &zero));
            const float *ar = acc + r * D;
            for (size_t d = 0; d < D; d += 8) {
                const __m256 x = zero ? _mm256_setzero_ps()
                                      : _mm256_mul_ps(load8(ATTN_DTYPE_F32, ar + d, D - d), f);
                store8(dt, o + d * es, D - d, x);
            }
        }
    }
}

void attn_store_f32__avx2(const float *acc, const float *m, const float *l, int32_t n_tok,
                          int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx2_store(ATTN_DTYPE_F32, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}
void attn_store_bf16__avx2(const float *acc, const float *m, const float *l, int32_t n_tok,
                           int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx2_store(ATTN_DTYPE_BF16, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}
void attn_store_f16__avx2(const float *acc, const float *m, const float *l, int32_t n_tok,
                          int32_t g, int32_t hd, const float *sinks, int32_t m_exp, float v_scale, void *dst, size_t ts) {
    avx2_store(ATTN_DTYPE_F16, acc, m, l, n_tok, g, hd, sinks, m_exp, v_scale, dst, ts);
}

/* ------------------------------------------------- conversions (test hook) */

/* left elements (8 used at most) through load8 and store8, the kernels'
 * own conversions: the paths below (cvt_gen.h) */
INLINE void avx2_cvt_to_f32(attn_dtype dt, const unsigned char *s, float *d, size_t left) {
    store8(ATTN_DTYPE_F32, d, left, load8(dt, s, left));
}
INLINE void avx2_cvt_from_f32(attn_dtype dt, const float *s, unsigned char *d, size_t left) {
    store8(dt, d, left, load8(ATTN_DTYPE_F32, s, left));
}
ATTN__CVT_TO(avx2_cvt_bf16_f32, ATTN_DTYPE_BF16, 8, avx2_cvt_to_f32)
ATTN__CVT_TO(avx2_cvt_f16_f32, ATTN_DTYPE_F16, 8, avx2_cvt_to_f32)
ATTN__CVT_TO(avx2_cvt_e4m3_f32, ATTN_DTYPE_FP8_E4M3, 8, avx2_cvt_to_f32)
ATTN__CVT_TO(avx2_cvt_e5m2_f32, ATTN_DTYPE_FP8_E5M2, 8, avx2_cvt_to_f32)
ATTN__CVT_FROM(avx2_cvt_f32_bf16, ATTN_DTYPE_BF16, 8, avx2_cvt_from_f32)
ATTN__CVT_FROM(avx2_cvt_f32_f16, ATTN_DTYPE_F16, 8, avx2_cvt_from_f32)

static const attn__cvt_path avx2_cvt[] = {
    {"load8 bf16", ATTN_DTYPE_BF16, 1, 0, avx2_cvt_bf16_f32},
    {"load8 f16", ATTN_DTYPE_F16, 1, 0, avx2_cvt_f16_f32},
    {"load8 fp8e4m3", ATTN_DTYPE_FP8_E4M3, 1, 0, avx2_cvt_e4m3_f32},
    {"load8 fp8e5m2", ATTN_DTYPE_FP8_E5M2, 1, 0, avx2_cvt_e5m2_f32},
    {"store8 bf16", ATTN_DTYPE_BF16, 0, 0, avx2_cvt_f32_bf16},
    {"store8 f16", ATTN_DTYPE_F16, 0, 0, avx2_cvt_f32_f16},
};

const attn__cvt_path *attn__cvt_avx2(int *count) {
    *count = (int)(sizeof avx2_cvt / sizeof avx2_cvt[0]);
    return avx2_cvt;
}
