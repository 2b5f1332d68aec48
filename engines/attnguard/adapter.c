/*
 * adapter.c — attnguard's own engine (src/, attn.h) behind the adapter ABI:
 * adapter 1, and the one every harness path uses by default.
 *
 * Owns: the translation between ag_* descriptions and attn_* ones, the
 * mapping of attn statuses onto ag statuses and refusal kinds (the attn
 * status name travels on in msg.code), the engine's limits as the ABI
 * states them, and the engine options ("isa=<table> tune=<profile>") as a
 * variant list.  Adds no behaviour: every check and every byte of scratch
 * is the engine's.
 */
#include "../../include/attnguard/engine.h"
#include "../../src/attn.h"
#include "../../src/attn_plan_inspect.h"
#include "dtype_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARIANTS 12

_Static_assert(AG_REGION_SUM - AG_REGION_Q == ATTN_REGION_SUM - ATTN_REGION_Q &&
                   AG_REGION_FLAGS - AG_REGION_Q == ATTN_REGION_FLAGS - ATTN_REGION_Q,
               "attn_region_kind and ag_region_kind list the split-KV regions alike");

typedef struct ctx {
    int n_variants;
    ag_variant variants[MAX_VARIANTS];
    char words[MAX_VARIANTS][40];   /* what variants[i].options points at */
} ctx;

typedef struct grp {
    attn_builder *b;
    attn_group_desc g;
    attn_layer_desc *layers;   /* [num_layers], names and arrays point into the caller's group */
    int32_t num_layers;
    char isa[24], tune[16];
} grp;

typedef struct plan {
    const grp *g;
    attn_plan *p;
    char paths[5 + ATTN_WIDE_COUNT + 2][40]; /* paths(): the plan's own, filled on first
                                               use, then the fp64 path's, on each call */
    int n_paths, n_fixed;               /* reported by the last paths(); the plan's own */
    ag_region *regions;
    size_t num_regions;
    int32_t *red_tokens, *red_pieces;   /* plan_shape, filled on first use */
#ifdef ATTN_INJECT_adapter_scratch_short
    size_t real_bytes;
#endif
} plan;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ag_status say(ag_msg *msg, ag_status st, const char *fmt, ...) {
    if (!msg) return st;
    msg->refusal = AG_R_NONE;
    msg->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
    return st;
}

/* The ABI's kind of refusal for each attn status (attn.h's list). */
static ag_refusal refusal_of(attn_status st) {
    switch (st) {
    case ATTN_E_NULL_ARG: return AG_R_NULL;
    case ATTN_E_NO_MEMORY: return AG_R_RESOURCE;
    case ATTN_E_OVERFLOW: return AG_R_OVERFLOW;
    case ATTN_E_MIXED_HEADS: return AG_R_MIXED_HEADS;
    case ATTN_E_BAD_HEADS: return AG_R_HEADS;
    case ATTN_E_BAD_HEAD_DIM: return AG_R_HEAD_DIM;
    case ATTN_E_BAD_BLOCK_SIZE: return AG_R_BLOCK_SIZE;
    case ATTN_E_BAD_WINDOW: return AG_R_WINDOW;
    case ATTN_E_BAD_LAYER: return AG_R_LAYER;
    case ATTN_E_BAD_DTYPE: return AG_R_DTYPE;
    case ATTN_E_BAD_THREADS: return AG_R_THREADS;
    case ATTN_E_BAD_BATCH: return AG_R_BATCH;
    case ATTN_E_BAD_SEQ_LEN: return AG_R_LENGTH;
    case ATTN_E_BAD_BLOCK_TABLE: return AG_R_BLOCK_ID;
    case ATTN_E_BAD_OPTION: return AG_R_PLAN_OPTION;
    case ATTN_E_LAYER_MISMATCH:
    case ATTN_E_TENSOR_MISMATCH: return AG_R_MISMATCH;
    case ATTN_E_SCRATCH_TOO_SMALL:
    case ATTN_E_SCRATCH_ALIGN: return AG_R_SCRATCH;
    case ATTN_E_BAD_SLOT: return AG_R_SLOT;
    case ATTN_E_BAD_ISA: return AG_R_OPTIONS;
    case ATTN_E_TOO_LARGE: return AG_R_RESOURCE;
    default: return AG_R_NONE;   /* ATTN_OK, ATTN_E_INTERNAL: no refusal */
    }
}

