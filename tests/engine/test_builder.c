/*
 * test_builder.c — attn_builder_create / attn_builder_get_info (DESIGN §3).
 *
 * Covers: the group head count is resolved from the group's own layers
 * (48, 64, 16 with a model-wide count of 48 and 8 KV heads; a bogus
 * model-wide count is ignored when layers exist), layers that disagree are
 * refused with ATTN_E_MIXED_HEADS and the exact message (default and named
 * layers, 2 and 3 layers), the group window (shared value else -1), the
 * empty-group fallback to the model-wide count, the layer array not being
 * kept, attn_strerror / attn_status_name / attn_dtype_* for every value and
 * for out-of-range ones, err == NULL accepted, err always written, and
 * out-parameters untouched on failure.
 *
 * Bugs this catches: the seed bug (builder sizing from the model-wide head
 * count), a mixed-heads group planned instead of refused, a message that
 * does not name counts/layers, window taken from the first layer.
 */
#include <criterion/criterion.h>

#include "../../src/attn.h"
#include "../tutil.h"

#include <stdio.h>
#include <string.h>

#define SENTINEL_BUILDER ((attn_builder *)(uintptr_t)0x5e57)

static attn_status create(const attn_layer_desc *layers, int32_t n, attn_builder **b,
                          attn_error *err) {
    attn_group_desc g = tu_group(layers, n, 8, 128, 16, 2);
    return attn_builder_create(&g, b, err);
}

static void expect_heads(const int32_t *heads, int32_t n, int32_t want) {
    attn_layer_desc layers[8];
    for (int32_t i = 0; i < n; i++) layers[i] = tu_layer(heads[i], -1);
    attn_builder *b = SENTINEL_BUILDER;
    attn_error err;
    memset(&err, 0x5a, sizeof err);
    attn_status st = create(layers, n, &b, &err);
    cr_assert_eq(st, ATTN_OK, "heads[0]=%d n=%d: create -> %s (%s)", heads[0], n,
                 attn_status_name(st), err.message);
    cr_assert_eq(err.status, ATTN_OK, "err.status written on success");
    cr_assert_eq(err.message[0], '\0', "empty message on success, got \"%.60s\"", err.message);
    cr_assert_neq(b, SENTINEL_BUILDER, "out written on success");
    cr_assert_not_null(b);
    attn_builder_info info;
    memset(&info, 0, sizeof info);
    st = attn_builder_get_info(b, &info, &err);
    cr_assert_eq(st, ATTN_OK);
    cr_assert_eq(info.num_heads, want, "group of %d-head layers: info.num_heads = %d, want %d "
                 "(model-wide count is 48)", heads[0], info.num_heads, want);
    cr_assert_eq(info.num_kv_heads, 8);
    cr_assert_eq(info.head_dim, 128);
    cr_assert_eq(info.block_size, 16);
    cr_assert_eq(info.num_layers, n);
    cr_assert_eq(info.num_threads, 2);
    cr_assert_eq(info.q_dtype, ATTN_DTYPE_F32);
    cr_assert_eq(info.kv_dtype, ATTN_DTYPE_F32);
    cr_assert_eq(info.out_dtype, ATTN_DTYPE_F32);
    cr_assert_not_null(info.isa);
    attn_builder_destroy(b);
}

Test(builder, heads_48) {
    int32_t h[] = {48, 48, 48};
    expect_heads(h, 3, 48);
}
Test(builder, heads_64_not_model_wide) {
    int32_t h[] = {64, 64};
    expect_heads(h, 2, 64);
}
Test(builder, heads_16_not_model_wide) {
    int32_t h[] = {16, 16, 16, 16};
    expect_heads(h, 4, 16);
}
Test(builder, heads_single_layer_72) {
    int32_t h[] = {72};
    expect_heads(h, 1, 72);
}

/* model_num_heads is "used ONLY when num_layers == 0": a value that would be
 * invalid (0, or not a multiple of the KV heads) must not matter. */
