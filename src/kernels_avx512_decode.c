/*
 * kernels_avx512_decode.c — the AVX-512 tile for single-token items
 * (decode, and the pieces of a split decode row): n_tok = 1 and at most
 * DEC_MAX_ROWS query heads per KV head.  Both AVX-512 tables route such
 * items here (kernels_avx512.c, kernels_avx512bf16.c); everything else
 * takes the general flash-style tile.
 *
 * Why a separate tile: a decode item reads every K and V byte exactly once
 * and does only g (= 4 for Llama-style GQA) multiply-adds per element, so
 * it must run several times faster than DRAM delivers for the stream to be
 * the limit.  The general tile transposes each 64-key chunk of K into the
 * work area (16x16 shuffles: ~32 shuffle instructions per key, on the same
 * ports as the FMAs) so that many rows can share it; with 4 rows that
 * transpose costs more than the dot products themselves.  Here:
 *
 *   Q.K  keys are taken 4 at a time, straight from the cache: for each
 *        16-dim slice, 4 K loads and DR = 4 query rows feed 16 FMAs into
 *        16 accumulators (one per row and key, each a partial dot product
 *        spread over 16 lanes).  The horizontal sums are then done as a
 *        transpose-and-add tree: 6 shuffles + 3 adds fold a row's 4 key
 *        vectors into one vector whose 128-bit lanes hold the 4 keys'
 *        lane sums; after 16 keys, 6 more shuffles + 3 adds give the 16
 *        dot products in key order.  Per key and row that is ~3 shuffles
 *        against D/16 FMAs, and rows beyond DR re-read K from L1.
 *        bf16 K is widened exactly with one AND (odd elements: a bf16 is
 *        the top half of an fp32) and one shift (even elements) per 32
 *        elements, against a copy of q whose dims are permuted the same
 *        way (even dims, then odd dims, per 32) — a dot product does not
 *        care about the order of its terms, so no un-permute is needed.
 *        f16 K is widened with VCVTPH2PS.  q stays fp32: unlike the
 *        VDPBF16PS path (kernels_avx512bf16.c) nothing is rounded.
 *   softmax and P.V are the general tile's (kernels_avx512_inl.h): one
 *        visible interval for every row, V widened on the fly.
 *   memory: key and value row addresses are walked block by block (no
 *        division per key), and the next chunk's K and V lines are
 *        prefetched to L2 one per load of the current chunk — in the paged
 *        layout a head's consecutive blocks are Hkv blocks apart, so the
 *        hardware streamer restarts at every block and would leave the
 *        stream latency-bound.
 *
 * Numerics: as the general avx512 tile (fp32 products and sums in a
 * different association than the portable kernel; same exp and masking).
 */
#include "kernels_avx512_inl.h"
#include "mask.h"

#define DR 4              /* rows per Q.K register block */
#ifndef ATTN_AVX512_DEC_PF
#define ATTN_AVX512_DEC_PF 1 /* 0: no software prefetch (for measurements) */
#endif
#ifndef DEC_PF_HINT
#define DEC_PF_HINT _MM_HINT_T1
#endif
#define DEC_MAX_ROWS 16   /* larger groups amortise the general tile's transpose */

int attn__avx512_decode_fits(const attn_tile_args *a);
void attn__avx512_decode_tile(const attn_tile_args *a, attn_dtype kdt);

/* The items this tile takes: one token, few rows, work areas of the
 * table's shape (the scores area holds rows x TILE). */
int attn__avx512_decode_fits(const attn_tile_args *a) {
    return a->n_tok == 1 && a->g <= DEC_MAX_ROWS && a->kv_tile >= TILE &&
           ((uintptr_t)a->scores % 64) == 0;
}

/* ---------------------------------------------------------- Q.K block */

/* Fold the 4 per-key accumulators of one row (lanes = partial sums) into
 * one vector: 128-bit lane L holds [S_L(k0), S_L(k1), S_L(k2), S_L(k3)],
 * S_L = the sum of lane L's 4 elements. */
