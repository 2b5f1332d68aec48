/*
 * test_invalid.c — caller errors get a listed status, never a crash (DESIGN
 * §3 "the engine never aborts, exits or prints because of caller input",
 * attn.h conventions).
 *
 * A table of invalid groups (create), batches/options (build) and runs
 * (layer, tensors, scratchpad), each applied as a mutation of one valid
 * setup.  Every row checks: the exact status, err.status equal to it,
 * err.message non-empty and naming the offending value where there is one,
 * the out-parameter (builder/plan pointer, output buffer) untouched, and the
 * same status with err == NULL.  Plus: NULL for every pointer argument of
 * every public function, near-limit values (seq_len at/over ATTN_MAX_SEQ_LEN,
 * num_reqs over ATTN_MAX_REQS, the largest non-causal window), and an
 * allocator that fails the N-th allocation for every N: ATTN_E_NO_MEMORY and
 * allocations/frees balanced (no leak).
 *
 * Note on ATTN_E_OVERFLOW: with int32 inputs inside the documented limits
 * and a 64-bit size_t, no size product of the public API can overflow
 * (the largest, e.g. 256 threads x 1024 heads x 1024 dims x pieces, stays
 * below 2^50); the status is reachable only on 32-bit targets, so the rows
 * here check the near-limit values for their specific status instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "../../src/attn.h"
#include "../../src/attn_plan_inspect.h"
#include "../tutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HQ 8
#define HKV 2
#define DIM 16
#define BS 4
#define NREQ 3
#define STRIDE 4
#define NBLK 8
#define NTOK 5

enum stage { CREATE, BUILD, RUN };

typedef struct ctx {
    attn_layer_desc layers[2];
    attn_group_desc g;
    int32_t qsl[NREQ + 1], seq[NREQ], bt[NREQ * STRIDE];
    attn_batch batch;
    attn_plan_opts opts;
    attn_layer_desc run_layer;
    attn_tensors t;
    float alibi_bad[HQ], slopes[HQ];
    float *q, *out, *kc, *vc;
    unsigned char *scratch_base;
    void *scratch;
    size_t scratch_bytes, plan_bytes;
    int32_t *big;          /* large zeroed block table for the limit rows */
    uint8_t rc[NREQ];      /* per-request causality for the req_causal rows */
    char needle[64];       /* runtime needle, overrides the row's */
} ctx;

