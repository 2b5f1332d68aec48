/*
 * amx.c — the amx table's tile for bf16 K/V items with many query rows
 * (prefill): the layout of the lanes tiles (avx512_lanes_inl.h: query rows
 * in the lanes of S^T panels, the online softmax down the key axis, the
 * accumulator as Ot panels) with both products as AMX tile products
 * (TDPBF16PS: a 16 x 16 fp32 tile += a 16 x 32 bf16 tile times a 32 x 16
 * bf16 tile held as 16 rows of pairs), every tile 16 rows of 64 bytes
 * (amx_tiles.h):
 *
 *   Q.K^T  S^T block [16 keys][16 rows] = K [16 keys][32 dims], read
 *          straight from the cache where 16 keys lie in one block, else
 *          from a copy, times Qt2 [16 dim pairs][16 rows] (q rounded to
 *          bf16 as the avx512bf16 lanes tile packs it), D/32 products;
 *          the block is stored into the vector's S^T panel as it stands.
 *   P.V    Ot [16 dims][16 rows] += Vt [16 dims][16 key pairs] times the
 *          weights as key pairs [16 key pairs][16 rows] (the avx512bf16
 *          lanes tile's packing, in place in the S^T panel); Vt is V
 *          transposed once per chunk into key-pair words.
 * Per product block: 2 x 2 accumulator tiles and 2 + 2 operand tiles, all
 * eight tile registers.
 *
 * Where it runs: the amx table's router (table_amx.c) sends the bf16
 * items attn_lanes_fits__avx512bf16 takes (rows a multiple of 16 in 32 ..
 * 2 x AVX512_TILE, D a multiple of 32), when the builder allows rounding.
 *
 * Numerics: those of the avx512bf16 lanes tile (its top comment; docs/
 * engine.md, "Rounding"): q and the weights rounded to bf16, products
 * exact, sums in fp32, bf16 subnormal inputs read as zero; TDPBF16PS also
 * flushes subnormal sums to zero.  The order of the fp32 sums differs
 * from VDPBF16PS's (each dot is summed in 32-dim pieces), within the same
 * bound.
 *
 * No threads, no allocation: every buffer is an argument (scratch areas).
 */
#include "avx512_lanes_inl.h"
#include "amx_tiles.h"

/* The KV work area (2 x AVX512_TILE x D floats = 8 AVX512_TILE D bytes):
 * Qt2 (rows <= 2 AVX512_TILE, D bf16 each: 4 AVX512_TILE D bytes), then Vt
 * (D rows of AVX512_TILE / 2 key-pair words: 2 AVX512_TILE D bytes), then
 * the copies of K for key groups that do not lie in one block (AVX512_TILE
 * rows of D bf16: 2 AVX512_TILE D bytes). */
#define VT_OFFSET(D) ((size_t)4 * AVX512_TILE * (D))
#define KC_OFFSET(D) ((size_t)6 * AVX512_TILE * (D))
#define VT_WORDS (AVX512_TILE / 2) /* key pairs per Vt row */
#define KGROUPS (AVX512_TILE / 16) /* 16-key groups per chunk */

/* Where vector v's first row sits in panels of `cols` elements per row
 * (panel_at's geometry), and the width of its panel (the stride from one
 * dim, or dim pair, to the next). */
static inline size_t vec_at(int32_t v, int32_t rows, size_t cols, size_t *width) {
    const int32_t r = 16 * v, p0 = r / QB * QB;
    *width = (size_t)(rows - p0 < QB ? rows - p0 : QB);
    return (size_t)p0 * cols + (size_t)(r - p0);
}

/* -------------------------------------------------------- Q.K^T tiles */

/* S^T blocks of NK 16-key groups (K rows at kb[j], row stride kstride
 * bytes) and NR vectors (Qt2 at qb[v], width qw[v] words) into st[v] +
 * 256 kg[j]: tiles 0-3 accumulate (group j, vector v) as 2 j + v, 4-5
 * hold K, 6-7 Qt2. */
