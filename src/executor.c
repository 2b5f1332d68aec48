/*
 * executor.c — attn_run: validates a layer and its tensors against the
 * plan, then executes the plan's static partition with OpenMP (the only
 * file that uses OpenMP).  Phase 1 runs every work item (a decode run of
 * several KV heads' single-token items together, through the kernel
 * table's tile_heads: plan.c, head_run); a split piece
 * leaves its fp32 partial, max and sum in its reduction's regions and sets
 * its completion flag.  After a barrier, phase 2 merges split rows.  The
 * kernels see the scratchpad only through pointers into the plan's regions.
 */
#include "internal.h"
#include "kernels/mask.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct run_ctx {
    const attn_plan *p;
    const attn_layer_desc *layer;
    const attn_tensors *t;
    unsigned char *scratch;
    int32_t g;              /* the LAYER's query heads per KV head (kernels loop over it) */
    int32_t hq;             /* the layer's query heads (tensor strides) */
    /* The layer's scale as q_mul x 2^q_exp (q_exp = 0 for any ordinary
     * scale, and for any scale up to 1 on an f32 or bf16 cache; see
     * split_scale, split_scale_wide_kv and normalise_q). */
    float q_mul;
    int32_t q_exp;
    int32_t q_top;          /* the exponent normalise_q leaves a huge q row at */
    float v_scale;          /* the fp8 cache's V scale, else 1 (the store applies it) */
    int32_t win_left[2], win_right[2]; /* the layer's window pair, [causal] (mask.h) */
    attn_tile_fn tile;
    attn_tile_heads_fn tile_heads; /* NULL: every item runs alone */
    attn_load_q_fn load_q;
    attn_store_fn store;
    size_t q_es, o_es;      /* element sizes */
    int failed;             /* a reduction found a missing piece (set atomically) */
    int wide_kv;            /* an f32 or bf16 cache: K can reach FLT_MAX (needs_wide) */
    int32_t alibi_m_exp;    /* ALiBi: the largest state exponent at which every nonzero
                               bias (slope x distance) stays a normal fp32 in 2^m_exp
                               units; INT32_MAX: no ALiBi (needs_wide) */
    attn__wide wide;        /* what wide.c needs of this run */
    uint64_t *wide_counts;  /* the plan's counters (count_wide) */
} run_ctx;

static void *region_ptr(const run_ctx *c, size_t region) {
    return c->scratch + c->p->regions[region].offset;
}

static size_t thread_region(const attn_plan *p, int32_t thread, attn_region_kind kind) {
    return p->thread_region0 + (size_t)thread * ATTN__THREAD_REGIONS + (size_t)(kind - ATTN_REGION_Q);
}

/* Element offset of (token, first head of kv_head's group) in q/out. */
static size_t row_elem(const run_ctx *c, int32_t req, int32_t tok, int32_t kv_head) {
    size_t token = (size_t)c->p->qsl[req] + (size_t)tok;
    return (token * (size_t)c->hq + (size_t)kv_head * (size_t)c->g) * (size_t)c->p->head_dim;
}

#ifdef ATTN_INJECT_gqa_map
/* INJECTED BUG (gqa_map): query head h is served by KV head h % Hkv instead
 * of h / (Hq / Hkv): the item of KV head kh loads and stores the query heads
 * kh, kh + Hkv, kh + 2 Hkv, ... */
static size_t gqa_head(const run_ctx *c, int32_t kv_head, int32_t j) {
    return (size_t)kv_head + (size_t)j * (size_t)c->p->num_kv_heads;
}

static uint32_t gqa_load_q(const run_ctx *c, int32_t req, int32_t tok0, int32_t n_tok,
                           int32_t kv_head, float *q) {
    const size_t D = (size_t)c->p->head_dim;
    uint32_t mb = 0;
    for (int32_t t = 0; t < n_tok; t++)
        for (int32_t j = 0; j < c->g; j++) {
            size_t tok = (size_t)c->p->qsl[req] + (size_t)(tok0 + t);
            size_t e = (tok * (size_t)c->hq + gqa_head(c, kv_head, j)) * D;
            const uint32_t b = c->load_q((const unsigned char *)c->t->q + e * c->q_es, 0, 1, 1,
                                         (int32_t)D, c->q_mul,
                                         q + ((size_t)t * (size_t)c->g + (size_t)j) * D);
            mb = b > mb ? b : mb;
        }
    return mb;
}

static void gqa_store(const run_ctx *c, int32_t req, int32_t tok0, int32_t n_tok,
                      int32_t kv_head, const float *acc, const float *m, const float *l,
                      int32_t m_exp) {
    const size_t D = (size_t)c->p->head_dim;
    for (int32_t t = 0; t < n_tok; t++)
        for (int32_t j = 0; j < c->g; j++) {
            size_t r = (size_t)t * (size_t)c->g + (size_t)j, h = gqa_head(c, kv_head, j);
            size_t tok = (size_t)c->p->qsl[req] + (size_t)(tok0 + t);
            size_t e = (tok * (size_t)c->hq + h) * D;
            c->store(acc + r * D, m + r, l + r, 1, 1, (int32_t)D,
                     c->layer->sinks ? c->layer->sinks + h : NULL, m_exp, c->v_scale,
                     (unsigned char *)c->t->out + e * c->o_es, 0);
        }
}
#endif

