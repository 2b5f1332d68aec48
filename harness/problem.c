/*
 * problem.c — turns a case into the engine's descriptions and input buffers,
 * deterministically from the case's seed (splitmix64).
 *
 * Owns: the value generator, the block-table policies (contiguous, shuffled,
 * repeated), the harness-side float -> bf16/f16 rounding of generated inputs,
 * and the decision whether a case is materialized at all.  Does not own what
 * the engine accepts: a case the engine must refuse still gets its raw
 * descriptions (so the refusal can be checked) but no buffers, and nothing
 * here allocates more than max_bytes of inputs or trusts an unchecked product.
 *
 * Streams: every purpose (block shuffle, K, V, each layer's query, each
 * layer's sinks) draws from its own splitmix64 stream derived from the seed,
 * so changing one layer does not move the values of another.
 *
 * A problem holds pointers into itself (group.layers, group.isa): never copy
 * the struct after problem_init; pass it by pointer.
 */
#include "problem.h"
#include "compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPARE_BLOCKS 3   /* physical blocks no request uses (shuffling targets) */

_Static_assert(CASE_MAX_LAYERS <= 8, "extend layer_names");
static const char *const layer_names[8] = {
    "layers.0", "layers.1", "layers.2", "layers.3",
    "layers.4", "layers.5", "layers.6", "layers.7",
};

enum { STREAM_BLOCKS = 1, STREAM_K, STREAM_V, STREAM_Q0 = 16, STREAM_SINKS0 = 32 };

/* ------------------------------------------------------------------- rng */

uint64_t problem_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double problem_rng_unit(uint64_t *state) {
    /* 53 random bits -> [0, 1) exactly, then -> [-1, 1). */
    double u = (double)(problem_rng_next(state) >> 11) * 0x1.0p-53;
    return 2.0 * u - 1.0;
}

static uint64_t stream_state(uint64_t seed, uint64_t purpose) {
    uint64_t s = seed ^ (purpose * 0xD1B54A32D192ED03ull);
    (void)problem_rng_next(&s);
    return s;
}

/* Uniform integer in [0, n), n >= 1 (modulo bias is irrelevant here). */
static uint64_t rng_below(uint64_t *state, uint64_t n) {
    return problem_rng_next(state) % n;
}

/* --------------------------------------------------- element conversions */

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);   /* round to nearest, ties to even */
    return (uint16_t)(x >> 16);
}

/* Round-to-nearest-even float -> IEEE half, with subnormals; exact power-of-two
 * scalings in double keep the one rounding in nearbyint. */
static uint16_t f32_to_f16(float f) {
    double v = (double)f;
    uint16_t sign = signbit(v) ? 0x8000u : 0;
    v = fabs(v);
    if (isnan(v)) return (uint16_t)(sign | 0x7e00u);
    if (v >= 65520.0) return (uint16_t)(sign | 0x7c00u);   /* rounds to inf */
    if (v < 0x1.0p-14) {
        /* subnormal (or the smallest normal, 1024 -> 0x0400, when it rounds up) */
        return (uint16_t)(sign | (uint16_t)nearbyint(v * 0x1.0p24));
    }
    int ex;
    double fr = frexp(v, &ex);                 /* v = fr * 2^ex, fr in [0.5, 1) */
    int e = ex - 1;                            /* v = (2 fr) * 2^e, 2 fr in [1, 2) */
    double m = nearbyint((2.0 * fr - 1.0) * 1024.0);
    if (m >= 1024.0) { m = 0; e++; }
    if (e + 15 >= 31) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)m);
}

static void store_elem(void *base, size_t i, attn_dtype dt, float v) {
    switch (dt) {
    case ATTN_DTYPE_F32: ((float *)base)[i] = v; break;
    case ATTN_DTYPE_BF16: ((uint16_t *)base)[i] = f32_to_bf16(v); break;
    case ATTN_DTYPE_F16: ((uint16_t *)base)[i] = f32_to_f16(v); break;
    default: break;
    }
}

