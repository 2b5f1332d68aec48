/*
 * amx.c — the amx table's tile for bf16 K/V prefill items (those
 * attn_lanes_fits__avx512bf16 takes, when the builder allows rounding):
 * the lanes tiles' layout (avx512_lanes_inl.h: rows in the lanes of S^T
 * panels, the softmax down the key axis, Ot panels) with both products as
 * AMX tile products (TDPBF16PS, every tile 16 rows of 64 bytes:
 * amx_tiles.h):
 *
 *   Q.K^T  S^T [16 keys][16 rows] = K [16 keys][32 dims] (in place where
 *          16 keys share a block, else copied) times Qt2 [16 dim pairs]
 *          [16 rows] (q packed as the avx512bf16 lanes tile packs it).
 *   P.V    Ot [16 dims][16 rows] += Vt [16 dims][16 key pairs] (V
 *          transposed once per chunk) times the weights as key pairs.
 *
 * The tile work runs as steps issued from inside the vector loops (the
 * queue below: why there); the softmax keeps a lazy maximum so that Ot,
 * in memory, is rarely rescaled.  Numerics: the avx512bf16 lanes tile's
 * (docs/engine.md, "Rounding"), with the unit's own order of fp32 sums
 * and weights up to e^8 before rounding.  Measurements: docs/perf-notes.md,
 * "bf16 prefill on AMX tiles".  No threads, no allocation: every buffer is
 * an argument (scratch areas).
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

/* ------------------------------------------------------ the tile work */

/* The tile work of one pair of row vectors (NR = 2, or 1 for an odd last
 * vector) in one chunk: Q.K^T into their S^T panels over key groups [j0,
 * j1) of 16 keys, and later P.V into their Ot panels over key-pair groups
 * [g0, g1) of 16 pairs. */
typedef struct amx_pair {
    int32_t NR;
    const int32_t *qb[2]; /* Qt2 of each vector, panel width qw words */
    size_t qw[2];
    float *sv[2];         /* S^T panels */
    float *ov[2];         /* Ot of each vector, panel width ow floats */
    size_t ow[2];
    int32_t j0, j1, g0, g1;
} amx_pair;

/* What a step needs besides its pair: the chunk's K groups (kb, rows rb
 * bytes apart), Vt, D. */
typedef struct amx_chunk {
    const void *kb[KGROUPS];
    size_t rb, D;
    const int32_t *vt;
} amx_chunk;

/* One step of Q.K^T: dims [d0, d0 + 32) of the S^T blocks of key groups
 * j, j + 1 (NK = 2) or j alone, zeroing the accumulators first (first)
 * and storing them after (last).  Tiles 0-3 accumulate (group, vector) as
 * 2 group + vector, 4-5 hold K, 6-7 Qt2. */
INLINE void qk_step_t(int NK, int NR, const amx_pair *p, const amx_chunk *c, int32_t j, size_t d0,
                      int first, int last) {
    if (first) {
        AMX_ZERO(0);
        if (NR > 1) AMX_ZERO(1);
        if (NK > 1) {
            AMX_ZERO(2);
            if (NR > 1) AMX_ZERO(3);
        }
    }
    AMX_LOAD(4, (const char *)c->kb[j] + 2 * d0, c->rb);
    if (NK > 1) AMX_LOAD(5, (const char *)c->kb[j + 1] + 2 * d0, c->rb);
    AMX_LOAD(6, p->qb[0] + d0 / 2 * p->qw[0], 4 * p->qw[0]);
    if (NR > 1) AMX_LOAD(7, p->qb[1] + d0 / 2 * p->qw[1], 4 * p->qw[1]);
    AMX_DP(0, 4, 6);
    if (NR > 1) AMX_DP(1, 4, 7);
    if (NK > 1) {
        AMX_DP(2, 5, 6);
        if (NR > 1) AMX_DP(3, 5, 7);
    }
    if (last) {
        AMX_STORE(0, p->sv[0] + 256 * (size_t)j, 64);
        if (NR > 1) AMX_STORE(1, p->sv[1] + 256 * (size_t)j, 64);
        if (NK > 1) {
            AMX_STORE(2, p->sv[0] + 256 * (size_t)(j + 1), 64);
            if (NR > 1) AMX_STORE(3, p->sv[1] + 256 * (size_t)(j + 1), 64);
        }
    }
}

