/*
 * avx512_lanes.c — the AVX-512 tile for K/V items with many query rows
 * (prefill): the query rows sit in the vector lanes.  Both AVX-512 tables
 * route fp32 items with LANES_MIN_ROWS .. 2 x AVX512_TILE rows here
 * (table_avx512.c), and f16, fp8 and bf16 items widened to fp32 chunk by
 * chunk (attn_lanes_widen__avx512, below); decode items keep the decode
 * tile, and bf16 under the avx512bf16 table its own tiles where they take
 * the item (table_avx512bf16.c: the bf16 lanes tile on the AMD profile,
 * the pairs tile for short items).
 *
 * Why a second many-row tile: the general tile (avx512.c) puts keys in the
 * lanes, so it must transpose every chunk of K and reduce every row across
 * lanes twice per chunk.  With rows in the lanes instead:
 *   - q is transposed once per item into Qt panels [D][64 rows] (the KV
 *     work area holds them for up to 2 x AVX512_TILE rows);
 *   - Q.K^T needs no packing: per d, 4 Qt loads and 6 broadcasts of
 *     K[key][d] straight from the cache feed 24 FMAs into S^T panels;
 *   - the softmax runs down the key axis: max, weights and sums are plain
 *     vertical operations over 16 rows, no horizontal reduction;
 *   - P.V mirrors Q.K^T on an accumulator transposed into Ot panels in
 *     the q work area (q is no longer needed once Qt is built).
 *   Panels 64 rows wide rather than whole matrices: 512-byte row strides
 *   would put every 8th line on the same L1 sets.  Items with rows not a
 *   multiple of 16 (or outside 32 .. 2 x AVX512_TILE) stay on the general tile.
 *   The measurements behind these choices: docs/perf-notes.md.
 *
 * Masking, state and numerics are the general tile's (including its one
 * documented difference, 0 x inf for a non-finite V value visible to
 * another row of the block).
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "avx512_lanes_inl.h"

/* Items (of fp32 K/V: only the fp32 router asks) of whole 16-row vectors
 * whose transposed q fits the KV work area (2 x kv_tile x D floats) and
 * whose S^T panels fill the scores area (rows x kv_tile floats) exactly;
 * Ot fills q's own rows x D floats. */
int attn_lanes_fits__avx512(const attn_tile_args *a) {
    const int64_t rows = (int64_t)a->n_tok * a->g;
    return rows >= LANES_MIN_ROWS && rows <= 2 * AVX512_TILE && rows % 16 == 0 &&
           a->kv_tile >= AVX512_TILE && (uintptr_t)a->kv % 64 == 0 && (uintptr_t)a->scores % 64 == 0 &&
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

/* ------------------------------------------------------------- driver */

/* Other K/V dtypes (f16, bf16, fp8) reach the same micro-kernels widened:
 * each chunk's rows into one fp32 buffer on the stack, K for Q.K^T, then
 * V for P.V; AVX512_TILE x D conversions per chunk against rows x AVX512_TILE x D
 * multiply-adds, exact, and the next chunk's rows prefetched on the way.
 * D is bounded so the buffer stays at AVX512_TILE x 256 floats (64 KiB). */
#define LANES_WIDE_MAX_D 256

int attn_lanes_widen_fits__avx512(const attn_tile_args *a) {
    return attn_lanes_fits__avx512(a) && a->head_dim <= LANES_WIDE_MAX_D;
}

/* Rows [0, n) of a chunk (dtype dt) widened into buf (row i at buf + i D)
 * and the row pointers moved there (past n: the last row, as
 * lanes_chunk_rows leaves them); pf (or NULL entries): the next chunk's
 * rows of the same keys, a line per 32 elements prefetched to L2. */
INLINE void widen_rows(attn_dtype dt, const void **row, const void *const *pf, int32_t n,
                       size_t D, float *buf) {
    const size_t es = attn__dtype_size(dt);
    for (int32_t i = 0; i < n; i++) {
        const unsigned char *src = (const unsigned char *)row[i];
        float *dst = buf + (size_t)i * D;
        for (size_t d = 0; d < D; d += 16) {
            const __mmask16 m = D - d >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (D - d)) - 1u);
            if (pf[i] && (d * es) % 64 == 0) prefetch_hint((const char *)pf[i] + d * es, 0);
            _mm512_mask_storeu_ps(dst + d, m, load16(dt, src + d * es, m));
        }
        row[i] = dst;
    }
    for (int32_t i = n; i < AVX512_TILE + NKB; i++) row[i] = row[n - 1];
}

