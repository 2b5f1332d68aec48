/*
 * adapter.c — attnguard's own engine (src/, attn.h) behind the adapter ABI:
 * adapter 1, and the one every harness path uses by default.
 *
 * Owns: the translation between ag_* descriptions and attn_* ones, the
 * mapping of attn statuses onto ag statuses (the attn status name travels
 * in msg.code, so the harness's defect model can judge it exactly), and the
 * engine options ("isa=<table> tune=<profile>").  Adds no behaviour: every
 * check and every byte of scratch is the engine's.
 */
#include "../../include/attnguard/engine.h"
#include "../../src/attn.h"
#include "../../src/attn_plan_inspect.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARIANTS 12

typedef struct ctx {
    int n_variants;
    char variants[MAX_VARIANTS][40];
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
    msg->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
    return st;
}

/* attn status -> ag status; the engine's message and status name travel on. */
static ag_status from_attn(attn_status st, const attn_error *err, ag_msg *msg) {
    if (msg) {
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

static int is_dtype(ag_dtype d) { return d == AG_F32 || d == AG_BF16 || d == AG_F16; }
static int is_fp8(ag_dtype d) { return d == AG_FP8_E4M3 || d == AG_FP8_E5M2; }

/* ------------------------------------------------------------ process */

static ag_status op_open(const char *options, void **out, ag_msg *msg) {
    (void)options;
    ctx *c = calloc(1, sizeof *c);
    if (!c) return say(msg, AG_INTERNAL, "out of memory");
    /* The default first, then every other kernel table this CPU runs, then
     * the other tuning profile on the default table. */
    const char *isas[8];
    int n = attn_isa_available(isas, 8);
    c->variants[c->n_variants++][0] = '\0';
    for (int i = 0; i < n && i < 8 && i < n - 1; i++)   /* the best (last) is the default */
        snprintf(c->variants[c->n_variants++], sizeof c->variants[0], "isa=%s", isas[i]);
    snprintf(c->variants[c->n_variants++], sizeof c->variants[0], "tune=intel");
    snprintf(c->variants[c->n_variants++], sizeof c->variants[0], "tune=amd");
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
                 AG_CAP_SHARED_BLOCKS | AG_CAP_NONCAUSAL | AG_CAP_SPLIT_KV | AG_CAP_REGIONS |
                 AG_CAP_REDZONE | AG_CAP_EXTENTS | AG_CAP_BITWISE | AG_CAP_SHAPE |
                 AG_CAP_ATTN_CODES | AG_CAP_WINDOW_LR | AG_CAP_MIXED_CAUSAL | AG_CAP_KV_SCALES;
    const uint32_t t = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_BF16) | AG_DTYPE_BIT(AG_F16);
    out->q_dtypes = out->out_dtypes = t;
    out->kv_dtypes = t | AG_DTYPE_BIT(AG_FP8_E4M3) | AG_DTYPE_BIT(AG_FP8_E5M2);
    out->max_head_dim = ATTN_MAX_HEAD_DIM;
    out->max_threads = ATTN_MAX_THREADS;
    out->max_block_size = ATTN_MAX_BLOCK_SIZE;
}

static int op_variants(void *cp, const char **names, int cap) {
    const ctx *c = cp;
    for (int i = 0; names && i < c->n_variants && i < cap; i++) names[i] = c->variants[i];
    return c->n_variants;
}

/* ------------------------------------------------------------- group */

/* "isa=X tune=Y" into g; anything else is refused with the word named. */
static ag_status parse_options(const char *opt, grp *g, ag_msg *msg) {
    if (!opt) return AG_OK;
    char buf[128];
    if (strlen(opt) >= sizeof buf)
        return say(msg, AG_REFUSED, "options: '%.40s...' longer than %zu bytes", opt,
                   sizeof buf - 1);
    strcpy(buf, opt);
    char *save = NULL;
    for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (strncmp(w, "isa=", 4) == 0 && strlen(w + 4) < sizeof g->isa)
            strcpy(g->isa, w + 4);
        else if (strncmp(w, "tune=", 5) == 0 && strlen(w + 5) < sizeof g->tune)
            strcpy(g->tune, w + 5);
        else
            return say(msg, AG_REFUSED, "options: unknown or too long option '%.40s' "
                       "(attnguard knows isa=<table>, tune=<profile>)", w);
    }
    return AG_OK;
}

