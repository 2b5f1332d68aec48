/*
 * mutate.c — the edits of case_mutate and case_cross (see mutate.h).
 *
 * Every edit draws from short tables of the values that matter: counts at
 * the edges of SIMD tiles, cache blocks and windows (15, 16, 17, 63, 64,
 * 65, ...), the query-head counts of the models the bug class came from
 * (Laguna's 48 on full layers, 64 or 72 on sliding ones, over 8 KV heads),
 * decode, prefill and chunked-prefill rows, and the engine's own limits
 * and option words.  After the edits the case's cost is brought under the
 * budget by shortening its requests, so that most inputs run in well
 * under a millisecond of kernels and a few in sixteen.
 */
#include "mutate.h"

#include "case_bytes.h"
#include "rng.h"

#include <math.h>
#include <string.h>

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define PICK(rng, a) ((a)[rng_below((rng), (uint64_t)COUNT(a))])
#define CHANCE(rng, n) (rng_below((rng), (n)) == 0) /* one in n */

static int32_t hkv_of(const case_spec *c) {
    return c->num_kv_heads >= 1 && c->num_kv_heads <= 64 ? c->num_kv_heads : 2;
}

/* ---------------------------------------------------------- value tables */

static const int32_t k_groups[] = {1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8, 9, 12, 16};
static const int32_t k_kvh[] = {1, 1, 2, 2, 2, 3, 4, 4, 8, 8, 16};
static const int32_t k_dims[] = {1,  2,  3,  4,  5,  7,  8,  8,  15, 16,  16,  17,  24,  31,
                                 32, 32, 33, 48, 63, 64, 64, 65, 80, 96, 112, 128, 192, 256};
static const int32_t k_bs[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 16, 16, 17, 32, 64, 128};
static const int32_t k_keys[] = {1,  2,  3,   4,   5,   7,   8,   9,   15,  16,  17,  31,  32,
                                 33, 47, 48,  63,  64,  65,  96,  127, 128, 129, 191, 255, 256,
                                 257, 300, 511, 512, 513, 700, 1023, 1024, 1025};
static const int32_t k_windows[] = {1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64, 65, 128, 512};
static const int32_t k_sides[] = {-1, -1, 0, 0, 1, 2, 3, 7, 8, 15, 16, 31, 63, 127};
static const float k_softcaps[] = {1.0f, 2.0f, 5.0f, 10.0f, 20.0f, 30.0f, 50.0f, 0.5f};
static const float k_scales[] = {0.1f, 0.3f, 0.5f, 1.0f, 2.0f, 0.0625f, 1e4f, 1e10f, 1e30f, 1e-6f};
static const float k_amps[] = {1.0f, 1.0f, 1.0f, 0.5f, 4.0f, 1e-3f, 1e3f, 0x1p-20f, 0x1p20f,
                               1e30f, 1e-30f};
static const float k_kvscales[] = {1.0f, 0.5f, 2.0f, 0.0625f, 16.0f, 0.37f, 1e-3f, 300.0f};

/* The value just past an engine's declared limit (the limit itself when it
 * is int32's largest). */
static int32_t one_past(int32_t lim) { return lim < INT32_MAX ? lim + 1 : lim; }

/* An invalid value, or one time in four an end of int32 instead: where a
 * raw value meets the harness's or the engine's arithmetic, its extremes
 * are the inputs that overflow (issue 61: a window of INT32_MIN). */
static int32_t or_end(uint64_t *rng, int32_t v) {
    if (!CHANCE(rng, 4)) return v;
    return CHANCE(rng, 2) ? INT32_MIN : INT32_MAX;
}

/* ------------------------------------------------------ explicit lists */

/* The explicit slope / sink lists laid out again from each layer's
 * current head count: a list keeps its values where it can and repeats
 * its last value (or draws) where a layer grew.  A list that no longer
 * fits becomes the standard set. */
static void relist(case_spec *c, uint64_t *rng) {
    float old[CASE_MAX_LIST];
    memcpy(old, c->list, sizeof old);
    const int32_t old_len = c->list_len;
    int32_t n = 0;
    for (int32_t l = 0; l < c->num_layers && l < CASE_MAX_LAYERS; l++) {
        case_layer *L = &c->layers[l];
        for (int which = 0; which < 2; which++) {
            uint8_t *src = which ? &L->sinks : &L->alibi;
            uint16_t *off = which ? &L->sinks_off : &L->alibi_off;
            if (*src != CASE_SRC_LIST) continue;
            const int32_t H = L->num_heads;
            if (H < 1 || H > CASE_MAX_HEADS || n + H > CASE_MAX_LIST) {
                *src = CASE_SRC_STANDARD;
                continue;
            }
            for (int32_t h = 0; h < H; h++) {
                const int32_t at = (int32_t)*off + h;
                c->list[n + h] = at < old_len ? old[at]
                                 : which   ? (float)(rng_unit(rng) * 8.0)
                                           : (float)exp2(-(double)(h + 1) * 8.0 / (double)H);
            }
            *off = (uint16_t)n;
            n += H;
        }
    }
    memset(c->list + n, 0, (size_t)(CASE_MAX_LIST - n) * sizeof(float));
    c->list_len = n;
}

/* ---------------------------------------------------------- the edits */