Test(builder, model_wide_count_ignored_with_layers) {
    int32_t bogus[] = {0, 7, -1};
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        attn_layer_desc l[2] = {tu_layer(64, -1), tu_layer(64, 512)};
        attn_group_desc g = tu_group(l, 2, 8, 128, 16, 2);
        g.model_num_heads = bogus[i];
        attn_builder *b = NULL;
        attn_error err;
        attn_status st = attn_builder_create(&g, &b, &err);
        cr_assert_eq(st, ATTN_OK, "model_num_heads=%d with 64-head layers -> %s (%s)",
                     bogus[i], attn_status_name(st), err.message);
        attn_builder_info info;
        cr_assert_eq(attn_builder_get_info(b, &info, NULL), ATTN_OK);
        cr_assert_eq(info.num_heads, 64, "model_num_heads=%d: got %d", bogus[i], info.num_heads);
        attn_builder_destroy(b);
    }
}

static void expect_mixed(const attn_layer_desc *layers, int32_t n, const char *const *needles,
                         const char *what) {
    attn_builder *b = SENTINEL_BUILDER;
    attn_error err;
    memset(&err, 0, sizeof err);
    attn_status st = create(layers, n, &b, &err);
    cr_assert_eq(st, ATTN_E_MIXED_HEADS, "%s: create -> %s (%s), want ATTN_E_MIXED_HEADS", what,
                 attn_status_name(st), err.message);
    cr_assert_eq(err.status, ATTN_E_MIXED_HEADS, "%s: err.status", what);
    cr_assert_eq(b, SENTINEL_BUILDER, "%s: out-parameter written on failure", what);
    cr_assert(memchr(err.message, '\0', sizeof err.message) != NULL, "%s: unterminated", what);
    for (size_t i = 0; needles[i]; i++)
        cr_assert(strstr(err.message, needles[i]) != NULL,
                  "%s: message \"%s\" lacks \"%s\"", what, err.message, needles[i]);
    /* err == NULL: same status, no crash */
    b = SENTINEL_BUILDER;
    st = create(layers, n, &b, NULL);
    cr_assert_eq(st, ATTN_E_MIXED_HEADS, "%s: err=NULL -> %s", what, attn_status_name(st));
    cr_assert_eq(b, SENTINEL_BUILDER, "%s: out written on failure (err NULL)", what);
}

Test(builder, mixed_48_64_exact_message) {
    attn_layer_desc l[2] = {tu_layer(48, -1), tu_layer(64, 512)};
    const char *n[] = {"all layers in one attention group must share num_heads; got {48, 64}: "
                       "layers.0 = 48, layers.1 = 64", NULL};
    expect_mixed(l, 2, n, "[48,64]");
}

Test(builder, mixed_64_48_order) {
    attn_layer_desc l[2] = {tu_layer(64, 512), tu_layer(48, -1)};
    const char *n[] = {"all layers in one attention group must share num_heads; got {64, 48}: "
                       "layers.0 = 64, layers.1 = 48", NULL};
    expect_mixed(l, 2, n, "[64,48]");
}

Test(builder, mixed_laguna_s_48_72) {
    attn_layer_desc l[2] = {tu_layer(48, -1), tu_layer(72, 512)};
    const char *n[] = {"all layers in one attention group must share num_heads; got {48, 72}: "
                       "layers.0 = 48, layers.1 = 72", NULL};
    expect_mixed(l, 2, n, "[48,72]");
}

Test(builder, mixed_named_layers) {
    attn_layer_desc l[2] = {tu_layer(48, -1), tu_layer(64, 512)};
    l[0].name = "model.layers.3.self_attn";
    l[1].name = "model.layers.4.self_attn";
    const char *n[] = {"all layers in one attention group must share num_heads; got {48, 64}: "
                       "model.layers.3.self_attn = 48, model.layers.4.self_attn = 64", NULL};
    expect_mixed(l, 2, n, "named [48,64]");
}

/* Three layers [64, 64, 72]: every layer's own count is named. */
Test(builder, mixed_three_layers) {
    attn_layer_desc l[3] = {tu_layer(64, 512), tu_layer(64, 512), tu_layer(72, -1)};
    const char *n[] = {"all layers in one attention group must share num_heads; got {64, 72}: "
                       "layers.0 = 64, layers.1 = 64, layers.2 = 72", NULL};
    expect_mixed(l, 3, n, "[64,64,72]");
    attn_error err;
    attn_builder *b = NULL;
    create(l, 3, &b, &err);
    cr_log_info("3-layer mixed message: %s", err.message);
}

/* A mismatch hidden in the middle of many agreeing layers is still found. */
Test(builder, mixed_late_layer) {
    attn_layer_desc l[6];
    for (int i = 0; i < 6; i++) l[i] = tu_layer(48, -1);
    l[5].num_heads = 64;
    const char *n[] = {"must share num_heads", "48", "64", "layers.5", NULL};
    expect_mixed(l, 6, n, "[48 x5, 64]");
}