static size_t elem_size(attn_dtype dt) {
    switch (dt) {
    case ATTN_DTYPE_F32: return 4;
    case ATTN_DTYPE_BF16: return 2;
    case ATTN_DTYPE_F16: return 2;
    default: return 0;
    }
}

/* -------------------------------------------------------------- validity */

static int layer_valid(const case_layer *L, int32_t hkv) {
    if (L->num_heads <= 0 || L->num_heads > ATTN_MAX_HEADS) return 0;
    if (hkv <= 0 || L->num_heads % hkv != 0) return 0;
    if (L->window < -1 || L->window == 0) return 0;
    if (!isfinite(L->softcap) || L->softcap < 0) return 0;
    if (!isfinite(L->scale) || L->scale < 0) return 0;
    return 1;
}

/* The reason the engine must refuse (or cannot be given) this case, or NULL.
 * Mixed head counts are NOT a reason: each layer is valid on its own, so
 * the buffers are built and a test can run a layer against its own plan. */
static const char *case_invalid_reason(const attn_case *c) {
    if (c->num_layers < 0 || c->num_layers > CASE_MAX_LAYERS) return "layer count";
    if (c->num_kv_heads <= 0 || c->num_kv_heads > ATTN_MAX_HEADS) return "kv_heads";
    if (c->num_layers == 0 && (c->model_num_heads <= 0 || c->model_num_heads > ATTN_MAX_HEADS ||
                               c->model_num_heads % c->num_kv_heads != 0))
        return "model_num_heads";
    for (int32_t l = 0; l < c->num_layers; l++)
        if (!layer_valid(&c->layers[l], c->num_kv_heads)) return "layer";
    if (c->head_dim <= 0 || c->head_dim > ATTN_MAX_HEAD_DIM) return "head_dim";
    if (c->block_size <= 0 || c->block_size > ATTN_MAX_BLOCK_SIZE) return "block_size";
    if (!elem_size(c->q_dtype) || !elem_size(c->kv_dtype) || !elem_size(c->out_dtype))
        return "dtype";
    if (c->causal != 0 && c->causal != 1) return "causal";
    if (c->threads < 1 || c->threads > ATTN_MAX_THREADS) return "threads";
    if (c->num_reqs < 1 || c->num_reqs > CASE_MAX_REQS) return "num_reqs";
    int64_t tokens = 0;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (c->q_len[r] < 1) return "q_len";
        if (c->kv_len[r] < c->q_len[r] || c->kv_len[r] > ATTN_MAX_SEQ_LEN) return "kv_len";
        tokens += c->q_len[r];
    }
    if (tokens > INT32_MAX) return "num_tokens";
    switch (c->split) {
    case ATTN_SPLIT_AUTO: case ATTN_SPLIT_OFF: case ATTN_SPLIT_ON: break;
    case ATTN_SPLIT_FIXED:
        if (c->split_count < 1 || c->split_count > ATTN_MAX_SPLITS) return "split";
        break;
    default: return "split";
    }
    if ((unsigned)c->blocks >= CASE_BLOCKS_COUNT) return "blocks";
    return NULL;
}

/* ------------------------------------------------------------ init/free */

static int fail(problem *p, char *errbuf, size_t errlen, const char *msg) {
    if (errbuf && errlen) snprintf(errbuf, errlen, "problem: %s", msg);
    problem_free(p);
    return -1;
}

/* Checked a*b (+)= into *acc; returns 1 on overflow. */
static int mul_add(size_t *acc, size_t a, size_t b) {
    size_t t;
    if (__builtin_mul_overflow(a, b, &t)) return 1;
    return __builtin_add_overflow(*acc, t, acc);
}

static int fill_values(void *buf, size_t n, attn_dtype dt, uint64_t state) {
    for (size_t i = 0; i < n; i++) store_elem(buf, i, dt, (float)problem_rng_unit(&state));
    return 0;
}

/* Block table per policy.  nb[r] = blocks request r needs; the first
 * `needed` logical blocks are handed out in request order, mapped through a
 * seed permutation unless contiguous; padding entries get a spare block. */