/* Layer l's head count: its KV heads times a group size; now and then the
 * Laguna pair (48 on one layer, 64 or 72 on the others over 8 KV heads)
 * or a count that does not divide (invalid).  For an engine that refuses
 * mixed groups most edits keep the group agreeing (a mixed group is one
 * refusal path, not the shape of every case); for one that runs them
 * most edits change one layer. */
static void edit_heads(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    const int32_t l = c->num_layers > 0 ? (int32_t)rng_below(rng, (uint64_t)c->num_layers) : 0;
    if (c->num_layers < 1) c->num_layers = 1;
    case_layer *L = &c->layers[l];
    const int32_t hkv = hkv_of(c);
    if (invalid) {
        static const int32_t bad[] = {0, -1, -2};
        L->num_heads = CHANCE(rng, 2) ? hkv + 1 : PICK(rng, bad);
        if (L->num_heads == 2 && hkv == 1) L->num_heads = 0;
        L->num_heads = or_end(rng, L->num_heads);
        return;
    }
    const int runs_mixed = caps && (caps->flags & AG_CAP_MIXED_HEADS);
    const int one_layer = runs_mixed ? !CHANCE(rng, 3) : CHANCE(rng, 4);
    if (CHANCE(rng, 6)) {   /* Laguna: 48 full, 64 or 72 sliding, 8 KV heads */
        static const int32_t laguna[] = {48, 64, 72};
        c->num_kv_heads = 8;
        c->model_num_heads = 48;
        const int32_t h = one_layer ? 48 : PICK(rng, laguna);
        for (int32_t i = 0; i < c->num_layers; i++) c->layers[i].num_heads = h;
        if (one_layer) L->num_heads = CHANCE(rng, 2) ? 64 : 72;
        return;
    }
    const int32_t h = hkv * PICK(rng, k_groups);
    if (one_layer)
        L->num_heads = h;
    else
        for (int32_t i = 0; i < c->num_layers; i++) c->layers[i].num_heads = h;
}

/* KV heads, keeping every layer's group size (heads = kv_heads x g). */
static void edit_kv_heads(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    if (invalid) {
        c->num_kv_heads = caps && caps->max_heads > 0 && CHANCE(rng, 2) ? one_past(caps->max_heads)
                          : CHANCE(rng, 2)                              ? 0
                                                                        : -1;
        c->num_kv_heads = or_end(rng, c->num_kv_heads);
        return;
    }
    const int32_t old = hkv_of(c), hkv = PICK(rng, k_kvh);
    /* counts past int32 once rescaled (a raw one at its end) stay as they are */
    for (int32_t l = 0; l < c->num_layers; l++) {
        case_layer *L = &c->layers[l];
        if (L->num_heads >= old && L->num_heads % old == 0 &&
            (int64_t)L->num_heads / old * hkv <= INT32_MAX)
            L->num_heads = L->num_heads / old * hkv;
    }
    if (c->model_num_heads >= old && c->model_num_heads % old == 0 &&
        (int64_t)c->model_num_heads / old * hkv <= INT32_MAX)
        c->model_num_heads = c->model_num_heads / old * hkv;
    c->num_kv_heads = hkv;
}

/* The model-wide count, mostly other than the layers' (the seed bug sized
 * the scratch from it). */
static void edit_model_heads(case_spec *c, uint64_t *rng) {
    const int32_t hkv = hkv_of(c);
    c->model_num_heads = hkv * PICK(rng, k_groups);
}

static void edit_layers(case_spec *c, uint64_t *rng) {
    const uint64_t op = rng_below(rng, 8);
    if (op < 4 && c->num_layers < 8) {   /* add a copy of a layer, or a fresh one */
        const int32_t src = c->num_layers > 0 ? (int32_t)rng_below(rng, (uint64_t)c->num_layers)
                                              : -1;
        case_layer *L = &c->layers[c->num_layers];
        if (src >= 0) *L = c->layers[src];
        else {
            memset(L, 0, sizeof *L);
            L->num_heads = hkv_of(c) * 2;
            L->window = -1;
            L->window_left = L->window_right = CASE_WINDOW_UNSET;
            L->k_scale = L->v_scale = 1.0f;
        }
        c->num_layers++;
    } else if (op < 7 && c->num_layers > 1) {   /* drop one */
        const int32_t l = (int32_t)rng_below(rng, (uint64_t)c->num_layers);
        memmove(&c->layers[l], &c->layers[l + 1],
                (size_t)(c->num_layers - l - 1) * sizeof c->layers[0]);
        c->num_layers--;
    } else if (CHANCE(rng, 8)) {   /* no layers at all: the model-wide count decides */
        c->num_layers = 0;
    } else if (c->num_layers < CASE_MAX_LAYERS && CHANCE(rng, 4)) {   /* many, alike */
        const int32_t n = 9 + (int32_t)rng_below(rng, 24);
        for (int32_t l = c->num_layers; l < n && l < CASE_MAX_LAYERS; l++)
            c->layers[l] = c->layers[l ? l - 1 : 0];
        c->num_layers = n < CASE_MAX_LAYERS ? n : CASE_MAX_LAYERS;
    }
}

/* A layer's window: none, a W, a (left, right) pair, another layer's, or
 * a global layer among windowed ones (Gemma 3's mix). */