/* attn status -> ag status and refusal kind; the engine's message and
 * status name travel on. */
static ag_status from_attn(attn_status st, const attn_error *err, ag_msg *msg) {
    if (msg) {
        msg->refusal = refusal_of(st);
        if (st == ATTN_OK) {
            msg->code[0] = msg->text[0] = '\0';
        } else {
            snprintf(msg->code, sizeof msg->code, "%s", attn_status_name(st));
            snprintf(msg->text, sizeof msg->text, "%s", err ? err->message : "");
        }
    }
    if (st == ATTN_OK) return AG_OK;
    if (st == ATTN_E_NO_MEMORY || st == ATTN_E_INTERNAL) return AG_INTERNAL;
    return AG_REFUSED;
}

/* A refusal the adapter itself makes (before the engine sees the input),
 * named as the engine would name it. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ag_status refuse(ag_msg *msg, attn_status st, const char *fmt, ...) {
    if (msg) {
        msg->refusal = refusal_of(st);
        snprintf(msg->code, sizeof msg->code, "%s", attn_status_name(st));
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st == ATTN_E_NO_MEMORY ? AG_INTERNAL : AG_REFUSED;
}

/* The engine's q, out and KV types: the ABI's binary floats (and fp8 for KV). */
static int is_dtype(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t && t->kind == AG_KIND_FLOAT;
}

/* ------------------------------------------------------------ process */

/* One variant: the words `isa=<isa>` and/or `tune=<tune>` (either may be NULL). */
static void add_variant(ctx *c, ag_variant_kind kind, const char *isa, const char *tune) {
    if (c->n_variants >= MAX_VARIANTS) return;
    snprintf(c->words[c->n_variants], sizeof c->words[0], "%s%s%s%s%s", isa ? "isa=" : "",
             isa ? isa : "", isa && tune ? " " : "", tune ? "tune=" : "", tune ? tune : "");
    c->variants[c->n_variants].options = c->words[c->n_variants];
    c->variants[c->n_variants].kind = kind;
    c->variants[c->n_variants].twin = NULL;
    c->n_variants++;
}

/* An emulated table ("avx512@emu") is the twin of the native one it
 * emulates, when that one is a variant here too: the harness holds the two
 * to the same bytes (ag_variant.twin).  A simulated one ("amx@sim":
 * attn_isa_available) is not bit for bit and has no twin: the reference
 * judges it as any variant.  isas[i] is variant i's table. */
static void pair_twins(ctx *c, const char *const *isas) {
    for (int i = 0; i < c->n_variants; i++) {
        const char *at = isas[i] ? strchr(isas[i], '@') : NULL;
        if (!at || strcmp(at, "@emu") != 0) continue;
        for (int j = 0; j < c->n_variants; j++)
            if (j != i && isas[j] && strlen(isas[j]) == (size_t)(at - isas[i]) &&
                strncmp(isas[j], isas[i], (size_t)(at - isas[i])) == 0)
                c->variants[i].twin = c->variants[j].options;
    }
}

/* The variants: the default (the table and profile a group without
 * options gets here, $ATTN_ISA / $ATTN_TUNE included, named explicitly),
 * every other kernel table this CPU runs, and the other tuning profile. */