INLINE void qk_tiles(int NK, int NR, const void *const *kb, size_t kstride,
                     const int32_t *const *qb, const size_t *qw, size_t D, float *const *st,
                     const int32_t *kg) {
    AMX_ZERO(0);
    if (NR > 1) AMX_ZERO(1);
    if (NK > 1) {
        AMX_ZERO(2);
        if (NR > 1) AMX_ZERO(3);
    }
    for (size_t d0 = 0; d0 < D; d0 += 32) {
        AMX_LOAD(4, (const char *)kb[0] + 2 * d0, kstride);
        if (NK > 1) AMX_LOAD(5, (const char *)kb[1] + 2 * d0, kstride);
        AMX_LOAD(6, qb[0] + d0 / 2 * qw[0], 4 * qw[0]);
        if (NR > 1) AMX_LOAD(7, qb[1] + d0 / 2 * qw[1], 4 * qw[1]);
        AMX_DP(0, 4, 6);
        if (NR > 1) AMX_DP(1, 4, 7);
        if (NK > 1) {
            AMX_DP(2, 5, 6);
            if (NR > 1) AMX_DP(3, 5, 7);
        }
    }
    AMX_STORE(0, st[0] + 256 * (size_t)kg[0], 64);
    if (NR > 1) AMX_STORE(1, st[1] + 256 * (size_t)kg[0], 64);
    if (NK > 1) {
        AMX_STORE(2, st[0] + 256 * (size_t)kg[1], 64);
        if (NR > 1) AMX_STORE(3, st[1] + 256 * (size_t)kg[1], 64);
    }
}

__attribute__((noinline)) static void qk_block(int32_t NK, int32_t NR, const void *const *kb,
                                               size_t kstride, const int32_t *const *qb,
                                               const size_t *qw, size_t D, float *const *st,
                                               const int32_t *kg) {
    if (NK > 1 && NR > 1)
        qk_tiles(2, 2, kb, kstride, qb, qw, D, st, kg);
    else if (NK > 1)
        qk_tiles(2, 1, kb, kstride, qb, qw, D, st, kg);
    else if (NR > 1)
        qk_tiles(1, 2, kb, kstride, qb, qw, D, st, kg);
    else
        qk_tiles(1, 1, kb, kstride, qb, qw, D, st, kg);
}

/* ----------------------------------------------------------- P.V tiles */

/* Ot += Vt . P for 32 dims from d0 and NR vectors (Ot of vector v at
 * ot[v], width ow[v] floats; its weights as key pairs at pt[v]), over the
 * key-pair groups [g0, g1) of 16 pairs: tiles 0-3 accumulate (dims half
 * h, vector v) as 2 h + v, 4-5 hold Vt, 6-7 the weights. */
INLINE void pv_tiles(int NR, float *const *ot, const size_t *ow, const int32_t *vt, size_t d0,
                     const float *const *pt, int32_t g0, int32_t g1) {
    AMX_LOAD(0, ot[0] + d0 * ow[0], 4 * ow[0]);
    AMX_LOAD(2, ot[0] + (d0 + 16) * ow[0], 4 * ow[0]);
    if (NR > 1) {
        AMX_LOAD(1, ot[1] + d0 * ow[1], 4 * ow[1]);
        AMX_LOAD(3, ot[1] + (d0 + 16) * ow[1], 4 * ow[1]);
    }
    for (int32_t gp = g0; gp < g1; gp++) {
        AMX_LOAD(4, vt + d0 * VT_WORDS + 16 * (size_t)gp, 4 * VT_WORDS);
        AMX_LOAD(5, vt + (d0 + 16) * VT_WORDS + 16 * (size_t)gp, 4 * VT_WORDS);
        AMX_LOAD(6, pt[0] + 256 * (size_t)gp, 64);
        AMX_DP(0, 4, 6);
        AMX_DP(2, 5, 6);
        if (NR > 1) {
            AMX_LOAD(7, pt[1] + 256 * (size_t)gp, 64);
            AMX_DP(1, 4, 7);
            AMX_DP(3, 5, 7);
        }
    }
    AMX_STORE(0, ot[0] + d0 * ow[0], 4 * ow[0]);
    AMX_STORE(2, ot[0] + (d0 + 16) * ow[0], 4 * ow[0]);
    if (NR > 1) {
        AMX_STORE(1, ot[1] + d0 * ow[1], 4 * ow[1]);
        AMX_STORE(3, ot[1] + (d0 + 16) * ow[1], 4 * ow[1]);
    }
}

__attribute__((noinline)) static void pv_block(int32_t NR, float *const *ot, const size_t *ow,
                                               const int32_t *vt, size_t D,
                                               const float *const *pt, int32_t g0, int32_t g1) {
    for (size_t d0 = 0; d0 < D; d0 += 32) {
        if (NR > 1)
            pv_tiles(2, ot, ow, vt, d0, pt, g0, g1);
        else
            pv_tiles(1, ot, ow, vt, d0, pt, g0, g1);
    }
}

/* ---------------------------------------------------------- packing */

/* The K rows of 16-key group j of the chunk (keys [0, n)) as a tile reads
 * them: the cache's rows where all 16 keys lie back to back, else a copy
 * in kc (keys at or past n as zeros, whose dots no row reads). */