static void edit_window(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    if (c->num_layers < 1) return;
    case_layer *L = &c->layers[rng_below(rng, (uint64_t)c->num_layers)];
    L->window_left = L->window_right = CASE_WINDOW_UNSET;
    if (invalid) {
        /* the byte form holds windows from -3 (its invalid values) */
        static const int32_t bad[] = {0, -2, -3};
        if (CHANCE(rng, 2)) L->window = or_end(rng, PICK(rng, bad));
        else {
            L->window = -1;
            L->window_left = or_end(rng, caps && caps->max_seq_len > 0 && CHANCE(rng, 3)
                                             ? one_past(caps->max_seq_len)
                                             : -2 - (int32_t)rng_below(rng, 2));
            L->window_right = -1;
        }
        return;
    }
    switch (rng_below(rng, 6)) {
    case 0: L->window = -1; break;
    case 1: case 2: L->window = PICK(rng, k_windows); break;
    case 3: case 4:
        L->window = -1;
        L->window_left = PICK(rng, k_sides);
        L->window_right = PICK(rng, k_sides);
        break;
    default: {   /* the same window as another layer, or every layer one, this one none */
        const case_layer *o = &c->layers[rng_below(rng, (uint64_t)c->num_layers)];
        if (CHANCE(rng, 2) && o != L) {
            L->window = o->window;
            L->window_left = o->window_left;
            L->window_right = o->window_right;
        } else {
            const int32_t w = PICK(rng, k_windows);
            for (int32_t l = 0; l < c->num_layers; l++) {
                c->layers[l].window = w;
                c->layers[l].window_left = c->layers[l].window_right = CASE_WINDOW_UNSET;
            }
            L->window = -1;
        }
    }
    }
}

/* Soft cap, scale, ALiBi, sinks and the fp8 scales of a layer. */
static void edit_layer_terms(case_spec *c, uint64_t *rng, int invalid) {
    if (c->num_layers < 1) return;
    case_layer *L = &c->layers[rng_below(rng, (uint64_t)c->num_layers)];
    switch (rng_below(rng, 5)) {
    case 0:
        L->softcap = invalid ? (CHANCE(rng, 2) ? NAN : -1.0f)
                     : CHANCE(rng, 3) ? 0.0f
                                      : PICK(rng, k_softcaps);
        break;
    case 1:
        L->scale = invalid ? (CHANCE(rng, 2) ? INFINITY : -0.5f)
                   : CHANCE(rng, 3) ? 0.0f
                                    : PICK(rng, k_scales);
        /* a huge scale over keys small enough to cancel it: q x scale
         * takes the engine's large-q path (above 2^32) while the logits
         * stay near 1, where a wrong power of two shows in the softmax
         * (with ordinary keys they saturate it and hide one) */
        if (!invalid && L->scale > 0x1p32f && CHANCE(rng, 2)) {
            c->values[CASE_T_K].dist = CASE_DIST_UNIFORM;
            c->values[CASE_T_K].amp = 2.0f / L->scale;
        }
        break;
    case 2:
        L->alibi = (uint8_t)rng_below(rng, CASE_SRC_COUNT);
        if (L->alibi == CASE_SRC_LIST) L->alibi_off = UINT16_MAX;   /* drawn by relist */
        break;
    case 3:
        L->sinks = (uint8_t)rng_below(rng, CASE_SRC_COUNT);
        if (L->sinks == CASE_SRC_LIST) L->sinks_off = UINT16_MAX;
        break;
    default:
        L->k_scale = invalid ? 0.0f : PICK(rng, k_kvscales);
        L->v_scale = PICK(rng, k_kvscales);
        break;
    }
    /* an explicit list's values: now and then one value off the scale */
    if (c->list_len > 0 && CHANCE(rng, 4)) {
        float *x = &c->list[rng_below(rng, (uint64_t)c->list_len)];
        static const float odd[] = {0.0f, -1.0f, 1e20f, 30.0f, -30.0f, 0x1p-140f};
        *x = invalid ? NAN : PICK(rng, odd);
    }
}

/* A block kv dtype (q8_0 .. iq4_nl) the engine declares, or -1: drawn
 * only for engines that take one (for the others every such case would be
 * a skip). */
static int block_kv(const ag_caps *caps, uint64_t *rng) {
    if (!caps) return -1;
    int n = 0, pick[AG_DTYPE_COUNT];
    for (int t = 0; t < AG_DTYPE_COUNT; t++)
        if (ag_dtype_is_block((ag_dtype)t) && (caps->kv_dtypes & AG_DTYPE_BIT(t))) pick[n++] = t;
    return n ? pick[rng_below(rng, (uint64_t)n)] : -1;
}

/* Any KV type but the block types (the ABI's traits, in enum order). */
static ag_dtype plain_kv(uint64_t *rng) {
    int n = 0, pick[AG_DTYPE_COUNT];
    for (int t = 0; t < AG_DTYPE_COUNT; t++)
        if (!ag_dtype_is_block((ag_dtype)t)) pick[n++] = t;
    return (ag_dtype)pick[rng_below(rng, (uint64_t)n)];
}

