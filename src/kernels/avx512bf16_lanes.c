/*
 * avx512bf16_lanes.c — the avx512bf16 table's tile for bf16 K/V items with
 * many query rows (prefill): the layout of the fp32 lanes tile
 * (avx512_lanes.c: query rows in the vector lanes, S^T panels, a softmax
 * down the key axis, the accumulator transposed into Ot panels) with both
 * products on VDPBF16PS (bf16 pairs multiplied, added into fp32 lanes):
 *
 *   Q.K^T  Qt2 panels [D/2][16 NR] hold q rounded to bf16, a pair of dims
 *          per 32-bit lane; per pair of dims, 4 Qt2 loads and 6 broadcast
 *          words of K (bf16 pairs already) feed 24 VDPBF16PS.
 *   P.V    the weights are rounded to bf16 by the softmax (and summed as
 *          rounded, so l normalises exactly the weights used), then packed
 *          in place as key pairs, [AVX512_TILE/2][16 rows] per S^T panel; V is
 *          packed once per chunk into key-pair rows Vp[AVX512_TILE/2][D] (each
 *          32-bit word: dim d of keys 2i and 2i+1), and per key pair 4
 *          weight loads and 6 broadcast words of Vp feed 24 VDPBF16PS.
 *
 * Where it runs: attn_lanes_fits__avx512bf16 — bf16 K/V, rows a multiple
 * of 16 in 32 .. 2 x AVX512_TILE, D a multiple of 32.  Only the avx512bf16 table
 * routes items here, and only where its CPU's VDPBF16PS is at least as fast
 * per instruction as an FMA (table_avx512bf16.c decides).
 *
 * Numerics (what differs from the fp32 tiles; docs/engine.md, "Rounding",
 * turns this into a bound on the output, and the harness's compare.c into
 * its tolerance for these runs; the amx table's tile, amx.c, shares its
 * packing of q and the weights and so its numerics):
 *   - q is rounded to bf16 once: bf16 keeps 8 significant bits, so round
 *     to nearest even moves an element by |dq| <= 2^-8 |q| and a logit by
 *     at most 2^-8 x sum_d |q_d k_d|; products are exact and sums fp32.
 *   - every weight is rounded to bf16 (relative error <= 2^-8) and the row
 *     sum l adds the rounded weights, so the output is an exact convex
 *     combination of V with weights each within a factor (1 +- 2^-8) of
 *     the fp32 ones (each logit moved by at most -ln(1 - 2^-8)).
 *   - VDPBF16PS treats bf16 subnormal inputs as zero: a weight below
 *     2^-126 of its chunk's largest (which is 1) contributes nothing to
 *     P.V while l counts it; q or K values below 2^-126 contribute
 *     nothing to a dot product.
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "avx512_lanes_inl.h"

/* The KV work area (2 x AVX512_TILE x D floats = 512 D bytes) holds Qt2 (rows x D
 * bf16 <= 256 D bytes) and, after it, Vp (AVX512_TILE x D bf16 = 128 D bytes). */
#define VP_OFFSET(D) ((size_t)2 * AVX512_TILE * (D) * 2)

int attn_lanes_fits__avx512bf16(const attn_tile_args *a) {
    const int64_t rows = (int64_t)a->n_tok * a->g;
    return rows >= LANES_MIN_ROWS && rows <= 2 * AVX512_TILE && rows % 16 == 0 &&
           a->head_dim % 32 == 0 && a->kv_tile >= AVX512_TILE && (uintptr_t)a->kv % 64 == 0 &&
           (uintptr_t)a->scores % 64 == 0 && (uintptr_t)a->q % 64 == 0;
}

/* ------------------------------------------------------ Q.K^T micro-kernel */

/* S^T for NK keys and NR row vectors, as the fp32 tile's qkt_rows with
 * one step per pair of dims: qt2 is the Qt2 panel ([D/2][16 NR] words),
 * krow the keys' bf16 rows (read as 32-bit pairs), st the first vector's
 * S^T panel at the first key.  kpf: the next chunk's rows of the same
 * keys (or NULL), one line prefetched per 32 dims and key. */