static ag_status op_open(const char *options, void **out, ag_msg *msg) {
    (void)options;
    ctx *c = calloc(1, sizeof *c);
    if (!c) return say(msg, AG_INTERNAL, "out of memory");
    /* What the builder resolves for a group with no options: a one-layer
     * group built once, so that a bad $ATTN_ISA or $ATTN_TUNE is said here,
     * once, instead of as a refusal of every case. */
    const attn_layer_desc one = {.name = "probe", .num_heads = 1, .window = -1};
    const attn_group_desc probe = {.layers = &one, .num_layers = 1,
                                   .kv = {1, 8, 1, ATTN_DTYPE_F32}, .q_dtype = ATTN_DTYPE_F32,
                                   .out_dtype = ATTN_DTYPE_F32, .num_threads = 1};
    attn_builder *b;
    attn_error err;
    if (attn_builder_create(&probe, &b, &err) != ATTN_OK) {
        free(c);
        return say(msg, AG_UNSUPPORTED, "attnguard: the default configuration is refused "
                   "(check $ATTN_ISA and $ATTN_TUNE): %s", err.message);
    }
    attn_builder_info bi;
    attn_builder_get_info(b, &bi, NULL);
    const char *isas[8], *of[MAX_VARIANTS] = {0};
    of[0] = bi.isa;
    add_variant(c, AG_VARIANT_DEFAULT, bi.isa, bi.tune);
    const int n = attn_isa_available(isas, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (strcmp(isas[i], bi.isa) != 0) {
            if (c->n_variants < MAX_VARIANTS) of[c->n_variants] = isas[i];
            add_variant(c, AG_VARIANT_KERNELS, isas[i], NULL);
        }
    pair_twins(c, of);
    add_variant(c, AG_VARIANT_TUNING, NULL, strcmp(bi.tune, "amd") ? "amd" : "intel");
    attn_builder_destroy(b);
    *out = c;
    return say(msg, AG_OK, "%s", "");
}

static void op_close(void *c) { free(c); }

static void op_caps(void *c, ag_caps *out) {
    (void)c;
    memset(out, 0, sizeof *out);
    out->abi_version = AG_ENGINE_ABI_VERSION;
    out->flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_SOFTCAP | AG_CAP_ALIBI |
                 AG_CAP_ALIBI_STANDARD | AG_CAP_SINKS | AG_CAP_SCALE | AG_CAP_PAGED |
                 AG_CAP_SHARED_BLOCKS | AG_CAP_NONCAUSAL | AG_CAP_SPLIT_KV | AG_CAP_REDZONE |
                 AG_CAP_BITWISE | AG_CAP_WINDOW_LR | AG_CAP_MIXED_CAUSAL | AG_CAP_KV_SCALES |
                 AG_CAP_WIDE_ACC;   /* src/wide.c: rows whose sums leave fp32 (trigger=acc) */
    const uint32_t t = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_BF16) | AG_DTYPE_BIT(AG_F16);
    out->q_dtypes = out->out_dtypes = t;
    out->kv_dtypes = t | AG_DTYPE_BIT(AG_FP8_E4M3) | AG_DTYPE_BIT(AG_FP8_E5M2);
    out->max_heads = ATTN_MAX_HEADS;
    out->max_head_dim = ATTN_MAX_HEAD_DIM;
    out->max_threads = ATTN_MAX_THREADS;
    out->max_block_size = ATTN_MAX_BLOCK_SIZE;
    out->max_seq_len = ATTN_MAX_SEQ_LEN;
    out->max_splits = ATTN_MAX_SPLITS;
    out->max_alibi_slope = (float)ATTN_MAX_ALIBI_SLOPE;
}

static int op_variants(void *cp, ag_variant *out, int cap) {
    const ctx *c = cp;
    for (int i = 0; out && i < c->n_variants && i < cap; i++) out[i] = c->variants[i];
    return c->n_variants;
}

/* ------------------------------------------------------------- group */

/* "isa=X tune=Y" into g; anything else is refused with the word named: an
 * unknown key, an empty value (no variant spells one), and a key given
 * twice (else a later word would hide an earlier one the engine must
 * refuse: fuzz_attention found "isa=tune=intel isa=" accepted). */
