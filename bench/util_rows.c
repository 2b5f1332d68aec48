/*
 * bench/util_rows.c — see util_rows.h: the rows, their names, their work
 * and each as a harness case.  Their inputs and fp64 reference are
 * run_inputs.c's; running them is run_rows.c's.
 * Shapes: decode B requests x 4096 keys, Hq 32 over Hkv 8, D 128; causal
 * prefill L 2048, Hq 32, Hkv 32 or 8, D 128;
 * the Laguna XS batch (8 KV heads, D 128, bf16; a group of 48 heads with
 * full attention and one of 64 heads with window 512, each with its own
 * KV cache, over 6 decodes at 4096 keys and one 512-token chunk ending at
 * 4096).  Values uniform in [-1, 1) (the case format's default), rounded
 * to each dtype.
 */
#include "util_rows.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define KV_LEN 4096
#define HEAD_DIM 128
#define PREFILL_LEN 2048
#define LAGUNA_DECODES 6
#define LAGUNA_CHUNK 512
#define LAGUNA_WINDOW 512

/* Per thread count, in this order; the names (row_name) are what the
 * reports and scripts key on. */
const row_spec bench_rows[] = {
    {"decode1", ROW_DECODE, 1, AG_F32, 8, 16, 1},   {"decode1", ROW_DECODE, 1, AG_F32, 8, 16, 0},
    {"decode8", ROW_DECODE, 8, AG_F32, 8, 16, 1},   {"decode8", ROW_DECODE, 8, AG_F32, 8, 16, 0},
    {"prefill", ROW_PREFILL, 1, AG_F32, 32, 16, 0}, {"prefill", ROW_PREFILL, 1, AG_F32, 8, 16, 0},
    {"decode1", ROW_DECODE, 1, AG_F16, 8, 16, 1},   {"decode1", ROW_DECODE, 1, AG_F16, 8, 16, 0},
    {"decode8", ROW_DECODE, 8, AG_F16, 8, 16, 1},   {"decode8", ROW_DECODE, 8, AG_F16, 8, 16, 0},
    {"prefill", ROW_PREFILL, 1, AG_F16, 32, 16, 0}, {"prefill", ROW_PREFILL, 1, AG_F16, 8, 16, 0},
    {"decode1", ROW_DECODE, 1, AG_BF16, 8, 16, 1},  {"decode1", ROW_DECODE, 1, AG_BF16, 8, 16, 0},
    {"decode8", ROW_DECODE, 8, AG_BF16, 8, 16, 1},  {"decode8", ROW_DECODE, 8, AG_BF16, 8, 16, 0},
    /* block 32: 8 KiB pieces instead of 4 KiB, where the prefetchers
     * restart half as often */
    {"decode8", ROW_DECODE, 8, AG_BF16, 8, 32, 1},
    {"prefill", ROW_PREFILL, 1, AG_BF16, 32, 16, 0},
    {"prefill", ROW_PREFILL, 1, AG_BF16, 8, 16, 0},
    {"fp8", ROW_DECODE, 8, AG_FP8_E4M3, 8, 16, 1},
    {"fp8", ROW_DECODE, 8, AG_FP8_E5M2, 8, 16, 1},
    {"laguna", ROW_LAGUNA, 7, AG_BF16, 8, 16, 1},
};
const int bench_num_rows = (int)(sizeof bench_rows / sizeof bench_rows[0]);

void row_name(const row_spec *r, char *buf, size_t cap) {
    const char *dn = ag_dtype_name(r->kv);
    if (r->kind == ROW_DECODE)
        snprintf(buf, cap, "decode B=%d kv%d %s %s%s", r->batch, KV_LEN, dn,
                 r->cold ? "cold" : "hot", r->block_size != 16 ? " bs32" : "");
    else if (r->kind == ROW_PREFILL)
        snprintf(buf, cap, "prefill L=%d H=32 Hkv=%d %s", PREFILL_LEN, r->hkv, dn);
    else
        snprintf(buf, cap, "laguna mixed (48 full + 64 w512) %s", dn);
}

ag_dtype row_io_dtype(const row_spec *r) {
    return ag_dtype_is_fp8(r->kv) ? AG_BF16 : r->kv;
}

/* ------------------------------------------------------------- work */