static void edit_dtypes(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    static const ag_dtype qo[] = {AG_F32, AG_F32, AG_BF16, AG_F16};
    if (invalid) {
        ag_dtype *t = CHANCE(rng, 3) ? &c->q_dtype : CHANCE(rng, 2) ? &c->kv_dtype : &c->out_dtype;
        *t = (ag_dtype)(AG_DTYPE_COUNT + (int)rng_below(rng, 3));
        /* or a block cache whose rows are not whole blocks */
        const int b = block_kv(caps, rng);
        if (b >= 0 && CHANCE(rng, 2)) {
            c->kv_dtype = (ag_dtype)b;
            c->head_dim = 32 * (1 + (int32_t)rng_below(rng, 4)) + 8 * (1 + (int32_t)rng_below(rng, 3));
        }
        return;
    }
    const int b = block_kv(caps, rng);
    if (b >= 0 && CHANCE(rng, 3)) {
        /* a quantized cache (llama.cpp's --cache-type-k/v): head_dim whole
         * blocks of 32 */
        c->kv_dtype = (ag_dtype)b;
        if (c->head_dim < 32 || c->head_dim % 32 != 0)
            c->head_dim = c->head_dim >= 32 && c->head_dim <= 256 ? c->head_dim / 32 * 32 : 64;
        return;
    }
    switch (rng_below(rng, 4)) {
    case 0: c->q_dtype = PICK(rng, qo); break;
    case 1: c->out_dtype = PICK(rng, qo); break;
    case 2: c->kv_dtype = plain_kv(rng); break;
    default: c->q_dtype = c->out_dtype = PICK(rng, qo), c->kv_dtype = plain_kv(rng); break;
    }
}

/* One request's lengths: decode, prefill, a chunk after a cached prefix,
 * lengths at block and tile edges. */
static void draw_request(case_spec *c, int32_t r, uint64_t *rng) {
    int32_t kv = PICK(rng, k_keys);
    if (CHANCE(rng, 4) && c->block_size >= 1 && c->block_size <= 256) {
        const int32_t nb = 1 + (int32_t)rng_below(rng, 4);
        kv = nb * c->block_size + (int32_t)rng_below(rng, 3) - 1;
        if (kv < 1) kv = 1;
    }
    int32_t q;
    switch (rng_below(rng, 6)) {
    case 0: case 1: case 2: q = 1; break;
    case 3: q = kv; break;
    case 4: q = kv > 1 ? kv - 1 : 1; break;
    default: q = 1 + (int32_t)rng_below(rng, (uint64_t)(kv < 40 ? kv : 40)); break;
    }
    c->kv_len[r] = kv;
    c->q_len[r] = q;
}

static void edit_requests(case_spec *c, uint64_t *rng, int invalid) {
    if (invalid) {
        if (c->num_reqs < 1 || CHANCE(rng, 8)) {
            c->num_reqs = 0;
            return;
        }
        const int32_t r = (int32_t)rng_below(rng, (uint64_t)c->num_reqs);
        switch (rng_below(rng, 3)) {
        case 0:
            c->q_len[r] = c->kv_len[r] < INT32_MAX ? c->kv_len[r] + 1 : INT32_MIN;
            break;
        case 1: c->q_len[r] = or_end(rng, 0); break;
        default: c->causal[r] = 2; break;
        }
        return;
    }
    const uint64_t op = rng_below(rng, 10);
    if ((op < 3 || c->num_reqs < 1) && c->num_reqs < 16) {   /* add one */
        const int32_t r = c->num_reqs++;
        draw_request(c, r, rng);
        c->causal[r] = r > 0 ? c->causal[r - 1] : 1;
    } else if (op < 5 && c->num_reqs > 1) {   /* drop one */
        const int32_t r = (int32_t)rng_below(rng, (uint64_t)c->num_reqs);
        for (int32_t i = r; i + 1 < c->num_reqs; i++) {
            c->q_len[i] = c->q_len[i + 1];
            c->kv_len[i] = c->kv_len[i + 1];
            c->causal[i] = c->causal[i + 1];
        }
        c->num_reqs--;
    } else if (op < 8) {   /* new lengths for one */
        draw_request(c, (int32_t)rng_below(rng, (uint64_t)c->num_reqs), rng);
    } else if (op < 9) {   /* causality: flip one, or all one way */
        if (CHANCE(rng, 2)) {
            const int32_t r = (int32_t)rng_below(rng, (uint64_t)c->num_reqs);
            c->causal[r] = c->causal[r] ? 0 : 1;
        } else {
            const uint8_t v = (uint8_t)rng_below(rng, 2);
            for (int32_t r = 0; r < c->num_reqs; r++) c->causal[r] = v;
        }
    } else if (c->num_reqs < CASE_MAX_REQS) {   /* a wide batch of decodes */
        const int32_t n = 16 + (int32_t)rng_below(rng, 48);
        for (int32_t r = c->num_reqs; r < n && r < CASE_MAX_REQS; r++) {
            c->q_len[r] = 1;
            c->kv_len[r] = PICK(rng, k_keys);
            c->causal[r] = 1;
        }
        if (n > c->num_reqs) c->num_reqs = n < CASE_MAX_REQS ? n : CASE_MAX_REQS;
    }
}