/* Huge scales.  The API accepts any finite scale > 0, and the kernels take
 * q already multiplied by it; a caller's 1e38 makes q x scale overflow
 * fp32, and products near FLT_MAX make the dot products' partial sums
 * overflow (to NaN where one sum saturates to +inf and another to -inf,
 * as fuzz_attention found: corpus/cases/huge-scale-decode.case).  So a
 * scale above 2^32 is split into a mantissa for load_q and a power of two,
 * and q rows whose largest element exceeds 2^32 are scaled down by an
 * exact power of two; the kernels multiply each logit back by 2^qk_exp
 * (attn_tile_args) before a soft cap, where an overflow gives +-inf with
 * the sign of the dot product and the cap bounds it.  Without a soft cap
 * those logits could overflow too (scale 2.91e38 gave NaN outputs:
 * corpus/cases/huge-scale-nocap.case), so there the softmax state stays in
 * units of 2^qk_exp logits (kernels.h, attn__m_exp) and the store and the
 * split merge are told the units.  Power-of-two scaling is exact, and no
 * step is taken for ordinary inputs, whose results stay bit for bit. */
static void split_scale(double scale, float *mul, int32_t *e) {
    *e = scale > 0x1p32 ? ilogb(scale) : 0;
    *mul = (float)ldexp(scale, -*e);
}

/* The same for an f32 or bf16 cache, whose K reaches FLT_MAX by itself:
 * every scale above 1 is split, with its mantissa in [0.5, 1), so q x
 * mantissa never exceeds q.  Then Q.K of the stored values overflows only
 * where max |q| sum |k| does (rows wide.c takes, and the harness excuses),
 * never because of the scale: fuzz_attention's normal build found scale
 * 1e4 over K near FLT_MAX under a soft cap, where a partial sum that
 * overflowed to the wrong sign was capped into a wrong logit (corpus/
 * cases/scale-over-k-near-max-softcap.case).  The power of two then
 * scales the logits (a soft cap bounds an overflow with the right sign)
 * or sets the state's units, as for a huge scale. */
static void split_scale_wide_kv(double scale, float *mul, int32_t *e) {
    *e = scale > 1.0 ? ilogb(scale) + 1 : 0;
    *mul = (float)ldexp(scale, -*e);
}

/* The largest exponent a normalised q row keeps: with cache values below
 * 2^16 in magnitude (f16, and fp8 codes, whose K scale is in q), D
 * products of q below 2^(top + 1) sum to less than 2^126 whatever their
 * signs; f32 and bf16 caches reach FLT_MAX, so their rows go to [1, 2). */
static int32_t q_top_for(attn_dtype kv, int32_t head_dim) {
    if (kv == ATTN_DTYPE_F32 || kv == ATTN_DTYPE_BF16) return 0;
    int32_t log2d = 0;
    while (log2d < 31 && ((int64_t)1 << log2d) < (int64_t)head_dim) log2d++;
    const int32_t top = 126 - 16 - log2d - 2;
    return top > 0 ? top : 0;
}

/* q (n floats) scaled down by a power of two if its largest |element|
 * (mb: its bit pattern, NaNs counted as 0, as load_q returns it) is
 * above 2^32, so that its largest exponent becomes top; returns that
 * power's exponent (0: q untouched).  top is as high as the cache's values
 * allow (q_top_for): scaling further down than needed would push the
 * row's small elements into fp32's subnormals, and where the row's large
 * products cancel, those decide the logits (fuzz_attention from an empty
 * corpus: bf16 q near its maximum over an f16 cache, 1 % off). */
static int32_t normalise_q(float *q, size_t n, uint32_t mb, int32_t top) {
    float mx;
    memcpy(&mx, &mb, sizeof mx);
    if (!(mx > 0x1p32f) || !isfinite(mx)) return 0;
    const int32_t e = ilogbf(mx) - top;
    if (e <= 0) return 0;
    for (size_t i = 0; i < n; i++) q[i] = ldexpf(q[i], -e);
#ifndef ATTN_INJECT_large_q_exponent
    return e;
#else
    /* INJECTED BUG (large_q_exponent): the exponent handed back for the
     * logits' rescale is one less than the one q was scaled down by, so
     * huge-q rows get logits half their size. */
    return e - 1;
#endif
}

/* The group's synchronisation hook (attn_group_desc.sync_hook), if any. */
#define SYNC_POINT(p, site)                                                  \
    do {                                                                     \
        if ((p)->sync_hook) (p)->sync_hook((p)->sync_hook_ctx, (site));      \
    } while (0)

/* q rows of (req, tokens [tok0, tok0 + n_tok), kv_head's group) times
 * `mul` into q, as the table loads them; returns their largest |element|'s
 * bits (load_q). */
static uint32_t load_q_times(const run_ctx *c, int32_t req, int32_t tok0, int32_t n_tok,
                             int32_t kv_head, float mul, float *q) {
#ifndef ATTN_INJECT_gqa_map
    const size_t e0 = row_elem(c, req, tok0, kv_head);
    return c->load_q((const unsigned char *)c->t->q + e0 * c->q_es,
                     (size_t)c->hq * (size_t)c->p->head_dim, n_tok, c->g, c->p->head_dim, mul,
                     q);
#else
    (void)mul;
    return gqa_load_q(c, req, tok0, n_tok, kv_head, q);
#endif
}

/* Load the query rows of (req, tokens [tok0, tok0 + n_tok), kv_head's
 * group) into q, scaled and normalised; returns their logit exponent
 * qk_exp (attn_tile_args).  A reduction calls it again for the same rows
 * to learn the units its pieces' states are in. */