static ag_status parse_options(const char *opt, grp *g, ag_msg *msg) {
    if (!opt) return AG_OK;
    char buf[128];
    if (strlen(opt) >= sizeof buf)
        return refuse(msg, ATTN_E_BAD_ISA, "options: '%.40s...' longer than %zu bytes", opt,
                      sizeof buf - 1);
    strcpy(buf, opt);
    char *save = NULL;
    int have_isa = 0, have_tune = 0;
    for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        const int isa = strncmp(w, "isa=", 4) == 0, tune = strncmp(w, "tune=", 5) == 0;
        if ((isa && have_isa) || (tune && have_tune))
            return refuse(msg, ATTN_E_BAD_ISA, "options: '%.40s' sets %s a second time", w,
                          isa ? "isa" : "tune");
        if ((isa && !w[4]) || (tune && !w[5]))
            return refuse(msg, ATTN_E_BAD_ISA, "options: '%.40s' has no value", w);
        if (isa && strlen(w + 4) < sizeof g->isa)
            strcpy(g->isa, w + 4), have_isa = 1;
        else if (tune && strlen(w + 5) < sizeof g->tune)
            strcpy(g->tune, w + 5), have_tune = 1;
        else
            return refuse(msg, ATTN_E_BAD_ISA, "options: unknown or too long option '%.40s' "
                          "(attnguard knows isa=<table>, tune=<profile>)", w);
    }
    return AG_OK;
}

static ag_status op_create(void *cp, const ag_group *in, void **out, ag_msg *msg) {
    (void)cp;
    if (!in || !out) return refuse(msg, ATTN_E_NULL_ARG, "create: NULL group or out");
    if (in->num_layers < 0)
        return refuse(msg, ATTN_E_BAD_LAYER, "num_layers = %d", (int)in->num_layers);
    if (in->num_layers > 0 && !in->layers)
        return refuse(msg, ATTN_E_NULL_ARG, "layers is NULL with num_layers = %d",
                      (int)in->num_layers);
    if (!(is_dtype(in->kv_dtype) || ag_dtype_is_fp8(in->kv_dtype)) || !is_dtype(in->q_dtype) ||
        !is_dtype(in->out_dtype)) {
        /* an enum value outside ag_dtype is the caller's error, fp8 q/out a missing feature */
        const int known = (unsigned)in->kv_dtype < AG_DTYPE_COUNT &&
                          (unsigned)in->q_dtype < AG_DTYPE_COUNT &&
                          (unsigned)in->out_dtype < AG_DTYPE_COUNT;
        if (known)
            return say(msg, AG_UNSUPPORTED, "dtypes q %s, kv %s, out %s: attnguard takes f32, "
                       "bf16, f16 (and fp8 for the KV cache; no quantized block cache)",
                       ag_dtype_name(in->q_dtype),
                       ag_dtype_name(in->kv_dtype), ag_dtype_name(in->out_dtype));
        return refuse(msg, ATTN_E_BAD_DTYPE, "dtypes q %d, kv %d, out %d: outside ag_dtype",
                      (int)in->q_dtype, (int)in->kv_dtype, (int)in->out_dtype);
    }
    grp *g = calloc(1, sizeof *g);
    if (!g) return say(msg, AG_INTERNAL, "out of memory");
    ag_status st = parse_options(in->options, g, msg);
    if (st != AG_OK) {
        free(g);
        return st;
    }
    g->num_layers = in->num_layers;
    if (in->num_layers > 0) {
        g->layers = calloc((size_t)in->num_layers, sizeof *g->layers);
        if (!g->layers) {
            free(g);
            return say(msg, AG_INTERNAL, "out of memory");
        }
    }
    for (int32_t l = 0; l < in->num_layers; l++) {
        const ag_layer *L = &in->layers[l];
        attn_layer_desc *d = &g->layers[l];
        d->name = L->name;
        d->num_heads = L->num_heads;
        /* always as an explicit pair: raw invalid values (below -1) reach
         * the engine's own validation unchanged */
        d->window = -1;
        d->window_pair = 1;
        d->window_left = L->window_left;
        d->window_right = L->window_right;
        /* attn.h reads a scale of 0 as 1; the ABI has no such default */
        const float ks = L->k_scale, vs = L->v_scale;
        if (ag_dtype_is_fp8(in->kv_dtype) && !(ks > 0 && vs > 0)) {
            free(g->layers);
            free(g);
            return refuse(msg, ATTN_E_BAD_LAYER, "layers.%d: k_scale = %g, v_scale = %g: an fp8 "
                          "cache's scales must be finite and > 0", (int)l, (double)ks,
                          (double)vs);
        }
        d->k_scale = ag_dtype_is_fp8(in->kv_dtype) ? ks : 1.0f;
        d->v_scale = ag_dtype_is_fp8(in->kv_dtype) ? vs : 1.0f;
        d->softcap = L->softcap;
        d->scale = L->scale;
        d->alibi_slopes = L->alibi_slopes;
        d->sinks = L->sinks;
    }
    attn_group_desc *G = &g->g;
    G->layers = g->layers;
    G->num_layers = in->num_layers;
    G->kv.num_kv_heads = in->num_kv_heads;
    G->kv.head_dim = in->head_dim;
    G->kv.block_size = in->block_size;
    G->kv.dtype = attn_dtype_of(in->kv_dtype);
    G->q_dtype = attn_dtype_of(in->q_dtype);
    G->out_dtype = attn_dtype_of(in->out_dtype);
    G->model_num_heads = in->model_num_heads;
    G->num_threads = in->num_threads;
    G->isa = g->isa[0] ? g->isa : NULL;
    G->tune = g->tune[0] ? g->tune : NULL;
    G->sync_hook = in->sync_hook;
    G->sync_hook_ctx = in->sync_ctx;
    attn_error err;
    attn_status as = attn_builder_create(G, &g->b, &err);
    if (as != ATTN_OK) {
        free(g->layers);
        free(g);
        return from_attn(as, &err, msg);
    }
    *out = g;
    return from_attn(ATTN_OK, NULL, msg);
}

