/*
 * builder.c — attn_builder_create: validates an attention group and
 * resolves, once and eagerly, what its layers share: the query-head count
 * (layers that disagree are refused) and the group window (shared value or
 * -1).  Also the builder's accessors and destructor.  Planning a batch lives
 * in plan.c.
 */
#include "internal.h"
#include "kernels/mask.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Layer name for messages: the caller's, else "layers.<i>". */
static const char *layer_name(const attn_layer_desc *l, int32_t i, char *buf, size_t cap) {
    if (l->name && l->name[0]) return l->name;
    snprintf(buf, cap, "layers.%d", (int)i);
    return buf;
}

static attn_status check_dtype(attn_dtype d, const char *what, attn_error *err) {
    if ((unsigned)d >= ATTN_DTYPE_COUNT)
        return attn__fail(err, ATTN_E_BAD_DTYPE, "%s = %d is not an attn_dtype (0..%d)", what,
                          (int)d, ATTN_DTYPE_COUNT - 1);
    return ATTN_OK;
}

/* Every element finite, and at most `bound` in magnitude (0: no bound). */
static attn_status check_finite_array(const float *v, int32_t n, const char *what,
                                      const char *lname, double bound, attn_error *err) {
    for (int32_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            return attn__fail(err, ATTN_E_BAD_LAYER, "%s: %s[%d] = %g is not finite", lname,
                              what, (int)i, (double)v[i]);
        if (bound > 0 && fabs((double)v[i]) > bound)
            return attn__fail(err, ATTN_E_BAD_LAYER, "%s: %s[%d] = %g is beyond +-%g", lname,
                              what, (int)i, (double)v[i], bound);
    }
    return ATTN_OK;
}

/* Validate what a layer carries on its own (not its agreement with the
 * group).  Shared with attn_run, which validates the layer it is given. */
attn_status attn__check_layer(const attn_layer_desc *l, int32_t index, attn_dtype kv_dtype,
                              attn_error *err) {
    char nb[32];
    const char *name = layer_name(l, index, nb, sizeof nb);
    if (l->num_heads <= 0 || l->num_heads > ATTN_MAX_HEADS)
        return attn__fail(err, ATTN_E_BAD_HEADS, "%s: num_heads = %d outside 1..%d", name,
                          (int)l->num_heads, ATTN_MAX_HEADS);
    if (l->window < -1 || l->window == 0 || l->window > ATTN_MAX_SEQ_LEN)
        return attn__fail(err, ATTN_E_BAD_WINDOW,
                          "%s: window = %d (must be -1 for none or 1..%d)", name,
                          (int)l->window, ATTN_MAX_SEQ_LEN);
    if (l->window_pair != 0 && l->window_pair != 1)
        return attn__fail(err, ATTN_E_BAD_WINDOW, "%s: window_pair = %d (must be 0 or 1)", name,
                          (int)l->window_pair);
    if (!l->window_pair && (l->window_left || l->window_right))
        return attn__fail(err, ATTN_E_BAD_WINDOW,
                          "%s: window_left = %d, window_right = %d need window_pair = 1", name,
                          (int)l->window_left, (int)l->window_right);
    if (l->window_pair && l->window != -1)
        return attn__fail(err, ATTN_E_BAD_WINDOW,
                          "%s: window = %d and window_pair = 1: give the window one way "
                          "(window = -1 with the pair)", name, (int)l->window);
    const int32_t side[2] = {l->window_left, l->window_right};
    for (int k = 0; k < 2; k++)
        if (side[k] < -1 || side[k] > ATTN_MAX_SEQ_LEN)
            return attn__fail(err, ATTN_E_BAD_WINDOW,
                              "%s: window_%s = %d (must be -1 for unbounded or 0..%d)", name,
                              k ? "right" : "left", (int)side[k], ATTN_MAX_SEQ_LEN);
    if (!isfinite(l->softcap) || l->softcap < 0.0f)
        return attn__fail(err, ATTN_E_BAD_LAYER,
                          "%s: softcap = %g (must be 0 for off or finite > 0)", name,
                          (double)l->softcap);
    if (!isfinite(l->scale) || l->scale < 0.0f)
        return attn__fail(err, ATTN_E_BAD_LAYER,
                          "%s: scale = %g (must be 0 for 1/sqrt(head_dim) or finite > 0)",
                          name, (double)l->scale);
    const float kvs[2] = {l->k_scale, l->v_scale};
    const int fp8 = kv_dtype == ATTN_DTYPE_FP8_E4M3 || kv_dtype == ATTN_DTYPE_FP8_E5M2;
    for (int k = 0; fp8 && k < 2; k++)
        if (!isfinite(kvs[k]) || kvs[k] < 0.0f)
            return attn__fail(err, ATTN_E_BAD_LAYER,
                              "%s: %s = %g (fp8 cache: must be 0 for 1, or finite > 0)", name,
                              k ? "v_scale" : "k_scale", (double)kvs[k]);
    attn_status st;
    if (l->alibi_slopes &&
        (st = check_finite_array(l->alibi_slopes, l->num_heads, "alibi_slopes", name,
                                 ATTN_MAX_ALIBI_SLOPE, err)))
        return st;
    if (l->sinks && (st = check_finite_array(l->sinks, l->num_heads, "sinks", name, 0, err)))
        return st;
    return ATTN_OK;
}