static int32_t load_rows(const run_ctx *c, float *q, int32_t req, int32_t tok0, int32_t n_tok,
                         int32_t kv_head) {
    const int32_t D = c->p->head_dim, rows = n_tok * c->g;
    const uint32_t mb = load_q_times(c, req, tok0, n_tok, kv_head, c->q_mul, q);
    int32_t qk_exp = c->q_exp;
    float mx;
    memcpy(&mx, &mb, sizeof mx);
    if (isinf(mx) && c->q_mul > 1.0f) {
        /* q x scale left fp32 (q near FLT_MAX, a scale above 1: found by
         * fuzz_attention from an empty corpus): load again with the scale's
         * mantissa below 1 and carry its power of two in the exponent */
        const int32_t se = ilogbf(c->q_mul) + 1;
        const uint32_t mb2 = load_q_times(c, req, tok0, n_tok, kv_head, ldexpf(c->q_mul, -se), q);
        qk_exp += se + normalise_q(q, (size_t)rows * (size_t)D, mb2, c->q_top);
    } else {
        qk_exp += normalise_q(q, (size_t)rows * (size_t)D, mb, c->q_top);
    }
    if (qk_exp > 254) qk_exp = 254; /* far beyond fp32 either way; keeps 2^qk_exp two floats */
    return qk_exp;
}

/* Item `it`'s tile arguments, its q rows loaded into q and its state
 * (acc, m, l: rows each) initialised fresh; next: the item this thread
 * runs after it (a prefetch hint), or NULL. */
static void item_args(const run_ctx *c, int32_t thread, const attn_work_item *it,
                      const attn_work_item *next, float *q, float *acc, float *m, float *l,
                      attn_tile_args *a) {
    const attn_plan *p = c->p;
    const int32_t D = p->head_dim, n_tok = it->tok1 - it->tok0, rows = n_tok * c->g;
    const int32_t qk_exp = load_rows(c, q, it->req, it->tok0, n_tok, it->kv_head);
    memset(acc, 0, (size_t)rows * (size_t)D * sizeof(float));
    for (int32_t i = 0; i < rows; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    const int32_t seq = p->seq_lens[it->req], q_len = p->qsl[it->req + 1] - p->qsl[it->req];
    const int32_t causal = p->req_causal[it->req];
    (void)q_len;
    *a = (attn_tile_args){
        .n_tok = n_tok,
        .g = c->g,
        .head_dim = D,
        .q = q,
        /* docs/design.md §2: a causal request's token i at seq_len - q_len + i, a
         * non-causal one's at i */
#ifndef ATTN_INJECT_causal_offset
        .pos0 = (causal ? seq - q_len : 0) + it->tok0,
#else
        /* INJECTED BUG (causal_offset): query position taken as its index
         * in the chunk instead of seq_len - q_len + i. */
        .pos0 = it->tok0,
#endif
        .seq_len = seq,
        .causal = causal,
        .window_left = c->win_left[causal],
        .window_right = c->win_right[causal],
        .softcap = c->layer->softcap,
        .qk_exp = qk_exp,
        .alibi = c->layer->alibi_slopes ? c->layer->alibi_slopes + (size_t)it->kv_head * (size_t)c->g
                                        : NULL,
        .k_cache = c->t->k_cache,
        .v_cache = c->t->v_cache,
        .block_stride = (size_t)p->num_kv_heads * (size_t)p->block_size * (size_t)D,
        .head_offset = (size_t)it->kv_head * (size_t)p->block_size * (size_t)D,
        .blocks = p->block_table + (size_t)it->req * (size_t)p->bt_stride,
        .block_size = p->block_size,
        .k0 = it->k0,
        .k1 = it->k1,
        .kv_tile = p->kv_tile,
        .tune = p->tune,
        .round_ok = p->round_ok,
        .acc = acc,
        .m = m,
        .l = l,
        .scores = region_ptr(c, thread_region(p, thread, ATTN_REGION_SCORES)),
        .kv = region_ptr(c, thread_region(p, thread, ATTN_REGION_KV)),
        .next_blocks = next ? p->block_table + (size_t)next->req * (size_t)p->bt_stride : NULL,
        .next_head_offset = next ? (size_t)next->kv_head * (size_t)p->block_size * (size_t)D : 0,
        .next_k0 = next ? next->k0 : 0,
        .next_k1 = next ? next->k1 : 0,
    };
}

/* internal.h.  Branch-free: (u & exponent) + 2^23 reaches bit 31 only for
 * an all-ones exponent, so OR-ing those sums and testing bit 31 needs no
 * compare; four 4-lane accumulators (GCC vector extensions, SSE2 on any
 * x86-64), as GCC's -O2 does not vectorize the plain loop: a prefill
 * item's 128 x 128 accumulator took 20 us with one compare per element,
 * 2.8 us so (docs/perf-notes.md). */
typedef uint32_t u32x4 __attribute__((vector_size(16)));
int attn__any_inf_nan(const float *x, size_t n) {
    const u32x4 e = {0x7f800000u, 0x7f800000u, 0x7f800000u, 0x7f800000u};
    const u32x4 one = {0x00800000u, 0x00800000u, 0x00800000u, 0x00800000u};
    u32x4 z0 = {0}, z1 = {0}, z2 = {0}, z3 = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        u32x4 a, b, c, d;
        memcpy(&a, x + i, sizeof a);
        memcpy(&b, x + i + 4, sizeof b);
        memcpy(&c, x + i + 8, sizeof c);
        memcpy(&d, x + i + 12, sizeof d);
        z0 |= (a & e) + one;
        z1 |= (b & e) + one;
        z2 |= (c & e) + one;
        z3 |= (d & e) + one;
    }
    z0 |= z1 | z2 | z3;
    uint32_t all = z0[0] | z0[1] | z0[2] | z0[3];
    for (; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        all |= (u & 0x7f800000u) + 0x00800000u;
    }
    return (int)(all >> 31);
}