static int fill_block_table(problem *p, const int64_t *nb) {
    const attn_case *c = &p->c;
    int32_t nblk = p->num_blocks, stride = p->bt_stride;
    int32_t *perm = malloc((size_t)nblk * sizeof(*perm));
    if (!perm) return -1;
    uint64_t st = stream_state(c->seed, STREAM_BLOCKS);
    for (int32_t i = 0; i < nblk; i++) perm[i] = i;
    if (c->blocks != CASE_BLOCKS_CONTIGUOUS) {
        for (int32_t i = nblk - 1; i > 0; i--) {
            int32_t j = (int32_t)rng_below(&st, (uint64_t)i + 1);
            int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
    }
#define PHYS(L) perm[(L)]
    int32_t pad = PHYS(nblk - 1);   /* a spare block: valid id, used by nobody */
    int64_t logical = 0;
    for (int32_t r = 0; r < c->num_reqs; r++) {
        for (int32_t j = 0; j < stride; j++) {
            int32_t *e = &p->block_table[(size_t)r * (size_t)stride + (size_t)j];
            *e = j < nb[r] ? PHYS(logical + j) : pad;
        }
        logical += nb[r];
    }
    if (c->blocks == CASE_BLOCKS_REPEATED) {
        /* Prefix-cache style: request 1 always, later ones with chance 1/2,
         * read their first blocks from an earlier request's physical blocks. */
        for (int32_t r = 1; r < c->num_reqs; r++) {
            if (r > 1 && (problem_rng_next(&st) & 1u)) continue;
            int32_t src = (int32_t)rng_below(&st, (uint64_t)r);
            int64_t n = nb[r] < nb[src] ? nb[r] : nb[src];
            if (n < 1) continue;
            int64_t share = 1 + (int64_t)rng_below(&st, (uint64_t)n);
            for (int64_t j = 0; j < share; j++)
                p->block_table[(size_t)r * (size_t)stride + (size_t)j] =
                    p->block_table[(size_t)src * (size_t)stride + (size_t)j];
        }
    }
#undef PHYS
    free(perm);
    return 0;
}

static int init(problem *p, const attn_case *c, size_t max_bytes, int tensors, char *errbuf,
                size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!p) return -1;
    memset(p, 0, sizeof(*p));
    if (!c) return fail(p, errbuf, errlen, "NULL case");
    p->c = *c;
    c = &p->c;

    int32_t nl = c->num_layers < 0 ? 0 : (c->num_layers > CASE_MAX_LAYERS ? CASE_MAX_LAYERS
                                                                           : c->num_layers);
    int32_t nr = c->num_reqs < 0 ? 0 : (c->num_reqs > CASE_MAX_REQS ? CASE_MAX_REQS
                                                                     : c->num_reqs);
    const char *why = case_invalid_reason(c);
    p->unmaterialized_reason = why;

    /* ---- layers (raw values) ---- */
    for (int32_t l = 0; l < nl; l++) {
        const case_layer *L = &c->layers[l];
        attn_layer_desc *d = &p->layers[l];
        d->name = layer_names[l];
        d->num_heads = L->num_heads;
        d->window = L->window;
        d->softcap = L->softcap;
        d->scale = L->scale;
        int heads_ok = L->num_heads > 0 && L->num_heads <= ATTN_MAX_HEADS;
        if (L->alibi && heads_ok) {
            p->alibi[l] = malloc((size_t)L->num_heads * sizeof(float));
            if (!p->alibi[l]) return fail(p, errbuf, errlen, "out of memory (alibi)");
            for (int32_t h = 0; h < L->num_heads; h++)
                p->alibi[l][h] = (float)exp2(-8.0 * (double)(h + 1) / (double)L->num_heads);
            d->alibi_slopes = p->alibi[l];
        }
        if (L->sinks && heads_ok) {
            p->sinks[l] = malloc((size_t)L->num_heads * sizeof(float));
            if (!p->sinks[l]) return fail(p, errbuf, errlen, "out of memory (sinks)");
            uint64_t st = stream_state(c->seed, (uint64_t)STREAM_SINKS0 + (uint64_t)l);
            for (int32_t h = 0; h < L->num_heads; h++)
                p->sinks[l][h] = (float)(2.0 * problem_rng_unit(&st));
            d->sinks = p->sinks[l];
        }
    }

    /* ---- group ---- */
    p->group.layers = nl ? p->layers : NULL;
    p->group.num_layers = nl;
    p->group.kv.num_kv_heads = c->num_kv_heads;
    p->group.kv.head_dim = c->head_dim;
    p->group.kv.block_size = c->block_size;
    p->group.kv.dtype = c->kv_dtype;
    p->group.q_dtype = c->q_dtype;
    p->group.out_dtype = c->out_dtype;
    p->group.model_num_heads = c->model_num_heads;
    p->group.num_threads = c->threads;
    p->group.isa = c->isa[0] ? c->isa : NULL;
    p->group.allocator = NULL;

    /* ---- batch: prefix sums and seq_lens from the raw values ---- */
    p->qsl = calloc((size_t)nr + 1, sizeof(int32_t));
    p->seq_lens = calloc((size_t)(nr ? nr : 1), sizeof(int32_t));
    if (!p->qsl || !p->seq_lens) return fail(p, errbuf, errlen, "out of memory (batch)");
    int64_t acc = 0;
    for (int32_t r = 0; r < nr; r++) {
        acc += c->q_len[r];
        /* saturate: a sum outside int32 is an invalid batch either way */
        p->qsl[r + 1] = acc > INT32_MAX ? INT32_MAX : (acc < INT32_MIN ? INT32_MIN : (int32_t)acc);
        p->seq_lens[r] = c->kv_len[r];
    }
    p->num_tokens = p->qsl[nr];

    /* ---- block geometry (64-bit, then checked into int32) ---- */
    int64_t nb[CASE_MAX_REQS] = {0};
    int64_t max_nb = 0, needed = 0;
    for (int32_t r = 0; r < nr; r++) {
        if (c->block_size > 0 && c->kv_len[r] > 0)
            nb[r] = ((int64_t)c->kv_len[r] + c->block_size - 1) / c->block_size;
        if (nb[r] > max_nb) max_nb = nb[r];
        needed += nb[r];
    }
    int64_t stride = max_nb + 1;
    int64_t nblocks = needed + SPARE_BLOCKS;
    size_t bt_bytes = 0;
    int geometry_ok = stride <= INT32_MAX && nblocks <= INT32_MAX &&
                      !mul_add(&bt_bytes, (size_t)nr * (size_t)stride, sizeof(int32_t)) &&
                      bt_bytes <= max_bytes;
    if (!geometry_ok) {
        /* Descriptions only: a one-entry-per-request table with a valid id. */
        stride = 1;
        if (nblocks > INT32_MAX) nblocks = INT32_MAX;
        if (!why) why = p->unmaterialized_reason = "block table exceeds max_bytes";
    }
    p->bt_stride = (int32_t)stride;
    p->num_blocks = (int32_t)nblocks;
    p->block_table = calloc((size_t)(nr ? nr : 1) * (size_t)stride, sizeof(int32_t));
    if (!p->block_table) return fail(p, errbuf, errlen, "out of memory (block table)");

    p->batch.num_reqs = c->num_reqs;
    p->batch.query_start_loc = p->qsl;
    p->batch.seq_lens = p->seq_lens;
    p->batch.block_table = p->block_table;
    p->batch.block_table_stride = p->bt_stride;
    p->batch.num_blocks = p->num_blocks;
    p->batch.causal = c->causal;
    for (int32_t r = 0; r < nr; r++) p->req_causal[r] = (uint8_t)(c->causal != 0);

    if (why) return 0;   /* the engine must refuse it: no buffers */
    if (!tensors) {
        /* Planning needs the real block table but none of the values. */
        if (fill_block_table(p, nb)) return fail(p, errbuf, errlen, "out of memory (blocks)");
        p->unmaterialized_reason = "descriptions only (no tensors requested)";
        return 0;
    }

    /* ---- sizes, all checked, against max_bytes ---- */
    size_t total = bt_bytes, cache_elems = 0, q_elems[CASE_MAX_LAYERS] = {0};
    size_t kvsz = elem_size(c->kv_dtype), qsz = elem_size(c->q_dtype);
    int over = __builtin_mul_overflow((size_t)p->num_blocks, (size_t)c->num_kv_heads, &cache_elems) ||
               __builtin_mul_overflow(cache_elems, (size_t)c->block_size, &cache_elems) ||
               __builtin_mul_overflow(cache_elems, (size_t)c->head_dim, &cache_elems) ||
               mul_add(&total, cache_elems, 2 * kvsz);
    for (int32_t l = 0; l < nl && !over; l++) {
        over = __builtin_mul_overflow((size_t)p->num_tokens, (size_t)c->layers[l].num_heads,
                                      &q_elems[l]) ||
               __builtin_mul_overflow(q_elems[l], (size_t)c->head_dim, &q_elems[l]) ||
               mul_add(&total, q_elems[l], qsz);
    }
    if (over || total > max_bytes) {
        p->unmaterialized_reason = "inputs exceed max_bytes";
        return 0;
    }

    /* ---- buffers ---- */
    if (fill_block_table(p, nb)) return fail(p, errbuf, errlen, "out of memory (blocks)");
    p->cache_elems = cache_elems;
    p->k_cache = malloc(cache_elems * kvsz);
    p->v_cache = malloc(cache_elems * kvsz);
    if (!p->k_cache || !p->v_cache) return fail(p, errbuf, errlen, "out of memory (cache)");
    fill_values(p->k_cache, cache_elems, c->kv_dtype, stream_state(c->seed, STREAM_K));
    fill_values(p->v_cache, cache_elems, c->kv_dtype, stream_state(c->seed, STREAM_V));
    /* the reference reads slot-major rows:
     * [block][head][slot][d] -> [block * bs + slot][head][d] */
    p->k_rows = malloc(cache_elems * kvsz);
    p->v_rows = malloc(cache_elems * kvsz);
    if (!p->k_rows || !p->v_rows) return fail(p, errbuf, errlen, "out of memory (rows)");
    for (size_t e = 0; e < cache_elems; e++) {
        const size_t D = (size_t)c->head_dim, bs = (size_t)c->block_size;
        const size_t H = (size_t)c->num_kv_heads, d = e % D, slot = (e / D) % bs;
        const size_t h = (e / D / bs) % H, blk = e / D / bs / H;
        const size_t to = ((blk * bs + slot) * H + h) * D + d;
        memcpy((char *)p->k_rows + to * kvsz, (char *)p->k_cache + e * kvsz, kvsz);
        memcpy((char *)p->v_rows + to * kvsz, (char *)p->v_cache + e * kvsz, kvsz);
    }
    for (int32_t l = 0; l < nl; l++) {
        p->q[l] = malloc(q_elems[l] * qsz);
        if (!p->q[l]) return fail(p, errbuf, errlen, "out of memory (query)");
        fill_values(p->q[l], q_elems[l], c->q_dtype,
                    stream_state(c->seed, (uint64_t)STREAM_Q0 + (uint64_t)l));
    }
    p->materialized = 1;
    p->unmaterialized_reason = NULL;
    return 0;
}