INLINE void qkt2_rows(int NK, int NR, const int32_t *qt2, size_t D, const void *const *krow,
                      const void *const *kpf, float *st) {
    const int32_t *k[NKB];
    UNROLL
    for (int j = 0; j < NK; j++) k[j] = (const int32_t *)krow[j];
    __m512 c[NKB][NRV];
    UNROLL
    for (int j = 0; j < NK; j++)
        UNROLL
        for (int v = 0; v < NR; v++) c[j][v] = _mm512_setzero_ps();
    for (size_t dp = 0; dp < D / 2; dp++) {
        if (kpf && dp % 16 == 0) {
            UNROLL
            for (int j = 0; j < NK; j++)
                if (kpf[j]) _mm_prefetch((const char *)kpf[j] + dp * 4, _MM_HINT_T1);
        }
        __m512bh q[NRV];
        UNROLL
        for (int v = 0; v < NR; v++)
            q[v] = (__m512bh)_mm512_load_si512((const void *)(qt2 + dp * 16 * NR + 16 * (size_t)v));
        UNROLL
        for (int j = 0; j < NK; j++) {
            const __m512bh b = (__m512bh)_mm512_set1_epi32(k[j][dp]);
            UNROLL
            for (int v = 0; v < NR; v++) c[j][v] = _mm512_dpbf16_ps(c[j][v], q[v], b);
        }
    }
    UNROLL
    for (int j = 0; j < NK; j++)
        UNROLL
        for (int v = 0; v < NR; v++) _mm512_store_ps(st + (size_t)v * SP + 16 * (size_t)j, c[j][v]);
}

#define QKT2_CASE(K_, R_)                                                                 \
    case (K_) * 8 + (R_): qkt2_rows(K_, R_, qt2, D, krow, kpf, st); break;
/* Out of line, as the fp32 tile's micro-kernels. */
__attribute__((noinline)) static void qkt2_block(int32_t NK, int32_t NR, const int32_t *qt2,
                                                 size_t D, const void *const *krow,
                                                 const void *const *kpf, float *st) {
    switch (NK * 8 + NR) {
        QKT2_CASE(2, 1) QKT2_CASE(2, 2) QKT2_CASE(2, 3) QKT2_CASE(2, 4)
        QKT2_CASE(4, 1) QKT2_CASE(4, 2) QKT2_CASE(4, 3) QKT2_CASE(4, 4)
        QKT2_CASE(6, 1) QKT2_CASE(6, 2) QKT2_CASE(6, 3) QKT2_CASE(6, 4)
    default: break;
    }
}

/* ------------------------------------------------------------- P.V */

/* Ot[d][r] = Ot[d][r] alpha[r] + sum over key pairs i of
 * P2[i][r] . Vp[i][d] (two products per lane), for ND dims from d0 and NR
 * row vectors: per key pair NR weight-pair loads and ND broadcast words
 * of Vp feed ND x NR VDPBF16PS.  pt: the first vector's S^T panel, now
 * holding key pairs (16 words per pair); vp: the chunk's Vp rows (D words
 * each). */
INLINE void pvt2_rows(int ND, int NR, float *ot, const float *alpha, const float *pt,
                      const int32_t *vp, size_t D, size_t d0, int32_t plo, int32_t phi) {
    __m512 c[NKB][NRV];
    UNROLL
    for (int v = 0; v < NR; v++) {
        const __m512 al = _mm512_load_ps(alpha + 16 * v);
        UNROLL
        for (int j = 0; j < ND; j++)
            c[j][v] = _mm512_mul_ps(_mm512_load_ps(ot + (size_t)j * 16 * NR + 16 * (size_t)v), al);
    }
    for (int32_t i = plo; i < phi; i++) {
        const int32_t *vr = vp + (size_t)i * D + d0;
        __m512bh p[NRV];
        UNROLL
        for (int v = 0; v < NR; v++)
            p[v] = (__m512bh)_mm512_load_si512((const void *)(pt + (size_t)v * SP + 16 * (size_t)i));
        UNROLL
        for (int j = 0; j < ND; j++) {
            const __m512bh b = (__m512bh)_mm512_set1_epi32(vr[j]);
            UNROLL
            for (int v = 0; v < NR; v++) c[j][v] = _mm512_dpbf16_ps(c[j][v], p[v], b);
        }
    }
    UNROLL
    for (int j = 0; j < ND; j++)
        UNROLL
        for (int v = 0; v < NR; v++) _mm512_store_ps(ot + (size_t)j * 16 * NR + 16 * (size_t)v, c[j][v]);
}