attn_status attn__check_kv(const attn_kv_desc *kv, attn_error *err) {
    if (kv->num_kv_heads <= 0 || kv->num_kv_heads > ATTN_MAX_HEADS)
        return attn__fail(err, ATTN_E_BAD_HEADS, "kv.num_kv_heads = %d outside 1..%d",
                          (int)kv->num_kv_heads, ATTN_MAX_HEADS);
    if (kv->head_dim <= 0 || kv->head_dim > ATTN_MAX_HEAD_DIM)
        return attn__fail(err, ATTN_E_BAD_HEAD_DIM, "kv.head_dim = %d outside 1..%d",
                          (int)kv->head_dim, ATTN_MAX_HEAD_DIM);
    if (kv->block_size <= 0 || kv->block_size > ATTN_MAX_BLOCK_SIZE)
        return attn__fail(err, ATTN_E_BAD_BLOCK_SIZE, "kv.block_size = %d outside 1..%d",
                          (int)kv->block_size, ATTN_MAX_BLOCK_SIZE);
    return check_dtype(kv->dtype, "kv.dtype", err);
}

/* The mixed-heads message: the distinct counts (first-seen order), then
 * every layer's own count ("layers.0 = 72, layers.1 = 72, layers.2 = 48"),
 * cut with ", ... (N layers)" where the message runs out of room. */
static attn_status mixed_heads(const attn_group_desc *g, attn_error *err) {
    char counts[64] = "", each[ATTN_ERROR_MSG_LEN] = "";
    size_t cl = 0, el = 0;
    for (int32_t i = 0; i < g->num_layers; i++) {
        int32_t h = g->layers[i].num_heads;
        bool seen = false;
        for (int32_t j = 0; j < i; j++)
            if (g->layers[j].num_heads == h) seen = true;
        if (!seen && cl < sizeof counts - 16)
            cl += (size_t)snprintf(counts + cl, sizeof counts - cl, "%s%d", cl ? ", " : "", (int)h);
    }
    /* room left after the fixed text and the counts */
    const size_t room = sizeof each - 80 - cl;
    for (int32_t i = 0; i < g->num_layers; i++) {
        char nb[32], one[64];
        const char *name = layer_name(&g->layers[i], i, nb, sizeof nb);
        int n = snprintf(one, sizeof one, "%s%.40s = %d", el ? ", " : "", name,
                         (int)g->layers[i].num_heads);
        if (n < 0) break;
        if (el + (size_t)n + 24 > room) {
            snprintf(each + el, sizeof each - el, ", ... (%d layers)", (int)g->num_layers);
            break;
        }
        memcpy(each + el, one, (size_t)n + 1);
        el += (size_t)n;
    }
    return attn__fail(err, ATTN_E_MIXED_HEADS,
                      "all layers in one attention group must share num_heads; got {%s}: %s",
                      counts, each);
}