static void op_destroy(void *gp) {
    grp *g = gp;
    if (!g) return;
    attn_builder_destroy(g->b);
    free(g->layers);
    free(g);
}

static ag_status op_group_info(void *gp, ag_group_info *out) {
    const grp *g = gp;
    attn_builder_info bi;
    if (attn_builder_get_info(g->b, &bi, NULL) != ATTN_OK) return AG_INTERNAL;
    memset(out, 0, sizeof *out);
    snprintf(out->kernels, sizeof out->kernels, "%s", bi.isa);
    snprintf(out->detail, sizeof out->detail, "tune=%s%s", bi.tune,
             bi.bf16_rounding ? (bi.kv_dtype == ATTN_DTYPE_BF16 ? " rounding=bf16 (bf16-KV prefill)"
                                                                : " rounding=bf16 (fp8-KV decode)")
                              : "");
    out->precision.q_dot = bi.bf16_rounding ? AG_BF16 : AG_F32;
    out->precision.p_dot = bi.bf16_rounding ? AG_BF16 : AG_F32;
    out->precision.acc = AG_F32;
    return AG_OK;
}

/* ---------------------------------------------------------- KV cache */

static ag_status op_kv_cache_bytes(void *gp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const grp *g = gp;
    const attn_kv_desc *kv = &g->g.kv;
    if (num_blocks < 1) return refuse(msg, ATTN_E_BAD_BLOCK_TABLE, "num_blocks = %d", (int)num_blocks);
    size_t n;
    if (__builtin_mul_overflow((size_t)num_blocks, (size_t)kv->num_kv_heads, &n) ||
        __builtin_mul_overflow(n, (size_t)kv->block_size, &n) ||
        __builtin_mul_overflow(n, (size_t)kv->head_dim, &n) ||
        __builtin_mul_overflow(n, attn_dtype_size(kv->dtype), &n))
        return refuse(msg, ATTN_E_OVERFLOW, "a cache of %d blocks overflows size_t",
                      (int)num_blocks);
    *bytes = n;
    return say(msg, AG_OK, "%s", "");
}

static ag_status op_write_kv(void *gp, void *k_cache, void *v_cache, int32_t num_blocks,
                             const void *k_rows, const void *v_rows, int32_t num_tokens,
                             const int64_t *slot_mapping, ag_msg *msg) {
    const grp *g = gp;
    attn_error err;
    attn_status st = attn_reshape_and_cache(&g->g.kv, num_blocks, k_rows, v_rows, num_tokens,
                                            slot_mapping, k_cache, v_cache, &err);
    return from_attn(st, &err, msg);
}

/* --------------------------------------------------------------- plan */