static const void *k_group(const void *const *krow, int32_t n, int32_t j, size_t rb,
                           unsigned char *kc) {
    const int32_t k = 16 * j;
    const unsigned char *base = krow[k];
    int direct = k + 16 <= n;
#ifndef ATTN_INJECT_amx_kgroup_direct
    for (int32_t i = 1; direct && i < 16; i++)
        direct = (const unsigned char *)krow[k + i] == base + (size_t)i * rb;
#endif
    if (direct) return base;
    unsigned char *dst = kc + (size_t)k * rb;
    for (int32_t i = 0; i < 16; i++) {
        if (k + i < n)
            memcpy(dst + (size_t)i * rb, krow[k + i], rb);
        else
            memset(dst + (size_t)i * rb, 0, rb);
    }
    return dst;
}

/* Vt for the key-pair groups that hold keys [klo, khi) of the chunk: word
 * i of row d is dim d of keys 2i (low half) and 2i + 1 (high half); a key
 * outside [klo, khi) is zero, so that its weight of 0 meets a finite value
 * even where V holds inf or NaN.  Per 16 pairs and 16 dims: the pairs
 * built as words, then transposed. */
static void v_trans(const void *const *vrow, int32_t klo, int32_t khi, size_t D, int32_t *vt) {
    for (int32_t gp = klo / 32; 32 * gp < khi; gp++) {
        const uint16_t *ka[16], *kb[16];
        for (int i = 0; i < 16; i++) {
            const int32_t k = 32 * gp + 2 * i;
            ka[i] = k >= klo && k < khi ? (const uint16_t *)vrow[k] : NULL;
            kb[i] = k + 1 >= klo && k + 1 < khi ? (const uint16_t *)vrow[k + 1] : NULL;
        }
        for (size_t d0 = 0; d0 < D; d0 += 16) {
            __m512 x[16];
            UNROLL
            for (int i = 0; i < 16; i++) {
                const __m512i lo = ka[i] ? _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(ka[i] + d0)))
                                         : _mm512_setzero_si512();
                const __m512i hi = kb[i] ? _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(kb[i] + d0)))
                                         : _mm512_setzero_si512();
                x[i] = _mm512_castsi512_ps(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
            transpose16(x);
            UNROLL
            for (int j = 0; j < 16; j++)
                _mm512_store_ps((float *)(vt + (d0 + (size_t)j) * VT_WORDS + 16 * (size_t)gp), x[j]);
        }
    }
}

/* Ot of vector v (width w) times its rows' alpha, unless every one is 1
 * (no row's maximum moved: most chunks of a long prefill). */
static void scale_ot(float *ot, size_t w, size_t D, const float *alpha) {
    const __m512 al = _mm512_loadu_ps(alpha);
    if (_mm512_cmp_ps_mask(al, _mm512_set1_ps(1.0f), _CMP_NEQ_UQ) == 0) return;
    for (size_t d = 0; d < D; d++) _mm512_storeu_ps(ot + d * w, _mm512_mul_ps(_mm512_loadu_ps(ot + d * w), al));
}

/* ------------------------------------------------------------- driver */

