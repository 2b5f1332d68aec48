/*
 * avx512_lanes_inl.h — what the two "rows in the lanes" tiles
 * share: avx512_lanes.c (fp32 K/V, FMAs) and
 * avx512bf16_lanes.c (bf16 K/V, VDPBF16PS).  Include only from
 * files compiled with the avx512 -m flags.
 *
 * Owns: the panel geometry (QB-row panels, S^T panels of SP floats), the
 * per-row visibility set-up of an item (lanes_rows), the key spans of a
 * vector or panel within a chunk, and the online softmax down the key
 * axis (softmax_lanes, with the bf16 rounding of the weights as an
 * option).  avx512_lanes.c's top comment explains the layout.
 */
#ifndef ATTN_KERNELS_AVX512_LANES_INL_H
#define ATTN_KERNELS_AVX512_LANES_INL_H

#include "avx512_inl.h"
#include "mask.h"

#define LANES_MIN_ROWS 32 /* fewer rows would leave most lanes of Q.K^T empty */
#define NRV 4             /* row vectors per Q.K^T / P.V block */
#define QB (16 * NRV)     /* rows per Qt / Ot panel */
#define NKB 6             /* keys per Q.K^T block, dims per P.V block: 6 x 4 = 24 accumulators */
#define SP (AVX512_TILE * 16)    /* floats per S^T panel (16 rows x AVX512_TILE keys) */

/* ---------------------------------------------------------- softmax */

/* The online softmax of one vector of 16 rows over keys [0, n) of the
 * chunk starting at key c0, the rows' visible keys within [klo, khi).
 * st: the vector's S^T panel (key k at st + 16 k), raw dots in, weights
 * out (0 for every key outside [klo, khi) and every masked key).  lo/hi:
 * the rows' visible key intervals (absolute), pos: their positions,
 * slope: their ALiBi slopes (when a->alibi).  m, l: the rows' state;
 * alpha: the factor each row's accumulator must be scaled by.  plain:
 * every row sees all n keys and the logits are the raw dots (no soft cap,
 * ALiBi or 2^qk_exp), so the first pass is a bare max (most chunks of a
 * long prefill; the general pass costs ~6 more ops per key).  ROUND: the
 * weights are rounded to bf16 (kept as fp32) before they are summed and
 * stored, for a P.V on VDPBF16PS (avx512bf16_lanes.c).  LAZY: a row keeps
 * its running maximum until the chunk's exceeds it by more than
 * LANES_LAZY_LOGITS (its weights are then up to e^LANES_LAZY_LOGITS, and
 * its accumulator needs no rescaling: alpha stays 1), for a P.V whose
 * accumulators are expensive to rescale (amx.c: they live in memory).  bg
 * (or NULL): work of the caller's to run every 8 keys of the weights'
 * pass, bg(bgc) (the AMX tile issues its tile products from here). */
