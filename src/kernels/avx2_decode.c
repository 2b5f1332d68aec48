/*
 * avx2_decode.c — the AVX2 tile for single-token items (decode, and split
 * decode pieces): n_tok = 1, at most AVX2_DEC_MAX_ROWS query heads per KV
 * head, D a multiple of 16 up to AVX2_DEC_MAX_D (table_avx2.c routes them
 * here; the rest take avx2.c's general tile).
 *
 * Why: a decode item reads each K/V byte once for g multiply-adds, so the
 * general tile's K transpose costs more than the dots.  Here nothing is
 * packed:
 *   Q.K  2 keys x AVX2_DR = 4 rows per 16 dims from the cache: each widened K
 *        piece feeds every query head of the KV head; hadd tree per pair.
 *   widen bf16 by shift and AND (even, odd dims) against q and acc kept
 *        in that order; f16 by VCVTPH2PS; fp8 via f16 (e4m3 read at 2^-8,
 *        q and weights at 2^8; NaN codes scanned once per step).
 *   P.V  16 dims x AVX2_DR rows per pass; softmax is avx2_inl.h's.
 *   memory: decode runs walked chunk by chunk across heads, the next
 *        step prefetched one line per line read: T1 under the intel
 *        tuning profile, NTA under amd (kernels.h, attn_tile_args.tune).
 * Numerics: fp32, another association than the portable tile; the same
 * exp, masking and state units.  No threads, allocation or plan scratch:
 * stack copies bounded by AVX2_DEC_STACK_FLOATS.
 */
#include "avx2_inl.h"
#include "mask.h"

#define AVX2_DR 4            /* rows per register block */
#define AVX2_DEC_MAX_ROWS 16 /* larger groups amortise the general tile's transpose */
#define AVX2_DEC_MAX_D 256   /* bounds the stack copies of q and acc */
#define AVX2_DEC_STACK_FLOATS (AVX2_DEC_MAX_ROWS * AVX2_DEC_MAX_D)
#define DEC_MAX_HEADS 16 /* heads per batch (a decode run is at most as long) */

/* How a K or V row is read: the cache dtype, and for e4m3 whether NaN
 * codes must come out as NaN (a step that holds one). */
enum { K_F32, K_F16, K_BF16, K_E5M2, K_E4M3S, K_E4M3S_NAN, K_KINDS };

int attn_decode_fits__avx2(const attn_tile_args *a) {
    return a->n_tok == 1 && a->g <= AVX2_DEC_MAX_ROWS && a->head_dim <= AVX2_DEC_MAX_D &&
           a->head_dim % 16 == 0;
}

/* Prefetch the line at p: NTA (the amd profile) or T1. */
INLINE void pf_line(const char *p, int nta) {
    if (nta) _mm_prefetch(p, _MM_HINT_NTA);
    else _mm_prefetch(p, _MM_HINT_T1);
}

/* Bytes per element of a kind. */
INLINE size_t kind_size(int kind) {
    return kind == K_F32 ? 4 : kind == K_F16 || kind == K_BF16 ? 2 : 1;
}

/* 16 elements at p as two vectors: natural order (dims 0-7, 8-15), or for
 * bf16 the pair order (even dims, odd dims).  e4m3 reads value x 2^-8. */