void problem_free(problem *p) {
    if (!p) return;
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        free(p->alibi[l]);
        free(p->sinks[l]);
        free(p->q[l]);
    }
    free(p->qsl);
    free(p->seq_lens);
    free(p->block_table);
    free(p->k_cache);
    free(p->v_cache);
    free(p->k_rows);
    free(p->v_rows);
    memset(p, 0, sizeof(*p));
}

attn_tensors problem_tensors(const problem *p, int32_t l, void *out) {
    attn_tensors t;
    memset(&t, 0, sizeof(t));
    if (!p) return t;
    const attn_case *c = &p->c;
    t.out = out;
    t.k_cache = p->k_cache;
    t.v_cache = p->v_cache;
    t.num_tokens = p->num_tokens;
    t.head_dim = c->head_dim;
    t.num_blocks = p->num_blocks;
    t.num_kv_heads = c->num_kv_heads;
    t.block_size = c->block_size;
    t.q_dtype = c->q_dtype;
    t.kv_dtype = c->kv_dtype;
    t.out_dtype = c->out_dtype;
    if (l >= 0 && l < c->num_layers && l < CASE_MAX_LAYERS) {
        t.q = p->q[l];
        t.num_heads = c->layers[l].num_heads;
    }
    return t;
}

size_t problem_out_elems(const problem *p, int32_t l) {
    if (!p || l < 0 || l >= p->c.num_layers || l >= CASE_MAX_LAYERS) return 0;
    int32_t h = p->c.layers[l].num_heads, d = p->c.head_dim, t = p->num_tokens;
    if (h <= 0 || d <= 0 || t <= 0) return 0;
    size_t n;
    if (__builtin_mul_overflow((size_t)t, (size_t)h, &n) ||
        __builtin_mul_overflow(n, (size_t)d, &n))
        return 0;
    return n;
}