/* Nonzero when fp32 could not carry these complete rows (acc, m, l: their
 * final state, qk_exp: their logit exponent), so that wide.c must compute
 * them: 1 + the ATTN_WIDE_TRIG_* of the first test that said so, 0 else:
 *  - an f32 or bf16 cache whose q rows had to be scaled down (a huge q
 *    row, or q x scale beyond FLT_MAX: load_rows).  Such a K can reach
 *    FLT_MAX, so no exponent for q keeps its products from overflowing
 *    and its small elements out of fp32's subnormals at once (the latter:
 *    corpus/cases/huge-q-scale-subnormal-k.case).  A huge scale alone
 *    stays on the tables' path (its power of two is exact);
 *  - a row whose state is not finite, or that saw no key (every complete
 *    row sees at least the key at its own position: docs/design.md §2),
 *    or an accumulator that is not: q . K or P.V overflowed fp32, which
 *    an f32 or bf16 cache allows even for an ordinary q (an infinite
 *    logit makes NaN weights; all of a row's logits at -inf leave it
 *    empty; fuzz_attention, normal build, 2026-12-02);
 *  - ALiBi under a state exponent so large that a bias in its units,
 *    slope x distance x 2^-m_exp, could leave fp32's normal range (a huge
 *    scale over a tiny K keeps ordinary logits in 2^250 units: the tile
 *    would add zeros; corpus/cases/huge-scale-alibi-tiny-k.case).
 * Ordinary rows pass both tests and keep the tables' results bit for bit;
 * the check reads what the store reads next. */
static int needs_wide(const run_ctx *c, int32_t qk_exp, const float *acc, const float *m,
                      const float *l, int32_t rows) {
    if (c->wide_kv && qk_exp != c->q_exp) return ATTN_WIDE_TRIG_HUGE_Q + 1;
    if (attn__m_exp(qk_exp, c->layer->softcap) > c->alibi_m_exp) return ATTN_WIDE_TRIG_ALIBI + 1;
    /* An fp8 V scale this small makes the store's factor v_scale alpha / L
     * subnormal for rows of up to 2^26 keys, with a few bits left of it
     * (corpus/cases/fp8-tiny-v-scale.case: 1.5 % off on v_scale 3.6e-43);
     * the fp64 path applies it after the division. */
    if (c->v_scale < 0x1p-100f) return ATTN_WIDE_TRIG_V_SCALE + 1;
    uint32_t bad = 0;
    for (int32_t r = 0; r < rows; r++)
        bad |= !(m[r] > -INFINITY && m[r] < INFINITY) | !(l[r] > 0.0f && l[r] < INFINITY);
    if (bad) return ATTN_WIDE_TRIG_STATE + 1;
#ifdef ATTN_INJECT_wide_acc_missed
    /* INJECTED BUG (wide_acc_missed): the accumulator is not inspected, so
     * rows whose P.V sums left fp32 are stored as inf or NaN */
    (void)acc;
    return 0;
#else
    return attn__any_inf_nan(acc, (size_t)rows * (size_t)c->p->head_dim) ? ATTN_WIDE_TRIG_ACC + 1 : 0;
#endif
}

/* Counts a store of rows sent to the fp64 path by `trigger` (needs_wide's
 * answer) in the plan's counters, with the features of the layer the
 * fp64 path applies again.  The counters are the one part of a plan a run
 * writes: the plan stays const to the caller, so they are reached through
 * the run's pointer (run_ctx.wide_counts), atomically (threads store
 * concurrently). */
static void count_wide(const run_ctx *c, int trigger, int merged) {
    uint64_t *n = c->wide_counts;
    const attn_layer_desc *ly = c->layer;
    const int fp8 = c->p->kv_dtype == ATTN_DTYPE_FP8_E4M3 || c->p->kv_dtype == ATTN_DTYPE_FP8_E5M2;
    const int has[ATTN_WIDE_COUNT] = {
        [ATTN_WIDE_ROWS] = 1,
        [ATTN_WIDE_SOFTCAP] = ly->softcap > 0.0f,
        [ATTN_WIDE_ALIBI] = ly->alibi_slopes != NULL,
        [ATTN_WIDE_SINKS] = ly->sinks != NULL,
        /* the non-causal pair: both sides as the layer gave them (an
         * adapter may pass the shorthand W as the pair (W-1, W-1)) */
        [ATTN_WIDE_WINDOW_ONE] = (c->win_left[0] >= 0) != (c->win_right[0] >= 0),
        [ATTN_WIDE_WINDOW_BOTH] = c->win_left[0] >= 0 && c->win_right[0] >= 0,
        [ATTN_WIDE_FP8_SCALES] = fp8 && ((ly->k_scale > 0.0f && ly->k_scale != 1.0f) ||
                                         (ly->v_scale > 0.0f && ly->v_scale != 1.0f)),
        [ATTN_WIDE_GQA] = c->g > 1,
        [ATTN_WIDE_SPLIT] = merged,
        [ATTN_WIDE_SCALE] = ly->scale > 0.0f,
    };
    __atomic_fetch_add(&n[trigger - 1], 1, __ATOMIC_RELAXED);
    for (int i = ATTN_WIDE_ROWS; i < ATTN_WIDE_COUNT; i++)
        if (has[i]) __atomic_fetch_add(&n[i], 1, __ATOMIC_RELAXED);
}