static void expect_window(const int32_t *w, int32_t n, int32_t want) {
    attn_layer_desc l[8];
    for (int32_t i = 0; i < n; i++) l[i] = tu_layer(64, w[i]);
    attn_builder *b = NULL;
    attn_error err;
    attn_status st = create(l, n, &b, &err);
    cr_assert_eq(st, ATTN_OK, "%s", err.message);
    attn_builder_info info;
    cr_assert_eq(attn_builder_get_info(b, &info, &err), ATTN_OK);
    cr_assert_eq(info.window, want, "windows [%d,%d%s]: group window %d, want %d", w[0],
                 n > 1 ? w[1] : 0, n > 2 ? ",..." : "", info.window, want);
    attn_builder_destroy(b);
}

Test(builder, window_shared_512) { int32_t w[] = {512, 512}; expect_window(w, 2, 512); }
Test(builder, window_none) { int32_t w[] = {-1, -1}; expect_window(w, 2, -1); }
Test(builder, window_mixed_512_none) { int32_t w[] = {512, -1}; expect_window(w, 2, -1); }
Test(builder, window_mixed_none_512) { int32_t w[] = {-1, 512}; expect_window(w, 2, -1); }
Test(builder, window_mixed_512_256) { int32_t w[] = {512, 512, 256}; expect_window(w, 3, -1); }
Test(builder, window_single_1) { int32_t w[] = {1}; expect_window(w, 1, 1); }

/* Windows as (left, right) pairs: {W, 0, 0} is the shorthand W, {-1, L, R}
 * the pair (L, R).  The group's window is the one every layer gives every
 * request, causal or not, however it is spelled; want = the resolved
 * spec reported (layer 0's when shared, none otherwise). */
typedef struct wspec { int32_t w, left, right; } wspec;
static void expect_pair(const wspec *ws, int32_t n, wspec want) {
    attn_layer_desc l[4];
    for (int32_t i = 0; i < n; i++) {
        l[i] = tu_layer(64, ws[i].w);
        if (ws[i].w == -1 && (ws[i].left || ws[i].right))
            l[i].window_pair = 1, l[i].window_left = ws[i].left, l[i].window_right = ws[i].right;
    }
    attn_builder *b = NULL;
    attn_error err;
    cr_assert_eq(create(l, n, &b, &err), ATTN_OK, "%s", err.message);
    attn_builder_info info;
    cr_assert_eq(attn_builder_get_info(b, &info, &err), ATTN_OK);
    const int pair = want.w == -1 && (want.left || want.right);
    cr_assert(info.window == want.w && info.window_pair == pair &&
                  info.window_left == (pair ? want.left : 0) &&
                  info.window_right == (pair ? want.right : 0),
              "group window %d pair %d (%d, %d), want %d (%d, %d)", info.window, info.window_pair,
              info.window_left, info.window_right, want.w, want.left, want.right);
    attn_builder_destroy(b);
}

Test(builder, window_pairs_shared) {
    const wspec a[] = {{-1, 6, 2}, {-1, 6, 2}};
    expect_pair(a, 2, a[0]);
    /* (W-1, W-1) is what the shorthand W gives either causality */
    const wspec b[] = {{7, 0, 0}, {-1, 6, 6}};
    expect_pair(b, 2, b[0]);
    const wspec c[] = {{-1, 6, 6}, {7, 0, 0}};
    expect_pair(c, 2, c[0]);
}

Test(builder, window_pairs_not_shared) {
    const wspec none = {-1, 0, 0};
    const wspec a[] = {{-1, 6, 2}, {-1, 6, 3}};   /* same for causal, not for non-causal */
    expect_pair(a, 2, none);
    const wspec b[] = {{7, 0, 0}, {-1, 7, 7}};    /* one key more to the left */
    expect_pair(b, 2, none);
    const wspec c[] = {{-1, 6, -1}, {-1, 6, 6}};  /* unbounded right vs bounded */
    expect_pair(c, 2, none);
    const wspec d[] = {{-1, -1, 4}, {-1, -1, 4}, {-1, 0, 4}};
    expect_pair(d, 3, none);
}