INLINE void avx2_widen16(int kind, const unsigned char *p, __m256 *lo, __m256 *hi) {
    if (kind == K_F32) {
        *lo = _mm256_loadu_ps((const float *)p);
        *hi = _mm256_loadu_ps((const float *)p + 8);
    } else if (kind == K_F16) {
        *lo = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
        *hi = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p + 1));
    } else if (kind == K_BF16) {
        const __m256i w = _mm256_loadu_si256((const __m256i *)p);
        *lo = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
        *hi = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u)));
    } else {
        const __m128i b = _mm_loadu_si128((const __m128i *)p), z = _mm_setzero_si128();
        /* each code in the top byte of a 16-bit lane: an e5m2 code is then
         * the f16 of its value */
        __m128i x0 = _mm_unpacklo_epi8(z, b), x1 = _mm_unpackhi_epi8(z, b);
        if (kind != K_E5M2) {
            /* e4m3: sign at bit 15, exponent and mantissa at bits 7-13:
             * an f16 of the value times 2^-8 (normal and subnormal codes) */
            const __m128i m = _mm_set1_epi16((short)0xbf80);
            x0 = _mm_and_si128(_mm_srai_epi16(x0, 1), m);
            x1 = _mm_and_si128(_mm_srai_epi16(x1, 1), m);
        }
        __m256 v0 = _mm256_cvtph_ps(x0), v1 = _mm256_cvtph_ps(x1);
        if (kind == K_E4M3S_NAN) {
            const __m128i em = _mm_set1_epi16(0x7f00);
            const __m128i n = _mm_cmpeq_epi16(_mm_and_si128(_mm_unpacklo_epi8(z, b), em), em);
            const __m128i n1 = _mm_cmpeq_epi16(_mm_and_si128(_mm_unpackhi_epi8(z, b), em), em);
            const __m256 nanbits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7ff00000));
            v0 = _mm256_or_ps(v0, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cvtepi16_epi32(n)), nanbits));
            v1 = _mm256_or_ps(v1, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cvtepi16_epi32(n1)), nanbits));
        }
        *lo = v0;
        *hi = v1;
    }
}

/* [r0k0, r0k1, r1k0, r1k1]: the horizontal sums of two rows' accumulators
 * of two keys. */