static void ctx_init(ctx *c) {
    memset(c, 0, sizeof *c);
    c->layers[0] = tu_layer(HQ, -1);
    c->layers[1] = tu_layer(HQ, 7);
    c->g = tu_group(c->layers, 2, HKV, DIM, BS, 2);
    const int32_t q[NREQ] = {1, 3, 1}, kv[NREQ] = {5, 3, 9};
    for (int r = 0; r < NREQ; r++) {
        c->qsl[r + 1] = c->qsl[r] + q[r];
        c->seq[r] = kv[r];
    }
    const int32_t bt[NREQ * STRIDE] = {0, 1, 7, 7, 2, 7, 7, 7, 3, 4, 5, 7};
    memcpy(c->bt, bt, sizeof bt);
    c->batch.num_reqs = NREQ;
    c->batch.query_start_loc = c->qsl;
    c->batch.seq_lens = c->seq;
    c->batch.block_table = c->bt;
    c->batch.block_table_stride = STRIDE;
    c->batch.num_blocks = NBLK;
    c->batch.causal = 1;
    c->opts.split = ATTN_SPLIT_ON;
    c->run_layer = c->layers[0];
    for (int h = 0; h < HQ; h++) c->slopes[h] = 0.5f;
    size_t qn = (size_t)NTOK * 16 * DIM, cn = (size_t)NBLK * HKV * BS * DIM;
    c->q = calloc(qn, sizeof(float));     /* room for 16 heads */
    c->out = malloc(qn * sizeof(float));
    memset(c->out, 0x5a, qn * sizeof(float));
    c->kc = calloc(cn, sizeof(float));
    c->vc = calloc(cn, sizeof(float));
    for (size_t i = 0; i < qn; i++) c->q[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    for (size_t i = 0; i < cn; i++) {
        c->kc[i] = (float)((i * 13) % 7) * 0.1f - 0.3f;
        c->vc[i] = (float)((i * 17) % 5) * 0.2f - 0.4f;
    }
    attn_tensors t = {c->q, c->out, c->kc, c->vc, NTOK, HQ, DIM, NBLK, HKV, BS,
                      ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F32};
    c->t = t;
}

static void ctx_free(ctx *c) {
    free(c->q); free(c->out); free(c->kc); free(c->vc); free(c->scratch_base); free(c->big);
}

typedef struct row {
    const char *name;
    enum stage stage;
    void (*pre)(ctx *);   /* applied before create (NULL = none) */
    void (*mut)(ctx *);   /* applied before the stage's call */
    attn_status want;
    const char *needle;   /* substring the message must contain (case-insensitive), or NULL */
} row;

/* ---- create-stage mutations ---- */
static void m_hq_not_multiple(ctx *c) { c->layers[0].num_heads = c->layers[1].num_heads = 12; c->g.kv.num_kv_heads = 8; }
static void m_zero_heads(ctx *c) { c->layers[0].num_heads = c->layers[1].num_heads = 0; }
static void m_neg_heads(ctx *c) { c->layers[0].num_heads = c->layers[1].num_heads = -6; }
static void m_heads_over(ctx *c) { c->layers[0].num_heads = c->layers[1].num_heads = 1026; }
static void m_zero_kv(ctx *c) { c->g.kv.num_kv_heads = 0; }
static void m_kv_over(ctx *c) { c->g.kv.num_kv_heads = 1025; c->layers[0].num_heads = c->layers[1].num_heads = 1025; }
static void m_empty_group_zero_model(ctx *c) { c->g.num_layers = 0; c->g.layers = NULL; c->g.model_num_heads = 0; }
static void m_empty_group_model_not_mult(ctx *c) { c->g.num_layers = 0; c->g.layers = NULL; c->g.model_num_heads = 9; }
static void m_mixed(ctx *c) { c->layers[1].num_heads = 16; }
static void m_d0(ctx *c) { c->g.kv.head_dim = 0; }
static void m_d_over(ctx *c) { c->g.kv.head_dim = ATTN_MAX_HEAD_DIM + 1; }
static void m_d_neg(ctx *c) { c->g.kv.head_dim = -64; }
static void m_bs0(ctx *c) { c->g.kv.block_size = 0; }
static void m_bs_over(ctx *c) { c->g.kv.block_size = ATTN_MAX_BLOCK_SIZE + 1; }
static void m_win_m2(ctx *c) { c->layers[1].window = -2; }
static void m_win_0(ctx *c) { c->layers[1].window = 0; }
static void m_win_min(ctx *c) { c->layers[0].window = INT32_MIN; }
static void m_win_over(ctx *c) { c->layers[0].window = ATTN_MAX_SEQ_LEN + 1; }
static void pair_on(attn_layer_desc *l, int32_t left, int32_t right) {
    l->window = -1, l->window_pair = 1, l->window_left = left, l->window_right = right;
}
static void m_wl_m2(ctx *c) { pair_on(&c->layers[1], -2, 3); }
static void m_wr_m5(ctx *c) { pair_on(&c->layers[0], 3, -5); }
static void m_wl_over(ctx *c) { pair_on(&c->layers[1], ATTN_MAX_SEQ_LEN + 1, 0); }
static void m_wr_min(ctx *c) { pair_on(&c->layers[0], -1, INT32_MIN); }
static void m_wpair2(ctx *c) { pair_on(&c->layers[1], 3, 3); c->layers[1].window_pair = 2; }
static void m_wpair_and_window(ctx *c) { pair_on(&c->layers[1], 3, 3); c->layers[1].window = 7; }
static void m_wl_no_pair(ctx *c) { c->layers[1].window_left = 3; }
static void m_wr_no_pair(ctx *c) { c->layers[0].window_right = -1; }
static void m_wpair_ok(ctx *c) { pair_on(&c->layers[1], 0, -1); pair_on(&c->layers[0], -1, 0); }
static void m_cap_neg(ctx *c) { c->layers[1].softcap = -3.5f; }
static void m_cap_nan(ctx *c) { c->layers[0].softcap = NAN; }
static void m_cap_inf(ctx *c) { c->layers[0].softcap = INFINITY; }
static void m_scale_neg(ctx *c) { c->layers[0].scale = -0.25f; }
static void m_scale_nan(ctx *c) { c->layers[1].scale = NAN; }
static void m_alibi_nan(ctx *c) {
    for (int h = 0; h < HQ; h++) c->alibi_bad[h] = 0.5f;
    c->alibi_bad[5] = NAN;
    c->layers[1].alibi_slopes = c->alibi_bad;
}
static void m_sink_inf(ctx *c) {
    for (int h = 0; h < HQ; h++) c->alibi_bad[h] = 0.5f;
    c->alibi_bad[HQ - 1] = -INFINITY;
    c->layers[0].sinks = c->alibi_bad;
}
static void m_thr0(ctx *c) { c->g.num_threads = 0; }
static void m_thr_neg(ctx *c) { c->g.num_threads = -4; }
static void m_thr_over(ctx *c) { c->g.num_threads = ATTN_MAX_THREADS + 1; }
static void m_qdt(ctx *c) { c->g.q_dtype = (attn_dtype)9; }
static void m_kvdt(ctx *c) { c->g.kv.dtype = (attn_dtype)-1; }
static void m_outdt(ctx *c) { c->g.out_dtype = ATTN_DTYPE_COUNT; }
static void m_isa(ctx *c) { c->g.isa = "sse9"; }
static void m_q_fp8(ctx *c) { c->g.q_dtype = ATTN_DTYPE_FP8_E4M3; }
static void m_out_fp8(ctx *c) { c->g.out_dtype = ATTN_DTYPE_FP8_E5M2; }
static void m_kscale_neg(ctx *c) { c->g.kv.dtype = ATTN_DTYPE_FP8_E4M3; c->layers[1].k_scale = -2.0f; }
static void m_vscale_inf(ctx *c) { c->g.kv.dtype = ATTN_DTYPE_FP8_E5M2; c->layers[0].v_scale = INFINITY; }
static void m_kscale_f32_ignored(ctx *c) { c->layers[1].k_scale = -2.0f; c->layers[0].v_scale = NAN; }
static void m_scales_fp8_ok(ctx *c) {
    c->g.kv.dtype = ATTN_DTYPE_FP8_E4M3;
    c->layers[0].k_scale = 0.0f, c->layers[0].v_scale = 0.5f, c->layers[1].k_scale = 3.0f;
}
static void m_isa_empty(ctx *c) { c->g.isa = "avx9000"; }
static void m_layers_null(ctx *c) { c->g.layers = NULL; }

/* ---- build-stage mutations ---- */
static void m_nreq0(ctx *c) { c->batch.num_reqs = 0; }
static void m_nreq_neg(ctx *c) { c->batch.num_reqs = -2; }
static void m_nreq_over(ctx *c) { c->batch.num_reqs = ATTN_MAX_REQS + 1; }
static void m_qsl0(ctx *c) { c->qsl[0] = 1; }
static void m_qsl_flat(ctx *c) { c->qsl[2] = c->qsl[1]; }
static void m_qsl_down(ctx *c) { c->qsl[2] = 0; }
static void m_qsl_wrap(ctx *c) { c->qsl[3] = INT32_MIN; }
static void m_seq_lt_q(ctx *c) { c->seq[1] = 2; }
static void m_seq_neg(ctx *c) { c->seq[0] = -5; }
static void m_blk_big(ctx *c) { c->bt[2 * STRIDE + 2] = 1000; }
static void m_blk_eq(ctx *c) { c->bt[0] = NBLK; }
static void m_blk_neg(ctx *c) { c->bt[2 * STRIDE + 1] = -3; }
static void m_stride_small(ctx *c) { c->batch.block_table_stride = 2; }
static void m_stride0(ctx *c) { c->batch.block_table_stride = 0; }
static void m_stride_neg(ctx *c) { c->batch.block_table_stride = -4; }
static void m_nblk0(ctx *c) { c->batch.num_blocks = 0; }
static void m_nblk_neg(ctx *c) { c->batch.num_blocks = -1; }
static void m_pad_neg_ok(ctx *c) { c->bt[2] = c->bt[3] = c->bt[5] = c->bt[6] = c->bt[7] = c->bt[11] = -1; }
static void m_split_bad(ctx *c) { c->opts.split = (attn_split_mode)4; }
static void m_split_neg(ctx *c) { c->opts.split = (attn_split_mode)-1; }
static void m_fixed0(ctx *c) { c->opts.split = ATTN_SPLIT_FIXED; c->opts.split_count = 0; }
static void m_fixed_over(ctx *c) { c->opts.split = ATTN_SPLIT_FIXED; c->opts.split_count = ATTN_MAX_SPLITS + 1; }
static void m_fixed_neg(ctx *c) { c->opts.split = ATTN_SPLIT_FIXED; c->opts.split_count = -7; }
static void m_auto_count_ignored(ctx *c) { c->opts.split = ATTN_SPLIT_AUTO; c->opts.split_count = 999; }
static void m_rz_unaligned(ctx *c) { c->opts.redzone = 96; }
static void m_rz_over(ctx *c) { c->opts.redzone = (size_t)ATTN_MAX_REDZONE + ATTN_ALIGN; }
static void m_rz_max_ok(ctx *c) { c->opts.redzone = ATTN_MAX_REDZONE; }
static void m_batch_qsl_null(ctx *c) { c->batch.query_start_loc = NULL; }
static void m_batch_seq_null(ctx *c) { c->batch.seq_lens = NULL; }
static void m_batch_bt_null(ctx *c) { c->batch.block_table = NULL; }
static void p_bs4096(ctx *c) { c->g.kv.block_size = 4096; }
static void big_table(ctx *c, int32_t seq) {
    int32_t stride = (int32_t)(((int64_t)seq + 4095) / 4096);
    c->big = calloc((size_t)stride, sizeof(int32_t));   /* block 0 everywhere: valid */
    c->batch.num_reqs = 1;
    c->qsl[0] = 0; c->qsl[1] = 1;
    c->seq[0] = seq;
    c->batch.block_table = c->big;
    c->batch.block_table_stride = stride;
    c->opts.split = ATTN_SPLIT_AUTO;
}
static void m_rc2(ctx *c) {
    c->rc[0] = 1, c->rc[1] = 2, c->rc[2] = 0;
    c->batch.req_causal = c->rc;
}
static void m_rc255(ctx *c) {
    c->rc[0] = 0, c->rc[1] = 0, c->rc[2] = 255;
    c->batch.req_causal = c->rc;
}
static void m_rc_mixed_ok(ctx *c) {
    c->rc[0] = 0, c->rc[1] = 1, c->rc[2] = 0;
    c->batch.req_causal = c->rc;
}
static void m_seq_over_limit(ctx *c) { big_table(c, ATTN_MAX_SEQ_LEN + 1); }
static void m_seq_at_limit(ctx *c) { big_table(c, ATTN_MAX_SEQ_LEN); }

/* ---- run-stage mutations ---- */
static void m_scr_short(ctx *c) { c->scratch_bytes = c->plan_bytes - 1; snprintf(c->needle, sizeof c->needle, "%zu", c->scratch_bytes); }
static void m_scr_zero(ctx *c) { c->scratch_bytes = 0; }
static void m_scr_null(ctx *c) { c->scratch = NULL; }
static void m_scr_mis8(ctx *c) { c->scratch = (unsigned char *)c->scratch + 8; }
static void m_scr_mis1(ctx *c) { c->scratch = (unsigned char *)c->scratch + 1; }
static void m_scr_mis32(ctx *c) { c->scratch = (unsigned char *)c->scratch + 32; }
static void m_lay16(ctx *c) { c->run_layer.num_heads = 16; c->t.num_heads = 16; }
static void m_lay4(ctx *c) { c->run_layer.num_heads = 4; c->t.num_heads = 4; }
static void m_lay12(ctx *c) { c->run_layer.num_heads = 12; c->t.num_heads = 12; }
static void m_t_heads(ctx *c) { c->t.num_heads = 16; }
static void m_t_dim(ctx *c) { c->t.head_dim = 32; }
static void m_t_tok(ctx *c) { c->t.num_tokens = 4; }
static void m_t_tok_more(ctx *c) { c->t.num_tokens = 6; }
static void m_t_kv(ctx *c) { c->t.num_kv_heads = 1; }
static void m_t_bs(ctx *c) { c->t.block_size = 16; }
static void m_t_nblk(ctx *c) { c->t.num_blocks = 5; }
static void m_t_qdt(ctx *c) { c->t.q_dtype = ATTN_DTYPE_BF16; }
static void m_t_kvdt(ctx *c) { c->t.kv_dtype = ATTN_DTYPE_F16; }
static void m_t_odt(ctx *c) { c->t.out_dtype = ATTN_DTYPE_BF16; }
static void m_t_q_null(ctx *c) { c->t.q = NULL; }
static void m_t_out_null(ctx *c) { c->t.out = NULL; }
static void m_t_k_null(ctx *c) { c->t.k_cache = NULL; }
static void m_t_v_null(ctx *c) { c->t.v_cache = NULL; }
static void m_rl_win0(ctx *c) { c->run_layer.window = 0; }
static void m_rl_win_neg(ctx *c) { c->run_layer.window = -9; }
static void m_rl_cap_nan(ctx *c) { c->run_layer.softcap = NAN; }
static void m_rl_wl_m3(ctx *c) { pair_on(&c->run_layer, -3, 0); }
static void m_rl_wr_no_pair(ctx *c) { c->run_layer.window_right = 9; }
static void m_rl_slope_inf(ctx *c) {
    for (int h = 0; h < HQ; h++) c->alibi_bad[h] = 0.5f;
    c->alibi_bad[2] = INFINITY;
    c->run_layer.alibi_slopes = c->alibi_bad;
}

static const row rows[] = {
    /* create */
    {"hq_not_multiple_of_hkv", CREATE, NULL, m_hq_not_multiple, ATTN_E_BAD_HEADS, "12"},
    {"zero_heads", CREATE, NULL, m_zero_heads, ATTN_E_BAD_HEADS, "0"},
    {"negative_heads", CREATE, NULL, m_neg_heads, ATTN_E_BAD_HEADS, "-6"},
    {"heads_over_limit", CREATE, NULL, m_heads_over, ATTN_E_BAD_HEADS, "1026"},
    {"zero_kv_heads", CREATE, NULL, m_zero_kv, ATTN_E_BAD_HEADS, "0"},
    {"kv_heads_over_limit", CREATE, NULL, m_kv_over, ATTN_E_BAD_HEADS, "1025"},
    {"empty_group_model_heads_0", CREATE, NULL, m_empty_group_zero_model, ATTN_E_BAD_HEADS, "0"},
    {"empty_group_model_heads_9_of_2", CREATE, NULL, m_empty_group_model_not_mult, ATTN_E_BAD_HEADS, "9"},
    {"mixed_heads", CREATE, NULL, m_mixed, ATTN_E_MIXED_HEADS, "{8, 16}"},
    {"head_dim_0", CREATE, NULL, m_d0, ATTN_E_BAD_HEAD_DIM, "0"},
    {"head_dim_over_limit", CREATE, NULL, m_d_over, ATTN_E_BAD_HEAD_DIM, "1025"},
    {"head_dim_negative", CREATE, NULL, m_d_neg, ATTN_E_BAD_HEAD_DIM, "-64"},
    {"block_size_0", CREATE, NULL, m_bs0, ATTN_E_BAD_BLOCK_SIZE, "0"},
    {"block_size_over_limit", CREATE, NULL, m_bs_over, ATTN_E_BAD_BLOCK_SIZE, "4097"},
    {"window_minus_2", CREATE, NULL, m_win_m2, ATTN_E_BAD_WINDOW, "-2"},
    {"window_0", CREATE, NULL, m_win_0, ATTN_E_BAD_WINDOW, "0"},
    {"window_over_max_seq_len", CREATE, NULL, m_win_over, ATTN_E_BAD_WINDOW, "268435457"},
    {"window_int32_min", CREATE, NULL, m_win_min, ATTN_E_BAD_WINDOW, "-2147483648"},
    {"q_dtype_fp8", CREATE, NULL, m_q_fp8, ATTN_E_BAD_DTYPE, "q_dtype = 3 (fp8e4m3)"},
    {"out_dtype_fp8", CREATE, NULL, m_out_fp8, ATTN_E_BAD_DTYPE, "out_dtype = 4 (fp8e5m2)"},
    {"fp8_k_scale_negative", CREATE, NULL, m_kscale_neg, ATTN_E_BAD_LAYER, "k_scale = -2"},
    {"fp8_v_scale_inf", CREATE, NULL, m_vscale_inf, ATTN_E_BAD_LAYER, "v_scale = inf"},
    {"scales_ignored_without_fp8", CREATE, NULL, m_kscale_f32_ignored, ATTN_OK, NULL},
    {"fp8_scales_valid", CREATE, NULL, m_scales_fp8_ok, ATTN_OK, NULL},
    {"window_left_minus_2", CREATE, NULL, m_wl_m2, ATTN_E_BAD_WINDOW, "window_left = -2"},
    {"window_right_minus_5", CREATE, NULL, m_wr_m5, ATTN_E_BAD_WINDOW, "window_right = -5"},
    {"window_left_over_max", CREATE, NULL, m_wl_over, ATTN_E_BAD_WINDOW, "window_left = 268435457"},
    {"window_right_int32_min", CREATE, NULL, m_wr_min, ATTN_E_BAD_WINDOW, "window_right = -2147483648"},
    {"window_pair_2", CREATE, NULL, m_wpair2, ATTN_E_BAD_WINDOW, "window_pair = 2"},
    {"window_pair_and_window", CREATE, NULL, m_wpair_and_window, ATTN_E_BAD_WINDOW, "window = 7 and window_pair = 1"},
    {"window_left_without_pair", CREATE, NULL, m_wl_no_pair, ATTN_E_BAD_WINDOW, "window_left = 3"},
    {"window_right_without_pair", CREATE, NULL, m_wr_no_pair, ATTN_E_BAD_WINDOW, "window_right = -1"},
    {"window_pairs_valid", CREATE, NULL, m_wpair_ok, ATTN_OK, NULL},
    {"softcap_negative", CREATE, NULL, m_cap_neg, ATTN_E_BAD_LAYER, "-3.5"},
    {"softcap_nan", CREATE, NULL, m_cap_nan, ATTN_E_BAD_LAYER, "nan"},
    {"softcap_inf", CREATE, NULL, m_cap_inf, ATTN_E_BAD_LAYER, "inf"},
    {"scale_negative", CREATE, NULL, m_scale_neg, ATTN_E_BAD_LAYER, "-0.25"},
    {"scale_nan", CREATE, NULL, m_scale_nan, ATTN_E_BAD_LAYER, "nan"},
    {"alibi_slope_nan", CREATE, NULL, m_alibi_nan, ATTN_E_BAD_LAYER, "nan"},
    {"sink_minus_inf", CREATE, NULL, m_sink_inf, ATTN_E_BAD_LAYER, "inf"},
    {"threads_0", CREATE, NULL, m_thr0, ATTN_E_BAD_THREADS, "0"},
    {"threads_negative", CREATE, NULL, m_thr_neg, ATTN_E_BAD_THREADS, "-4"},
    {"threads_over_limit", CREATE, NULL, m_thr_over, ATTN_E_BAD_THREADS, "257"},
    {"q_dtype_9", CREATE, NULL, m_qdt, ATTN_E_BAD_DTYPE, "9"},
    {"kv_dtype_minus_1", CREATE, NULL, m_kvdt, ATTN_E_BAD_DTYPE, "-1"},
    {"out_dtype_count", CREATE, NULL, m_outdt, ATTN_E_BAD_DTYPE, "5"},
    {"isa_unknown", CREATE, NULL, m_isa, ATTN_E_BAD_ISA, "sse9"},
    {"isa_unknown_2", CREATE, NULL, m_isa_empty, ATTN_E_BAD_ISA, "avx9000"},
    {"layers_null_with_2_layers", CREATE, NULL, m_layers_null, ATTN_E_NULL_ARG, NULL},
    /* build */
    {"num_reqs_0", BUILD, NULL, m_nreq0, ATTN_E_BAD_BATCH, "0"},
    {"req_causal_2", BUILD, NULL, m_rc2, ATTN_E_BAD_BATCH, "req_causal[1] = 2"},
    {"req_causal_255", BUILD, NULL, m_rc255, ATTN_E_BAD_BATCH, "req_causal[2] = 255"},
    {"req_causal_mixed_valid", BUILD, NULL, m_rc_mixed_ok, ATTN_OK, NULL},
    {"num_reqs_negative", BUILD, NULL, m_nreq_neg, ATTN_E_BAD_BATCH, "-2"},
    {"num_reqs_over_limit", BUILD, NULL, m_nreq_over, ATTN_E_BAD_BATCH, "1048577"},
    {"query_start_loc_0_not_0", BUILD, NULL, m_qsl0, ATTN_E_BAD_BATCH, "1"},
    {"query_start_loc_flat", BUILD, NULL, m_qsl_flat, ATTN_E_BAD_BATCH, NULL},
    {"query_start_loc_decreasing", BUILD, NULL, m_qsl_down, ATTN_E_BAD_BATCH, NULL},
    {"query_start_loc_wraps", BUILD, NULL, m_qsl_wrap, ATTN_E_BAD_BATCH, "-2147483648"},
    {"seq_len_lt_q_len", BUILD, NULL, m_seq_lt_q, ATTN_E_BAD_SEQ_LEN, "2"},
    {"seq_len_negative", BUILD, NULL, m_seq_neg, ATTN_E_BAD_SEQ_LEN, "-5"},
    {"seq_len_over_limit", BUILD, p_bs4096, m_seq_over_limit, ATTN_E_BAD_SEQ_LEN, "268435457"},
    {"seq_len_at_limit_ok", BUILD, p_bs4096, m_seq_at_limit, ATTN_OK, NULL},
    {"block_id_1000", BUILD, NULL, m_blk_big, ATTN_E_BAD_BLOCK_TABLE, "1000"},
    {"block_id_eq_num_blocks", BUILD, NULL, m_blk_eq, ATTN_E_BAD_BLOCK_TABLE, "8"},
    {"block_id_negative", BUILD, NULL, m_blk_neg, ATTN_E_BAD_BLOCK_TABLE, "-3"},
    {"stride_too_small", BUILD, NULL, m_stride_small, ATTN_E_BAD_BLOCK_TABLE, "2"},
    {"stride_0", BUILD, NULL, m_stride0, ATTN_E_BAD_BLOCK_TABLE, "0"},
    {"stride_negative", BUILD, NULL, m_stride_neg, ATTN_E_BAD_BLOCK_TABLE, "-4"},
    {"num_blocks_0", BUILD, NULL, m_nblk0, ATTN_E_BAD_BLOCK_TABLE, "0"},
    {"num_blocks_negative", BUILD, NULL, m_nblk_neg, ATTN_E_BAD_BLOCK_TABLE, "-1"},
    {"unused_table_entries_minus_1_ok", BUILD, NULL, m_pad_neg_ok, ATTN_OK, NULL},
    {"split_mode_4", BUILD, NULL, m_split_bad, ATTN_E_BAD_OPTION, "4"},
    {"split_mode_negative", BUILD, NULL, m_split_neg, ATTN_E_BAD_OPTION, "-1"},
    {"split_fixed_0", BUILD, NULL, m_fixed0, ATTN_E_BAD_OPTION, "0"},
    {"split_fixed_65", BUILD, NULL, m_fixed_over, ATTN_E_BAD_OPTION, "65"},
    {"split_fixed_negative", BUILD, NULL, m_fixed_neg, ATTN_E_BAD_OPTION, "-7"},
    {"split_auto_count_ignored_ok", BUILD, NULL, m_auto_count_ignored, ATTN_OK, NULL},
    {"redzone_not_multiple_of_64", BUILD, NULL, m_rz_unaligned, ATTN_E_BAD_OPTION, "96"},
    {"redzone_over_limit", BUILD, NULL, m_rz_over, ATTN_E_BAD_OPTION, "1048640"},
    {"redzone_at_limit_ok", BUILD, NULL, m_rz_max_ok, ATTN_OK, NULL},
    {"batch_query_start_loc_null", BUILD, NULL, m_batch_qsl_null, ATTN_E_NULL_ARG, NULL},
    {"batch_seq_lens_null", BUILD, NULL, m_batch_seq_null, ATTN_E_NULL_ARG, NULL},
    {"batch_block_table_null", BUILD, NULL, m_batch_bt_null, ATTN_E_NULL_ARG, NULL},
    /* run */
    {"scratch_one_byte_short", RUN, NULL, m_scr_short, ATTN_E_SCRATCH_TOO_SMALL, NULL /* runtime */},
    {"scratch_zero_bytes", RUN, NULL, m_scr_zero, ATTN_E_SCRATCH_TOO_SMALL, "0"},
    {"scratch_null", RUN, NULL, m_scr_null, ATTN_E_NULL_ARG, NULL},
    {"scratch_misaligned_8", RUN, NULL, m_scr_mis8, ATTN_E_SCRATCH_ALIGN, NULL},
    {"scratch_misaligned_1", RUN, NULL, m_scr_mis1, ATTN_E_SCRATCH_ALIGN, NULL},
    {"scratch_misaligned_32", RUN, NULL, m_scr_mis32, ATTN_E_SCRATCH_ALIGN, NULL},
    {"layer_16_heads_on_8_head_plan", RUN, NULL, m_lay16, ATTN_E_LAYER_MISMATCH, "16"},
    {"layer_4_heads_on_8_head_plan", RUN, NULL, m_lay4, ATTN_E_LAYER_MISMATCH, "4"},
    {"layer_12_heads_on_8_head_plan", RUN, NULL, m_lay12, ATTN_E_LAYER_MISMATCH, "12"},
    {"tensors_num_heads", RUN, NULL, m_t_heads, ATTN_E_TENSOR_MISMATCH, "16"},
    {"tensors_head_dim", RUN, NULL, m_t_dim, ATTN_E_TENSOR_MISMATCH, "32"},
    {"tensors_num_tokens_fewer", RUN, NULL, m_t_tok, ATTN_E_TENSOR_MISMATCH, "4"},
    {"tensors_num_tokens_more", RUN, NULL, m_t_tok_more, ATTN_E_TENSOR_MISMATCH, "6"},
    {"tensors_num_kv_heads", RUN, NULL, m_t_kv, ATTN_E_TENSOR_MISMATCH, "1"},
    {"tensors_block_size", RUN, NULL, m_t_bs, ATTN_E_TENSOR_MISMATCH, "16"},
    {"tensors_num_blocks", RUN, NULL, m_t_nblk, ATTN_E_TENSOR_MISMATCH, "5"},
    {"tensors_q_dtype", RUN, NULL, m_t_qdt, ATTN_E_TENSOR_MISMATCH, "q_dtype|1"},
    {"tensors_kv_dtype", RUN, NULL, m_t_kvdt, ATTN_E_TENSOR_MISMATCH, "kv_dtype|2"},
    {"tensors_out_dtype", RUN, NULL, m_t_odt, ATTN_E_TENSOR_MISMATCH, "out_dtype|1"},
    {"tensors_q_null", RUN, NULL, m_t_q_null, ATTN_E_NULL_ARG, NULL},
    {"tensors_out_null", RUN, NULL, m_t_out_null, ATTN_E_NULL_ARG, NULL},
    {"tensors_k_cache_null", RUN, NULL, m_t_k_null, ATTN_E_NULL_ARG, NULL},
    {"tensors_v_cache_null", RUN, NULL, m_t_v_null, ATTN_E_NULL_ARG, NULL},
    {"run_layer_window_0", RUN, NULL, m_rl_win0, ATTN_E_BAD_WINDOW, "0"},
    {"run_layer_window_minus_9", RUN, NULL, m_rl_win_neg, ATTN_E_BAD_WINDOW, "-9"},
    {"run_layer_window_left_minus_3", RUN, NULL, m_rl_wl_m3, ATTN_E_BAD_WINDOW, "window_left = -3"},
    {"run_layer_window_right_without_pair", RUN, NULL, m_rl_wr_no_pair, ATTN_E_BAD_WINDOW, "window_right = 9"},
    {"run_layer_softcap_nan", RUN, NULL, m_rl_cap_nan, ATTN_E_BAD_LAYER, "nan"},
    {"run_layer_alibi_inf", RUN, NULL, m_rl_slope_inf, ATTN_E_BAD_LAYER, "inf"},
};

#define SENT_B ((attn_builder *)(uintptr_t)0xb0b0)
#define SENT_P ((attn_plan *)(uintptr_t)0xb1a0)

static void check_err(const row *r, attn_status st, const attn_error *err, const ctx *c) {
    cr_assert_eq(st, r->want, "row %s: status %s, want %s (message \"%s\")", r->name, attn_status_name(st),
                 attn_status_name(r->want), err->message);
    cr_assert_eq(err->status, r->want, "row %s: err.status %s", r->name, attn_status_name(err->status));
    cr_assert(memchr(err->message, '\0', sizeof err->message) != NULL, "row %s: unterminated message", r->name);
    if (r->want == ATTN_OK) {
        cr_assert_eq(err->message[0], '\0', "row %s: message on success \"%s\"", r->name, err->message);
        return;
    }
    cr_assert_neq(err->message[0], '\0', "row %s: empty message", r->name);
    const char *needle = c->needle[0] ? c->needle : r->needle;
    while (needle && *needle) {
        char one[64];
        size_t len = strcspn(needle, "|");
        snprintf(one, sizeof one, "%.*s", (int)len, needle);
        cr_assert(strcasestr(err->message, one) != NULL, "row %s: message \"%s\" does not name \"%s\"",
                  r->name, err->message, one);
        needle += len;
        if (*needle == '|') needle++;
    }
}

static void run_row(const row *r) {
    ctx c;
    ctx_init(&c);
    if (r->pre) r->pre(&c);
    attn_error err;
    if (r->stage == CREATE) r->mut(&c);
    attn_builder *b = SENT_B;
    memset(&err, 0x33, sizeof err);
    attn_status st = attn_builder_create(&c.g, &b, &err);
    if (r->stage == CREATE) {
        check_err(r, st, &err, &c);
        if (r->want != ATTN_OK) {
            cr_assert_eq(b, SENT_B, "row %s: builder out written on failure", r->name);
            attn_builder *b2 = SENT_B;
            cr_assert_eq(attn_builder_create(&c.g, &b2, NULL), r->want, "row %s: err=NULL", r->name);
            cr_assert_eq(b2, SENT_B, "row %s: builder out written (err NULL)", r->name);
        } else {
            attn_builder_destroy(b);
        }
        ctx_free(&c);
        return;
    }
    cr_assert_eq(st, ATTN_OK, "row %s: base create failed: %s", r->name, err.message);
    if (r->stage == BUILD) r->mut(&c);
    attn_plan *p = SENT_P;
    memset(&err, 0x33, sizeof err);
    st = attn_builder_build(b, &c.batch, &c.opts, &p, &err);
    if (r->stage == BUILD) {
        check_err(r, st, &err, &c);
        if (r->want != ATTN_OK) {
            cr_assert_eq(p, SENT_P, "row %s: plan out written on failure", r->name);
            attn_plan *p2 = SENT_P;
            cr_assert_eq(attn_builder_build(b, &c.batch, &c.opts, &p2, NULL), r->want, "row %s: err=NULL", r->name);
            cr_assert_eq(p2, SENT_P, "row %s: plan out written (err NULL)", r->name);
        } else {
            cr_assert_neq(p, SENT_P);
            size_t bytes = 0;
            cr_assert_eq(attn_plan_scratch_size(p, &bytes, NULL), ATTN_OK, "row %s", r->name);
            attn_plan_destroy(p);
        }
        attn_builder_destroy(b);
        ctx_free(&c);
        return;
    }
    cr_assert_eq(st, ATTN_OK, "row %s: base build failed: %s", r->name, err.message);
    cr_assert_eq(attn_plan_scratch_size(p, &c.plan_bytes, NULL), ATTN_OK);
    c.scratch_base = aligned_alloc(64, ((c.plan_bytes + 64) + 63) & ~(size_t)63);
    memset(c.scratch_base, 0, ((c.plan_bytes + 64) + 63) & ~(size_t)63);
    c.scratch = c.scratch_base;
    c.scratch_bytes = c.plan_bytes;
    /* the base run works */
    memset(&err, 0x33, sizeof err);
    st = attn_run(p, &c.run_layer, &c.t, c.scratch, c.scratch_bytes, &err);
    cr_assert_eq(st, ATTN_OK, "row %s: base run failed: %s (%s)", r->name, attn_status_name(st), err.message);
    cr_assert_eq(err.status, ATTN_OK);
    memset(c.out, 0x5a, (size_t)NTOK * 16 * DIM * sizeof(float));
    r->mut(&c);
    memset(&err, 0x33, sizeof err);
    st = attn_run(p, &c.run_layer, &c.t, c.scratch, c.scratch_bytes, &err);
    check_err(r, st, &err, &c);
    for (size_t i = 0; i < (size_t)NTOK * 16 * DIM; i++) {
        uint32_t u;
        memcpy(&u, &c.out[i], 4);
        cr_assert_eq(u, 0x5a5a5a5au, "row %s: output element %zu written by a refused run", r->name, i);
    }
    cr_assert_eq(attn_run(p, &c.run_layer, &c.t, c.scratch, c.scratch_bytes, NULL), r->want,
                 "row %s: err=NULL", r->name);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    ctx_free(&c);
}

/* The parameter is the row index: Criterion 2.4.1 copies parameters into
 * the re-exec'd test process, where the rows' pointers would be stale. */
#define NROWS ((int)(sizeof rows / sizeof rows[0]))
static int row_index[NROWS];

ParameterizedTestParameters(invalid, table) {
    for (int i = 0; i < NROWS; i++) row_index[i] = i;
    return cr_make_param_array(int, row_index, NROWS);
}

ParameterizedTest(int *ri, invalid, table, .timeout = 30) {
    run_row(&rows[*ri]);
}

/* ---- NULL for every pointer argument of every public function ---- */

#define EXPECT_NULL_ARG(call, what)                                                                      \
    do {                                                                                                \
        attn_error e_;                                                                                  \
        memset(&e_, 0x33, sizeof e_);                                                                   \
        attn_status s_ = (call);                                                                        \
        cr_assert_eq(s_, ATTN_E_NULL_ARG, "%s: %s, want ATTN_E_NULL_ARG", what, attn_status_name(s_)); \
        cr_assert_eq(e_.status, ATTN_E_NULL_ARG, "%s: err.status", what);                               \
        cr_assert(memchr(e_.message, '\0', sizeof e_.message) && e_.message[0], "%s: message", what);   \
    } while (0)

Test(invalid, null_pointer_arguments) {
    ctx c;
    ctx_init(&c);
    attn_builder *b = NULL;
    cr_assert_eq(attn_builder_create(&c.g, &b, NULL), ATTN_OK);
    attn_plan *p = NULL;
    cr_assert_eq(attn_builder_build(b, &c.batch, &c.opts, &p, NULL), ATTN_OK);
    size_t bytes = 0;
    cr_assert_eq(attn_plan_scratch_size(p, &bytes, NULL), ATTN_OK);
    void *scr = tu_aligned(bytes);
    attn_builder *bs = SENT_B;
    attn_plan *ps = SENT_P;
    attn_builder_info bi;
    attn_plan_info pi;
    const attn_region *rg = (const attn_region *)(uintptr_t)0x77;
    const attn_work_item *it = (const attn_work_item *)(uintptr_t)0x77;
    const attn_reduction *rd = (const attn_reduction *)(uintptr_t)0x77;
    size_t cnt = 12345, sz = 12345;
    size_t ext[256];
    const attn_region *rr;
    size_t nreg;
    cr_assert_eq(attn_plan_regions(p, &rr, &nreg, NULL), ATTN_OK);
    cr_assert_leq(nreg, 256);

    EXPECT_NULL_ARG(attn_builder_create(NULL, &bs, &e_), "create(group NULL)");
    EXPECT_NULL_ARG(attn_builder_create(&c.g, NULL, &e_), "create(out NULL)");
    EXPECT_NULL_ARG(attn_builder_get_info(NULL, &bi, &e_), "get_info(builder NULL)");
    EXPECT_NULL_ARG(attn_builder_get_info(b, NULL, &e_), "get_info(out NULL)");
    EXPECT_NULL_ARG(attn_builder_build(NULL, &c.batch, NULL, &ps, &e_), "build(builder NULL)");
    EXPECT_NULL_ARG(attn_builder_build(b, NULL, NULL, &ps, &e_), "build(batch NULL)");
    EXPECT_NULL_ARG(attn_builder_build(b, &c.batch, NULL, NULL, &e_), "build(out NULL)");
    EXPECT_NULL_ARG(attn_plan_scratch_size(NULL, &sz, &e_), "scratch_size(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_scratch_size(p, NULL, &e_), "scratch_size(out NULL)");
    EXPECT_NULL_ARG(attn_plan_regions(NULL, &rg, &cnt, &e_), "regions(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_regions(p, NULL, &cnt, &e_), "regions(regions NULL)");
    EXPECT_NULL_ARG(attn_plan_regions(p, &rg, NULL, &e_), "regions(count NULL)");
    EXPECT_NULL_ARG(attn_plan_items(NULL, &it, &cnt, &e_), "items(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_items(p, NULL, &cnt, &e_), "items(items NULL)");
    EXPECT_NULL_ARG(attn_plan_items(p, &it, NULL, &e_), "items(count NULL)");
    EXPECT_NULL_ARG(attn_plan_reductions(NULL, &rd, &cnt, &e_), "reductions(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_reductions(p, NULL, &cnt, &e_), "reductions(reds NULL)");
    EXPECT_NULL_ARG(attn_plan_reductions(p, &rd, NULL, &e_), "reductions(count NULL)");
    EXPECT_NULL_ARG(attn_plan_get_info(NULL, &pi, &e_), "plan_get_info(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_get_info(p, NULL, &e_), "plan_get_info(out NULL)");
    EXPECT_NULL_ARG(attn_plan_layer_extents(NULL, &c.layers[0], DIM, ext, nreg, &e_), "extents(plan NULL)");
    EXPECT_NULL_ARG(attn_plan_layer_extents(p, NULL, DIM, ext, nreg, &e_), "extents(layer NULL)");
    EXPECT_NULL_ARG(attn_plan_layer_extents(p, &c.layers[0], DIM, NULL, nreg, &e_), "extents(extents NULL)");
    EXPECT_NULL_ARG(attn_run(NULL, &c.run_layer, &c.t, scr, bytes, &e_), "run(plan NULL)");
    EXPECT_NULL_ARG(attn_run(p, NULL, &c.t, scr, bytes, &e_), "run(layer NULL)");
    EXPECT_NULL_ARG(attn_run(p, &c.run_layer, NULL, scr, bytes, &e_), "run(tensors NULL)");
    EXPECT_NULL_ARG(attn_run(p, &c.run_layer, &c.t, NULL, bytes, &e_), "run(scratch NULL)");

    attn_kv_desc kv = {HKV, DIM, BS, ATTN_DTYPE_F32};
    float key[HKV * DIM] = {0}, val[HKV * DIM] = {0};
    int64_t slot[1] = {3};
    EXPECT_NULL_ARG(attn_reshape_and_cache(NULL, NBLK, key, val, 1, slot, c.kc, c.vc, &e_), "reshape(kv NULL)");
    EXPECT_NULL_ARG(attn_reshape_and_cache(&kv, NBLK, NULL, val, 1, slot, c.kc, c.vc, &e_), "reshape(key NULL)");
    EXPECT_NULL_ARG(attn_reshape_and_cache(&kv, NBLK, key, NULL, 1, slot, c.kc, c.vc, &e_), "reshape(value NULL)");
    EXPECT_NULL_ARG(attn_reshape_and_cache(&kv, NBLK, key, val, 1, NULL, c.kc, c.vc, &e_), "reshape(slots NULL)");
    EXPECT_NULL_ARG(attn_reshape_and_cache(&kv, NBLK, key, val, 1, slot, NULL, c.vc, &e_), "reshape(k_cache NULL)");
    EXPECT_NULL_ARG(attn_reshape_and_cache(&kv, NBLK, key, val, 1, slot, c.kc, NULL, &e_), "reshape(v_cache NULL)");

    /* out-parameters untouched by all of the above */
    cr_assert_eq(bs, SENT_B);
    cr_assert_eq(ps, SENT_P);
    cr_assert_eq(sz, 12345);
    cr_assert_eq(cnt, 12345);
    cr_assert_eq(rg, (const attn_region *)(uintptr_t)0x77);
    cr_assert_eq(it, (const attn_work_item *)(uintptr_t)0x77);
    cr_assert_eq(rd, (const attn_reduction *)(uintptr_t)0x77);
    /* destroy is NULL-safe */
    attn_plan_destroy(NULL);
    attn_builder_destroy(NULL);
    free(scr);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    ctx_free(&c);
}

/* reshape_and_cache: a malformed KV spec gets its own status. */
Test(invalid, reshape_bad_spec) {
    float key[4] = {0}, val[4] = {0}, kc[64], vc[64];
    int64_t slot[1] = {0};
    attn_kv_desc kv = {1, 0, 4, ATTN_DTYPE_F32};
    attn_error err;
    cr_assert_eq(attn_reshape_and_cache(&kv, 4, key, val, 1, slot, kc, vc, &err), ATTN_E_BAD_HEAD_DIM, "%s",
                 err.message);
    kv.head_dim = 4;
    kv.block_size = 0;
    cr_assert_eq(attn_reshape_and_cache(&kv, 4, key, val, 1, slot, kc, vc, &err), ATTN_E_BAD_BLOCK_SIZE, "%s",
                 err.message);
    kv.block_size = 4;
    kv.num_kv_heads = 0;
    cr_assert_eq(attn_reshape_and_cache(&kv, 4, key, val, 1, slot, kc, vc, &err), ATTN_E_BAD_HEADS, "%s",
                 err.message);
    kv.num_kv_heads = 1;
    kv.dtype = (attn_dtype)5;
    cr_assert_eq(attn_reshape_and_cache(&kv, 4, key, val, 1, slot, kc, vc, &err), ATTN_E_BAD_DTYPE, "%s",
                 err.message);
}

/* Non-causal window at its largest accepted value (the engine refuses
 * windows above ATTN_MAX_SEQ_LEN): no overflow in p +- (W - 1), and the
 * result equals the unwindowed one. */
Test(invalid, window_max_noncausal) {
    ctx c;
    ctx_init(&c);
    c.layers[0].window = ATTN_MAX_SEQ_LEN;
    c.layers[1].window = -1;
    c.batch.causal = 0;
    attn_builder *b = NULL;
    attn_error err;
    cr_assert_eq(attn_builder_create(&c.g, &b, &err), ATTN_OK, "%s", err.message);
    attn_plan *p = NULL;
    cr_assert_eq(attn_builder_build(b, &c.batch, &c.opts, &p, &err), ATTN_OK, "%s", err.message);
    size_t bytes = 0;
    attn_plan_scratch_size(p, &bytes, NULL);
    void *scr = tu_aligned(bytes);
    size_t n = (size_t)NTOK * HQ * DIM;
    float *o1 = malloc(n * 4), *o2 = malloc(n * 4);
    attn_tensors t = c.t;
    t.out = o1;
    cr_assert_eq(attn_run(p, &c.layers[0], &t, scr, bytes, &err), ATTN_OK, "%s", err.message);
    t.out = o2;
    cr_assert_eq(attn_run(p, &c.layers[1], &t, scr, bytes, &err), ATTN_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabsf(o1[i] - o2[i]) <= 1e-5f && o1[i] == o1[i], "element %zu: window MAX_SEQ_LEN %g vs none %g",
                  i, o1[i], o2[i]);
    free(o1); free(o2); free(scr);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    ctx_free(&c);
}

/* ---- allocation failure at every allocation ---- */

static attn_status alloc_sequence(tu_counter *cnt, int *failed_stage) {
    ctx c;
    ctx_init(&c);
    attn_allocator a = tu_counting_allocator(cnt);
    c.g.allocator = &a;
    attn_builder *b = SENT_B;
    attn_plan *p = SENT_P;
    attn_error err;
    *failed_stage = -1;
    attn_status st = attn_builder_create(&c.g, &b, &err);
    if (st != ATTN_OK) {
        *failed_stage = 0;
        cr_assert_eq(b, SENT_B, "create failed but wrote the builder");
        ctx_free(&c);
        return st;
    }
    st = attn_builder_build(b, &c.batch, &c.opts, &p, &err);
    if (st != ATTN_OK) {
        *failed_stage = 1;
        cr_assert_eq(p, SENT_P, "build failed but wrote the plan");
        attn_builder_destroy(b);
        ctx_free(&c);
        return st;
    }
    size_t bytes = 0;
    attn_plan_scratch_size(p, &bytes, NULL);
    void *scr = tu_aligned(bytes);
    st = attn_run(p, &c.run_layer, &c.t, scr, bytes, &err);
    if (st != ATTN_OK) *failed_stage = 2;
    free(scr);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    ctx_free(&c);
    return st;
}

Test(invalid, allocation_failure_every_n, .timeout = 60) {
    tu_counter ok = {0};
    int stage;
    cr_assert_eq(alloc_sequence(&ok, &stage), ATTN_OK);
    cr_assert_geq(ok.allocs, 2, "the engine made %ld allocations through the caller's allocator "
                  "(builder + plan at least)", ok.allocs);
    cr_assert_eq(ok.live, 0, "success path leaks: %ld allocs, %ld frees", ok.allocs, ok.frees);
    long total = ok.calls;
    for (long n = 1; n <= total; n++) {
        tu_counter cnt = {0};
        cnt.fail_at = n;
        attn_status st = alloc_sequence(&cnt, &stage);
        cr_assert_eq(st, ATTN_E_NO_MEMORY, "allocation %ld of %ld failing: sequence returned %s (stage %d)", n,
                     total, attn_status_name(st), stage);
        cr_assert_eq(cnt.live, 0, "allocation %ld of %ld failing (stage %d): %ld allocs, %ld frees -> leak", n,
                     total, stage, cnt.allocs, cnt.frees);
    }
    /* and an allocator that refuses everything */
    tu_counter none = {0};
    none.limit = 0;
    none.fail_at = 1;
    cr_assert_eq(alloc_sequence(&none, &stage), ATTN_E_NO_MEMORY);
    cr_assert_eq(stage, 0, "create succeeded without its first allocation");
}

/* The seed bug's situation at run time: a plan built for the 48-head group
 * is handed a 64-head (Laguna XS sliding-window) layer with matching
 * tensors.  It must be refused before any kernel runs, naming both counts. */
Test(invalid, laguna_64_head_layer_on_48_head_plan) {
    attn_layer_desc l48[2] = {tu_layer(48, -1), tu_layer(48, -1)};
    attn_group_desc g = tu_group(l48, 2, 8, 128, 16, 2);
    attn_builder *b = NULL;
    attn_error err;
    cr_assert_eq(attn_builder_create(&g, &b, &err), ATTN_OK, "%s", err.message);
    int32_t q[2] = {1, 1}, kv[2] = {700, 5};
    tu_batch tb;
    cr_assert_eq(tu_batch_init(&tb, 2, q, kv, 16, 1, 3), 0);
    attn_plan_opts o = {ATTN_SPLIT_FIXED, 2, 0};
    attn_plan *p = NULL;
    cr_assert_eq(attn_builder_build(b, &tb.b, &o, &p, &err), ATTN_OK, "%s", err.message);
    size_t bytes = 0;
    attn_plan_scratch_size(p, &bytes, NULL);
    unsigned char *scr = tu_aligned(bytes);
    memset(scr, 0xcb, bytes);
    size_t qn = (size_t)tb.num_tokens * 64 * 128, cn = (size_t)tb.b.num_blocks * 8 * 16 * 128;
    float *qb = calloc(qn, 4), *out = malloc(qn * 4), *kc = calloc(cn, 4), *vc = calloc(cn, 4);
    memset(out, 0x5a, qn * 4);
    attn_layer_desc l64 = tu_layer(64, 512);
    attn_tensors t = {qb, out, kc, vc, tb.num_tokens, 64, 128, tb.b.num_blocks, 8, 16,
                      ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F32};
    attn_status st = attn_run(p, &l64, &t, scr, bytes, &err);
    cr_assert_eq(st, ATTN_E_LAYER_MISMATCH, "64-head layer on a 48-head plan: %s (%s)", attn_status_name(st),
                 err.message);
    cr_assert(strstr(err.message, "64") && strstr(err.message, "48"), "message \"%s\" should name 64 and 48",
              err.message);
    for (size_t i = 0; i < bytes; i++) cr_assert_eq(scr[i], 0xcb, "scratch byte %zu written by a refused run", i);
    for (size_t i = 0; i < qn * 4; i++)
        cr_assert_eq(((unsigned char *)out)[i], 0x5a, "output byte %zu written by a refused run", i);
    free(qb); free(out); free(kc); free(vc); free(scr);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    tu_batch_free(&tb);
}

/* A plan of a group whose layers share a window bounds its key ranges by
 * it: a layer with another window does not fit the plan and is refused;
 * the same window spelled as a pair fits. */
Test(invalid, layer_window_outside_group_window) {
    attn_layer_desc l[2] = {tu_layer(8, 7), tu_layer(8, 7)};
    attn_group_desc g = tu_group(l, 2, 2, 32, 16, 1);
    attn_builder *b = NULL;
    cr_assert_eq(attn_builder_create(&g, &b, NULL), ATTN_OK);
    const int32_t q[2] = {1, 4}, kv[2] = {40, 4};
    uint8_t rc[2] = {1, 0};
    tu_batch tb;
    cr_assert_eq(tu_batch_init(&tb, 2, q, kv, 16, 1, 0), 0);
    tb.b.req_causal = rc;
    attn_plan *p = NULL;
    cr_assert_eq(attn_builder_build(b, &tb.b, NULL, &p, NULL), ATTN_OK);
    size_t bytes = 0;
    attn_plan_scratch_size(p, &bytes, NULL);
    void *scratch = tu_aligned(bytes);
    const size_t n = 5 * 8 * 32;
    float *qv = calloc(n, sizeof(float)), *out = calloc(n, sizeof(float));
    float *kc = calloc((size_t)tb.b.num_blocks * 2 * 16 * 32, sizeof(float));
    attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = qv, t.out = out, t.k_cache = kc, t.v_cache = kc;
    t.num_tokens = 5, t.num_heads = 8, t.head_dim = 32, t.num_blocks = tb.b.num_blocks;
    t.num_kv_heads = 2, t.block_size = 16;
    attn_error err;
    attn_layer_desc other = tu_layer(8, 9);
    cr_assert_eq(attn_run(p, &other, &t, scratch, bytes, &err), ATTN_E_LAYER_MISMATCH);
    cr_assert(strstr(err.message, "window 9") && strstr(err.message, "group's window 7"), "%s",
              err.message);
    other = tu_layer(8, -1);
    cr_assert_eq(attn_run(p, &other, &t, scratch, bytes, &err), ATTN_E_LAYER_MISMATCH);
    other = tu_layer(8, -1);
    other.window_pair = 1, other.window_left = 6, other.window_right = 6;
    cr_assert_eq(attn_run(p, &other, &t, scratch, bytes, &err), ATTN_OK, "%s", err.message);
    other.window_right = 5; /* differs for the non-causal request */
    cr_assert_eq(attn_run(p, &other, &t, scratch, bytes, &err), ATTN_E_LAYER_MISMATCH);
    cr_assert_eq(attn_run(p, &l[1], &t, scratch, bytes, &err), ATTN_OK, "%s", err.message);
    free(qv), free(out), free(kc), free(scratch);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    tu_batch_free(&tb);
}