/* Store the complete rows of (req, tokens [tok0, tok0 + n_tok), kv_head's
 * group) from their final state, or from wide.c's fp64 rows when fp32
 * could not carry them (needs_wide); acc, m and l are the caller's work
 * areas and may be overwritten. */
static void store_rows(const run_ctx *c, int32_t req, int32_t tok0, int32_t n_tok,
                       int32_t kv_head, int32_t qk_exp, float *acc, float *m, float *l,
                       int merged) {
    const int32_t D = c->p->head_dim, rows = n_tok * c->g;
    const float *sinks = c->layer->sinks ? c->layer->sinks + (size_t)kv_head * (size_t)c->g : NULL;
    int32_t m_exp = attn__m_exp(qk_exp, c->layer->softcap);
    float v_scale = c->v_scale;
    const int trigger = needs_wide(c, qk_exp, acc, m, l, rows);
    if (trigger) {
        count_wide(c, trigger, merged);
        attn__wide_rows(&c->wide, req, tok0, n_tok, kv_head, acc, m, l);
        sinks = NULL; /* applied, as the V scale is: the store only converts */
        m_exp = 0;
        v_scale = 1.0f;
    }
#ifndef ATTN_INJECT_gqa_map
    const size_t e0 = row_elem(c, req, tok0, kv_head);
    c->store(acc, m, l, n_tok, c->g, D, sinks, m_exp, v_scale,
             (unsigned char *)c->t->out + e0 * c->o_es, (size_t)c->hq * (size_t)D);
#else
    (void)sinks;
    (void)v_scale;
    (void)D;
    gqa_store(c, req, tok0, n_tok, kv_head, acc, m, l, m_exp);
#endif
}

/* After the tile: an unsplit item stores its rows; a split piece
 * publishes its partial for the reduction. */
static void item_finish(const run_ctx *c, const attn_work_item *it, const attn_tile_args *a) {
    const attn_plan *p = c->p;
    const int32_t D = p->head_dim, n_tok = it->tok1 - it->tok0, rows = n_tok * c->g;
    const float *acc = a->acc, *m = a->m, *l = a->l;
    if (it->num_pieces == 1) {
        store_rows(c, it->req, it->tok0, n_tok, it->kv_head, a->qk_exp, a->acc, a->m, a->l, 0);
        return;
    }
    /* A split piece: publish the unnormalised partial (always fp32) and its
     * softmax state.  An all-masked piece publishes the neutral state it
     * holds (acc 0, m -inf, l 0), never nothing: the merge must not read
     * stale scratch from an earlier run. */
    const attn_reduction *rd = &p->reds[it->reduction];
#ifdef ATTN_INJECT_stale_split
    {
        /* INJECTED BUG (stale_split): a piece that saw no key skips
         * publishing its partial; the merge then reads stale scratch. */
        int32_t seen = 0;
        for (int32_t i = 0; i < rows; i++) seen |= (m[i] != -INFINITY);
        if (!seen) {
            ((unsigned char *)region_ptr(c, (size_t)rd->region_flags))[it->piece] = 1;
            return;
        }
    }
#endif
    float *part = region_ptr(c, (size_t)rd->region_partial);
    float *pm = region_ptr(c, (size_t)rd->region_max);
    float *pl = region_ptr(c, (size_t)rd->region_sum);
    unsigned char *flags = region_ptr(c, (size_t)rd->region_flags);
    memcpy(part + (size_t)it->piece * (size_t)rows * (size_t)D, acc,
           (size_t)rows * (size_t)D * sizeof(float));
    memcpy(pm + (size_t)it->piece * (size_t)rows, m, (size_t)rows * sizeof(float));
    memcpy(pl + (size_t)it->piece * (size_t)rows, l, (size_t)rows * sizeof(float));
    flags[it->piece] = 1;
}

static void run_item(const run_ctx *c, int32_t thread, const attn_work_item *it,
                     const attn_work_item *next) {
    const attn_plan *p = c->p;
    const int32_t rows = (it->tok1 - it->tok0) * c->g;
    float *state = region_ptr(c, thread_region(p, thread, ATTN_REGION_STATE));
    attn_tile_args a;
    item_args(c, thread, it, next, region_ptr(c, thread_region(p, thread, ATTN_REGION_Q)),
              region_ptr(c, thread_region(p, thread, ATTN_REGION_ACC)), state, state + rows, &a);
    c->tile(&a);
    item_finish(c, it, &a);
}

/* The decode run starting at list entry i of the thread's list [i, end):
 * consecutive entries that are single-token, unsplit items of one
 * (request, token, key range) with consecutive KV heads, at most
 * head_run of them (plan.c keeps a run's items adjacent on one thread).
 * Returns its length (1: run the item alone). */
static size_t run_length(const run_ctx *c, size_t i, size_t end) {
    const attn_plan *p = c->p;
    const attn_work_item *a = &p->items[p->thread_items[i]];
    if (!c->tile_heads || !attn__run_item(a)) return 1;
    size_t n = 1;
    while (i + n < end && n < (size_t)p->head_run) {
        const attn_work_item *b = &p->items[p->thread_items[i + n]];
        if (!attn__run_item(b) || b->req != a->req || b->tok0 != a->tok0 || b->k0 != a->k0 ||
            b->k1 != a->k1 || b->kv_head != a->kv_head + (int32_t)n)
            break;
        n++;
    }
    return n;
}

/* Run entries [i, i + n) of the thread's list (a decode run) through
 * tile_heads: item h's rows at h * g in the thread's Q, ACC and STATE
 * regions, which hold head_run x g rows (plan.c, row_groups). */