#define LANES_LAZY_LOGITS 8.0f
INLINE void softmax_lanes(int plain, int ROUND, int LAZY, const attn_tile_args *a, float *st,
                          int32_t c0, int32_t n, int32_t klo, int32_t khi, __m512i lo, __m512i hi,
                          __m512i pos, __m512 slope, float *m, float *l, float *alpha,
                          void (*bg)(void *), void *bgc) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const int32_t me = attn__m_exp(a->qk_exp, a->softcap);
    __m512 mx = ninf;
    if (plain) /* every row sees every key, logits = dots: only the max */
        for (int32_t k = 0; k < n; k++) mx = _mm512_max_ps(mx, _mm512_load_ps(st + 16 * (size_t)k));
    else
    for (int32_t k = klo; k < khi; k++) {
        const __m512i key = _mm512_set1_epi32(c0 + k);
        const __mmask16 vis = _mm512_cmpge_epi32_mask(key, lo) & _mm512_cmplt_epi32_mask(key, hi);
        __m512 t = _mm512_load_ps(st + 16 * (size_t)k);
        if (a->qk_exp && !me) /* logits in 2^me units (kernels.h) */
            t = _mm512_scalef_ps(t, _mm512_set1_ps((float)a->qk_exp));
        if (a->softcap > 0.0f) {
            const __m512 cap = _mm512_set1_ps(a->softcap);
            t = _mm512_mul_ps(cap, tanh512(_mm512_div_ps(t, cap)));
        }
        if (a->alibi) /* (float)(k - p) as the portable kernel: exact below 2^24 */
            t = _mm512_add_ps(t, to_logits(_mm512_mul_ps(slope, _mm512_cvtepi32_ps(_mm512_sub_epi32(key, pos))), -me));
        t = _mm512_mask_blend_ps(vis, ninf, t);
        _mm512_store_ps(st + 16 * (size_t)k, t);
        mx = _mm512_max_ps(mx, t);
    }
    /* new maxima and rescale factors, as softmax_rows: m_old = -inf gives
     * alpha = e^-110 scaled to exactly 0, m_old = m_new exactly 1 */
    const __m512 mo = _mm512_loadu_ps(m);
    const __mmask16 live = _mm512_cmp_ps_mask(mx, ninf, _CMP_NEQ_OQ);
    __mmask16 move = live;
    if (LAZY) /* a finite old maximum at most LANES_LAZY_LOGITS below the new one stays */
        move &= (__mmask16)~_mm512_cmp_ps_mask(to_logits(_mm512_sub_ps(mx, mo), me),
                                               _mm512_set1_ps(LANES_LAZY_LOGITS), _CMP_LE_OQ);
    const __m512 mn = _mm512_mask_blend_ps(move, mo, _mm512_max_ps(mx, mo));
    const __m512 al = _mm512_mask_blend_ps(move, _mm512_set1_ps(1.0f),
                                           attn__avx512_exp(to_logits(_mm512_sub_ps(mo, mn), me)));
    _mm512_storeu_ps(alpha, al);
    _mm512_storeu_ps(m, mn);
    /* weights: masked keys hold -inf, whose exp is exactly 0; rows that
     * are not live get 0 everywhere */
    __m512 sum = _mm512_setzero_ps();
    for (int32_t k = 0; k < n; k++) {
        __m512 w = _mm512_setzero_ps();
        if (k >= klo && k < khi) {
            const __m512 t = _mm512_load_ps(st + 16 * (size_t)k);
            w = _mm512_maskz_mov_ps(live, attn__avx512_exp(to_logits(_mm512_sub_ps(t, mn), me)));
            if (ROUND) w = round_bf16(w); /* l sums the weights P.V will use */
            sum = _mm512_add_ps(sum, w);
        }
        _mm512_store_ps(st + 16 * (size_t)k, w);
        if (bg && k % 8 == 7) bg(bgc);
    }
    _mm512_storeu_ps(l, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(l), al), sum));
}

/* Panels of QB rows, [D][width] each, back to back; the last one only as
 * wide as the rows left, so rows x D floats hold them all.  Returns the
 * address of row r (a multiple of 16) at d = 0 and the panel's width. */
static float *panel_at(float *base, int32_t r, int32_t rows, size_t D, size_t *width) {
    const int32_t p0 = r / QB * QB;
    *width = (size_t)(rows - p0 < QB ? rows - p0 : QB);
    return base + (size_t)p0 * D + (size_t)(r - p0);
}

/* Copy rows x D floats between row-major [rows][D] and panels (see
 * panel_at), to_panels or back; rows a multiple of 16.  Builds Qt from q
 * and moves the accumulator into Ot and back. */
static void rows_panels(float *rm, float *pn, int32_t rows, size_t D, int to_panels) {
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        size_t ps;
        float *panel = panel_at(pn, r0, rows, D, &ps);
        for (size_t d0 = 0; d0 < D; d0 += 16) {
            const __mmask16 m = tail_mask(D - d0);
            const size_t nd = D - d0 < 16 ? D - d0 : 16;
            __m512 x[16];
            if (to_panels) {
                UNROLL
                for (int i = 0; i < 16; i++) x[i] = _mm512_maskz_loadu_ps(m, rm + (size_t)(r0 + i) * D + d0);
                transpose16(x);
                for (size_t j = 0; j < nd; j++) _mm512_store_ps(panel + (d0 + j) * ps, x[j]);
            } else {
                UNROLL
                for (int j = 0; j < 16; j++)
                    x[j] = (size_t)j < nd ? _mm512_load_ps(panel + (d0 + (size_t)j) * ps) : _mm512_setzero_ps();
                transpose16(x);
                UNROLL
                for (int i = 0; i < 16; i++) _mm512_mask_storeu_ps(rm + (size_t)(r0 + i) * D + d0, m, x[i]);
            }
        }
    }
}