int problem_init(problem *p, const attn_case *c, size_t max_bytes, char *errbuf, size_t errlen) {
    return init(p, c, max_bytes, 1, errbuf, errlen);
}

int problem_init_descriptions(problem *p, const attn_case *c, size_t max_bytes, char *errbuf,
                              size_t errlen) {
    return init(p, c, max_bytes, 0, errbuf, errlen);
}

void problem_ref_input(const problem *p, int32_t l, ref_input *in) {
    const attn_case *c = &p->c;
    const case_layer *L = &c->layers[l];
    memset(in, 0, sizeof *in);
    in->num_reqs = c->num_reqs;
    in->query_start_loc = p->qsl;
    in->seq_lens = p->seq_lens;
    in->causal = p->req_causal;
    in->block_table = p->block_table;
    in->block_table_stride = p->bt_stride;
    in->num_blocks = p->num_blocks;
    in->num_heads = L->num_heads;
    in->num_kv_heads = c->num_kv_heads;
    in->head_dim = c->head_dim;
    in->block_size = c->block_size;
    /* a case's window W counts the current token: W - 1 keys each side */
    in->window_left = in->window_right = L->window > 0 ? L->window - 1 : -1;
    in->softcap = L->softcap;
    in->scale = L->scale;
    in->alibi_slopes = p->layers[l].alibi_slopes;
    in->sinks = p->layers[l].sinks;
    in->q = p->q[l];
    in->q_dtype = (ag_dtype)c->q_dtype;
    in->k_rows = p->k_rows;
    in->v_rows = p->v_rows;
    in->kv_dtype = (ag_dtype)c->kv_dtype;
    in->k_scale = in->v_scale = 1.0;
}

int problem_reference(const problem *p, int32_t l, double *out, double *lo, double *hi) {
    if (!p->materialized || l < 0 || l >= p->c.num_layers) return -1;
    ref_input in;
    problem_ref_input(p, l, &in);
    if (!lo && !hi) return ref_attention(&in, out);
    const ag_precision f32 = {AG_F32, AG_F32, AG_F32};
    return ref_attention_range(&in, cmp_error_model(f32, in.q_dtype, in.kv_dtype, in.head_dim),
                               out, lo, hi);
}

int problem_reference_bf16dot(const problem *p, int32_t l, double *out, double *lo, double *hi) {
    if (!p->materialized || l < 0 || l >= p->c.num_layers || !lo || !hi) return -1;
    ref_input in;
    problem_ref_input(p, l, &in);
    const ag_precision bf16 = {AG_BF16, AG_BF16, AG_F32};
    return ref_attention_range(&in, cmp_error_model(bf16, in.q_dtype, in.kv_dtype, in.head_dim),
                               out, lo, hi);
}