static void edit_layout(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    switch (rng_below(rng, 6)) {
    case 0:
        c->block_size = invalid ? or_end(rng, caps && caps->max_block_size > 0 && CHANCE(rng, 2)
                                                  ? one_past(caps->max_block_size)
                                                  : 0)
                                : PICK(rng, k_bs);
        break;
    case 1:
        c->head_dim = invalid ? or_end(rng, caps && caps->max_head_dim > 0 && CHANCE(rng, 2)
                                                ? one_past(caps->max_head_dim)
                                                : 0)
                              : PICK(rng, k_dims);
        break;
    case 2: c->blocks = (case_blocks)rng_below(rng, CASE_BLOCKS_COUNT); break;
    case 3: c->last_block_full ^= 1u; break;
    case 4: c->place = (uint8_t)rng_below(rng, CASE_PLACE_COUNT); break;
    default: c->seed = rng_next(rng); break;
    }
}

/* Split policy and threads: threads mostly few, sometimes up to 64 (a
 * sizing that depends on the thread count breaks only at some counts). */
static void edit_schedule(case_spec *c, uint64_t *rng, int invalid, const ag_caps *caps) {
    if (CHANCE(rng, 2)) {
        static const int32_t counts[] = {1, 2, 3, 4, 5, 7, 8, 16, 64};
        const uint64_t m = rng_below(rng, 6);
        c->split = m < 2 ? AG_SPLIT_AUTO : m < 3 ? AG_SPLIT_OFF : m < 4 ? AG_SPLIT_ON
                                                                        : AG_SPLIT_FIXED;
        c->split_count = c->split == AG_SPLIT_FIXED ? PICK(rng, counts) : 0;
        if (invalid) {
            c->split = AG_SPLIT_FIXED;
            c->split_count = or_end(rng, caps && caps->max_splits > 0 && CHANCE(rng, 2)
                                             ? one_past(caps->max_splits)
                                             : 0);
        }
        return;
    }
    if (invalid) {
        c->threads = or_end(rng, caps && caps->max_threads > 0 && CHANCE(rng, 2)
                                     ? one_past(caps->max_threads)
                                     : 0);
        return;
    }
    const uint64_t t = rng_below(rng, 16);
    c->threads = t < 6 ? 1 + (int32_t)t / 2 : t < 12 ? 1 + (int32_t)rng_below(rng, 8)
                                                     : 9 + (int32_t)rng_below(rng, 56);
}

/* The value classes of q, K and V: each a distribution and an amplitude. */
static void edit_values(case_spec *c, uint64_t *rng) {
    case_values *v = &c->values[rng_below(rng, CASE_T_COUNT)];
    v->dist = (uint8_t)rng_below(rng, CASE_DIST_COUNT);
    v->amp = PICK(rng, k_amps);
    /* huge q over one-hot keys: q rows near FLT_MAX take the engine's
     * large-q path (scaled down by a power of two on f16 and fp8 caches)
     * while a one-hot key picks one element of q, three times in four an
     * ordinary one, so most logits stay near 1, where a wrong power of two
     * shows (over ordinary keys the maxima saturate the softmax and hide
     * it: large_q_exponent took 50-175 s from an empty corpus without
     * this edit, make mutants 2026-12-02) */
    if (v == &c->values[CASE_T_Q] && v->dist == CASE_DIST_EXTREME && CHANCE(rng, 2)) {
        c->values[CASE_T_K].dist = CASE_DIST_ONE_HOT;
        c->values[CASE_T_K].amp = 1.0f;
        /* f32 and bf16 caches send such rows to the fp64 path instead */
        if ((c->kv_dtype == AG_F32 || c->kv_dtype == AG_BF16) && CHANCE(rng, 2))
            c->kv_dtype = CHANCE(rng, 2) ? AG_F16 : AG_FP8_E4M3;
        if (c->q_dtype == AG_F16) c->q_dtype = AG_F32; /* f16 q is never huge */
    }
}

/* Engine words: none, one variant's, two variants', or a known key with a
 * value no variant has (invalid). */
static void edit_options(case_spec *c, uint64_t *rng, int invalid, const mutate_ctx *m) {
    c->options[0] = '\0';
    if (!m || m->n_variants < 1 || CHANCE(rng, 3)) return;
    const ag_variant *a = &m->variants[rng_below(rng, (uint64_t)m->n_variants)];
    const ag_variant *b = &m->variants[rng_below(rng, (uint64_t)m->n_variants)];
    if (invalid) {
        const size_t k = strcspn(a->options, "= ");
        if (a->options[k] == '=')
            snprintf(c->options, sizeof c->options, "%.*s=zz9", (int)k, a->options);
        return;
    }
    if (a == b || CHANCE(rng, 2)) snprintf(c->options, sizeof c->options, "%s", a->options);
    else {
        /* the first word of each: two keys, when they differ */
        const size_t ka = strcspn(a->options, " "), kb = strcspn(b->options, " ");
        const size_t qa = strcspn(a->options, "="), qb = strcspn(b->options, "=");
        if (qa == qb && !strncmp(a->options, b->options, qa))
            snprintf(c->options, sizeof c->options, "%.*s", (int)ka, a->options);
        else
            snprintf(c->options, sizeof c->options, "%.*s %.*s", (int)ka, a->options, (int)kb,
                     b->options);
    }
    /* the text form keeps words one blank apart: trim what a word left */
    size_t n = strlen(c->options);
    while (n && c->options[n - 1] == ' ') c->options[--n] = '\0';
}