Test(builder, empty_group_falls_back_to_model_count) {
    int32_t model[] = {48, 64, 16};
    for (size_t i = 0; i < 3; i++) {
        attn_group_desc g = tu_group(NULL, 0, 8, 128, 16, 3);
        g.model_num_heads = model[i];
        attn_builder *b = NULL;
        attn_error err;
        attn_status st = attn_builder_create(&g, &b, &err);
        cr_assert_eq(st, ATTN_OK, "empty group, model %d: %s (%s)", model[i],
                     attn_status_name(st), err.message);
        attn_builder_info info;
        cr_assert_eq(attn_builder_get_info(b, &info, &err), ATTN_OK);
        cr_assert_eq(info.num_heads, model[i], "empty group: num_heads %d, want model %d",
                     info.num_heads, model[i]);
        cr_assert_eq(info.num_layers, 0);
        cr_assert_eq(info.window, -1, "empty group: window %d, want -1", info.window);
        attn_builder_destroy(b);
    }
}

/* "The layer array is not kept": mutating it after create changes nothing. */
Test(builder, layer_array_not_kept) {
    attn_layer_desc l[2] = {tu_layer(64, 512), tu_layer(64, 512)};
    attn_builder *b = NULL;
    cr_assert_eq(create(l, 2, &b, NULL), ATTN_OK);
    l[0].num_heads = 48;
    l[1].num_heads = 1000;
    l[0].window = 3;
    attn_builder_info info;
    cr_assert_eq(attn_builder_get_info(b, &info, NULL), ATTN_OK);
    cr_assert_eq(info.num_heads, 64, "resolved lazily from a mutated array: %d", info.num_heads);
    cr_assert_eq(info.window, 512, "window resolved lazily: %d", info.window);
    attn_builder_destroy(b);
}

Test(builder, get_info_null_args_and_untouched_out) {
    attn_builder_info info, before;
    memset(&info, 0xa5, sizeof info);
    memcpy(&before, &info, sizeof info);
    attn_error err;
    attn_status st = attn_builder_get_info(NULL, &info, &err);
    cr_assert_eq(st, ATTN_E_NULL_ARG, "get_info(NULL) -> %s", attn_status_name(st));
    cr_assert_eq(err.status, ATTN_E_NULL_ARG);
    cr_assert_neq(err.message[0], '\0');
    cr_assert(memcmp(&info, &before, sizeof info) == 0, "out written on failure");
    attn_layer_desc l[1] = {tu_layer(8, -1)};
    attn_builder *b = NULL;
    cr_assert_eq(create(l, 1, &b, NULL), ATTN_OK);
    st = attn_builder_get_info(b, NULL, NULL);
    cr_assert_eq(st, ATTN_E_NULL_ARG, "get_info(b, NULL) -> %s", attn_status_name(st));
    attn_builder_destroy(b);
    attn_builder_destroy(NULL);  /* NULL-safe */
}

Test(builder, err_null_accepted_on_success) {
    attn_layer_desc l[1] = {tu_layer(8, -1)};
    attn_builder *b = NULL;
    cr_assert_eq(create(l, 1, &b, NULL), ATTN_OK);
    cr_assert_not_null(b);
    attn_builder_info info;
    cr_assert_eq(attn_builder_get_info(b, &info, NULL), ATTN_OK);
    attn_builder_destroy(b);
}