#define PVT2_CASE(D_, R_)                                                                 \
    case (D_) * 8 + (R_): pvt2_rows(D_, R_, ot, alpha, pt, vp, D, d0, plo, phi); break;
#define PVT2_CASES(D_) PVT2_CASE(D_, 1) PVT2_CASE(D_, 2) PVT2_CASE(D_, 3) PVT2_CASE(D_, 4)
__attribute__((noinline)) static void pvt2_block(int32_t ND, int32_t NR, float *ot,
                                                 const float *alpha, const float *pt,
                                                 const int32_t *vp, size_t D, size_t d0,
                                                 int32_t plo, int32_t phi) {
    switch (ND * 8 + NR) {
        PVT2_CASES(1) PVT2_CASES(2) PVT2_CASES(3) PVT2_CASES(4) PVT2_CASES(5) PVT2_CASES(6)
    default: break;
    }
}

/* ---------------------------------------------------------- packing */

/* Qt2 panels (panel_at geometry, in 32-bit words) from the fp32 rows of q:
 * each row's 32 dims of a slice rounded to bf16 in natural order (so word
 * t holds dims 2t, 2t + 1), then 16 rows transposed so that a word vector
 * holds one pair of dims for 16 rows. */
void attn__q_pairs__avx512bf16(const float *q, int32_t *qt2, int32_t rows, size_t D) {
    const size_t D2 = D / 2;
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        size_t ps;
        /* panel_at counts elements; a word panel has D/2 words per row */
        const int32_t p0 = r0 / QB * QB;
        ps = (size_t)(rows - p0 < QB ? rows - p0 : QB);
        int32_t *panel = qt2 + (size_t)p0 * D2 + (size_t)(r0 - p0);
        for (size_t d0 = 0; d0 < D; d0 += 32) {
            __m512 x[16];
            UNROLL
            for (int i = 0; i < 16; i++) {
                const float *row = q + (size_t)(r0 + i) * D + d0;
                x[i] = _mm512_castsi512_ps((__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 16),
                                                                         _mm512_loadu_ps(row)));
            }
            transpose16(x);
            UNROLL
            for (int t = 0; t < 16; t++) _mm512_store_ps((float *)(panel + (d0 / 2 + (size_t)t) * ps), x[t]);
        }
    }
}

/* Vp for the pairs that hold the chunk-relative keys [klo, khi) (rows
 * vrow): word d of row i is dim d of keys 2i (low half) and 2i + 1 (high
 * half); a key outside [klo, khi) is zero, so that its weight of 0 meets
 * a finite value even where V holds inf or NaN.  vpf: the next chunk's V
 * rows (or NULL), prefetched a line per line packed. */