static ag_status op_plan(void *gp, const ag_batch *in, const ag_plan_opts *opts, void **out,
                         ag_plan_info *info, ag_msg *msg) {
    const grp *g = gp;
    if (!in || !out || !info) return refuse(msg, ATTN_E_NULL_ARG, "plan: NULL batch, out or info");
    attn_batch b;
    memset(&b, 0, sizeof b);
    b.num_reqs = in->num_reqs;
    b.query_start_loc = in->query_start_loc;
    b.seq_lens = in->seq_lens;
    b.block_table = in->block_table;
    b.block_table_stride = in->block_table_stride;
    b.num_blocks = in->num_blocks;
    b.causal = 1;
    b.req_causal = in->causal;   /* NULL: every request causal, as b.causal says */
    attn_plan_opts po;
    memset(&po, 0, sizeof po);
    if (opts) {
        po.split = (attn_split_mode)opts->split;
        po.split_count = opts->split_count;
        po.redzone = opts->redzone;
    }
    plan *p = calloc(1, sizeof *p);
    if (!p) return say(msg, AG_INTERNAL, "out of memory");
    p->g = g;
    attn_error err;
    attn_status st = attn_builder_build(g->b, &b, &po, &p->p, &err);
    if (st != ATTN_OK) {
        free(p);
        return from_attn(st, &err, msg);
    }
    const attn_region *reg;
    size_t n, bytes;
    if ((st = attn_plan_regions(p->p, &reg, &n, &err)) != ATTN_OK ||
        (st = attn_plan_scratch_size(p->p, &bytes, &err)) != ATTN_OK) {
        attn_plan_destroy(p->p);
        free(p);
        return from_attn(st, &err, msg);
    }
    p->regions = calloc(n ? n : 1, sizeof *p->regions);
    if (!p->regions) {
        attn_plan_destroy(p->p);
        free(p);
        return say(msg, AG_INTERNAL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(p->regions[i].name, sizeof p->regions[i].name, "%s", reg[i].name);
        p->regions[i].offset = reg[i].offset;
        p->regions[i].size = reg[i].size;
        /* attn_region_kind lists Q .. SUM in the ABI's order */
        p->regions[i].kind = AG_REGION_Q + (int32_t)reg[i].kind;
        p->regions[i].owner = reg[i].owner_kind == ATTN_OWNER_THREAD ? AG_OWNER_THREAD
                                                                      : AG_OWNER_REDUCTION;
        p->regions[i].index = reg[i].owner;
    }
    p->num_regions = n;
#ifdef ATTN_INJECT_adapter_scratch_short
    /* INJECTED BUG (adapter_scratch_short): the adapter trims what it reports
     * by one alignment unit (an adapter author's "the engine pads the end"),
     * and run below hands the engine the size it remembers, not the one it
     * was given, so the engine's own size check cannot object. */
    p->real_bytes = bytes;
    bytes = bytes > ATTN_ALIGN ? bytes - ATTN_ALIGN : bytes;
#endif
    info->scratch_bytes = bytes;
    info->scratch_align = ATTN_ALIGN;
    info->regions = p->regions;
    info->num_regions = n;
    *out = p;
    return say(msg, AG_OK, "%s", "");
}

static void op_plan_destroy(void *pp) {
    plan *p = pp;
    if (!p) return;
    attn_plan_destroy(p->p);
    free(p->regions);
    free(p->red_tokens);
    free(p->red_pieces);
    free(p);
}

/* The schedule facts from the plan's public inspection: a thread's regions
 * hold its largest item's tokens, or a decode run of head_run rows. */
static ag_status op_plan_shape(void *pp, ag_plan_shape *out) {
    plan *p = pp;
    attn_plan_info info;
    const attn_work_item *it;
    const attn_reduction *rd;
    size_t ni, nr;
    if (attn_plan_get_info(p->p, &info, NULL) != ATTN_OK ||
        attn_plan_items(p->p, &it, &ni, NULL) != ATTN_OK ||
        attn_plan_reductions(p->p, &rd, &nr, NULL) != ATTN_OK)
        return AG_INTERNAL;
    if (!p->red_tokens && nr) {
        p->red_tokens = malloc(nr * sizeof *p->red_tokens);
        p->red_pieces = malloc(nr * sizeof *p->red_pieces);
        if (!p->red_tokens || !p->red_pieces) return AG_INTERNAL;
        for (size_t i = 0; i < nr; i++) {
            p->red_tokens[i] = rd[i].tok1 - rd[i].tok0;
            p->red_pieces[i] = rd[i].num_pieces;
        }
    }
    int32_t tokens = info.head_run;
    for (size_t i = 0; i < ni; i++)
        if (it[i].tok1 - it[i].tok0 > tokens) tokens = it[i].tok1 - it[i].tok0;
    out->thread_tokens = tokens;
    out->kv_tile = info.kv_tile;
    out->num_reductions = nr;
    out->red_tokens = p->red_tokens;
    out->red_pieces = p->red_pieces;
    return AG_OK;
}

static ag_status op_extents(void *pp, int32_t layer, size_t *need, size_t count, ag_msg *msg) {
    const plan *p = pp;
    if (layer < 0 || layer >= p->g->num_layers)
        return refuse(msg, ATTN_E_LAYER_MISMATCH, "layer %d outside the group's %d", (int)layer,
                      (int)p->g->num_layers);
    attn_error err;
    attn_status st = attn_plan_layer_extents(p->p, &p->g->layers[layer], p->g->g.kv.head_dim,
                                             need, count, &err);
    return from_attn(st, &err, msg);
}

static ag_status op_run(void *pp, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const plan *p = pp;
    const grp *g = p->g;
    if (!a) return refuse(msg, ATTN_E_NULL_ARG, "run: NULL args");
    if (layer < 0 || layer >= g->num_layers)
        return refuse(msg, ATTN_E_LAYER_MISMATCH, "layer %d outside the group's %d", (int)layer,
                      (int)g->num_layers);
    attn_tensors t;
    memset(&t, 0, sizeof t);
    t.q = a->q;
    t.out = a->out;
    t.k_cache = a->k_cache;
    t.v_cache = a->v_cache;
    t.num_tokens = a->num_tokens;
    t.num_heads = g->layers[layer].num_heads;
    t.head_dim = g->g.kv.head_dim;
    t.num_blocks = a->batch ? a->batch->num_blocks : 0;
    t.num_kv_heads = g->g.kv.num_kv_heads;
    t.block_size = g->g.kv.block_size;
    t.q_dtype = g->g.q_dtype;
    t.kv_dtype = g->g.kv.dtype;
    t.out_dtype = g->g.out_dtype;
    attn_error err;
    size_t scratch_bytes = a->scratch_bytes;
#ifdef ATTN_INJECT_adapter_scratch_short
    scratch_bytes = p->real_bytes;
#endif
    attn_status st = attn_run(p->p, &g->layers[layer], &t, a->scratch, scratch_bytes, &err);
    return from_attn(st, &err, msg);
}

/* The output dtypes a row can be stored in (attn_dtype names). */
static const attn_dtype k_out_dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16};