/* The keys of the chunk [c0, c0 + n) that some row of a vector (or panel)
 * may see: its rows' hull [vlo, vhi) clipped to the chunk, chunk-relative;
 * empty: 0, 0.  A superset of the union of the rows' intervals when they
 * leave gaps (never for causal rows or windows wider than the vector's
 * position spread): the extra keys get weight 0 like any masked key. */
static inline void span(int32_t vlo, int32_t vhi, int32_t c0, int32_t n, int32_t *slo,
                        int32_t *shi) {
    int32_t x = vlo > c0 ? vlo - c0 : 0, y = vhi - c0 < n ? vhi - c0 : n;
    if (x >= y) x = y = 0;
    *slo = x, *shi = y;
}

/* The hull of vectors [v0, v0 + nr) (empty vectors hold 0, 0). */
static inline int32_t panel_lo(const int32_t *vlo, const int32_t *vhi, int32_t v0, int32_t nr) {
    int32_t x = INT32_MAX;
    for (int32_t v = v0; v < v0 + nr; v++)
        if (vlo[v] < vhi[v] && vlo[v] < x) x = vlo[v];
    return x;
}
static inline int32_t panel_hi(const int32_t *vlo, const int32_t *vhi, int32_t v0, int32_t nr) {
    int32_t y = INT32_MIN;
    for (int32_t v = v0; v < v0 + nr; v++)
        if (vlo[v] < vhi[v] && vhi[v] > y) y = vhi[v];
    return y;
}

/* An item's rows as the lanes tiles see them. */
typedef struct lanes_rows {
    /* per row: visible interval within [k0, k1) (empty: 0, 0), position,
     * ALiBi slope */
    int32_t lo[2 * AVX512_TILE] __attribute__((aligned(64)));
    int32_t hi[2 * AVX512_TILE] __attribute__((aligned(64)));
    int32_t pos[2 * AVX512_TILE] __attribute__((aligned(64)));
    float slope[2 * AVX512_TILE] __attribute__((aligned(64)));
    /* per vector of 16 rows: the hull of its rows' intervals (for the
     * spans) and the interval all of them see (for the plain softmax) */
    int32_t vlo[2 * AVX512_TILE / 16], vhi[2 * AVX512_TILE / 16];
    int32_t vin_lo[2 * AVX512_TILE / 16], vin_hi[2 * AVX512_TILE / 16];
    int32_t item_lo, item_hi; /* the hull over all rows */
    int32_t k1;               /* the tile's end key */
    int32_t rows, nvec;
} lanes_rows;

/* Fill lr for item a; 0 when no row sees anything (every row then keeps
 * its state). */
static inline int lanes_rows_init(const attn_tile_args *a, lanes_rows *lr) {
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    const int32_t g = a->g, rows = a->n_tok * g, nvec = rows / 16;
    lr->k1 = k1, lr->rows = rows, lr->nvec = nvec;
    lr->item_lo = INT32_MAX, lr->item_hi = INT32_MIN;
    for (int32_t r = 0; r < rows; r++) {
        int64_t x, y;
        attn__row_interval((int64_t)a->pos0 + r / g, key_limit, a->causal,
                           a->window_left, a->window_right, &x, &y);
        if (x < a->k0) x = a->k0;
        if (y > k1) y = k1;
        if (x >= y) x = y = 0;
        lr->lo[r] = (int32_t)x, lr->hi[r] = (int32_t)y;
        lr->pos[r] = a->pos0 + r / g;
        lr->slope[r] = a->alibi ? a->alibi[r % g] : 0.0f;
        if (x < y) {
            if (x < lr->item_lo) lr->item_lo = (int32_t)x;
            if (y > lr->item_hi) lr->item_hi = (int32_t)y;
        }
    }
    if (lr->item_lo >= lr->item_hi) return 0;
    for (int32_t v = 0; v < nvec; v++) {
        int32_t *vlo = &lr->vlo[v], *vhi = &lr->vhi[v];
        *vlo = INT32_MAX, *vhi = INT32_MIN, lr->vin_lo[v] = INT32_MIN, lr->vin_hi[v] = INT32_MAX;
        for (int32_t r = 16 * v; r < 16 * v + 16; r++) {
            if (lr->lo[r] < lr->hi[r]) {
                if (lr->lo[r] < *vlo) *vlo = lr->lo[r];
                if (lr->hi[r] > *vhi) *vhi = lr->hi[r];
            }
            if (lr->lo[r] > lr->vin_lo[v]) lr->vin_lo[v] = lr->lo[r];
            if (lr->hi[r] < lr->vin_hi[v]) lr->vin_hi[v] = lr->hi[r];
        }
        if (*vlo >= *vhi) *vlo = *vhi = 0;
    }
    return 1;
}