static void v_pairs(const void *const *vrow, const void *const *vpf, int32_t klo, int32_t khi,
                    size_t D, int32_t *vp) {
    const __m512i lo_idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9,
                                            40, 8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1,
                                            32, 0);
    const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
    for (int32_t i = klo / 2; 2 * i < khi; i++) {
        const uint16_t *a = 2 * i >= klo ? (const uint16_t *)vrow[2 * i] : NULL;
        const uint16_t *b = 2 * i + 1 < khi ? (const uint16_t *)vrow[2 * i + 1] : NULL;
        int32_t *out = vp + (size_t)i * D;
        for (size_t d0 = 0; d0 < D; d0 += 32) {
            if (vpf) {
                if (vpf[2 * i]) _mm_prefetch((const char *)vpf[2 * i] + d0 * 2, _MM_HINT_T1);
                if (vpf[2 * i + 1]) _mm_prefetch((const char *)vpf[2 * i + 1] + d0 * 2, _MM_HINT_T1);
            }
            const __m512i x = a ? _mm512_loadu_si512((const void *)(a + d0)) : _mm512_setzero_si512();
            const __m512i y = b ? _mm512_loadu_si512((const void *)(b + d0)) : _mm512_setzero_si512();
            _mm512_store_si512((void *)(out + d0), _mm512_permutex2var_epi16(x, lo_idx, y));
            _mm512_store_si512((void *)(out + d0 + 16), _mm512_permutex2var_epi16(x, hi_idx, y));
        }
    }
}

/* The rounded weights of one S^T panel's keys [0, n) as key pairs, in
 * place: word vector i = keys 2i (low half) and 2i + 1 (high half) for 16
 * rows.  Every pair of the chunk, so that P.V may read any pair of its
 * panel's span (the softmax wrote 0 for every key outside the vector's
 * own span); a key at or past n (not written this chunk) counts as 0. */
void attn__p_pairs__avx512bf16(float *st, int32_t n) {
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u);
    for (int32_t i = 0; 2 * i < n; i++) {
        const __m512i x = _mm512_load_si512((const void *)(st + 32 * (size_t)i));
        const __m512i y = 2 * i + 1 < n ? _mm512_load_si512((const void *)(st + 32 * (size_t)i + 16))
                                        : _mm512_setzero_si512();
        _mm512_store_si512((void *)(st + 16 * (size_t)i),
                           _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_and_si512(y, top)));
    }
}

/* ------------------------------------------------------------- driver */

void attn_lanes_bf16__avx512bf16(const attn_tile_args *a) {
    ATTN_ASSERT(attn_lanes_fits__avx512bf16(a));
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    lanes_rows lr;
    if (!lanes_rows_init(a, &lr)) return; /* nothing visible: every row keeps its state */
    const int32_t k1 = lr.k1, rows = lr.rows, nvec = lr.nvec;
    const size_t D = (size_t)a->head_dim;

    int32_t *qt2 = (int32_t *)a->kv;
    int32_t *vp = (int32_t *)((unsigned char *)a->kv + VP_OFFSET(D));
    attn__q_pairs__avx512bf16(a->q, qt2, rows, D);
    /* the accumulator as the fp32 tile keeps it: Ot panels in q's area */
    float *ot = a->q;
    rows_panels(a->acc, ot, rows, D, 1);

    float *st = a->scores;
    const void *krow[AVX512_TILE + NKB], *vrow[AVX512_TILE + NKB];
    const void *kpf[AVX512_TILE + NKB], *vpf[AVX512_TILE + NKB];
    float alpha[2 * AVX512_TILE] __attribute__((aligned(64)));

    for (int32_t c0 = a->k0 + (lr.item_lo - a->k0) / AVX512_TILE * AVX512_TILE; c0 < lr.item_hi;
         c0 += AVX512_TILE) {
        const int32_t n = k1 - c0 < AVX512_TILE ? k1 - c0 : AVX512_TILE;
        lanes_chunk_rows(a, &lr, 2, c0, n, krow, vrow, kpf, vpf);

        /* Q.K^T as the fp32 tile: one Qt2 panel at a time, NKB keys per
         * block; the first panel prefetches the next chunk's K */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
            for (int32_t k = klo & ~1, nk; k < khi; k += nk) {
                nk = (khi - k + 1) & ~1;
                if (nk > NKB) nk = NKB;
                qkt2_block(nk, NR, qt2 + (size_t)(16 * v0) * (D / 2), D, krow + k,
                           v0 == 0 ? kpf + k : NULL, st + (size_t)v0 * SP + 16 * (size_t)k);
            }
        }
        lanes_softmax(1, a, &lr, st, c0, n, alpha);
        /* V as key pairs, for the pairs some row sees (prefetching the
         * next chunk's V), then each vector's weights as key pairs */
        int32_t ilo, ihi;
        span(lr.item_lo, lr.item_hi, c0, n, &ilo, &ihi);
        v_pairs(vrow, vpf, ilo, ihi, D, vp);
        for (int32_t v = 0; v < nvec; v++) attn__p_pairs__avx512bf16(st + (size_t)v * SP, n);
        /* P.V, one Ot panel at a time over the key pairs its rows see */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
            if (klo >= khi) continue; /* alpha = 1, weights 0: nothing to do */
            float *panel = ot + (size_t)(16 * v0) * D;
            for (size_t d0 = 0; d0 < D; d0 += NKB) {
                const int32_t nd = D - d0 < NKB ? (int32_t)(D - d0) : NKB;
                pvt2_block(nd, NR, panel + d0 * 16 * (size_t)NR, alpha + 16 * v0,
                           st + (size_t)v0 * SP, vp, D, d0, klo / 2, (khi + 1) / 2);
            }
        }
    }
    rows_panels(a->acc, ot, rows, D, 0);
}