/* ------------------------------------------------ rows fp32 cannot carry */

/* Value classes that send rows to attnguard's fp64 path while the
 * differential oracle still judges them (docs/engine.md, "Rows fp32
 * cannot carry"; the oracle excuses rows where max|q| sum|k| reaches
 * FLT_MAX, so every class here stays below that):
 *  - q between 2^32 and the excuse (one spike per row, at any position)
 *    over an f32 or bf16 cache with keys of 1 / the spike: the huge-q
 *    test, with ordinary logits;
 *  - a scale near 2^120 and more over keys of 1 / scale, with ALiBi: the
 *    state's exponent passes 126 plus the smallest slope's;
 *  - K near the overflow edge in one element, q below 1/2: logits near
 *    FLT_MAX that a scale above 1 or a sum can push over;
 *  - V near the overflow edge in one element over keys of equal weight:
 *    P.V overflows the accumulator there.
 * Each is combined with one to three of the features the fp64 path
 * applies again (soft cap, ALiBi either way, sinks either way, windows,
 * a scale, fp8 scales, GQA, split merges, output dtypes, engine words:
 * the kernel tables). */
static const float k_wide_q[] = {0x1p33f, 0x1p40f, 0x1p64f, 0x1p90f, 0x1p100f, 0x1p112f};
static const float k_edge[] = {0x1p120f, 0x1p125f, 0x1p126f, 0x1.8p126f, 0x1p127f,
                               0x1.fep127f};

static void wide_feature(case_spec *c, uint64_t *rng, const mutate_ctx *m) {
    case_layer *L = &c->layers[rng_below(rng, (uint64_t)c->num_layers)];
    /* explicit lists one time in four: a list per layer soon outgrows
     * the byte form's room */
    switch (rng_below(rng, 12)) {
    case 0: L->softcap = PICK(rng, k_softcaps); break;
    case 1: case 2:
        L->alibi = CHANCE(rng, 4) ? (L->alibi_off = UINT16_MAX, CASE_SRC_LIST) : CASE_SRC_STANDARD;
        break;
    case 3: case 4:
        L->sinks = CHANCE(rng, 4) ? (L->sinks_off = UINT16_MAX, CASE_SRC_LIST) : CASE_SRC_STANDARD;
        break;
    case 5: case 6: edit_window(c, rng, 0, m ? m->caps : NULL); break;
    case 7: L->scale = PICK(rng, k_scales); break;
    case 8: edit_heads(c, rng, 0, m ? m->caps : NULL); break;
    case 9: c->split = CHANCE(rng, 2) ? AG_SPLIT_ON : AG_SPLIT_FIXED;
            c->split_count = 2 + (int32_t)rng_below(rng, 3); break;
    case 10: c->out_dtype = CHANCE(rng, 3) ? AG_F32 : CHANCE(rng, 2) ? AG_BF16 : AG_F16; break;
    default: edit_options(c, rng, 0, m); break;
    }
}

static void edit_wide(case_spec *c, uint64_t *rng, const mutate_ctx *m) {
    if (c->num_layers < 1) return;
    case_values *q = &c->values[CASE_T_Q], *k = &c->values[CASE_T_K], *v = &c->values[CASE_T_V];
    if (c->q_dtype == AG_F16) c->q_dtype = CHANCE(rng, 2) ? AG_F32 : AG_BF16; /* f16 q is small */
    const int wide_kv = CHANCE(rng, 2) ? AG_F32 : AG_BF16;
    switch (rng_below(rng, 5)) {
    case 0: case 1: {
        c->kv_dtype = (ag_dtype)wide_kv;
        *q = (case_values){CASE_DIST_SPIKE, PICK(rng, k_wide_q)};
        /* keys of 1 / amp keep the logits ordinary, where a sink, a
         * bias or a cap shows (over ordinary keys the spike saturates the
         * softmax and hides them), and q's ordinary elements meet keys
         * whose products fp32 holds only as subnormals */
        const float inv = 1.0f / q->amp;
        if (CHANCE(rng, 4)) *k = (case_values){CASE_DIST_ONE_HOT, inv};
        else *k = (case_values){CHANCE(rng, 2) ? CASE_DIST_UNIFORM : CASE_DIST_NORMAL, inv};
        break;
    }
    case 2: {
        /* a huge scale over keys of 1 / scale, with ALiBi: ordinary logits
         * in a state of 2^E units, E past 126 + the smallest slope's
         * exponent (on any cache; an f16 or fp8 one holds such keys as 0,
         * and the biases alone decide) */
        static const float huge[] = {0x1p119f, 0x1p122f, 1e37f, 1e38f, 0x1p127f};
        c->kv_dtype = plain_kv(rng);
        case_layer *L = &c->layers[rng_below(rng, (uint64_t)c->num_layers)];
        L->scale = PICK(rng, huge);
        L->alibi = CASE_SRC_STANDARD;   /* explicit slopes: wide_feature */
        if (ag_dtype_is_fp8(c->kv_dtype) && CHANCE(rng, 2)) {
            L->k_scale = PICK(rng, k_kvscales);   /* into q: the logits' units move */
            L->v_scale = PICK(rng, k_kvscales);   /* the fp64 path applies it itself */
        }
        *q = (case_values){CHANCE(rng, 2) ? CASE_DIST_UNIFORM : CASE_DIST_SPIKE, 1.0f};
        *k = (case_values){CHANCE(rng, 2) ? CASE_DIST_UNIFORM : CASE_DIST_ONE_HOT, 1.0f / L->scale};
        break;
    }
    case 3:
        c->kv_dtype = (ag_dtype)wide_kv;
        *k = (case_values){CASE_DIST_SPIKE, PICK(rng, k_edge)};
        *q = (case_values){CHANCE(rng, 2) ? CASE_DIST_UNIFORM : CASE_DIST_ONE_HOT, 0.5f};
        break;
    default:
        c->kv_dtype = (ag_dtype)wide_kv;
        *v = (case_values){CASE_DIST_SPIKE, PICK(rng, k_edge)};
        *k = (case_values){CHANCE(rng, 2) ? CASE_DIST_CONST_ROW : CASE_DIST_ONE_HOT, 1e-3f};
        break;
    }
    const int features = 1 + (int)rng_below(rng, 3);
    for (int f = 0; f < features; f++) wide_feature(c, rng, m);
}