__attribute__((noinline)) static void qk_step(int32_t NK, const amx_pair *p, const amx_chunk *c,
                                              int32_t j, size_t d0, int first, int last) {
    if (NK > 1 && p->NR > 1)
        qk_step_t(2, 2, p, c, j, d0, first, last);
    else if (NK > 1)
        qk_step_t(2, 1, p, c, j, d0, first, last);
    else if (p->NR > 1)
        qk_step_t(1, 2, p, c, j, d0, first, last);
    else
        qk_step_t(1, 1, p, c, j, d0, first, last);
}

/* One step of P.V: dims [d0, d0 + 32) of the pair's Ot over its key-pair
 * groups.  Tiles 0-3 accumulate (dims half, vector) as 2 half + vector,
 * 4-5 hold Vt, 6-7 the weights. */
INLINE void pv_step_t(int NR, const amx_pair *p, const amx_chunk *c, size_t d0) {
    float *const *ot = p->ov;
    const size_t *ow = p->ow;
    const int32_t *vt = c->vt;
    AMX_LOAD(0, ot[0] + d0 * ow[0], 4 * ow[0]);
    AMX_LOAD(2, ot[0] + (d0 + 16) * ow[0], 4 * ow[0]);
    if (NR > 1) {
        AMX_LOAD(1, ot[1] + d0 * ow[1], 4 * ow[1]);
        AMX_LOAD(3, ot[1] + (d0 + 16) * ow[1], 4 * ow[1]);
    }
    for (int32_t gp = p->g0; gp < p->g1; gp++) {
        AMX_LOAD(4, vt + d0 * VT_WORDS + 16 * (size_t)gp, 4 * VT_WORDS);
        AMX_LOAD(5, vt + (d0 + 16) * VT_WORDS + 16 * (size_t)gp, 4 * VT_WORDS);
        AMX_LOAD(6, p->sv[0] + 256 * (size_t)gp, 64);
        AMX_DP(0, 4, 6);
        AMX_DP(2, 5, 6);
        if (NR > 1) {
            AMX_LOAD(7, p->sv[1] + 256 * (size_t)gp, 64);
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

__attribute__((noinline)) static void pv_step(const amx_pair *p, const amx_chunk *c, size_t d0) {
    if (p->NR > 1)
        pv_step_t(2, p, c, d0);
    else
        pv_step_t(1, p, c, d0);
}

/* ------------------------------------------------ the queue of tile work */

/* Pending tile work, run one step at a time: from inside the softmax of
 * another pair (softmax_lanes' bg), so that the AMX unit computes while the
 * vector units do, and is never idle long enough to slow down (a burst of
 * tile products after a microsecond of vector work took several times
 * its warm time: docs/perf-notes.md, "What loads and the tile unit
 * cost"); the rest by amx_drain.  At most two jobs: a P.V, then a Q.K^T
 * (tiles are reused from one job to the next, so a job's steps never
 * interleave with another's). */
typedef struct amx_job {
    int kind; /* 1: Q.K^T, 2: P.V */
    const amx_pair *p;
    int32_t i, n; /* steps done, steps in all */
} amx_job;
typedef struct amx_queue {
    amx_job job[2];
    int32_t head, count;
    const amx_chunk *c;
    /* the next chunk's K and V rows (pf[0], pf[1], NULL past the last),
     * prefetched a few lines per step: all at once they held up the
     * loads of this chunk */
    const void *const *pf[2];
    size_t pf_at, rb;
} amx_queue;

static void amx_push(amx_queue *q, int kind, const amx_pair *p) {
    const size_t nd = q->c->D / 32;
    const int32_t n = kind == 1 ? (int32_t)nd * ((p->j1 - p->j0 + 1) / 2) : p->g0 < p->g1 ? (int32_t)nd : 0;
    if (n == 0) return;
    ATTN_ASSERT(q->count < 2);
    q->job[(q->head + q->count++) % 2] = (amx_job){kind, p, 0, n};
}

static void amx_step(void *qv) {
    amx_queue *q = qv;
    if (!q->count) return;
    amx_job *j = &q->job[q->head];
    const size_t nd = q->c->D / 32, t = (size_t)j->i % nd;
    if (j->kind == 1) {
        const int32_t g = j->p->j0 + 2 * (j->i / (int32_t)nd);
        qk_step(j->p->j1 - g < 2 ? 1 : 2, j->p, q->c, g, 32 * t, t == 0, t == nd - 1);
    } else {
        pv_step(j->p, q->c, 32 * t);
    }
    if (++j->i == j->n) q->head = (q->head + 1) % 2, q->count--;
}

static void amx_drain(amx_queue *q) {
    while (q->count) amx_step(q);
}

/* The background work of a vector loop (softmax_lanes' bg): a step of
 * tile work and 8 lines of the next chunk. */
static void amx_bg(void *qv) {
    amx_queue *q = qv;
    amx_step(q);
    const size_t lines = q->rb / 64;
    for (int i = 0; i < 8; i++, q->pf_at++) {
        const size_t key = q->pf_at / (2 * lines), line = q->pf_at % (2 * lines);
        if (key >= AVX512_TILE || !q->pf[0][key]) return;
        _mm_prefetch((const char *)q->pf[line % 2][key] + 64 * (line / 2), _MM_HINT_T1);
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
 * built as words, then transposed, then bg(bgc). */
static void v_trans(const void *const *vrow, int32_t klo, int32_t khi, size_t D, int32_t *vt,
                    void (*bg)(void *), void *bgc) {
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
            bg(bgc);
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
        int32_t ilo, ihi;
        span(lr.item_lo, lr.item_hi, c0, n, &ilo, &ihi);
        amx_chunk ck = {.rb = rb, .D = D, .vt = vt};
        for (int32_t j = ilo / 16; 16 * j < ihi; j++) ck.kb[j] = k_group(krow, n, j, rb, kc);

        /* The vector pairs, each over the keys either of its vectors sees */
        amx_pair pr[2 * AVX512_TILE / 32];
        const int32_t npairs = (nvec + 1) / 2;
        for (int32_t i = 0; i < npairs; i++) {
            amx_pair *p = &pr[i];
            const int32_t v0 = 2 * i;
            p->NR = nvec - v0 < 2 ? 1 : 2;
            int32_t klo, khi;
            lanes_panel_span(&lr, v0, p->NR, c0, n, &klo, &khi);
            if (klo >= khi) klo = khi = 0;
            p->j0 = klo / 16, p->j1 = (khi + 15) / 16;
#ifdef ATTN_INJECT_amx_pv_first_span
            lanes_panel_span(&lr, v0, 1, c0, n, &klo, &khi);
            if (klo >= khi) klo = khi = 0;
#endif
            p->g0 = klo / 32, p->g1 = (khi + 31) / 32;
            for (int32_t v = 0; v < p->NR; v++) {
                p->qb[v] = qt2 + vec_at(v0 + v, rows, D / 2, &p->qw[v]);
                p->ov[v] = ot + vec_at(v0 + v, rows, D, &p->ow[v]);
                p->sv[v] = st + (size_t)(v0 + v) * SP;
            }
        }
        /* A software pipeline: V's transposition runs while the tile unit
         * does pair 0's Q.K^T, pair i's softmax while it does pair i - 1's
         * P.V and pair i + 1's Q.K^T */
        amx_queue q = {.c = &ck, .pf = {kpf, vpf}, .rb = rb};
        amx_push(&q, 1, &pr[0]);
        v_trans(vrow, ilo, ihi, D, vt, amx_bg, &q); /* V as key-pair words, where some row sees it */
        amx_drain(&q);
        const int32_t np = (n + 1) / 2, np16 = (np + 15) / 16 * 16;
        for (int32_t i = 0; i < npairs; i++) {
            amx_pair *p = &pr[i];
            if (i + 1 < npairs) amx_push(&q, 1, &pr[i + 1]);
            for (int32_t v = 2 * i; v < 2 * i + p->NR; v++)
                lanes_softmax_vec(1, 1, a, &lr, st, c0, n, alpha, v, amx_bg, &q);
            amx_drain(&q);
            if (p->g0 >= p->g1) continue; /* alpha = 1, weights 0: nothing to do */
            /* the weights as key pairs, the pairs past the chunk's last up
             * to the end of its 16-pair group zero; Ot rescaled */
            for (int32_t v = 0; v < p->NR; v++) {
                attn__p_pairs__avx512bf16(p->sv[v], n);
                for (int32_t k = np; k < np16; k++) _mm512_store_ps(p->sv[v] + 16 * (size_t)k, _mm512_setzero_ps());
                scale_ot(p->ov[v], p->ow[v], D, alpha + 16 * (2 * i + v));
            }
            amx_push(&q, 2, p);
        }
        amx_drain(&q);
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
