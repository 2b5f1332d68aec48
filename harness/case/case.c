/*
 * case.c — the case struct itself: its default, the values derived from it
 * (a layer's resolved window, the standard ALiBi slopes, the run cost) and
 * struct equality.
 *
 * Owns: what "the same case" means (case_equal) and the derived values every
 * consumer must compute alike, the names of the text keys and where a
 * text set them.  The text form lives in case_text.c, the fuzz bytes in
 * case_bytes.c; what is valid lives in validity.c.
 */
#include "case.h"

#include <math.h>
#include <string.h>

void case_default(case_spec *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "default");
    c->num_layers = 1;
    /* every layer slot: a layer a caller adds by hand starts sane */
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        c->layers[l].window = -1;
        c->layers[l].window_left = c->layers[l].window_right = CASE_WINDOW_UNSET;
        c->layers[l].k_scale = c->layers[l].v_scale = 1.0f;
    }
    c->layers[0].num_heads = 8;
    c->model_num_heads = 8;
    c->num_kv_heads = 2;
    c->head_dim = 64;
    c->block_size = 16;
    c->q_dtype = c->kv_dtype = c->out_dtype = AG_F32;
    c->num_reqs = 1;
    for (int r = 0; r < CASE_MAX_REQS; r++) c->causal[r] = 1;   /* requests added by hand too */
    for (int t = 0; t < CASE_T_COUNT; t++) {
        c->values[t].dist = CASE_DIST_UNIFORM;
        c->values[t].amp = 1.0f;
    }
    c->q_len[0] = 1;
    c->kv_len[0] = 37;
    c->blocks = CASE_BLOCKS_CONTIGUOUS;
    c->threads = 1;
    c->split = AG_SPLIT_AUTO;
    c->split_count = 0;
    c->seed = 1;
    c->expect = AG_R_NONE;
    c->options[0] = '\0';
}

/* ------------------------------------------------------ derived values */

void case_layer_window(const case_layer *L, int32_t *left, int32_t *right) {
    if (L->window_left != CASE_WINDOW_UNSET || L->window_right != CASE_WINDOW_UNSET) {
        *left = L->window_left == CASE_WINDOW_UNSET ? -1 : L->window_left;
        *right = L->window_right == CASE_WINDOW_UNSET ? -1 : L->window_right;
        return;
    }
    if (L->window >= 1) {
        *left = *right = L->window - 1;
        return;
    }
    /* -1: none; a raw invalid W (0, -5) maps to a pair no engine may accept
     * (below -1), so the refusal it deserves still comes.  W - 1 in 64 bits:
     * W = INT32_MIN stays INT32_MIN, still below -1 */
    const int64_t w = L->window == 0 ? -2 : (int64_t)L->window - 1;
    *left = *right = L->window == -1 ? -1 : (int32_t)(w < INT32_MIN ? INT32_MIN : w);
}

/* slopes[h] = b^(h+1), b = 2^(-8/P) for the P = largest power of two <= n
 * heads; the remaining n - P heads take the odd powers of 2^(-4/P).  In
 * float, as real models compute them (vLLM's and Hugging Face's torch.pow
 * on float32, ggml's powf): the same bits an engine derives for itself. */
void case_alibi_standard(int32_t n, float *out) {
    if (n <= 0) return;
    int32_t P = 1;
    while (P * 2 <= n) P *= 2;
    const float base = powf(2.0f, -8.0f / (float)P), extra = powf(2.0f, -4.0f / (float)P);
    for (int32_t h = 0; h < P; h++) out[h] = powf(base, (float)(h + 1));
    for (int32_t j = 0; j < n - P; j++) out[P + j] = powf(extra, (float)(2 * j + 1));
}

static const char *const dist_names[CASE_DIST_COUNT] = {
    "uniform", "normal", "heavy", "const_row", "one_hot", "denormal", "extreme",
    "spike",
};

int case_dist_parse(const char *s) {
    for (int i = 0; i < CASE_DIST_COUNT; i++)
        if (strcmp(s, dist_names[i]) == 0) return i;
    return -1;
}

const char *case_dist_name(int dist) {
    return dist >= 0 && dist < CASE_DIST_COUNT ? dist_names[dist] : NULL;
}

/* ------------------------------------------------------------------- cost */

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t at_least_1(int64_t v) { return v > 0 ? (uint64_t)v : 1; }

uint64_t case_cost(const case_spec *c) {
    if (!c) return 0;
    /* every layer runs every request: heads summed over layers, times D,
     * times the (query row, key) pairs summed over requests */
    const int32_t nl = c->num_layers < 0 ? 0 : (c->num_layers > CASE_MAX_LAYERS ? CASE_MAX_LAYERS
                                                                                : c->num_layers);
    const int32_t nr = c->num_reqs < 0 ? 0 : (c->num_reqs > CASE_MAX_REQS ? CASE_MAX_REQS
                                                                          : c->num_reqs);
    uint64_t heads = nl ? 0 : at_least_1(c->model_num_heads);
    for (int32_t l = 0; l < nl; l++) heads = sat_add(heads, at_least_1(c->layers[l].num_heads));
    uint64_t pairs = 0;
    for (int32_t r = 0; r < nr; r++)
        pairs = sat_add(pairs, sat_mul(at_least_1(c->q_len[r]), at_least_1(c->kv_len[r])));
    return sat_mul(sat_mul(pairs, heads), at_least_1(c->head_dim));
}

/* ------------------------------------------------------------------ equal */

/* Floats are equal when their bits are, or when both are NaN (the text form
 * keeps NaN-ness and sign but not the payload). */