static void run_heads(const run_ctx *c, int32_t thread, size_t i, size_t n, size_t end) {
    const attn_plan *p = c->p;
    const size_t g = (size_t)c->g, D = (size_t)p->head_dim;
    ATTN_ASSERT(n <= (size_t)p->head_run && p->head_run <= ATTN__HEAD_RUN_MAX);
    float *q = region_ptr(c, thread_region(p, thread, ATTN_REGION_Q));
    float *acc = region_ptr(c, thread_region(p, thread, ATTN_REGION_ACC));
    float *state = region_ptr(c, thread_region(p, thread, ATTN_REGION_STATE));
    attn_tile_args a[ATTN__HEAD_RUN_MAX] = {{0}};
    for (size_t h = 0; h < n; h++) {
        const attn_work_item *it = &p->items[p->thread_items[i + h]];
        const attn_work_item *next = i + h + 1 < end ? &p->items[p->thread_items[i + h + 1]] : NULL;
        item_args(c, thread, it, next, q + h * g * D, acc + h * g * D, state + h * g,
                  state + (n + h) * g, &a[h]);
    }
    c->tile_heads(a, (int32_t)n);
    for (size_t h = 0; h < n; h++) item_finish(c, &p->items[p->thread_items[i + h]], &a[h]);
}

/* The next unclaimed unit of plan thread pt's list (an item, or a decode
 * run: run_length) through the list's cursor cur, claimed by
 * compare-and-swap; returns its first entry and sets *n, or SIZE_MAX when
 * the list is done. */