/* The shape of the lanes prefill tiles (the avx512 tables' fp32 and bf16
 * ones, and the amx table's tile products, take items of 32 to 128 rows
 * in multiples of 16, tokens x heads per KV head): 32 or 48 rows here,
 * head dims a multiple of 32, and, one time in two, blocks of fewer than
 * 16 keys, so that the 16-key groups a tile loads straddle blocks.  From
 * single edits such a case is rare: an empty corpus took more than 180 s
 * to build one (amx_kgroup_direct, make mutants 2026-12-07).  Small dims
 * and short prefixes keep it within the budget. */
static void edit_lanes(case_spec *c, uint64_t *rng) {
    if (c->num_layers < 1) return;
    static const int32_t g_of[] = {1, 2, 4, 4, 8};
    static const int32_t small_bs[] = {1, 2, 4, 8, 8};
    static const int32_t big_bs[] = {16, 32, 64};
    const int32_t g = PICK(rng, g_of);
    const int32_t tok = 16 / g;                                /* tokens per 16 rows */
    const int32_t q = tok * (2 + (int32_t)rng_below(rng, 2));  /* 32 or 48 rows */
    c->kv_dtype = CHANCE(rng, 3) ? AG_F32 : AG_BF16;
    c->head_dim = CHANCE(rng, 4) ? 64 : 32;
    c->block_size = CHANCE(rng, 2) ? PICK(rng, small_bs) : PICK(rng, big_bs);
    c->num_kv_heads = CHANCE(rng, 4) ? 2 : 1;
    c->model_num_heads = g * c->num_kv_heads;
    if (c->num_layers > 2) c->num_layers = 2;
    for (int32_t l = 0; l < c->num_layers; l++) c->layers[l].num_heads = g * c->num_kv_heads;
    c->num_reqs = 1;
    c->q_len[0] = q;
    c->causal[0] = !CHANCE(rng, 4);
    if (CHANCE(rng, 2)) {
        c->kv_len[0] = q + 8 + (int32_t)rng_below(rng, 40);   /* whole 16-key groups past q */
        return;
    }
    /* Two or three 64-key chunks on one layer (the budget allows them at
     * D 32), with logits that spread by more than 8 (ALiBi, or K spiky or
     * large): a row's maximum then moves from one chunk to the next past
     * the amx tile's lazy maximum, which rescales its accumulators only
     * then (LANES_LAZY_LOGITS) */
    static const float amps[] = {4.0f, 16.0f, 100.0f};
    c->num_layers = 1;
    c->head_dim = 32;
    c->kv_len[0] = q + 64 + (int32_t)rng_below(rng, 100);
    if (CHANCE(rng, 2))   /* ALiBi: later keys nearer, their logits higher */
        c->layers[0].alibi = CASE_SRC_STANDARD;
    else
        c->values[CASE_T_K] = (case_values){CHANCE(rng, 2) ? CASE_DIST_SPIKE : CASE_DIST_UNIFORM,
                                            PICK(rng, amps)};
}

/* ---------------------------------------------------------- the budget */

/* Shortens the valid requests until the case costs at most `budget`
 * multiply-adds, then drops requests and layers (down to one request and
 * two layers: a group of two can still disagree on its heads). */
static void fit_budget(case_spec *c, uint64_t budget) {
    for (int round = 0; round < 24 && case_cost(c) > budget; round++) {
        int changed = 0;
        for (int32_t r = 0; r < c->num_reqs; r++) {
            if (c->q_len[r] < 1 || c->kv_len[r] < c->q_len[r] || c->kv_len[r] < 2) continue;
            c->kv_len[r] = c->kv_len[r] / 2 + c->kv_len[r] % 2;   /* halved, rounded up */
            if (c->q_len[r] > c->kv_len[r]) c->q_len[r] = c->kv_len[r];
            changed = 1;
        }
        if (!changed) break;
    }
    /* still over (many heads, many requests): fewer requests, then fewer
     * layers; each keeps the case's shape of heads and windows */
    while (case_cost(c) > budget && c->num_reqs > 1) c->num_reqs = (c->num_reqs + 1) / 2;
    while (case_cost(c) > budget && c->num_layers > 2) c->num_layers = (c->num_layers + 1) / 2;
}