/* Whether two layers' windows are the same for every request: the same
 * (left, right) for causal and non-causal requests. */
bool attn__same_window(const attn__window *a, const attn__window *b) {
    for (int32_t causal = 0; causal < 2; causal++) {
        int32_t al, ar, bl, br;
        attn__window_pair(a->window, a->pair, a->left, a->right, causal, &al, &ar);
        attn__window_pair(b->window, b->pair, b->left, b->right, causal, &bl, &br);
        if (al != bl || ar != br) return false;
    }
    return true;
}

attn_status attn_builder_create(const attn_group_desc *g, attn_builder **out, attn_error *err) {
    attn_status st;
    if (!g || !out) return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL", g ? "out" : "group");
    if (g->num_layers < 0 || g->num_layers > ATTN_MAX_LAYERS)
        return attn__fail(err, ATTN_E_BAD_LAYER, "num_layers = %d outside 0..%d",
                          (int)g->num_layers, ATTN_MAX_LAYERS);
    if (g->num_layers > 0 && !g->layers)
        return attn__fail(err, ATTN_E_NULL_ARG, "layers is NULL with num_layers = %d",
                          (int)g->num_layers);
    if ((st = attn__check_kv(&g->kv, err))) return st;
    if ((st = check_dtype(g->q_dtype, "q_dtype", err))) return st;
    if ((st = check_dtype(g->out_dtype, "out_dtype", err))) return st;
    const attn_dtype qo[2] = {g->q_dtype, g->out_dtype};
    for (int k = 0; k < 2; k++)
        if (qo[k] == ATTN_DTYPE_FP8_E4M3 || qo[k] == ATTN_DTYPE_FP8_E5M2)
            return attn__fail(err, ATTN_E_BAD_DTYPE,
                              "%s = %d (%s): only the KV cache may be fp8 (f32, bf16, f16 here)",
                              k ? "out_dtype" : "q_dtype", (int)qo[k], attn_dtype_name(qo[k]));
    if (g->num_threads < 1 || g->num_threads > ATTN_MAX_THREADS)
        return attn__fail(err, ATTN_E_BAD_THREADS, "num_threads = %d outside 1..%d",
                          (int)g->num_threads, ATTN_MAX_THREADS);
    if ((unsigned)g->precision >= ATTN_PRECISION_COUNT)
        return attn__fail(err, ATTN_E_BAD_OPTION,
                          "precision = %d (ATTN_PRECISION_DEFAULT 0 or ATTN_PRECISION_EXACT 1)",
                          (int)g->precision);
    if (g->allocator && (!g->allocator->alloc || !g->allocator->free))
        return attn__fail(err, ATTN_E_NULL_ARG, "allocator has a NULL %s function",
                          g->allocator->alloc ? "free" : "alloc");
    for (int32_t i = 0; i < g->num_layers; i++)
        if ((st = attn__check_layer(&g->layers[i], i, g->kv.dtype, err))) return st;

    /* Resolve the head count from the layers, never from the model: the
     * scratchpad is sized from it, and the kernels run with each layer's
     * own count (docs/design.md §3). */
    int32_t heads;
    if (g->num_layers == 0) {
        if (g->model_num_heads <= 0 || g->model_num_heads > ATTN_MAX_HEADS)
            return attn__fail(err, ATTN_E_BAD_HEADS,
                              "model_num_heads = %d outside 1..%d (used because the group has no layers)",
                              (int)g->model_num_heads, ATTN_MAX_HEADS);
        heads = g->model_num_heads;
    } else {
        heads = g->layers[0].num_heads;
#ifndef ATTN_INJECT_model_wide_heads
        for (int32_t i = 1; i < g->num_layers; i++)
            if (g->layers[i].num_heads != heads) return mixed_heads(g, err);
#else
        /* INJECTED BUG (model_wide_heads): the historical builder sized the
         * split-KV scratchpad from the model-wide query-head count, and had
         * no per-group agreement check. */
        (void)mixed_heads;
        if (g->model_num_heads > 0 && g->model_num_heads <= ATTN_MAX_HEADS &&
            g->model_num_heads % g->kv.num_kv_heads == 0)
            heads = g->model_num_heads;
#endif
    }
    if (heads % g->kv.num_kv_heads != 0)
        return attn__fail(err, ATTN_E_BAD_HEADS,
                          "num_heads = %d is not a multiple of num_kv_heads = %d", (int)heads,
                          (int)g->kv.num_kv_heads);

    /* The group window bounds the KV ranges the plan hands out; only a
     * window every layer shares may do that, else a global layer would be
     * windowed.  Shared means the same (left, right) for causal and for
     * non-causal requests alike, whichever way the layers spell it. */
    attn__window win = {-1, 0, 0, 0};
    if (g->num_layers > 0) {
        const attn_layer_desc *l0 = &g->layers[0];
        win = (attn__window){l0->window, l0->window_pair, l0->window_left, l0->window_right};
    }
#ifndef ATTN_INJECT_group_window
    for (int32_t i = 1; i < g->num_layers; i++) {
        const attn_layer_desc *li = &g->layers[i];
        const attn__window wi = {li->window, li->window_pair, li->window_left, li->window_right};
        if (!attn__same_window(&win, &wi)) win = (attn__window){-1, 0, 0, 0};
    }
#else
    /* INJECTED BUG (group_window): the window is taken from the group's
     * first layer, so global layers of a mixed group get windowed. */
#endif

    const attn_kernels *kern;
    if ((st = attn__select_kernels(g->isa, &kern, err))) return st;
    int32_t tune;
    if ((st = attn__select_tune(g->tune, &tune, err))) return st;

    attn_allocator alloc;
    if (g->allocator)
        alloc = *g->allocator;
    else
        attn__default_allocator(&alloc);
    attn_builder *b = attn__alloc(&alloc, sizeof *b);
    if (!b) return attn__fail(err, ATTN_E_NO_MEMORY, "builder: allocation of %zu bytes failed", sizeof *b);
    memset(b, 0, sizeof *b);
    b->alloc = alloc;
    b->kern = kern;
    b->tune = tune;
    b->round_ok = g->precision != ATTN_PRECISION_EXACT;
    b->sync_hook = g->sync_hook;
    b->sync_hook_ctx = g->sync_hook_ctx;
    b->num_heads = heads;
    b->num_kv_heads = g->kv.num_kv_heads;
    b->group_size = heads / g->kv.num_kv_heads;
    b->head_dim = g->kv.head_dim;
    b->block_size = g->kv.block_size;
    b->win = win;
    b->num_layers = g->num_layers;
    b->num_threads = g->num_threads;
    b->q_dtype = g->q_dtype;
    b->kv_dtype = g->kv.dtype;
    b->out_dtype = g->out_dtype;
    b->max_plan_bytes = g->max_plan_bytes;
    *out = b;
    attn__ok(err);
    return ATTN_OK;
}