/* Every path op_paths can name on this machine: each table offered here
 * with each cache type, both tuning profiles, split merges; decode runs
 * and bf16 rounding only where a table that has them is offered (the
 * AVX-512 tables' tile_heads, the avx512bf16 table's bf16 dot products);
 * and the fp64 path's rows (executor.c, needs_wide): each of its
 * triggers and features (ATTN_WIDE_LIST), and reached on each table and
 * each output dtype. */
static int all_paths(const char **names, int cap) {
    static char tab[9 * ATTN_DTYPE_COUNT + 16 + ATTN_WIDE_COUNT][40];
    static int n;
    if (!n) {
        const char *isas[8];
        const int k = attn_isa_available(isas, 8);
        int avx512 = 0, bf16 = 0;
        for (int i = 0; i < k && i < 8; i++) {
            for (int d = 0; d < ATTN_DTYPE_COUNT; d++)
                snprintf(tab[n++], sizeof tab[0], "%s/%s", isas[i],
                         attn_dtype_name((attn_dtype)d));
            snprintf(tab[n++], sizeof tab[0], "wide/%s", isas[i]);
            avx512 |= strncmp(isas[i], "avx512", 6) == 0;
            bf16 |= strncmp(isas[i], "avx512bf16", 10) == 0 || strncmp(isas[i], "amx", 3) == 0;
        }
        snprintf(tab[n++], sizeof tab[0], "tune=amd");
        snprintf(tab[n++], sizeof tab[0], "tune=intel");
        snprintf(tab[n++], sizeof tab[0], "split-merge");
        if (avx512) snprintf(tab[n++], sizeof tab[0], "decode-runs");
        if (bf16) snprintf(tab[n++], sizeof tab[0], "bf16-rounding");
        for (int i = 0; i < ATTN_WIDE_COUNT; i++)
            snprintf(tab[n++], sizeof tab[0], "wide/%s", attn_wide_count_name(i));
        for (size_t i = 0; i < sizeof k_out_dtypes / sizeof k_out_dtypes[0]; i++)
            snprintf(tab[n++], sizeof tab[0], "wide/out=%s", attn_dtype_name(k_out_dtypes[i]));
    }
    for (int i = 0; names && i < n && i < cap; i++) names[i] = tab[i];
    return n;
}

