/*
 * kernels_avx512_lanes.c — the AVX-512 tile for fp32 K/V items with many
 * query rows (prefill): the query rows sit in the vector lanes.  Both
 * AVX-512 tables route fp32 items with LANES_MIN_ROWS .. 2 x TILE rows
 * here (kernels_avx512.c); decode items and other dtypes keep their tiles.
 *
 * Why a second many-row tile: the general tile (kernels_avx512.c) puts
 * keys in the lanes, so it must transpose every chunk of K (16x16
 * shuffles on the FMA ports), and its online softmax reduces every row
 * across lanes twice per chunk (max, then sum).  With rows in the lanes
 * instead:
 *   - q is transposed once per item into Qt panels [D][64 rows] (the KV
 *     work area, 2 x TILE x D floats, holds them for up to 2 x TILE rows);
 *   - Q.K^T needs no packing: per d, 4 Qt loads (16 rows each) and 6
 *     broadcasts of K[key][d] read straight from the cache rows feed 24
 *     FMAs into S^T, one [TILE keys][16 rows] panel per 16 rows (the
 *     scores area, rows x TILE floats, holds them exactly);
 *   - the softmax runs down the key axis: a row's max, weights and sum
 *     are plain vertical max / exp / add over 16 rows at once, the mask
 *     is one pair of integer compares per key, the rescale factors come
 *     out as a vector — no horizontal reduction anywhere;
 *   - P.V mirrors Q.K^T: the accumulator is transposed for the item's
 *     duration into Ot panels [D][64 rows] in the q work area (q is no
 *     longer needed once Qt is built), and per key 4 weight loads from
 *     the S^T panels and 6 broadcasts of V[key][d] from the cache rows
 *     feed 24 FMAs.
 *   Panels (64 rows wide, the last one as wide as the rows left) rather
 *   than [D][rows] / [keys][rows] matrices: 512-byte row strides put every
 *   8th line on the same L1 sets (Q.K^T in L1: 83 -> 91 % of the FMA peak).
 *   Profile of a 1-thread fp32 prefill (L 2048, `perf record -e
 *   cpu-clock`) in the general tile: P.V 39 %, Q.K 31 %, softmax and
 *   driver 15 %, K pack 6.5 % of the kernel time.  Here (rdtsc per phase,
 *   one 128-row item over 1024 L2-resident keys): Q.K^T 44 %, softmax
 *   10 %, P.V 46 % of the chunk loop; Q.K^T and P.V each retire ~1.5 FMA
 *   per cycle of the 2 possible.  Whole prefill rows 9-17 % faster than
 *   on the general tile (paired runs, scripts/bench_ab.sh -p).
 *   Items with rows not a multiple of 16 (or outside 32 .. 2 x TILE) stay
 *   on the general tile: the panels would not fit the plan's work areas.
 *
 * Masking, state and numerics are the general tile's: masked keys get
 * exactly zero weight, a row that sees nothing of a chunk keeps its state
 * bit for bit (alpha = 1, p = 0), fp32 dot products summed over d in
 * order, the same exp/tanh.  The one documented difference of the general
 * tile (0 x inf for a non-finite V value visible to another row of the
 * block) applies here too.
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "kernels_avx512_inl.h"
#include "mask.h"

#define LANES_MIN_ROWS 32 /* fewer rows would leave most lanes of Q.K^T empty */
#define NRV 4             /* row vectors per Q.K^T / P.V block */
#define QB (16 * NRV)     /* rows per Qt / Ot panel */
#define NKB 6             /* keys per Q.K^T block, dims per P.V block: 6 x 4 = 24 accumulators */
#define SP (TILE * 16)    /* floats per S^T panel (16 rows x TILE keys) */

int attn__avx512_lanes_fits(const attn_tile_args *a, attn_dtype kdt);
void attn__avx512_lanes_tile(const attn_tile_args *a);