INLINE __m512 fold4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    return _mm512_add_ps(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xEE));
}

/* Four fold4 results of keys 0-3, 4-7, 8-11, 12-15 -> the 16 full sums in
 * key order. */
INLINE __m512 fold16(__m512 u0, __m512 u1, __m512 u2, __m512 u3) {
    const __m512 x1 = _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88),
                                    _mm512_shuffle_f32x4(u0, u1, 0xDD));
    const __m512 x2 = _mm512_add_ps(_mm512_shuffle_f32x4(u2, u3, 0x88),
                                    _mm512_shuffle_f32x4(u2, u3, 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x1, x2, 0x88), _mm512_shuffle_f32x4(x1, x2, 0xDD));
}

/* Raw dots of R (<= DR) rows of qp (stride qs floats, in the slice layout
 * of attn__avx512_decode_tile) with keys [0, n) of the chunk, into s (rows
 * of stride TILE).  Keys of the last group past n repeat key n-1 (their
 * lanes are masked by the softmax).  nc slices, the last one holding the
 * elements of mask tm.  pf: the next chunk's K and V rows (NULL entries:
 * none), whose lines are prefetched to L2 four keys at a time. */
INLINE void qk_block(int R, attn_dtype kdt, const float *qp, size_t qs, size_t nc, uint32_t tm,
                     const void *const *krow, const void *const *const pf[2], size_t row_bytes,
                     int32_t n, float *s) {
    const size_t es = attn_dtype_size(kdt);
    __m512 u[DR][TILE / 4];
    for (int32_t i0 = 0; i0 < n; i0 += 4) {
        const unsigned char *kr[4];
        UNROLL
        for (int j = 0; j < 4; j++)
            kr[j] = (const unsigned char *)krow[i0 + j < n ? i0 + j : n - 1];
        if (pf) {
            for (int h = 0; h < (ATTN_AVX512_DEC_PF == 2 ? 1 : 2); h++)
                for (int j = 0; j < 4 && i0 + j < TILE; j++) {
                    const char *p = (const char *)pf[h][i0 + j];
                    if (p)
                        for (size_t o = 0; o < row_bytes; o += 64) _mm_prefetch(p + o, DEC_PF_HINT);
                }
        }
        __m512 c[DR][4];
        UNROLL
        for (int r = 0; r < R; r++)
            UNROLL
            for (int j = 0; j < 4; j++) c[r][j] = _mm512_setzero_ps();
        /* (one loop with a per-slice mask: a separate tail step made GCC
         * keep the accumulators in memory) */
        for (size_t sl = 0; sl < nc; sl++) {
            const uint32_t m = sl + 1 == nc ? tm : 0xffffffffu;
            if (kdt == ATTN_DTYPE_BF16) {
                /* 32 bf16 per load: odd elements are the top halves of the
                 * 32-bit lanes, even elements the bottom halves shifted up */
                const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
                __m512 ke[4], ko[4];
                UNROLL
                for (int j = 0; j < 4; j++) {
                    const __m512i w = _mm512_maskz_loadu_epi16((__mmask32)m, kr[j] + sl * 64);
                    ke[j] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
                    ko[j] = _mm512_castsi512_ps(_mm512_and_si512(w, hi));
                }
                UNROLL
                for (int r = 0; r < R; r++) {
                    const __m512 qe = _mm512_load_ps(qp + (size_t)r * qs + sl * 32);
                    const __m512 qo = _mm512_load_ps(qp + (size_t)r * qs + sl * 32 + 16);
                    UNROLL
                    for (int j = 0; j < 4; j++) {
                        c[r][j] = _mm512_fmadd_ps(qe, ke[j], c[r][j]);
                        c[r][j] = _mm512_fmadd_ps(qo, ko[j], c[r][j]);
                    }
                }
            } else {
                __m512 k[4];
                UNROLL
                for (int j = 0; j < 4; j++) k[j] = load16(kdt, kr[j] + sl * 16 * es, (__mmask16)m);
                UNROLL
                for (int r = 0; r < R; r++) {
                    const __m512 qv = _mm512_load_ps(qp + (size_t)r * qs + sl * 16);
                    UNROLL
                    for (int j = 0; j < 4; j++) c[r][j] = _mm512_fmadd_ps(qv, k[j], c[r][j]);
                }
            }
        }
        UNROLL
        for (int r = 0; r < R; r++) u[r][i0 / 4] = fold4(c[r][0], c[r][1], c[r][2], c[r][3]);
    }
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
        const int g4 = i0 / 4;
        UNROLL
        for (int r = 0; r < R; r++) {
            /* groups past n were not computed: fold zeros (masked later) */
            const __m512 z = _mm512_setzero_ps();
            const __m512 u1 = i0 + 4 < n ? u[r][g4 + 1] : z;
            const __m512 u2 = i0 + 8 < n ? u[r][g4 + 2] : z;
            const __m512 u3 = i0 + 12 < n ? u[r][g4 + 3] : z;
            _mm512_store_ps(s + (size_t)r * TILE + i0, fold16(u[r][g4], u1, u2, u3));
        }
    }
}