INLINE __m128 red2x2(__m256 a0, __m256 a1, __m256 b0, __m256 b1) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(b0, b1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* ---------------------------------------------------------- Q.K */

/* Raw dots of R (<= AVX2_DR) rows (row r at q + r D, in the kind's dim order)
 * with keys i (row k0) and i + 1 (row k1; two = 0: k1 is k0 again and
 * only key i is written) into s[r AVX2_TILE + i].  pf0, pf1 (or NULL): rows
 * whose lines to prefetch, one per 64 bytes read. */
INLINE void qk2(int R, int kind, const float *q, size_t D, const unsigned char *k0,
                const unsigned char *k1, const char *pf0, const char *pf1, int nta, float *s,
                int32_t i, int two) {
    const size_t es = kind_size(kind);
    __m256 c[AVX2_DR][2];
    UNROLL
    for (int r = 0; r < R; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
    for (size_t d = 0; d < D; d += 16) {
        const size_t off = d * es;
        if ((off & 63) == 0) {
            if (pf0) pf_line(pf0 + off, nta);
            if (pf1) pf_line(pf1 + off, nta);
        }
        __m256 a0, a1, b0, b1;
        avx2_widen16(kind, k0 + off, &a0, &a1);
        avx2_widen16(kind, k1 + off, &b0, &b1);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m256 q0 = _mm256_loadu_ps(q + (size_t)r * D + d);
            const __m256 q1 = _mm256_loadu_ps(q + (size_t)r * D + d + 8);
            c[r][0] = _mm256_fmadd_ps(q0, a0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(q0, b0, c[r][1]);
            c[r][0] = _mm256_fmadd_ps(q1, a1, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(q1, b1, c[r][1]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r += 2) {
        float t[4];
        if (r + 1 < R)
            _mm_storeu_ps(t, red2x2(c[r][0], c[r][1], c[r + 1][0], c[r + 1][1]));
        else
            _mm_storeu_ps(t, red2x2(c[r][0], c[r][1], c[r][0], c[r][1]));
        s[(size_t)r * AVX2_TILE + (size_t)i] = t[0];
        if (two) s[(size_t)r * AVX2_TILE + (size_t)i + 1] = t[1];
        if (r + 1 < R) {
            s[(size_t)(r + 1) * AVX2_TILE + (size_t)i] = t[2];
            if (two) s[(size_t)(r + 1) * AVX2_TILE + (size_t)i + 1] = t[3];
        }
    }
}

/* Q.K of R rows over the chunk's keys [ilo, ihi) (krow indexed by key),
 * prefetching the rows pf[0 .. npf), two per pair of keys; returns how
 * many of them it prefetched. */
INLINE int32_t qk_chunk(int R, int kind, const float *q, size_t D,
                        const unsigned char *const *krow, int32_t ilo, int32_t ihi,
                        const char *const *pf, int32_t npf, int nta, float *s) {
    int32_t j = 0;
    for (int32_t i = ilo; i < ihi; i += 2, j += 2) {
        const int two = i + 1 < ihi;
        qk2(R, kind, q, D, krow[i], krow[two ? i + 1 : i], j < npf ? pf[j] : NULL,
            j + 1 < npf ? pf[j + 1] : NULL, nta, s, i, two);
    }
    return j < npf ? j : npf;
}

/* ---------------------------------------------------------- P.V */

/* acc = alpha acc + p V for R (<= AVX2_DR) rows (row r's accumulators at acc +
 * r D, in the kind's dim order; weights at p + r AVX2_TILE) over keys [ilo,
 * ihi), dims [dofs, dofs + 16).  pf (or NULL): the next step's rows,
 * pf[i - ilo] for key i while below npf, their line at this pass's
 * offset when it starts a line. */
INLINE void pv16(int R, int kind, float *acc, size_t D, size_t dofs, const float *alpha,
                 const float *p, const unsigned char *const *vrow, int32_t ilo, int32_t ihi,
                 const char *const *pf, int32_t npf, int nta) {
    const size_t es = kind_size(kind);
    const size_t off = dofs * es;
    if (pf && (off & 63) != 0) pf = NULL;
    __m256 c[AVX2_DR][2];
    UNROLL
    for (int r = 0; r < R; r++) {
        const __m256 al = _mm256_set1_ps(alpha[r]);
        c[r][0] = _mm256_mul_ps(_mm256_loadu_ps(acc + (size_t)r * D + dofs), al);
#ifndef ATTN_INJECT_avx2_pv_rescale
        c[r][1] = _mm256_mul_ps(_mm256_loadu_ps(acc + (size_t)r * D + dofs + 8), al);
#else
        /* INJECTED BUG (avx2_pv_rescale): the upper 8 dims of each pass
         * keep their old scale when the running max moves. */
        c[r][1] = _mm256_loadu_ps(acc + (size_t)r * D + dofs + 8);
#endif
    }
    for (int32_t i = ilo; i < ihi; i++) {
        if (pf && i - ilo < npf) pf_line(pf[i - ilo] + off, nta);
        __m256 v0, v1;
        avx2_widen16(kind, vrow[i] + off, &v0, &v1);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m256 pb = _mm256_broadcast_ss(p + (size_t)r * AVX2_TILE + (size_t)i);
            c[r][0] = _mm256_fmadd_ps(pb, v0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(pb, v1, c[r][1]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(acc + (size_t)r * D + dofs, c[r][0]);
        _mm256_storeu_ps(acc + (size_t)r * D + dofs + 8, c[r][1]);
    }
}

/* The per-kind micro-kernels behind one signature each, R dispatched to a
 * constant. */
typedef int32_t (*qk_fn)(int32_t R, const float *q, size_t D, const unsigned char *const *krow,
                         int32_t ilo, int32_t ihi, const char *const *pf, int32_t npf, int nta,
                         float *s);
typedef void (*pv_fn)(int32_t R, float *acc, size_t D, const float *alpha, const float *p,
                      const unsigned char *const *vrow, int32_t ilo, int32_t ihi,
                      const char *const *pf, int32_t npf, int nta);

#define KIND_FNS(name_, KIND_)                                                               \
    static int32_t qk_##name_(int32_t R, const float *q, size_t D,                           \
                              const unsigned char *const *krow, int32_t ilo, int32_t ihi,    \
                              const char *const *pf, int32_t npf, int nta, float *s) {       \
        switch (R) {                                                                         \
        case 1: return qk_chunk(1, KIND_, q, D, krow, ilo, ihi, pf, npf, nta, s);            \
        case 2: return qk_chunk(2, KIND_, q, D, krow, ilo, ihi, pf, npf, nta, s);            \
        case 3: return qk_chunk(3, KIND_, q, D, krow, ilo, ihi, pf, npf, nta, s);            \
        default: return qk_chunk(4, KIND_, q, D, krow, ilo, ihi, pf, npf, nta, s);           \
        }                                                                                    \
    }                                                                                        \
    static void pv_##name_(int32_t R, float *acc, size_t D, const float *alpha,              \
                           const float *p, const unsigned char *const *vrow, int32_t ilo,    \
                           int32_t ihi, const char *const *pf, int32_t npf, int nta) {       \
        for (size_t dofs = 0; dofs < D; dofs += 16) {                                        \
            switch (R) {                                                                     \
            case 1: pv16(1, KIND_, acc, D, dofs, alpha, p, vrow, ilo, ihi, pf, npf, nta); break; \
            case 2: pv16(2, KIND_, acc, D, dofs, alpha, p, vrow, ilo, ihi, pf, npf, nta); break; \
            case 3: pv16(3, KIND_, acc, D, dofs, alpha, p, vrow, ilo, ihi, pf, npf, nta); break; \
            default: pv16(4, KIND_, acc, D, dofs, alpha, p, vrow, ilo, ihi, pf, npf, nta); break; \
            }                                                                                \
        }                                                                                    \
    }
KIND_FNS(f32, K_F32)
KIND_FNS(f16, K_F16)
KIND_FNS(bf16, K_BF16)
KIND_FNS(e5m2, K_E5M2)
KIND_FNS(e4m3s, K_E4M3S)
KIND_FNS(e4m3s_nan, K_E4M3S_NAN)

static const qk_fn qk_of[K_KINDS] = {qk_f32, qk_f16, qk_bf16, qk_e5m2, qk_e4m3s, qk_e4m3s_nan};
static const pv_fn pv_of[K_KINDS] = {pv_f32, pv_f16, pv_bf16, pv_e5m2, pv_e4m3s, pv_e4m3s_nan};

/* ------------------------------------------------------- layouts, rows */

/* n natural dims (a multiple of 16) times mul into the pair order of
 * widen16's bf16 reading (per 16 dims: the 8 even, then the 8 odd). */
static void to_pairs(const float *src, float *dst, size_t n, float mul) {
    const __m256i ix = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256 m = _mm256_set1_ps(mul);
    for (size_t d = 0; d < n; d += 16) {
        const __m256 a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + d), ix);
        const __m256 b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + d + 8), ix);
        _mm256_store_ps(dst + d, _mm256_mul_ps(_mm256_permute2f128_ps(a, b, 0x20), m));
        _mm256_store_ps(dst + d + 8, _mm256_mul_ps(_mm256_permute2f128_ps(a, b, 0x31), m));
    }
}

/* to_pairs' inverse (mul 1). */
static void from_pairs(const float *src, float *dst, size_t n) {
    const __m256i ix = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (size_t d = 0; d < n; d += 16) {
        const __m256 e = _mm256_load_ps(src + d), o = _mm256_load_ps(src + d + 8);
        _mm256_storeu_ps(dst + d, _mm256_permutevar8x32_ps(_mm256_permute2f128_ps(e, o, 0x20), ix));
        _mm256_storeu_ps(dst + d + 8,
                         _mm256_permutevar8x32_ps(_mm256_permute2f128_ps(e, o, 0x31), ix));
    }
}

/* Row addresses of keys [k, k + n) of a's head, K and V, walked block by
 * block (the plan validated every block id of the item's range). */
static void row_ptrs(const attn_tile_args *a, size_t es, int32_t k, int32_t n,
                     const unsigned char **krow, const unsigned char **vrow) {
    const int32_t bs = a->block_size;
    const size_t row = (size_t)a->head_dim * es;
    int32_t b = k / bs, slot = k % bs;
    for (int32_t i = 0; i < n; b++, slot = 0) {
        const int32_t blk = a->blocks[b];
        ATTN_ASSERT(blk >= 0);
        const size_t off = ((size_t)blk * a->block_stride + a->head_offset) * es + (size_t)slot * row;
#ifndef ATTN_INJECT_avx2_decode_run
        const int32_t run = bs - slot < n - i ? bs - slot : n - i;
#else
        /* INJECTED BUG (avx2_decode_run): a block's run of keys taken one
         * too long: the key after the block's last slot is read from past
         * its piece (the next head's rows, or past the cache). */
        const int32_t run = bs - slot + 1 < n - i ? bs - slot + 1 : n - i;
#endif
        for (int32_t j = 0; j < run; j++, i++) {
            krow[i] = (const unsigned char *)a->k_cache + off + (size_t)j * row;
            vrow[i] = (const unsigned char *)a->v_cache + off + (size_t)j * row;
        }
    }
}

/* Whether K or V of keys [ilo, ihi) holds an e4m3 NaN code (0x7f, 0xff)
 * in its D bytes (D a multiple of 16). */
static int avx2_e4m3_nan_in(const unsigned char *const *krow, const unsigned char *const *vrow,
                            int32_t ilo, int32_t ihi, size_t D) {
    const __m128i top = _mm_set1_epi8((char)0x80), ones = _mm_set1_epi8(-1);
    __m128i any = _mm_setzero_si128();
    for (int32_t i = ilo; i < ihi; i++)
        for (size_t o = 0; o < D; o += 16) {
            const __m128i k = _mm_loadu_si128((const __m128i *)(krow[i] + o));
            const __m128i v = _mm_loadu_si128((const __m128i *)(vrow[i] + o));
            any = _mm_or_si128(any, _mm_cmpeq_epi8(_mm_or_si128(k, top), ones));
            any = _mm_or_si128(any, _mm_cmpeq_epi8(_mm_or_si128(v, top), ones));
        }
    return _mm_movemask_epi8(any) != 0;
}

/* Prefetch every line of rows pf[from .. n) (what Q.K or P.V did not
 * spread through their loops). */
static void prefetch_rest(const char *const *pf, int32_t from, int32_t n, size_t row_bytes,
                          int nta) {
    for (int32_t i = from; i < n; i++)
        for (size_t o = 0; o < row_bytes; o += 64) pf_line(pf[i] + o, nta);
}

/* ------------------------------------------------------------- driver */

/* One batch of heads whose stack copies fit: a[0 .. nh) share the token,
 * the key range and everything but the KV head and the per-head state.
 * Walk: chunk by chunk, every head in turn; the prefetch runs one (head,
 * chunk) step ahead: the next head's rows of this chunk, after the last
 * head the first head's next chunk, after the last chunk the item after
 * a[nh - 1]. */
static void avx2_decode_batch(const attn_tile_args *a, int32_t nh, attn_dtype dt) {
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    const int32_t rows = a->g;
    const size_t D = (size_t)a->head_dim, es = attn__dtype_size(dt), row_bytes = D * es;
    int64_t vlo, vhi; /* the one row interval every head of the token shares */
    attn__row_interval((int64_t)a->pos0, key_limit, a->causal, a->window_left, a->window_right,
                       &vlo, &vhi);
    if (vlo < a->k0) vlo = a->k0;
    if (vhi > k1) vhi = k1;
    if (vlo >= vhi) return; /* nothing visible: every row keeps its state */

    const int pairs = dt == ATTN_DTYPE_BF16, e4m3 = dt == ATTN_DTYPE_FP8_E4M3;
    const int nta = a->tune == ATTN__TUNE_AMD;
    const int kind = dt == ATTN_DTYPE_F32    ? K_F32
                     : dt == ATTN_DTYPE_F16  ? K_F16
                     : pairs                 ? K_BF16
                     : e4m3                  ? K_E4M3S
                                             : K_E5M2;
    const size_t hf = (size_t)rows * D; /* floats of one head's q (or acc) */
    ATTN_ASSERT(nh <= DEC_MAX_HEADS && (!(pairs || e4m3) || (size_t)nh * hf <= AVX2_DEC_STACK_FLOATS));
    float qbuf[AVX2_DEC_STACK_FLOATS] __attribute__((aligned(32)));
    float abuf[AVX2_DEC_STACK_FLOATS] __attribute__((aligned(32)));
    const float *qh[DEC_MAX_HEADS];
    float *ah[DEC_MAX_HEADS];
    for (int32_t h = 0; h < nh; h++) {
        ATTN_ASSERT(a[h].pos0 == a->pos0 && a[h].k0 == a->k0 && a[h].k1 == a->k1 &&
                    a[h].g == rows && a[h].head_dim == a->head_dim);
        qh[h] = a[h].q;
        ah[h] = a[h].acc;
        if (pairs) {
            to_pairs(a[h].q, qbuf + h * hf, hf, 1.0f);
            to_pairs(a[h].acc, abuf + h * hf, hf, 1.0f);
            qh[h] = qbuf + h * hf;
            ah[h] = abuf + h * hf;
        } else if (e4m3) {
            /* K read times 2^-8: q times 2^8 (q is normalised, executor.c,
             * so the product is exact) */
            for (size_t e = 0; e < hf; e += 8)
                _mm256_store_ps(qbuf + h * hf + e,
                                _mm256_mul_ps(_mm256_loadu_ps(a[h].q + e), _mm256_set1_ps(0x1p8f)));
            qh[h] = qbuf + h * hf;
        }
    }

    float sc[AVX2_DEC_MAX_ROWS * AVX2_TILE] __attribute__((aligned(32)));
    memset(sc, 0, sizeof(float) * (size_t)rows * AVX2_TILE);
    const unsigned char *krow[AVX2_TILE], *vrow[AVX2_TILE];
    const unsigned char *kpf[AVX2_TILE], *vpf[AVX2_TILE];
    /* chunks aligned to k0 as in the general tile, from the first one that
     * holds a visible key */
    const int32_t c_first = a->k0 + (int32_t)((vlo - a->k0) / AVX2_TILE) * AVX2_TILE;
    for (int32_t c0 = c_first; c0 < vhi; c0 += AVX2_TILE) {
        const int32_t n = (k1 - c0 < AVX2_TILE) ? k1 - c0 : AVX2_TILE;
        const int32_t c1 = c0 + n;
        const int32_t ilo = vlo > c0 ? (int32_t)(vlo - c0) : 0;
        const int32_t ihi = vhi < c1 ? (int32_t)(vhi - c0) : n;
        for (int32_t h = 0; h < nh; h++) {
            const attn_tile_args *x = &a[h];
            row_ptrs(x, es, c0 + ilo, ihi - ilo, krow + ilo, vrow + ilo);
            /* the next step's rows, compact from index 0 */
            int32_t npf = 0;
            if (h + 1 < nh) {
                npf = ihi - ilo;
                row_ptrs(&a[h + 1], es, c0 + ilo, npf, kpf, vpf);
            } else if ((int64_t)c0 + AVX2_TILE < vhi) {
                npf = vhi - (c0 + AVX2_TILE) < AVX2_TILE ? (int32_t)(vhi - (c0 + AVX2_TILE)) : AVX2_TILE;
                row_ptrs(a, es, c0 + AVX2_TILE, npf, kpf, vpf);
            } else if (x->next_blocks) {
                attn_tile_args nx = *x;
                nx.blocks = x->next_blocks;
                nx.head_offset = x->next_head_offset;
                npf = x->next_k1 - x->next_k0 < AVX2_TILE ? x->next_k1 - x->next_k0 : AVX2_TILE;
                row_ptrs(&nx, es, x->next_k0, npf, kpf, vpf);
            }
            const int nan_step = e4m3 && avx2_e4m3_nan_in(krow, vrow, ilo, ihi, D);
            const int kd = nan_step ? K_E4M3S_NAN : kind;
            for (int32_t r0 = 0; r0 < rows; r0 += AVX2_DR) {
                const int32_t R = rows - r0 < AVX2_DR ? rows - r0 : AVX2_DR;
                const int32_t done =
                    qk_of[kd](R, qh[h] + (size_t)r0 * D, D, krow, ilo, ihi,
                              (const char *const *)kpf, r0 == 0 ? npf : 0, nta,
                              sc + (size_t)r0 * AVX2_TILE);
                if (r0 == 0) prefetch_rest((const char *const *)kpf, done, npf, row_bytes, nta);
            }
            float alpha[AVX2_DEC_MAX_ROWS];
            for (int32_t r = 0; r < rows; r++)
                alpha[r] = softmax_row(x, r, (int64_t)c0 - x->pos0, ilo, ihi, sc + (size_t)r * AVX2_TILE,
                                       x->m + r, x->l + r);
            if (e4m3) /* the weights times 2^8 for V read times 2^-8 (l keeps the true sum) */
                for (int32_t r = 0; r < rows; r++)
                    for (int32_t i = ilo; i < ihi; i++) sc[(size_t)r * AVX2_TILE + (size_t)i] *= 0x1p8f;
            for (int32_t r0 = 0; r0 < rows; r0 += AVX2_DR) {
                const int32_t R = rows - r0 < AVX2_DR ? rows - r0 : AVX2_DR;
                pv_of[kd](R, ah[h] + (size_t)r0 * D, D, alpha + r0, sc + (size_t)r0 * AVX2_TILE, vrow,
                          ilo, ihi, r0 == 0 ? (const char *const *)vpf : NULL, npf, nta);
            }
            prefetch_rest((const char *const *)vpf, ihi - ilo, npf, row_bytes, nta);
        }
    }
    if (pairs)
        for (int32_t h = 0; h < nh; h++) from_pairs(abuf + h * hf, a[h].acc, hf);
}

/* n single-token items that differ only in their KV head (attn_tile_heads_fn),
 * as many heads per batch as the stack copies hold. */
static void avx2_decode_heads(const attn_tile_args *a, int32_t n, attn_dtype dt) {
    ATTN_ASSERT(n >= 1);
    for (int32_t h = 0; h < n; h++) ATTN_ASSERT(attn_decode_fits__avx2(&a[h]));
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    const int copies = dt == ATTN_DTYPE_BF16 || dt == ATTN_DTYPE_FP8_E4M3;
    int32_t per = copies ? (int32_t)(AVX2_DEC_STACK_FLOATS / ((size_t)a->g * (size_t)a->head_dim))
                         : DEC_MAX_HEADS;
    if (per > DEC_MAX_HEADS) per = DEC_MAX_HEADS;
    for (int32_t h0 = 0; h0 < n; h0 += per) avx2_decode_batch(a + h0, n - h0 < per ? n - h0 : per, dt);
}

void attn_decode_f32__avx2(const attn_tile_args *a, int32_t n) { avx2_decode_heads(a, n, ATTN_DTYPE_F32); }
void attn_decode_bf16__avx2(const attn_tile_args *a, int32_t n) { avx2_decode_heads(a, n, ATTN_DTYPE_BF16); }
void attn_decode_f16__avx2(const attn_tile_args *a, int32_t n) { avx2_decode_heads(a, n, ATTN_DTYPE_F16); }
void attn_decode_fp8e4m3__avx2(const attn_tile_args *a, int32_t n) {
    avx2_decode_heads(a, n, ATTN_DTYPE_FP8_E4M3);
}
void attn_decode_fp8e5m2__avx2(const attn_tile_args *a, int32_t n) {
    avx2_decode_heads(a, n, ATTN_DTYPE_FP8_E5M2);
}