/* ---------------------------------------------------------- entry points */

void case_mutate(case_spec *c, uint64_t *rng, const mutate_ctx *m) {
    const ag_caps *caps = m ? m->caps : NULL;
    const int edits = 1 + (int)rng_below(rng, 4);
    for (int e = 0; e < edits; e++) {
        const int invalid = CHANCE(rng, 8);
        switch (rng_below(rng, 18)) {
        case 0: case 1: edit_heads(c, rng, invalid, caps); break;
        case 2: edit_kv_heads(c, rng, invalid, caps); break;
        case 3: edit_model_heads(c, rng); break;
        case 4: edit_layers(c, rng); break;
        case 5: case 6: edit_window(c, rng, invalid, caps); break;
        case 7: edit_layer_terms(c, rng, invalid); break;
        case 8: edit_dtypes(c, rng, invalid, caps); break;
        case 9: case 10: case 11: edit_requests(c, rng, invalid); break;
        case 12: edit_layout(c, rng, invalid, caps); break;
        case 13: edit_schedule(c, rng, invalid, caps); break;
        case 14: edit_values(c, rng); break;
        case 15: edit_wide(c, rng, m); break;
        case 16: edit_lanes(c, rng); break;
        default: edit_options(c, rng, invalid, m); break;
        }
    }
    relist(c, rng);
    c->expect = AG_R_NONE;   /* the fuzz targets judge by the defect model alone */
    const uint64_t budget = m && m->budget ? m->budget : (uint64_t)1 << 18;
    fit_budget(c, CHANCE(rng, 16) ? budget * 16 : budget);
}

void case_cross(const case_spec *a, const case_spec *b, case_spec *out, uint64_t *rng,
                const mutate_ctx *m) {
    *out = *a;
    switch (rng_below(rng, 3)) {
    case 0:   /* b's batch */
        out->num_reqs = b->num_reqs;
        memcpy(out->q_len, b->q_len, sizeof out->q_len);
        memcpy(out->kv_len, b->kv_len, sizeof out->kv_len);
        memcpy(out->causal, b->causal, sizeof out->causal);
        break;
    case 1: {   /* some of b's layers appended or swapped in, at a's KV heads */
        const int32_t hb = hkv_of(b), ha = hkv_of(a);
        for (int32_t l = 0; l < b->num_layers && l < CASE_MAX_LAYERS; l++) {
            if (!CHANCE(rng, 2)) continue;
            case_layer L = b->layers[l];
            if (L.alibi == CASE_SRC_LIST) L.alibi = CASE_SRC_STANDARD;
            if (L.sinks == CASE_SRC_LIST) L.sinks = CASE_SRC_STANDARD;
            /* b's group ratio at a's KV heads; a layer whose heads would
             * pass int32 at the new count keeps b's */
            if (L.num_heads >= hb && L.num_heads % hb == 0 &&
                (int64_t)(L.num_heads / hb) * ha <= INT32_MAX)
                L.num_heads = L.num_heads / hb * ha;
            const int32_t at = out->num_layers < 8 && CHANCE(rng, 2)
                                   ? out->num_layers++
                                   : (out->num_layers > 0
                                          ? (int32_t)rng_below(rng, (uint64_t)out->num_layers)
                                          : out->num_layers++);
            out->layers[at] = L;
        }
        break;
    }
    default:   /* b's dtypes and values */
        out->q_dtype = b->q_dtype;
        out->kv_dtype = b->kv_dtype;
        out->out_dtype = b->out_dtype;
        memcpy(out->values, b->values, sizeof out->values);
        break;
    }
    relist(out, rng);
    out->expect = AG_R_NONE;
    fit_budget(out, m && m->budget ? m->budget : (uint64_t)1 << 18);
}

/* ---------------------------------------------------------- bytes */

static size_t encode_into(const case_spec *c, uint8_t *out, size_t max) {
    uint8_t buf[CASE_BYTES_MAX];
    const size_t n = case_encode(c, buf, sizeof buf, NULL, 0);
    if (n == 0 || n > max) return 0;
    memcpy(out, buf, n);
    return n;
}

size_t case_mutate_bytes(uint8_t *data, size_t size, size_t max, unsigned seed,
                         const mutate_ctx *m, mutate_bytes_fn bytes_mutate) {
    uint64_t rng = 0x6d75746174652121ull ^ ((uint64_t)seed << 17) ^ size;
    if (bytes_mutate && CHANCE(&rng, 5)) return bytes_mutate(data, size, max);
    case_spec c;
    case_decode(data, size, &c);
    case_mutate(&c, &rng, m);
    const size_t n = encode_into(&c, data, max);
    if (n) return n;
    return bytes_mutate ? bytes_mutate(data, size, max) : size;
}

size_t case_cross_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out,
                        size_t max, unsigned seed, const mutate_ctx *m) {
    uint64_t rng = 0x63726f7373212121ull ^ ((uint64_t)seed << 13) ^ (na * 31 + nb);
    case_spec x, y, z;
    case_decode(a, na, &x);
    case_decode(b, nb, &y);
    case_cross(&x, &y, &z, &rng, m);
    return encode_into(&z, out, max);
}