#define QK_FN(name_, T_)                                                                  \
    static void name_(int32_t R, const float *qp, size_t qs, size_t nc, uint32_t tm,     \
                      const void *const *krow, const void *const *const pf[2],          \
                      size_t row_bytes, int32_t n, float *s) {                           \
        switch (R) {                                                                     \
        case 1: qk_block(1, T_, qp, qs, nc, tm, krow, pf, row_bytes, n, s); break;      \
        case 2: qk_block(2, T_, qp, qs, nc, tm, krow, pf, row_bytes, n, s); break;      \
        case 3: qk_block(3, T_, qp, qs, nc, tm, krow, pf, row_bytes, n, s); break;      \
        default: qk_block(4, T_, qp, qs, nc, tm, krow, pf, row_bytes, n, s); break;     \
        }                                                                                \
    }
QK_FN(qk_f32, ATTN_DTYPE_F32)
QK_FN(qk_bf16, ATTN_DTYPE_BF16)
QK_FN(qk_f16, ATTN_DTYPE_F16)

/* ------------------------------------------------------------- driver */

void attn__avx512_decode_tile(const attn_tile_args *a, attn_dtype kdt) {
    ATTN_ASSERT(attn__avx512_decode_fits(a));
    ATTN_ASSERT(a->g >= 1 && a->head_dim >= 1 && a->head_dim <= ATTN_MAX_HEAD_DIM);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    const int32_t rows = a->g, bs = a->block_size;
    const size_t D = (size_t)a->head_dim, es = attn_dtype_size(kdt);
    int64_t vlo, vhi; /* the one row interval every head of the token shares */
    attn__row_interval((int64_t)a->pos0, key_limit, a->causal, a->window, &vlo, &vhi);
    if (vlo < a->k0) vlo = a->k0;
    if (vhi > k1) vhi = k1;
    if (vlo >= vhi) return; /* nothing visible: every row keeps its state */

    /* q in the slice layout of qk_block: fp32/f16 slices of 16 dims, bf16
     * slices of 32 dims as [16 even dims][16 odd dims]; zero past D. */
    const int pairs = kdt == ATTN_DTYPE_BF16;
    const size_t sw = pairs ? 32 : 16, nc = (D + sw - 1) / sw, qs = nc * sw;
    const size_t tail = D - (nc - 1) * sw;
    const uint32_t tm = tail >= 32 ? 0xffffffffu : (1u << tail) - 1u;
    float qp[DEC_MAX_ROWS * ((ATTN_MAX_HEAD_DIM + 31) / 32 * 32)] __attribute__((aligned(64)));
    for (int32_t r = 0; r < rows; r++) {
        const float *q = a->q + (size_t)r * D;
        float *dst = qp + (size_t)r * qs;
        for (size_t sl = 0; sl < nc; sl++)
            for (size_t e = 0; e < sw; e++) {
                /* slice element e holds dim d */
                const size_t d = sl * sw + (pairs ? (e < 16 ? 2 * e : 2 * (e - 16) + 1) : e);
                dst[sl * sw + e] = d < D ? q[d] : 0.0f;
            }
    }
    void (*qk)(int32_t, const float *, size_t, size_t, uint32_t, const void *const *,
               const void *const *const[2], size_t, int32_t, float *) = qk_f32;
    void (*pv)(int32_t, float *, size_t, const float *, const float *, const void *const *,
               const void *const *, int32_t, int32_t) = pv_block_f32;
    if (kdt == ATTN_DTYPE_BF16) qk = qk_bf16, pv = pv_block_bf16;
    if (kdt == ATTN_DTYPE_F16) qk = qk_f16, pv = pv_block_f16;

    const void *krow[TILE], *vrow[TILE], *kpf[TILE], *vpf[TILE];
    /* key rows of a chunk, walked block by block */
    const size_t row_bytes = D * es;
    const unsigned char *kbase = a->k_cache, *vbase = a->v_cache;
#define ROW_OFF(blk_, slot_)                                                                 \
    (((size_t)(blk_) * a->block_stride + a->head_offset) * es + (size_t)(slot_) * row_bytes)

    /* chunks are aligned to k0 as in the general tile, starting at the
     * first chunk that holds a visible key */
    const int32_t c_first = a->k0 + (int32_t)((vlo - a->k0) / TILE) * TILE;
    for (int32_t c0 = c_first; c0 < vhi; c0 += TILE) {
        const int32_t n = (k1 - c0 < TILE) ? k1 - c0 : TILE;
        const int32_t c1 = c0 + n;
        {
            int32_t b = c0 / bs, slot = c0 % bs;
            for (int32_t i = 0; i < n; i++) {
                const int32_t blk = a->blocks[b];
                ATTN_ASSERT(blk >= 0);
                const size_t off = ROW_OFF(blk, slot);
                krow[i] = kbase + off;
                vrow[i] = vbase + off;
                if (++slot == bs) slot = 0, b++;
            }
        }
        /* the next chunk's rows (only those that will be visible) */
        const int32_t nn = c1 < vhi ? ((int32_t)vhi - c1 < TILE ? (int32_t)vhi - c1 : TILE) : 0;
        if (nn > 0) {
            int32_t b = c1 / bs, slot = c1 % bs;
            for (int32_t i = 0; i < nn; i++) {
                const size_t off = ROW_OFF(a->blocks[b], slot);
                kpf[i] = kbase + off;
                vpf[i] = vbase + off;
                if (++slot == bs) slot = 0, b++;
            }
        }
        for (int32_t i = nn; i < TILE; i++) kpf[i] = vpf[i] = NULL;
        const void *const *const pf[2] = {kpf, vpf};

        const int32_t ilo = vlo > c0 ? (int32_t)(vlo - c0) : 0;
        const int32_t ihi = vhi < c1 ? (int32_t)(vhi - c0) : n;
        for (int32_t r0 = 0; r0 < rows; r0 += DR) {
            const int32_t R = rows - r0 < DR ? rows - r0 : DR;
            qk(R, qp + (size_t)r0 * qs, qs, nc, tm, krow, r0 == 0 && ATTN_AVX512_DEC_PF ? pf : NULL,
               row_bytes, n, a->scores + (size_t)r0 * TILE);
        }
        float alpha[DEC_MAX_ROWS];
        for (int32_t r = 0; r < rows; r++)
            alpha[r] = softmax_row(a, r, (int64_t)c0 - a->pos0, ilo, ihi,
                                   a->scores + (size_t)r * TILE, a->m + r, a->l + r);
        for (int32_t r0 = 0; r0 < rows; r0 += PR) {
            const int32_t R = rows - r0 < PR ? rows - r0 : PR;
            pv(R, a->acc + (size_t)r0 * D, D, alpha + r0, a->scores + (size_t)r0 * TILE, vrow,
               r0 == 0 && ATTN_AVX512_DEC_PF == 2 ? vpf : NULL, ilo, ihi);
        }
    }
#undef ROW_OFF
}