void attn_lanes_bf16__amx(const attn_tile_args *a) {
    ATTN_ASSERT(attn_lanes_fits__avx512bf16(a));
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    lanes_rows lr;
    if (!lanes_rows_init(a, &lr)) return; /* nothing visible: every row keeps its state */
    const int32_t k1 = lr.k1, rows = lr.rows, nvec = lr.nvec;
    const size_t D = (size_t)a->head_dim, rb = 2 * D;

    int32_t *qt2 = (int32_t *)a->kv;
    int32_t *vt = (int32_t *)((unsigned char *)a->kv + VT_OFFSET(D));
    unsigned char *kc = (unsigned char *)a->kv + KC_OFFSET(D);
    attn__q_pairs__avx512bf16(a->q, qt2, rows, D);
    float *ot = a->q; /* the accumulator as Ot panels, in q's area */
    rows_panels(a->acc, ot, rows, D, 1);

    float *st = a->scores;
    const void *krow[AVX512_TILE + NKB], *vrow[AVX512_TILE + NKB];
    const void *kpf[AVX512_TILE + NKB], *vpf[AVX512_TILE + NKB];
    float alpha[2 * AVX512_TILE] __attribute__((aligned(64)));
    amx_config cfg;
    amx_config_init(&cfg);
    AMX_CONFIG(&cfg);

    for (int32_t c0 = a->k0 + (lr.item_lo - a->k0) / AVX512_TILE * AVX512_TILE; c0 < lr.item_hi;
         c0 += AVX512_TILE) {
        const int32_t n = k1 - c0 < AVX512_TILE ? k1 - c0 : AVX512_TILE;
        lanes_chunk_rows(a, &lr, 2, c0, n, krow, vrow, kpf, vpf);
        /* the next chunk's rows on their way to L2 while this one runs */
        for (int32_t i = 0; i < AVX512_TILE && kpf[i]; i++)
            for (size_t o = 0; o < rb; o += 64) {
                _mm_prefetch((const char *)kpf[i] + o, _MM_HINT_T1);
                _mm_prefetch((const char *)vpf[i] + o, _MM_HINT_T1);
            }
        int32_t ilo, ihi;
        span(lr.item_lo, lr.item_hi, c0, n, &ilo, &ihi);
        const void *kb[KGROUPS];
        for (int32_t j = ilo / 16; 16 * j < ihi; j++) kb[j] = k_group(krow, n, j, rb, kc);

        /* Q.K^T, two vectors and two key groups at a time over the keys
         * either vector sees */
        for (int32_t v0 = 0; v0 < nvec; v0 += 2) {
            const int32_t NR = nvec - v0 < 2 ? 1 : 2;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
            if (klo >= khi) continue;
            const int32_t *qb[2];
            size_t qw[2];
            float *sv[2];
            for (int32_t v = 0; v < NR; v++) {
                qb[v] = qt2 + vec_at(v0 + v, rows, D / 2, &qw[v]);
                sv[v] = st + (size_t)(v0 + v) * SP;
            }
            const int32_t j1 = (khi + 15) / 16;
            for (int32_t j = klo / 16; j < j1; j += 2) {
                const int32_t NK = j1 - j < 2 ? 1 : 2;
                const void *kk[2] = {kb[j], NK > 1 ? kb[j + 1] : kb[j]};
                const int32_t kg[2] = {j, j + 1};
                qk_block(NK, NR, kk, rb, qb, qw, D, sv, kg);
            }
        }
        lanes_softmax(1, a, &lr, st, c0, n, alpha);
        /* V transposed into key-pair words for the keys some row sees;
         * each vector's weights as key pairs, the pairs past the chunk's
         * last up to the end of its 16-pair group zero */
        v_trans(vrow, ilo, ihi, D, vt);
        const int32_t np = (n + 1) / 2, np16 = (np + 15) / 16 * 16;
        for (int32_t v = 0; v < nvec; v++) {
            float *sp = st + (size_t)v * SP;
            attn__p_pairs__avx512bf16(sp, n);
            for (int32_t i = np; i < np16; i++) _mm512_store_ps(sp + 16 * (size_t)i, _mm512_setzero_ps());
        }
        /* P.V, two vectors at a time over the key-pair groups either sees */
        for (int32_t v0 = 0; v0 < nvec; v0 += 2) {
            const int32_t NR = nvec - v0 < 2 ? 1 : 2;
            int32_t klo, khi;
#ifndef ATTN_INJECT_amx_pv_first_span
            lanes_panel_span(&lr, v0, NR, c0, n, &klo, &khi);
#else
            lanes_panel_span(&lr, v0, 1, c0, n, &klo, &khi);
#endif
            if (klo >= khi) continue; /* alpha = 1, weights 0: nothing to do */
            float *ov[2];
            size_t ow[2];
            const float *pv[2];
            for (int32_t v = 0; v < NR; v++) {
                ov[v] = ot + vec_at(v0 + v, rows, D, &ow[v]);
                pv[v] = st + (size_t)(v0 + v) * SP;
                scale_ot(ov[v], ow[v], D, alpha + 16 * (v0 + v));
            }
            pv_block(NR, ov, ow, vt, D, pv, klo / 32, (khi + 31) / 32);
        }
    }
    AMX_RELEASE();
    rows_panels(a->acc, ot, rows, D, 0);
}

/* One TDPBF16PS as the tile issues it (a test hook, kernels_decl.h):
 * c [16][16] fp32 += a [16 rows][16 pairs] . b [16 pairs][16 columns]
 * (bf16 pairs), each 64 bytes a row. */
void attn__tdpbf16__amx(float *c, const uint16_t *a, const uint16_t *b) {
    amx_config cfg;
    amx_config_init(&cfg);
    AMX_CONFIG(&cfg);
    AMX_LOAD(0, c, 64);
    AMX_LOAD(1, a, 64);
    AMX_LOAD(2, b, 64);
    AMX_DP(0, 1, 2);
    AMX_STORE(0, c, 64);
    AMX_RELEASE();
}