void attn_builder_destroy(attn_builder *b) {
    if (!b) return;
    attn_allocator a = b->alloc;
    attn__free(&a, b);
}

attn_status attn_builder_get_info(const attn_builder *b, attn_builder_info *out, attn_error *err) {
    if (!b || !out) return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL", b ? "out" : "builder");
    attn_builder_info i;
    memset(&i, 0, sizeof i);
    i.num_heads = b->num_heads;
    i.num_kv_heads = b->num_kv_heads;
    i.head_dim = b->head_dim;
    i.block_size = b->block_size;
    i.window = b->win.window;
    i.window_pair = b->win.pair;
    i.window_left = b->win.left;
    i.window_right = b->win.right;
    i.num_layers = b->num_layers;
    i.num_threads = b->num_threads;
    i.q_dtype = b->q_dtype;
    i.kv_dtype = b->kv_dtype;
    i.out_dtype = b->out_dtype;
    i.isa = b->kern->name;
    i.tune = attn__tune_name(b->tune);
    i.bf16_rounding = b->round_ok && b->kern->bf16_rounding &&
                      b->kern->bf16_rounding(b->tune, b->kv_dtype);
    i.precision = b->round_ok ? ATTN_PRECISION_DEFAULT : ATTN_PRECISION_EXACT;
    *out = i;
    attn__ok(err);
    return ATTN_OK;
}