/* fp32 items of whole 16-row vectors whose transposed q fits the KV work
 * area (2 x kv_tile x D floats) and whose S^T panels fill the scores area
 * (rows x kv_tile floats) exactly; Ot fills q's own rows x D floats. */
int attn__avx512_lanes_fits(const attn_tile_args *a, attn_dtype kdt) {
    const int64_t rows = (int64_t)a->n_tok * a->g;
    return kdt == ATTN_DTYPE_F32 && rows >= LANES_MIN_ROWS && rows <= 2 * TILE && rows % 16 == 0 &&
           a->kv_tile >= TILE && (uintptr_t)a->kv % 64 == 0 && (uintptr_t)a->scores % 64 == 0 &&
           (uintptr_t)a->q % 64 == 0;
}

/* ------------------------------------------------------ Q.K^T micro-kernel */

/* S^T for NK keys (krow[0..NK)) and NR row vectors: qt is their Qt
 * panel ([D][16 NR]), st the first vector's S^T
 * panel at the first key (panels SP floats apart, keys 16 floats apart).
 * kpf: the next chunk's rows of the same keys (or NULL), one line
 * prefetched to L2 per 16 dims and key. */
INLINE void qkt_rows(int NK, int NR, const float *qt, size_t D, const void *const *krow,
                     const void *const *kpf, float *st) {
    const float *k[NKB];
    UNROLL
    for (int j = 0; j < NK; j++) k[j] = (const float *)krow[j];
    __m512 c[NKB][NRV];
    UNROLL
    for (int j = 0; j < NK; j++)
        UNROLL
        for (int v = 0; v < NR; v++) c[j][v] = _mm512_setzero_ps();
    for (size_t d = 0; d < D; d++) {
        if (kpf && d % 16 == 0) {
            UNROLL
            for (int j = 0; j < NK; j++)
                if (kpf[j]) _mm_prefetch((const char *)kpf[j] + d * 4, _MM_HINT_T1);
        }
        __m512 q[NRV];
        UNROLL
        for (int v = 0; v < NR; v++) q[v] = _mm512_load_ps(qt + d * 16 * NR + 16 * (size_t)v);
        UNROLL
        for (int j = 0; j < NK; j++) {
            const __m512 b = _mm512_set1_ps(k[j][d]);
            UNROLL
            for (int v = 0; v < NR; v++) c[j][v] = _mm512_fmadd_ps(b, q[v], c[j][v]);
        }
    }
    UNROLL
    for (int j = 0; j < NK; j++)
        UNROLL
        for (int v = 0; v < NR; v++) _mm512_store_ps(st + (size_t)v * SP + 16 * (size_t)j, c[j][v]);
}

#define QKT_CASE(K_, R_)                                                                  \
    case (K_) * 8 + (R_): qkt_rows(K_, R_, qt, D, krow, kpf, st); break;
/* Out of line (as P.V below): inlined into the driver, the micro-kernels
 * compete for registers with what the compiler hoists there. */
__attribute__((noinline)) static void qkt_block(int32_t NK, int32_t NR, const float *qt, size_t D,
                                                const void *const *krow, const void *const *kpf,
                                                float *st) {
    switch (NK * 8 + NR) {
        QKT_CASE(2, 1) QKT_CASE(2, 2) QKT_CASE(2, 3) QKT_CASE(2, 4)
        QKT_CASE(4, 1) QKT_CASE(4, 2) QKT_CASE(4, 3) QKT_CASE(4, 4)
        QKT_CASE(6, 1) QKT_CASE(6, 2) QKT_CASE(6, 3) QKT_CASE(6, 4)
    default: break;
    }
}

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
 * long prefill; the general pass costs ~6 more ops per key). */