/* The table and cache type the kernels run, the tuning profile, whether
 * the builder rounds to bf16, whether decode rows run as head runs and
 * whether split pieces are merged; then what the plan's runs so far sent
 * to the fp64 path: "wide/<counter>" for each nonzero counter of
 * attn_plan_wide_counts, and the table and output dtype it was reached
 * on.  Those change as the plan runs, so they are read on every call.
 * plan NULL: all_paths. */
static int op_paths(void *pp, const char **names, int cap) {
    plan *p = pp;
    if (!p) return all_paths(names, cap);
    attn_builder_info bi;
    if (attn_builder_get_info(p->g->b, &bi, NULL) != ATTN_OK) return 0;
    int fixed = p->n_fixed;
    if (!fixed) {
        attn_plan_info pi;
        if (attn_plan_get_info(p->p, &pi, NULL) != ATTN_OK) return 0;
        int n = 0;
        snprintf(p->paths[n++], sizeof p->paths[0], "%s/%s", bi.isa, attn_dtype_name(bi.kv_dtype));
        snprintf(p->paths[n++], sizeof p->paths[0], "tune=%s", bi.tune);
        if (bi.bf16_rounding) snprintf(p->paths[n++], sizeof p->paths[0], "bf16-rounding");
        if (pi.head_run > 1) snprintf(p->paths[n++], sizeof p->paths[0], "decode-runs");
        if (pi.num_reductions) snprintf(p->paths[n++], sizeof p->paths[0], "split-merge");
        fixed = n;
    }
    int n = fixed;
    uint64_t counts[ATTN_WIDE_COUNT];
    if (attn_plan_wide_counts(p->p, counts, ATTN_WIDE_COUNT, NULL) == ATTN_OK) {
        for (int i = 0; i < ATTN_WIDE_COUNT; i++)
            if (counts[i])
                snprintf(p->paths[n++], sizeof p->paths[0], "wide/%s", attn_wide_count_name(i));
        if (counts[ATTN_WIDE_ROWS]) {
            snprintf(p->paths[n++], sizeof p->paths[0], "wide/%s", bi.isa);
            snprintf(p->paths[n++], sizeof p->paths[0], "wide/out=%s",
                     attn_dtype_name(bi.out_dtype));
        }
    }
    p->n_paths = n;
    p->n_fixed = fixed;
    for (int i = 0; names && i < n && i < cap; i++) names[i] = p->paths[i];
    return n;
}

static const ag_engine k_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "attnguard",
    .summary = "attnguard's own CPU engine (src/): paged KV, split-KV, region-table scratchpad",
    .open = op_open,
    .close = op_close,
    .caps = op_caps,
    .variants = op_variants,
    .create = op_create,
    .destroy = op_destroy,
    .group_info = op_group_info,
    .kv_cache_bytes = op_kv_cache_bytes,
    .write_kv = op_write_kv,
    .plan = op_plan,
    .plan_destroy = op_plan_destroy,
    .extents = op_extents,
    .run = op_run,
    .plan_shape = op_plan_shape,
    .paths = op_paths,
};

const ag_engine *ag_engine_attnguard(void);
const ag_engine *ag_engine_attnguard(void) { return &k_engine; }