static int feq(float a, float b) {
    if (isnan(a) && isnan(b)) return 1;
    return memcmp(&a, &b, sizeof(a)) == 0;
}

/* An explicit list is its values, wherever it sits in case.list; a
 * reference that leaves the list (never produced by the parsers) compares
 * by its offset. */
static int list_eq(const case_spec *a, uint16_t oa, const case_spec *b, uint16_t ob, int32_t n) {
    int ina = n > 0 && (int32_t)oa + n <= a->list_len && a->list_len <= CASE_MAX_LIST;
    int inb = n > 0 && (int32_t)ob + n <= b->list_len && b->list_len <= CASE_MAX_LIST;
    if (!ina || !inb) return ina == inb && oa == ob;
    for (int32_t i = 0; i < n; i++)
        if (!feq(a->list[oa + i], b->list[ob + i])) return 0;
    return 1;
}

static int layer_eq(const case_spec *a, const case_layer *x, const case_spec *b,
                    const case_layer *y) {
    if (x->num_heads != y->num_heads || x->window_left != y->window_left ||
        x->window_right != y->window_right || !feq(x->softcap, y->softcap) ||
        !feq(x->scale, y->scale) || !feq(x->k_scale, y->k_scale) ||
        !feq(x->v_scale, y->v_scale) || x->alibi != y->alibi || x->sinks != y->sinks)
        return 0;
    /* a (left, right) pair overrides `window`, which then means nothing */
    if (x->window_left == CASE_WINDOW_UNSET && x->window_right == CASE_WINDOW_UNSET &&
        x->window != y->window)
        return 0;
    if (x->alibi == CASE_SRC_LIST && !list_eq(a, x->alibi_off, b, y->alibi_off, x->num_heads))
        return 0;
    if (x->sinks == CASE_SRC_LIST && !list_eq(a, x->sinks_off, b, y->sinks_off, x->num_heads))
        return 0;
    return 1;
}

int case_equal(const case_spec *a, const case_spec *b) {
    if (!a || !b) return a == b;
    if (strncmp(a->name, b->name, CASE_NAME_LEN) != 0) return 0;
    if (strncmp(a->options, b->options, CASE_OPTIONS_LEN) != 0) return 0;
    if (a->num_layers != b->num_layers || a->model_num_heads != b->model_num_heads ||
        a->num_kv_heads != b->num_kv_heads || a->head_dim != b->head_dim ||
        a->block_size != b->block_size || a->q_dtype != b->q_dtype ||
        a->kv_dtype != b->kv_dtype || a->out_dtype != b->out_dtype ||
        a->num_reqs != b->num_reqs || a->blocks != b->blocks ||
        a->last_block_full != b->last_block_full || a->place != b->place ||
        a->threads != b->threads || a->split != b->split || a->seed != b->seed ||
        a->expect != b->expect)
        return 0;
    for (int t = 0; t < CASE_T_COUNT; t++)
        if (a->values[t].dist != b->values[t].dist || !feq(a->values[t].amp, b->values[t].amp))
            return 0;
    /* split_count means something only for FIXED and raw (invalid) modes. */
    if (a->split != AG_SPLIT_AUTO && a->split != AG_SPLIT_OFF && a->split != AG_SPLIT_ON &&
        a->split_count != b->split_count)
        return 0;
    int32_t nl = a->num_layers;
    if (nl < 0) nl = 0;
    if (nl > CASE_MAX_LAYERS) nl = CASE_MAX_LAYERS;
    for (int32_t l = 0; l < nl; l++)
        if (!layer_eq(a, &a->layers[l], b, &b->layers[l])) return 0;
    int32_t nr = a->num_reqs;
    if (nr < 0) nr = 0;
    if (nr > CASE_MAX_REQS) nr = CASE_MAX_REQS;
    for (int32_t r = 0; r < nr; r++)
        if (a->q_len[r] != b->q_len[r] || a->kv_len[r] != b->kv_len[r] ||
            a->causal[r] != b->causal[r])
            return 0;
    return 1;
}

/* ------------------------------------------------------------ keys, lines */

#define CASE_KEY_NAME_OF(id, name) name,
static const char *const k_key_names[CASE_KEY_COUNT] = {CASE_KEYS(CASE_KEY_NAME_OF)};
#undef CASE_KEY_NAME_OF

const char *case_key_name(case_key k) {
    return (unsigned)k < CASE_KEY_COUNT ? k_key_names[k] : "?";
}

int32_t case_line(const case_spec *c, case_key k, int32_t index) {
    if (k == CASE_KEY_LAYER)
        return index >= 0 && index < CASE_MAX_LAYERS ? c->lines.layer[index] : 0;
    if ((unsigned)k >= CASE_KEY_COUNT) return 0;
    if (c->lines.key[k]) return c->lines.key[k];
    /* the shorthand that set the field */
    switch (k) {
    case CASE_KEY_Q_DTYPE: case CASE_KEY_KV_DTYPE: case CASE_KEY_OUT_DTYPE:
        return c->lines.key[CASE_KEY_DTYPE];
    case CASE_KEY_Q_VALUES: case CASE_KEY_K_VALUES: case CASE_KEY_V_VALUES:
        return c->lines.key[CASE_KEY_VALUES];
    case CASE_KEY_OPTIONS: return c->lines.key[CASE_KEY_ISA];
    case CASE_KEY_CAUSAL: return c->lines.key[CASE_KEY_REQUESTS];   /* a request's suffix */
    default: return 0;
    }
}