/* kdt's rows widened into wbuf (AVX512_TILE x LANES_WIDE_MAX_D floats) unless fp32 */
INLINE void lanes_run(const attn_tile_args *a, attn_dtype kdt, float *wbuf) {
    ATTN_ASSERT(kdt == ATTN_DTYPE_F32 ? attn_lanes_fits__avx512(a) : attn_lanes_widen_fits__avx512(a));
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    lanes_rows lr;
    if (!lanes_rows_init(a, &lr)) return; /* nothing visible: every row keeps its state */
    const int32_t k1 = lr.k1, rows = lr.rows, nvec = lr.nvec;
    const size_t D = (size_t)a->head_dim;

    /* Qt in the KV work area (2 x AVX512_TILE x D floats >= rows x D), in panels
     * (panel_at), so that a Q.K^T block streams 16 NR contiguous floats
     * per d. */
    float *qt = a->kv;
    rows_panels(a->q, qt, rows, D, 1);

    /* The accumulator, transposed into Ot panels in the q work area (q is
     * read: Qt holds it now), back at the end. */
    float *ot = a->q;
    rows_panels(a->acc, ot, rows, D, 1);

    /* S^T in the scores area as one panel per vector of 16 rows, [AVX512_TILE
     * keys][16 rows] (4 KiB): the softmax walks a panel with aligned
     * loads, P.V loads a key's weights for 16 rows as one line.  Then the
     * weights P^T, in place. */
    float *st = a->scores;
    const void *krow[AVX512_TILE + NKB], *vrow[AVX512_TILE + NKB];
    const void *kpf[AVX512_TILE + NKB], *vpf[AVX512_TILE + NKB];
    float alpha[2 * AVX512_TILE] __attribute__((aligned(64)));
    const int wide = kdt != ATTN_DTYPE_F32;

    /* chunks aligned to k0 as in the general tile, from the first chunk
     * any row sees */
    for (int32_t c0 = a->k0 + (lr.item_lo - a->k0) / AVX512_TILE * AVX512_TILE; c0 < lr.item_hi;
         c0 += AVX512_TILE) {
        const int32_t n = k1 - c0 < AVX512_TILE ? k1 - c0 : AVX512_TILE;
        lanes_chunk_rows(a, &lr, attn__dtype_size(kdt), c0, n, krow, vrow, kpf, vpf);
        if (wide) widen_rows(kdt, krow, kpf, n, D, wbuf);

        /* Q.K^T, NRV row vectors (one Qt panel) at a time over the keys
         * they see, in blocks of NKB keys; the last block of 2 or 4 keys
         * so that no block passes AVX512_TILE.  The first panel prefetches the
         * next chunk's K. */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
            for (int32_t k = klo & ~1, nk; k < khi; k += nk) {
                nk = (khi - k + 1) & ~1;
                if (nk > NKB) nk = NKB;
                qkt_block(nk, NR, qt + (size_t)(16 * v0) * D, D, krow + k,
                          v0 == 0 && !wide ? kpf + k : NULL, st + (size_t)v0 * SP + 16 * (size_t)k);
            }
        }
        lanes_softmax(0, a, &lr, st, c0, n, alpha);
        if (wide) widen_rows(kdt, vrow, vpf, n, D, wbuf);
        /* P.V, one Ot panel (NRV row vectors) at a time over the keys its
         * rows see, in blocks of NKB dims; the first panel prefetches the
         * next chunk's V */
        for (int32_t v0 = 0; v0 < nvec; v0 += NRV) {
            const int32_t NR = nvec - v0 < NRV ? nvec - v0 : NRV;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
            if (klo >= khi) continue; /* alpha = 1, weights 0: nothing to do */
            float *panel = ot + (size_t)(16 * v0) * D; /* width 16 NR */
            for (size_t d0 = 0; d0 < D; d0 += NKB) {
                const int32_t nd = D - d0 < NKB ? (int32_t)(D - d0) : NKB;
                pvt_block(nd, NR, panel + d0 * 16 * (size_t)NR, alpha + 16 * v0, st + (size_t)v0 * SP, vrow,
                          v0 == 0 && !wide ? vpf : NULL, d0, klo, khi);
            }
        }
    }
    rows_panels(a->acc, ot, rows, D, 0);
}

void attn_lanes_f32__avx512(const attn_tile_args *a) { lanes_run(a, ATTN_DTYPE_F32, NULL); }

void attn_lanes_widen__avx512(const attn_tile_args *a, attn_dtype kdt) {
    float w[AVX512_TILE * LANES_WIDE_MAX_D] __attribute__((aligned(64)));
    switch (kdt) {
    case ATTN_DTYPE_F16: lanes_run(a, ATTN_DTYPE_F16, w); break;
    case ATTN_DTYPE_BF16: lanes_run(a, ATTN_DTYPE_BF16, w); break;
    case ATTN_DTYPE_FP8_E4M3: lanes_run(a, ATTN_DTYPE_FP8_E4M3, w); break;
    case ATTN_DTYPE_FP8_E5M2: lanes_run(a, ATTN_DTYPE_FP8_E5M2, w); break;
    default: ATTN_ASSERT(0 && "attn_lanes_widen__avx512: fp32 takes attn_lanes_f32__avx512");
    }
}