INLINE void softmax_lanes(int plain, const attn_tile_args *a, float *st, int32_t c0, int32_t n,
                          int32_t klo, int32_t khi, __m512i lo, __m512i hi, __m512i pos,
                          __m512 slope, float *m, float *l, float *alpha) {
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
    const __m512 mn = _mm512_mask_blend_ps(live, mo, _mm512_max_ps(mx, mo));
    const __m512 al = _mm512_mask_blend_ps(live, _mm512_set1_ps(1.0f),
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
            sum = _mm512_add_ps(sum, w);
        }
        _mm512_store_ps(st + 16 * (size_t)k, w);
    }
    _mm512_storeu_ps(l, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(l), al), sum));
}

/* ------------------------------------------------------------- P.V */

/* P.V with the rows in the lanes, the mirror of Q.K^T: the accumulator is
 * kept transposed, Ot panels [D][16 NR] (in the q work area once Qt is
 * built), and for ND dims from d0 and NR row vectors
 *     Ot[d][r] = Ot[d][r] alpha[r] + sum_i V[i][d] P^T[i][r],
 * per key ND broadcasts of V[i][d] straight from the cache row and NR
 * weight loads from the S^T panels feed ND x NR FMAs.  ot: the block's
 * first dim in the panel; pt: the first vector's S^T panel; vpf: the next
 * chunk's V rows (or NULL): each line is prefetched by the block that
 * first reaches into it. */
INLINE void pvt_rows(int ND, int NR, float *ot, const float *alpha, const float *pt,
                     const void *const *vrow, const void *const *vpf, size_t d0, int32_t ilo,
                     int32_t ihi) {
    __m512 c[NKB][NRV];
    UNROLL
    for (int v = 0; v < NR; v++) {
        const __m512 al = _mm512_load_ps(alpha + 16 * v);
        UNROLL
        for (int j = 0; j < ND; j++)
            c[j][v] = _mm512_mul_ps(_mm512_load_ps(ot + (size_t)j * 16 * NR + 16 * (size_t)v), al);
    }
    const size_t line = (d0 + (size_t)ND - 1) / 16; /* the line this block reaches */
    const int pf = vpf && (d0 == 0 || (d0 - 1) / 16 != line);
    for (int32_t i = ilo; i < ihi; i++) {
        if (pf && vpf[i]) _mm_prefetch((const char *)vpf[i] + line * 64, _MM_HINT_T1);
        const float *vr = (const float *)vrow[i] + d0;
        __m512 p[NRV];
        UNROLL
        for (int v = 0; v < NR; v++) p[v] = _mm512_load_ps(pt + (size_t)v * SP + 16 * (size_t)i);
        UNROLL
        for (int j = 0; j < ND; j++) {
            const __m512 b = _mm512_set1_ps(vr[j]);
            UNROLL
            for (int v = 0; v < NR; v++) c[j][v] = _mm512_fmadd_ps(b, p[v], c[j][v]);
        }
    }
    UNROLL
    for (int j = 0; j < ND; j++)
        UNROLL
        for (int v = 0; v < NR; v++) _mm512_store_ps(ot + (size_t)j * 16 * NR + 16 * (size_t)v, c[j][v]);
}

#define PVT_CASE(D_, R_)                                                                  \
    case (D_) * 8 + (R_): pvt_rows(D_, R_, ot, alpha, pt, vrow, vpf, d0, ilo, ihi); break;