/* ------------------------------------------------- conversions (test hook) */

/* q to bf16 as the pairs and lanes tiles round it (VCVTNE2PS2BF16: round
 * to nearest even, fp32 subnormals read as zero), 32 at a time. */
static void cvt_f32_bf16_ne(const void *s, void *d, size_t n) {
    const float *x = s;
    for (size_t i = 0; i < n; i += 32) {
        const size_t k = n - i < 32 ? n - i : 32;
        const __mmask16 mlo = k >= 16 ? 0xffff : (__mmask16)((1u << k) - 1u);
        const __mmask16 mhi = k >= 32 ? 0xffff : k > 16 ? (__mmask16)((1u << (k - 16)) - 1u) : 0;
        const __m512i p = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(mhi, x + i + 16),
                                                       _mm512_maskz_loadu_ps(mlo, x + i));
        _mm512_mask_storeu_epi16((uint16_t *)d + i,
                                 k == 32 ? 0xffffffffu : (__mmask32)((1u << k) - 1u), p);
    }
}

/* the softmax weights' rounding (round_bf16), kept as fp32 */
static void cvt_f32_bf16_weights(const void *s, void *d, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps((float *)d + i, m,
                              round_bf16(_mm512_maskz_loadu_ps(m, (const float *)s + i)));
    }
}

static const attn__cvt_path avx512bf16_cvt[] = {
    {"vcvtne2ps2bf16 q", ATTN_DTYPE_BF16, 0, ATTN__CVT_DAZ, cvt_f32_bf16_ne},
    {"round_bf16 weights", ATTN_DTYPE_BF16, 0, ATTN__CVT_FINITE | ATTN__CVT_AS_F32,
     cvt_f32_bf16_weights},
    {"dec8 images fp8e4m3", ATTN_DTYPE_FP8_E4M3, 1, 0, attn__cvt_dec8_e4m3__avx512bf16},
    {"dec8 images fp8e5m2", ATTN_DTYPE_FP8_E5M2, 1, 0, attn__cvt_dec8_e5m2__avx512bf16},
};

const attn__cvt_path *attn__cvt_avx512bf16(int *count) {
    *count = (int)(sizeof avx512bf16_cvt / sizeof avx512bf16_cvt[0]);
    return avx512bf16_cvt;
}

/* One VDPBF16PS as the tiles issue it (a test hook, kernels_decl.h):
 * acc[i] += a[2i+1] * b[2i+1] + a[2i] * b[2i] over 16 lanes, with the
 * instruction's own rounding and denormal rules. */
void attn__dpbf16__avx512bf16(float *acc, const uint16_t *a, const uint16_t *b) {
    const __m512 c = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a),
                                      (__m512bh)_mm512_loadu_si512(b));
    _mm512_storeu_ps(acc, c);
}