int row_items(const row_spec *r, row_item *it) {
    const double kvb = (double)ag_dtype_size(r->kv) * r->hkv * HEAD_DIM * 2;   /* K+V per key */
    memset(it, 0, ROW_MAX_ITEMS * sizeof *it);
    if (r->kind == ROW_DECODE) {
        snprintf(it[0].what, sizeof it[0].what, "32 heads: decode at %d keys", KV_LEN);
        it[0].count = r->batch;
        it[0].bytes = KV_LEN * kvb;
        it[0].flops = 4.0 * HEAD_DIM * 32 * KV_LEN;
        return 1;
    }
    if (r->kind == ROW_PREFILL) {
        snprintf(it[0].what, sizeof it[0].what, "32 heads: causal prefill of %d", PREFILL_LEN);
        it[0].count = 1;
        it[0].bytes = PREFILL_LEN * kvb;
        it[0].flops = 4.0 * HEAD_DIM * 32 * (double)PREFILL_LEN * (PREFILL_LEN + 1) / 2;
        return 1;
    }
    /* Laguna: the chunk's rows sit at p = 3584 .. 4095 */
    const double p0 = KV_LEN - LAGUNA_CHUNK;
    double full = 0, win = 0;
    for (int i = 0; i < LAGUNA_CHUNK; i++) {
        full += p0 + i + 1;
        win += fmin(p0 + i + 1, LAGUNA_WINDOW);
    }
    snprintf(it[0].what, sizeof it[0].what, "48 heads full: decode");
    it[0].count = LAGUNA_DECODES;
    it[0].bytes = KV_LEN * kvb;
    it[0].flops = 4.0 * HEAD_DIM * 48 * KV_LEN;
    snprintf(it[1].what, sizeof it[1].what, "48 heads full: chunk of %d", LAGUNA_CHUNK);
    it[1].count = 1;
    it[1].bytes = KV_LEN * kvb;
    it[1].flops = 4.0 * HEAD_DIM * 48 * full;
    snprintf(it[2].what, sizeof it[2].what, "64 heads w%d: decode", LAGUNA_WINDOW);
    it[2].count = LAGUNA_DECODES;
    it[2].bytes = LAGUNA_WINDOW * kvb;
    it[2].flops = 4.0 * HEAD_DIM * 64 * LAGUNA_WINDOW;
    snprintf(it[3].what, sizeof it[3].what, "64 heads w%d: chunk of %d", LAGUNA_WINDOW,
             LAGUNA_CHUNK);
    it[3].count = 1;
    /* keys p0 - (W - 1) .. 4095 */
    it[3].bytes = (LAGUNA_CHUNK + LAGUNA_WINDOW - 1) * kvb;
    it[3].flops = 4.0 * HEAD_DIM * 64 * win;
    return 4;
}

double row_bytes(const row_spec *r) {
    row_item it[ROW_MAX_ITEMS];
    double s = 0;
    for (int i = 0, n = row_items(r, it); i < n; i++) s += it[i].count * it[i].bytes;
    return s;
}

double row_flops(const row_spec *r) {
    row_item it[ROW_MAX_ITEMS];
    double s = 0;
    for (int i = 0, n = row_items(r, it); i < n; i++) s += it[i].count * it[i].flops;
    return s;
}

/* ------------------------------------------------------------- cases */

int row_case(const row_spec *r, int g, ag_dtype io, case_spec *c) {
    case_default(c);
    snprintf(c->name, sizeof c->name, "bench-%s-%d", r->part, g);
    c->num_layers = 1;
    case_layer *L = &c->layers[0];
    L->num_heads = r->kind == ROW_LAGUNA ? (g ? 64 : 48) : 32;
    L->window = -1;
    L->window_left = L->window_right = r->kind == ROW_LAGUNA && g ? LAGUNA_WINDOW - 1 : -1;
    c->model_num_heads = L->num_heads;
    c->num_kv_heads = r->hkv;
    c->head_dim = HEAD_DIM;
    c->block_size = r->block_size;
    c->kv_dtype = r->kv;
    c->q_dtype = c->out_dtype = io;
    c->threads = 1;
    c->seed = 0x62656e6368ull + (uint64_t)g;   /* "bench" */
    if (r->kind == ROW_DECODE) {
        c->num_reqs = r->batch;
        for (int i = 0; i < r->batch; i++) c->q_len[i] = 1, c->kv_len[i] = KV_LEN;
    } else if (r->kind == ROW_PREFILL) {
        c->num_reqs = 1;
        c->q_len[0] = c->kv_len[0] = PREFILL_LEN;
    } else {
        c->num_reqs = LAGUNA_DECODES + 1;
        for (int i = 0; i < LAGUNA_DECODES; i++) c->q_len[i] = 1, c->kv_len[i] = KV_LEN;
        c->q_len[LAGUNA_DECODES] = LAGUNA_CHUNK;
        c->kv_len[LAGUNA_DECODES] = KV_LEN;
    }
    for (int i = 0; i < c->num_reqs; i++) c->causal[i] = 1;
    return r->kind == ROW_LAGUNA ? 2 : 1;
}