#define PVT_CASES(D_) PVT_CASE(D_, 1) PVT_CASE(D_, 2) PVT_CASE(D_, 3) PVT_CASE(D_, 4)
/* Out of line, as qkt_block. */
__attribute__((noinline)) static void pvt_block(int32_t ND, int32_t NR, float *ot,
                                                const float *alpha, const float *pt,
                                                const void *const *vrow, const void *const *vpf,
                                                size_t d0, int32_t ilo, int32_t ihi) {
    switch (ND * 8 + NR) {
        PVT_CASES(1) PVT_CASES(2) PVT_CASES(3) PVT_CASES(4) PVT_CASES(5) PVT_CASES(6)
    default: break;
    }
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

/* ------------------------------------------------------------- driver */

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

void attn__avx512_lanes_tile(const attn_tile_args *a) {
    ATTN_ASSERT(attn__avx512_lanes_fits(a, ATTN_DTYPE_F32));
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    const int32_t g = a->g, rows = a->n_tok * g, nvec = rows / 16;
    const size_t D = (size_t)a->head_dim;

    /* per row: visible interval within [k0, k1) (empty: 0, 0), position,
     * ALiBi slope */
    int32_t lo[2 * TILE] __attribute__((aligned(64))), hi[2 * TILE] __attribute__((aligned(64)));
    int32_t pos[2 * TILE] __attribute__((aligned(64)));
    float slope[2 * TILE] __attribute__((aligned(64)));
    int32_t item_lo = INT32_MAX, item_hi = INT32_MIN;
    for (int32_t r = 0; r < rows; r++) {
        int64_t x, y;
        attn__row_interval((int64_t)a->pos0 + r / g, key_limit, a->causal, a->window, &x, &y);
        if (x < a->k0) x = a->k0;
        if (y > k1) y = k1;
        if (x >= y) x = y = 0;
        lo[r] = (int32_t)x, hi[r] = (int32_t)y;
        pos[r] = a->pos0 + r / g;
        slope[r] = a->alibi ? a->alibi[r % g] : 0.0f;
        if (x < y) {
            if (x < item_lo) item_lo = (int32_t)x;
            if (y > item_hi) item_hi = (int32_t)y;
        }
    }
    if (item_lo >= item_hi) return; /* nothing visible: every row keeps its state */
    /* per vector of 16 rows: the hull of its rows' intervals (for the
     * spans) and the interval all of them see (for the plain softmax) */
    int32_t vlo[2 * TILE / 16], vhi[2 * TILE / 16];
    int32_t vin_lo[2 * TILE / 16], vin_hi[2 * TILE / 16];
    for (int32_t v = 0; v < nvec; v++) {
        vlo[v] = INT32_MAX, vhi[v] = INT32_MIN, vin_lo[v] = INT32_MIN, vin_hi[v] = INT32_MAX;
        for (int32_t r = 16 * v; r < 16 * v + 16; r++) {
            if (lo[r] < hi[r]) {
                if (lo[r] < vlo[v]) vlo[v] = lo[r];
                if (hi[r] > vhi[v]) vhi[v] = hi[r];
            }
            if (lo[r] > vin_lo[v]) vin_lo[v] = lo[r];
            if (hi[r] < vin_hi[v]) vin_hi[v] = hi[r];
        }
        if (vlo[v] >= vhi[v]) vlo[v] = vhi[v] = 0;
    }

    /* Qt in the KV work area (2 x TILE x D floats >= rows x D), in panels
     * (panel_at), so that a Q.K^T block streams 16 NR contiguous floats
     * per d. */
    float *qt = a->kv;
    rows_panels(a->q, qt, rows, D, 1);

    /* The accumulator, transposed into Ot panels in the q work area (q is
     * read: Qt holds it now), back at the end. */
    float *ot = a->q;
    rows_panels(a->acc, ot, rows, D, 1);

    /* S^T in the scores area as one panel per vector of 16 rows, [TILE
     * keys][16 rows] (4 KiB): the softmax walks a panel with aligned
     * loads, P.V loads a key's weights for 16 rows as one line.  Then the
     * weights P^T, in place. */
    float *st = a->scores;
    const void *krow[TILE + NKB], *vrow[TILE + NKB], *kpf[TILE + NKB], *vpf[TILE + NKB];
    float alpha[2 * TILE] __attribute__((aligned(64)));
    const size_t row_bytes = D * sizeof(float);
    const int transforms = a->qk_exp || a->softcap > 0.0f || a->alibi;

    /* chunks aligned to k0 as in the general tile, from the first chunk
     * any row sees */
    for (int32_t c0 = a->k0 + (item_lo - a->k0) / TILE * TILE; c0 < item_hi; c0 += TILE) {
        const int32_t n = k1 - c0 < TILE ? k1 - c0 : TILE;
        attn__row_ptrs(a, sizeof(float), row_bytes, c0, n, krow, vrow);
        /* a partial last key block repeats the last key (its dots are
         * never read: those keys are outside every row's interval) */
        for (int32_t i = n; i < TILE + NKB; i++) krow[i] = krow[n - 1], vrow[i] = vrow[n - 1];
        /* the next chunk's rows (only those some row will see), or NULL */
        const int64_t c1 = (int64_t)c0 + n;
        const int32_t nn = c1 < item_hi ? (item_hi - c1 < TILE ? (int32_t)(item_hi - c1) : TILE) : 0;
        if (nn > 0) attn__row_ptrs(a, sizeof(float), row_bytes, (int32_t)c1, nn, kpf, vpf);
        for (int32_t i = nn; i < TILE + NKB; i++) kpf[i] = vpf[i] = NULL;

        /* Q.K^T, NRV row vectors (one Qt panel) at a time over the keys
         * they see, in blocks of NKB keys; the last block of 2 or 4 keys
         * so that no block passes TILE.  The first panel prefetches the
         * next chunk's K. */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            span(panel_lo(vlo, vhi, v0, NR), panel_hi(vlo, vhi, v0, NR), c0, n, &klo, &khi);
            for (int32_t k = klo & ~1, nk; k < khi; k += nk) {
                nk = (khi - k + 1) & ~1;
                if (nk > NKB) nk = NKB;
                qkt_block(nk, NR, qt + (size_t)(16 * v0) * D, D, krow + k,
                          v0 == 0 ? kpf + k : NULL, st + (size_t)v0 * SP + 16 * (size_t)k);
            }
        }
        /* softmax, one vector of 16 rows at a time */
        for (int32_t v = 0; v < nvec; v++) {
            const int32_t r0 = 16 * v;
            int32_t klo, khi;
            span(vlo[v], vhi[v], c0, n, &klo, &khi);
            if (!transforms && vin_lo[v] <= c0 && vin_hi[v] >= c0 + n)
                softmax_lanes(1, a, st + (size_t)v * SP, c0, n, 0, n, _mm512_load_si512(lo + r0),
                              _mm512_load_si512(hi + r0), _mm512_load_si512(pos + r0),
                              _mm512_load_ps(slope + r0), a->m + r0, a->l + r0, alpha + r0);
            else
                softmax_lanes(0, a, st + (size_t)v * SP, c0, n, klo, khi,
                              _mm512_load_si512(lo + r0), _mm512_load_si512(hi + r0),
                              _mm512_load_si512(pos + r0), _mm512_load_ps(slope + r0), a->m + r0,
                              a->l + r0, alpha + r0);
        }
        /* P.V, one Ot panel (NRV row vectors) at a time over the keys its
         * rows see, in blocks of NKB dims; the first panel prefetches the
         * next chunk's V */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            span(panel_lo(vlo, vhi, v0, NR), panel_hi(vlo, vhi, v0, NR), c0, n, &klo, &khi);
            if (klo >= khi) continue; /* alpha = 1, weights 0: nothing to do */
            float *panel = ot + (size_t)(16 * v0) * D; /* width 16 NR */
            for (size_t d0 = 0; d0 < D; d0 += NKB) {
                const int32_t nd = D - d0 < NKB ? (int32_t)(D - d0) : NKB;
                pvt_block(nd, NR, panel + d0 * 16 * (size_t)NR, alpha + 16 * v0, st + (size_t)v0 * SP, vrow,
                          v0 == 0 ? vpf : NULL, d0, klo, khi);
            }
        }
    }
    rows_panels(a->acc, ot, rows, D, 0);
}