Test(builder, status_names_and_strings) {
    for (int s = 0; s < ATTN_STATUS_COUNT; s++) {
        const char *n = attn_status_name((attn_status)s);
        const char *e = attn_strerror((attn_status)s);
        cr_assert_not_null(n, "status %d: name NULL", s);
        cr_assert_not_null(e, "status %d: strerror NULL", s);
        cr_assert(strncmp(n, "ATTN_", 5) == 0, "status %d: name \"%s\"", s, n);
        cr_assert_str_neq(n, "ATTN_E_?", "status %d has no name", s);
        /* attn.h's example ("ATTN_OK: success") is read as the mapping
         * ATTN_OK -> "success"; only a real, distinct description is required. */
        cr_assert(strlen(e) >= 5, "status %d: strerror \"%s\" too short", s, e);
        cr_assert_str_neq(e, "unknown attn_status", "status %d described as unknown", s);
        for (int t = 0; t < s; t++) {
            cr_assert_str_neq(n, attn_status_name((attn_status)t), "names %d and %d equal", s, t);
            cr_assert_str_neq(e, attn_strerror((attn_status)t), "strerror %d and %d equal", s, t);
        }
    }
    cr_assert_str_eq(attn_status_name(ATTN_OK), "ATTN_OK");
    cr_assert_str_eq(attn_status_name(ATTN_E_MIXED_HEADS), "ATTN_E_MIXED_HEADS");
    cr_assert_str_eq(attn_status_name(ATTN_E_SCRATCH_TOO_SMALL), "ATTN_E_SCRATCH_TOO_SMALL");
    cr_assert_str_eq(attn_status_name(ATTN_E_INTERNAL), "ATTN_E_INTERNAL");
    cr_assert(strstr(attn_strerror(ATTN_OK), "success") != NULL, "strerror(ATTN_OK) = \"%s\"",
              attn_strerror(ATTN_OK));
    int bad[] = {ATTN_STATUS_COUNT, ATTN_STATUS_COUNT + 1, -1, 1000000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *n = attn_status_name((attn_status)bad[i]);
        const char *e = attn_strerror((attn_status)bad[i]);
        cr_assert_not_null(n);
        cr_assert_not_null(e);
        cr_assert_str_eq(n, "ATTN_E_?", "out-of-range %d: name \"%s\"", bad[i], n);
        cr_assert_neq(e[0], '\0', "out-of-range %d: empty strerror", bad[i]);
        for (int st = 0; st < ATTN_STATUS_COUNT; st++)
            cr_assert_str_neq(e, attn_strerror((attn_status)st), "out-of-range %d described as status %d",
                              bad[i], st);
    }
}

Test(builder, dtype_names_and_sizes) {
    cr_assert_str_eq(attn_dtype_name(ATTN_DTYPE_F32), "f32");
    cr_assert_str_eq(attn_dtype_name(ATTN_DTYPE_BF16), "bf16");
    cr_assert_str_eq(attn_dtype_name(ATTN_DTYPE_F16), "f16");
    cr_assert_null(attn_dtype_name(ATTN_DTYPE_COUNT));
    cr_assert_null(attn_dtype_name((attn_dtype)-1));
    cr_assert_eq(attn_dtype_size(ATTN_DTYPE_F32), 4);
    cr_assert_eq(attn_dtype_size(ATTN_DTYPE_BF16), 2);
    cr_assert_eq(attn_dtype_size(ATTN_DTYPE_F16), 2);
    cr_assert_eq(attn_dtype_size(ATTN_DTYPE_COUNT), 0);
    cr_assert_eq(attn_dtype_size((attn_dtype)77), 0);
}

/* The error struct is always written when not NULL: a stale failure must
 * not survive a later success. */
Test(builder, err_overwritten_after_failure) {
    attn_layer_desc mixed[2] = {tu_layer(48, -1), tu_layer(64, -1)};
    attn_layer_desc ok[1] = {tu_layer(48, -1)};
    attn_error err;
    attn_builder *b = NULL;
    cr_assert_eq(create(mixed, 2, &b, &err), ATTN_E_MIXED_HEADS);
    cr_assert_neq(err.message[0], '\0');
    cr_assert_eq(create(ok, 1, &b, &err), ATTN_OK);
    cr_assert_eq(err.status, ATTN_OK);
    cr_assert_eq(err.message[0], '\0', "stale message \"%s\"", err.message);
    attn_builder_destroy(b);
}

Test(builder, isa_ref_selectable) {
    attn_layer_desc l[1] = {tu_layer(8, -1)};
    attn_group_desc g = tu_group(l, 1, 2, 64, 16, 1);
    g.isa = "ref";
    attn_builder *b = NULL;
    attn_error err;
    cr_assert_eq(attn_builder_create(&g, &b, &err), ATTN_OK, "%s", err.message);
    attn_builder_info info;
    cr_assert_eq(attn_builder_get_info(b, &info, NULL), ATTN_OK);
    cr_assert_str_eq(info.isa, "ref");
    attn_builder_destroy(b);
    int n = attn_isa_available(NULL, 0);
    cr_assert_geq(n, 1, "at least the portable table");
    const char *names[8] = {0};
    int m = attn_isa_available(names, 8);
    cr_assert_eq(m, n);
    int has_ref = 0;
    for (int i = 0; i < m && i < 8; i++) has_ref |= names[i] && strcmp(names[i], "ref") == 0;
    cr_assert(has_ref, "\"ref\" not listed");
}