static ag_status op_create(void *cp, const ag_group *in, void **out, ag_msg *msg) {
    (void)cp;
    if (!in || !out) return say(msg, AG_REFUSED, "create: NULL group or out");
    if (in->num_layers < 0) return say(msg, AG_REFUSED, "num_layers = %d", (int)in->num_layers);
    if (in->num_layers > 0 && !in->layers)
        return say(msg, AG_REFUSED, "layers is NULL with num_layers = %d", (int)in->num_layers);
    if (!(is_dtype(in->kv_dtype) || is_fp8(in->kv_dtype)) || !is_dtype(in->q_dtype) ||
        !is_dtype(in->out_dtype)) {
        /* an enum value outside ag_dtype is the caller's error, fp8 q/out a missing feature */
        const int known = (unsigned)in->kv_dtype < AG_DTYPE_COUNT &&
                          (unsigned)in->q_dtype < AG_DTYPE_COUNT &&
                          (unsigned)in->out_dtype < AG_DTYPE_COUNT;
        ag_status st = say(msg, known ? AG_UNSUPPORTED : AG_REFUSED,
                           "dtypes q %d, kv %d, out %d: attnguard takes f32, bf16, f16 (and "
                           "fp8 for the KV cache)",
                           (int)in->q_dtype, (int)in->kv_dtype, (int)in->out_dtype);
        if (!known && msg) snprintf(msg->code, sizeof msg->code, "ATTN_E_BAD_DTYPE");
        return st;
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
        if (is_fp8(in->kv_dtype) && !(ks > 0 && vs > 0)) {
            free(g->layers);
            free(g);
            ag_status st2 = say(msg, AG_REFUSED, "layers.%d: k_scale = %g, v_scale = %g: an fp8 "
                                "cache's scales must be finite and > 0", (int)l, (double)ks,
                                (double)vs);
            if (msg) snprintf(msg->code, sizeof msg->code, "ATTN_E_BAD_LAYER");
            return st2;
        }
        d->k_scale = is_fp8(in->kv_dtype) ? ks : 1.0f;
        d->v_scale = is_fp8(in->kv_dtype) ? vs : 1.0f;
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
    G->kv.dtype = (attn_dtype)in->kv_dtype;
    G->q_dtype = (attn_dtype)in->q_dtype;
    G->out_dtype = (attn_dtype)in->out_dtype;
    G->model_num_heads = in->model_num_heads;
    G->num_threads = in->num_threads;
    G->isa = g->isa[0] ? g->isa : NULL;
    G->tune = g->tune[0] ? g->tune : NULL;
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
    if (num_blocks < 1) return say(msg, AG_REFUSED, "num_blocks = %d", (int)num_blocks);
    size_t n;
    if (__builtin_mul_overflow((size_t)num_blocks, (size_t)kv->num_kv_heads, &n) ||
        __builtin_mul_overflow(n, (size_t)kv->block_size, &n) ||
        __builtin_mul_overflow(n, (size_t)kv->head_dim, &n) ||
        __builtin_mul_overflow(n, attn_dtype_size(kv->dtype), &n))
        return say(msg, AG_REFUSED, "a cache of %d blocks overflows size_t", (int)num_blocks);
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
    if (!in || !out || !info) return say(msg, AG_REFUSED, "plan: NULL batch, out or info");
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
        return say(msg, AG_REFUSED, "layer %d outside the group's %d", (int)layer,
                   (int)p->g->num_layers);
    attn_error err;
    attn_status st = attn_plan_layer_extents(p->p, &p->g->layers[layer], p->g->g.kv.head_dim,
                                             need, count, &err);
    return from_attn(st, &err, msg);
}

static ag_status op_run(void *pp, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const plan *p = pp;
    const grp *g = p->g;
    if (!a) return say(msg, AG_REFUSED, "run: NULL args");
    if (layer < 0 || layer >= g->num_layers)
        return say(msg, AG_REFUSED, "layer %d outside the group's %d", (int)layer,
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

static const ag_engine k_engine = {
    AG_ENGINE_ABI_VERSION,
    "attnguard",
    "attnguard's own CPU engine (src/): paged KV, split-KV, region-table scratchpad",
    op_open,
    op_close,
    op_caps,
    op_variants,
    op_create,
    op_destroy,
    op_group_info,
    op_kv_cache_bytes,
    op_write_kv,
    op_plan,
    op_plan_destroy,
    op_extents,
    op_run,
    op_plan_shape,
};

const ag_engine *ag_engine_attnguard(void);
const ag_engine *ag_engine_attnguard(void) { return &k_engine; }