/* The keys [klo, khi) of chunk [c0, c0 + n) that any row of vectors [v0,
 * v0 + nr) (one panel) sees (empty: 0, 0). */
static inline void lanes_panel_span(const lanes_rows *lr, int32_t v0, int32_t nr, int32_t c0,
                                    int32_t n, int32_t *klo, int32_t *khi) {
    span(panel_lo(lr->vlo, lr->vhi, v0, nr), panel_hi(lr->vlo, lr->vhi, v0, nr), c0, n, klo, khi);
}

/* The K and V row addresses of chunk [c0, c0 + n), elements of es bytes:
 * krow/vrow up to AVX512_TILE + NKB entries, a partial last key block repeating
 * the last key (its dots are never read: those keys are outside every
 * row's interval); kpf/vpf the next chunk's rows, only those some row will
 * see, NULL past them. */
static inline void lanes_chunk_rows(const attn_tile_args *a, const lanes_rows *lr, size_t es,
                                    int32_t c0, int32_t n, const void **krow, const void **vrow,
                                    const void **kpf, const void **vpf) {
    const size_t row_bytes = (size_t)a->head_dim * es;
    attn__row_ptrs(a, es, row_bytes, c0, n, krow, vrow);
    for (int32_t i = n; i < AVX512_TILE + NKB; i++) krow[i] = krow[n - 1], vrow[i] = vrow[n - 1];
    const int64_t c1 = (int64_t)c0 + n;
    const int32_t nn = c1 < lr->item_hi ? (lr->item_hi - c1 < AVX512_TILE ? (int32_t)(lr->item_hi - c1)
                                                                          : AVX512_TILE)
                                        : 0;
    if (nn > 0) attn__row_ptrs(a, es, row_bytes, (int32_t)c1, nn, kpf, vpf);
    for (int32_t i = nn; i < AVX512_TILE + NKB; i++) kpf[i] = vpf[i] = NULL;
}

/* The softmax of chunk [c0, c0 + n) for vector v of the item: raw dots in
 * its S^T panel (st + v SP), weights out; alpha: the rescale factor of
 * every row (its rows' 16 written).  ROUND: weights rounded to bf16;
 * LAZY, bg, bgc: as softmax_lanes. */
INLINE void lanes_softmax_vec(int ROUND, int LAZY, const attn_tile_args *a, const lanes_rows *lr,
                              float *st, int32_t c0, int32_t n, float *alpha, int32_t v,
                              void (*bg)(void *), void *bgc) {
    const int transforms = a->qk_exp || a->softcap > 0.0f || a->alibi;
    const int32_t r0 = 16 * v;
    int32_t klo, khi;
    span(lr->vlo[v], lr->vhi[v], c0, n, &klo, &khi);
    const __m512i lo = _mm512_load_si512(lr->lo + r0), hi = _mm512_load_si512(lr->hi + r0);
    const __m512i pos = _mm512_load_si512(lr->pos + r0);
    const __m512 slope = _mm512_load_ps(lr->slope + r0);
    if (!transforms && lr->vin_lo[v] <= c0 && lr->vin_hi[v] >= c0 + n)
        softmax_lanes(1, ROUND, LAZY, a, st + (size_t)v * SP, c0, n, 0, n, lo, hi, pos, slope,
                      a->m + r0, a->l + r0, alpha + r0, bg, bgc);
    else
        softmax_lanes(0, ROUND, LAZY, a, st + (size_t)v * SP, c0, n, klo, khi, lo, hi, pos, slope,
                      a->m + r0, a->l + r0, alpha + r0, bg, bgc);
}

/* The same for every vector of the item (raw dots in the S^T panels st,
 * SP floats apart). */
INLINE void lanes_softmax(int ROUND, const attn_tile_args *a, const lanes_rows *lr, float *st,
                          int32_t c0, int32_t n, float *alpha) {
    for (int32_t v = 0; v < lr->nvec; v++)
        lanes_softmax_vec(ROUND, 0, a, lr, st, c0, n, alpha, v, NULL, NULL);
}

#endif /* ATTN_KERNELS_AVX512_LANES_INL_H */