static size_t claim(const run_ctx *c, size_t *cur, int32_t pt, size_t *n) {
    const size_t end = c->p->item_start[pt + 1];
    size_t i = __atomic_load_n(cur, __ATOMIC_RELAXED);
    while (i < end) {
        const size_t k = run_length(c, i, end);
        if (__atomic_compare_exchange_n(cur, &i, i + k, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *n = k;
            return i;
        }
    }
    return SIZE_MAX;
}

static void run_reduction(run_ctx *c, int32_t thread, const attn_reduction *rd) {
    const attn_plan *p = c->p;
    const int32_t D = p->head_dim, n_tok = rd->tok1 - rd->tok0, rows = n_tok * c->g;
    const unsigned char *flags = region_ptr(c, (size_t)rd->region_flags);
#if defined(ATTN_INJECT_split_flags_overlap) || defined(ATTN_INJECT_no_merge_barrier)
    (void)flags; /* the historical engine did not check completion flags */
#else
    for (int32_t s = 0; s < rd->num_pieces; s++)
        if (flags[s] != 1) {
            /* Every piece ran before the barrier: a missing flag means the
             * scratchpad was overwritten.  Refuse to emit garbage. */
            ATTN_ASSERT(flags[s] == 1);
#pragma omp atomic write
            c->failed = 1;
            return;
        }
#endif
    float *acc = region_ptr(c, thread_region(p, thread, ATTN_REGION_ACC));
    float *state = region_ptr(c, thread_region(p, thread, ATTN_REGION_STATE));
    /* the pieces' state units: their rows, loaded again (every piece of a
     * row had the same q, so the same exponent) */
    const int32_t qk_exp = load_rows(c, region_ptr(c, thread_region(p, thread, ATTN_REGION_Q)),
                                     rd->req, rd->tok0, n_tok, rd->kv_head);
    const int32_t m_exp = attn__m_exp(qk_exp, c->layer->softcap);
    p->kern->merge(region_ptr(c, (size_t)rd->region_partial), region_ptr(c, (size_t)rd->region_max),
                   region_ptr(c, (size_t)rd->region_sum), rd->num_pieces, rows, D, m_exp, acc,
                   state, state + rows);
    store_rows(c, rd->req, rd->tok0, n_tok, rd->kv_head, qk_exp, acc, state, state + rows, 1);
}

static attn_status check_tensors(const attn_plan *p, const attn_layer_desc *l,
                                 const attn_tensors *t, attn_error *err) {
    if (!t->q || !t->out || !t->k_cache || !t->v_cache)
        return attn__fail(err, ATTN_E_NULL_ARG, "tensors.%s is NULL",
                          !t->q ? "q" : !t->out ? "out" : !t->k_cache ? "k_cache" : "v_cache");
#define MISMATCH(field, want)                                                                  \
    if (t->field != (want))                                                                    \
        return attn__fail(err, ATTN_E_TENSOR_MISMATCH, "tensors." #field " = %d, plan has %d", \
                          (int)t->field, (int)(want));
    MISMATCH(q_dtype, p->q_dtype)
    MISMATCH(kv_dtype, p->kv_dtype)
    MISMATCH(out_dtype, p->out_dtype)
    MISMATCH(num_tokens, p->num_tokens)
    MISMATCH(num_heads, l->num_heads)
    MISMATCH(head_dim, p->head_dim)
    MISMATCH(num_blocks, p->num_blocks)
    MISMATCH(num_kv_heads, p->num_kv_heads)
    MISMATCH(block_size, p->block_size)
#undef MISMATCH
    /* The output must not overlap what the kernels read while writing it. */
    size_t out_bytes = (size_t)p->num_tokens * (size_t)l->num_heads * (size_t)p->head_dim *
                       attn_dtype_size(p->out_dtype);
    size_t q_bytes = (size_t)p->num_tokens * (size_t)l->num_heads * (size_t)p->head_dim *
                     attn_dtype_size(p->q_dtype);
    size_t c_bytes = (size_t)p->num_blocks * (size_t)p->num_kv_heads * (size_t)p->block_size *
                     (size_t)p->head_dim * attn_dtype_size(p->kv_dtype);
    const unsigned char *o = t->out;
    const void *in[3] = {t->q, t->k_cache, t->v_cache};
    const size_t in_bytes[3] = {q_bytes, c_bytes, c_bytes};
    static const char *const in_name[3] = {"q", "k_cache", "v_cache"};
    for (int i = 0; i < 3; i++) {
        const unsigned char *x = in[i];
        if (o < x + in_bytes[i] && x < o + out_bytes)
            return attn__fail(err, ATTN_E_TENSOR_MISMATCH, "tensors.out overlaps tensors.%s",
                              in_name[i]);
    }
    return ATTN_OK;
}

attn_status attn_run(const attn_plan *p, const attn_layer_desc *layer, const attn_tensors *t,
                     void *scratch, size_t scratch_bytes, attn_error *err) {
    attn_status st;
    if (!p || !layer || !t || !scratch)
        return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL",
                          !p ? "plan" : !layer ? "layer" : !t ? "tensors" : "scratch");
    if (p->magic != ATTN_PLAN_MAGIC)
        return attn__fail(err, ATTN_E_INTERNAL, "plan handle is not a live plan");
    if ((st = attn__check_layer(layer, 0, p->kv_dtype, err))) return st;
#ifndef ATTN_INJECT_model_wide_heads
    if (layer->num_heads != p->num_heads)
        return attn__fail(err, ATTN_E_LAYER_MISMATCH,
                          "layer %s has num_heads = %d but the plan was built for %d",
                          layer->name ? layer->name : "(unnamed)", (int)layer->num_heads,
                          (int)p->num_heads);
#else
    /* INJECTED BUG (model_wide_heads): the historical engine had no check
     * that a layer matches the plan it runs with. */
#endif
    /* The plan's key ranges are bounded by its group's window: only a layer
     * with that window (or any layer, when the group has none) fits them. */
    const attn__window lw = {layer->window, layer->window_pair, layer->window_left,
                             layer->window_right};
    const attn__window none = {-1, 0, 0, 0};
#ifndef ATTN_INJECT_group_window /* the historical engine had no such check */
    if (!attn__same_window(&p->win, &none) && !attn__same_window(&p->win, &lw))
        return attn__fail(err, ATTN_E_LAYER_MISMATCH,
                          "layer %s has window %d (pair %d: %d, %d) but the plan's key ranges "
                          "are bounded by its group's window %d (pair %d: %d, %d)",
                          layer->name ? layer->name : "(unnamed)", (int)lw.window, (int)lw.pair,
                          (int)lw.left, (int)lw.right, (int)p->win.window, (int)p->win.pair,
                          (int)p->win.left, (int)p->win.right);
#else
    (void)lw;
    (void)none;
#endif
    if (layer->num_heads % p->num_kv_heads != 0)
        return attn__fail(err, ATTN_E_LAYER_MISMATCH,
                          "layer num_heads = %d is not a multiple of num_kv_heads = %d",
                          (int)layer->num_heads, (int)p->num_kv_heads);
    if ((st = check_tensors(p, layer, t, err))) return st;
    if (scratch_bytes < p->scratch_bytes)
        return attn__fail(err, ATTN_E_SCRATCH_TOO_SMALL,
                          "scratch_bytes = %zu < %zu the plan needs", scratch_bytes,
                          p->scratch_bytes);
    if ((uintptr_t)scratch % ATTN_ALIGN != 0)
        return attn__fail(err, ATTN_E_SCRATCH_ALIGN, "scratch = %p is not %d-byte aligned",
                          scratch, ATTN_ALIGN);
    if (!attn__plan_verify(p))
        return attn__fail(err, ATTN_E_INTERNAL, "plan failed its structural verification");

    run_ctx c = {
        .p = p,
        .layer = layer,
        .t = t,
        .scratch = scratch,
        .g = layer->num_heads / p->num_kv_heads,
        .hq = layer->num_heads,
        .q_mul = 0.0f,
        .q_top = q_top_for(p->kv_dtype, p->head_dim),
        .tile = p->kern->tile[p->kv_dtype],
        .tile_heads = p->kern->tile_heads[p->kv_dtype],
        .load_q = p->kern->load_q[p->q_dtype],
        .store = p->kern->store[p->out_dtype],
        .q_es = attn_dtype_size(p->q_dtype),
        .o_es = attn_dtype_size(p->out_dtype),
        .failed = 0,
    };
    /* An fp8 cache's K scale goes into q (q . (k_scale K) = (k_scale q) .
     * K, the product taken once, exactly, in double), its V scale into the
     * store's factor (out is linear in V): the tiles see the codes' own
     * values.  For every other cache both are 1 and the scale is the
     * layer's, bit for bit. */
    const int fp8 = p->kv_dtype == ATTN_DTYPE_FP8_E4M3 || p->kv_dtype == ATTN_DTYPE_FP8_E5M2;
    const float k_scale = fp8 && layer->k_scale > 0.0f ? layer->k_scale : 1.0f;
    c.v_scale = fp8 && layer->v_scale > 0.0f ? layer->v_scale : 1.0f;
    const double scale =
        (double)(layer->scale > 0.0f ? layer->scale : 1.0f / sqrtf((float)p->head_dim)) *
        (double)k_scale;
    c.wide_kv = p->kv_dtype == ATTN_DTYPE_F32 || p->kv_dtype == ATTN_DTYPE_BF16;
    /* the plan was allocated writable (plan.c); only its counters change */
    c.wide_counts = ((attn_plan *)(uintptr_t)p)->wide_counts;
    /* |bias| >= the smallest nonzero |slope| (distances are integers), so
     * it stays normal in 2^m_exp units while m_exp <= 126 + its exponent */
    c.alibi_m_exp = INT32_MAX;
    if (layer->alibi_slopes) {
        int32_t lo = INT32_MAX;
        for (int32_t h = 0; h < c.hq; h++) {
            const float s = fabsf(layer->alibi_slopes[h]);
            if (s > 0.0f && ilogbf(s) < lo) lo = ilogbf(s);
        }
        if (lo != INT32_MAX) c.alibi_m_exp = 126 + lo;
    }
    if (c.wide_kv)
        split_scale_wide_kv(scale, &c.q_mul, &c.q_exp);
    else
        split_scale(scale, &c.q_mul, &c.q_exp);
    for (int32_t causal = 0; causal < 2; causal++)
        attn__window_pair(layer->window, layer->window_pair, layer->window_left,
                          layer->window_right, causal, &c.win_left[causal], &c.win_right[causal]);
    c.wide = (attn__wide){
        .p = p,
        .layer = layer,
        .t = t,
        .hq = c.hq,
        .g = c.g,
        .scale = scale,
        .v_scale = c.v_scale,
    };
    memcpy(c.wide.win_left, c.win_left, sizeof c.win_left);
    memcpy(c.wide.win_right, c.win_right, sizeof c.win_right);
    /* Flags are cleared every run: a piece proves it ran by setting its own. */
    for (size_t i = 0; i < p->num_reds; i++) {
        const attn_region *r = &p->regions[p->reds[i].region_flags];
        memset(c.scratch + r->offset, 0, r->size);
    }

    /* The plan's lists are where each thread starts, not all it does: a
     * thread runs its own lists, then goes on with the unclaimed entries
     * of the others' (claim), so a core that runs slower (a busy neighbour
     * on a shared host, or a cost estimate off) does not hold the others
     * back.  Every thread works in its own regions, which are sized alike
     * for every item (layout.c), and an item's result does not depend on
     * the thread that ran it.  If OpenMP grants fewer threads than the
     * plan has, the lists are shared out the same way, and the merges
     * below are iterated over the plan's threads. */
    size_t cursor[ATTN_MAX_THREADS];
    for (int32_t pt = 0; pt < p->num_threads; pt++) cursor[pt] = p->item_start[pt];
#pragma omp parallel num_threads(p->num_threads)
    {
        int nth = 1, tid = 0;
#ifdef _OPENMP
        nth = omp_get_num_threads();
        tid = omp_get_thread_num();
#endif
        for (int32_t k = 0; k < p->num_threads; k++) { /* its own list, then the next ones */
            const int32_t pt = (tid + k) % p->num_threads;
            const size_t end = p->item_start[pt + 1];
            size_t i, n;
            while ((i = claim(&c, &cursor[pt], pt, &n)) != SIZE_MAX) {
                SYNC_POINT(p, ATTN_SYNC_CLAIMED);
                if (n > 1)
                    run_heads(&c, tid, i, n, end);
                else
                    run_item(&c, tid, &p->items[p->thread_items[i]],
                             i + 1 < end ? &p->items[p->thread_items[i + 1]] : NULL);
                SYNC_POINT(p, ATTN_SYNC_RAN);
            }
        }
        SYNC_POINT(p, ATTN_SYNC_BARRIER);
#ifndef ATTN_INJECT_no_merge_barrier
        /* every piece published before any reduction reads it */
#pragma omp barrier
#else
        /* INJECTED BUG (no_merge_barrier): the barrier before the merge
         * removed; a thread merges a split row while another may still be
         * writing its pieces (the completion-flag check is off too). */
#endif
        for (int32_t pt = tid; pt < p->num_threads; pt += nth)
            for (size_t i = p->red_start[pt]; i < p->red_start[pt + 1]; i++) {
                SYNC_POINT(p, ATTN_SYNC_MERGE);
                run_reduction(&c, pt, &p->reds[p->thread_reds[i]]);
            }
    }
    if (c.failed)
        return attn__fail(err, ATTN_E_INTERNAL,
                          "a split piece's completion flag was missing at the merge "
                          "(scratchpad overwritten)");
    attn__ok(err);
    return ATTN_OK;
}

/* ---- the fp64 path's counters (attn_plan_inspect.h) ---- */

static const char *const k_wide_names[ATTN_WIDE_COUNT] = {
#define ATTN_WIDE_NAME(id, name) [id] = name,
    ATTN_WIDE_LIST(ATTN_WIDE_NAME)
#undef ATTN_WIDE_NAME
};

const char *attn_wide_count_name(int32_t i) {
    return i >= 0 && i < ATTN_WIDE_COUNT ? k_wide_names[i] : NULL;
}

attn_status attn_plan_wide_counts(const attn_plan *p, uint64_t *counts, size_t cap,
                                  attn_error *err) {
    if (!p || !counts) return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL", p ? "counts" : "plan");
    if (p->magic != ATTN_PLAN_MAGIC)
        return attn__fail(err, ATTN_E_INTERNAL, "plan handle is not a live plan");
    for (size_t i = 0; i < cap && i < ATTN_WIDE_COUNT; i++)
        counts[i] = __atomic_load_n(&p->wide_counts[i], __ATOMIC_RELAXED);
    attn__ok(err);
    return ATTN_OK;
}
