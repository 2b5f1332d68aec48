/*
 * engines/ort/ort_adapter.c — adapter 3: ONNX Runtime's CPU attention
 * (com.microsoft GroupQueryAttention, or ONNX's Attention op) driven
 * through attnguard's adapter ABI with one-node models built in memory.
 *
 * This file owns the ABI table: what the adapter declares (caps,
 * variants, group_info) and the entry points' plumbing.  The mapping of
 * attnguard's conventions onto ORT's is engines/ort/MAPPING.md; its code
 * is ort_check.c (what is accepted), ort_plan.c (shape classes, scratch
 * regions), ort_run.c (gather, Run), ort_session.c (models, sessions),
 * ort_alloc.c (the allocator ORT calls), ort_needs.c (ORT's internal buffer
 * sizes).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_engine.h"
#include "ort_group.h"

static ag_status ort_open(const char *options, void **ctx, ag_msg *msg) {
    if (!ctx) return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "open: ctx");
    return orta_load(options, (orta_lib **)ctx, msg);
}

static void ort_close(void *ctx) { orta_unload(ctx); }

static void ort_caps(void *ctx, ag_caps *out) {
    (void)ctx;
    const uint32_t f = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16) | AG_DTYPE_BIT(AG_BF16);
    *out = (ag_caps){
        .abi_version = AG_ENGINE_ABI_VERSION,
        /* Causal requests only (GQA is causal), so a (left, right) window
         * is exactly local_window_size = left (MAPPING.md).  Paged and
         * shared blocks: run gathers every request through its own block
         * table into dense tensors, so any table reads right.
         * Mixed head counts: each layer runs its own session and the
         * plan sizes every region for the group's largest layer. */
        .flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_WINDOW_LR | AG_CAP_SOFTCAP | AG_CAP_SINKS |
                 AG_CAP_SCALE | AG_CAP_PAGED | AG_CAP_SHARED_BLOCKS | AG_CAP_MIXED_HEADS |
                 AG_CAP_REDZONE,
        .q_dtypes = f,
        .kv_dtypes = f,
        .out_dtypes = f,
        /* ORT forms scale * <q, k> in f32 (f16 inputs widened first) before
         * any maximum is taken: an overflow there is inf, the row NaN.
         * f16 Attention then stores it as f16, which overflows at 65504:
         * one number for every variant cannot say so (MAPPING.md). */
        .max_abs_logit = FLT_MAX,
    };
}

static int ort_variants(void *ctx, ag_variant *out, int cap) {
    (void)ctx;
    static const ag_variant v[] = {
        {"op=gqa kv=shared", AG_VARIANT_DEFAULT, NULL},
        {"op=gqa kv=separate", AG_VARIANT_LAYOUT, NULL},
        {"op=gqa kv=shared qkv=packed", AG_VARIANT_LAYOUT, NULL},
        {"op=gqa kv=shared rotary=half", AG_VARIANT_LAYOUT, NULL},
        {"op=gqa kv=shared qkv=packed rotary=interleaved", AG_VARIANT_LAYOUT, NULL},
        {"op=attention", AG_VARIANT_LAYOUT, NULL},
    };
    const int n = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; out && i < n && i < cap; i++) out[i] = v[i];
    return n;
}

static void ort_destroy(void *grp) {
    og_group *g = grp;
    if (!g) return;
    og_sessions_free(g);   /* before the bridge: sessions free through it */
    og_group_free(g);
    og_bridge_free(&g->bridge);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static ag_status ort_create(void *ctx, const ag_group *group, void **grp, ag_msg *msg) {
    if (!grp || !group)
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "create: group or grp is NULL");
    og_group *g = calloc(1, sizeof *g);
    if (!g) return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group");
    g->lib = ctx;
    pthread_mutex_init(&g->mu, NULL);
    og_bridge_init(&g->bridge, group->alloc, g->lib->cpu);
    ag_status st = og_parse_options(group->options, &g->op, &g->io, &g->rotary, msg);
    if (st == AG_OK) st = og_check_group(group, g, msg);
    if (st != AG_OK) {
        ort_destroy(g);
        return st;
    }
    *grp = g;
    return orta_ok(msg);
}

/* Precision, as measured against exact math (MAPPING.md, "Precision"):
 * an f32 node is f32 throughout, and so is every group that is not all
 * f16 (the adapter widens f16 and bf16 exactly).  All-f16 groups run ORT's
 * f16 kernels: GQA widens q, K and V to f32 and keeps the logits and
 * weights in f32; Attention stores each scaled logit as f16 (the spec's
 * Q.K MatMul is in T) and the softmax weights as f16 before P.V.  q_dot
 * f16 is the declaration that bounds a logit rounding: its relative term
 * covers one rounding of each logit to f16.  Both accumulate P.V in f32
 * (no stall over 4096 equal weights). */
static ag_status ort_group_info(void *grp, ag_group_info *out) {
    const og_group *g = grp;
    if (!out) return AG_REFUSED;
    memset(out, 0, sizeof *out);
    snprintf(out->kernels, sizeof out->kernels, "ort-%s-cpu",
             g->op == OG_GQA ? "gqa" : "attention");
    snprintf(out->detail, sizeof out->detail, "ORT %s, T=%s, %s, %d threads", g->lib->version,
             og_dtype_name(g->t_dt),
             g->op == OG_ATTENTION            ? "opset 24"
             : g->io == OG_IO_GQA_SEPARATE    ? "kv separate"
             : g->io == OG_IO_GQA_PACKED      ? "kv shared, qkv packed"
                                              : "kv shared",
             (int)g->threads);
    const int f16_node = g->op == OG_ATTENTION && g->t_dt == AG_F16;
    const ag_dtype t16 = f16_node ? AG_F16 : AG_F32;
    out->precision = (ag_precision){t16, t16, AG_F32, 0};
    return AG_OK;
}

static const ag_engine ort_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "ort",
    .summary = "ONNX Runtime's CPU GroupQueryAttention / Attention, onnxruntime-node's "
               "libonnxruntime.so.1",
    .open = ort_open, .close = ort_close, .caps = ort_caps, .variants = ort_variants,
    .create = ort_create, .destroy = ort_destroy, .group_info = ort_group_info,
    .kv_cache_bytes = og_kv_cache_bytes, .write_kv = og_write_kv,
    .plan = og_plan_make, .plan_destroy = og_plan_destroy, .extents = og_extents,
    .run = og_run, .internal_needs = og_internal_needs, .paths = og_paths,
};

const ag_engine *ag_engine_ort(void) { return &ort_engine; }

#ifdef AG_ENGINE_SHARED_OBJECT
const ag_engine *attnguard_engine(void) { return &ort_engine; }
#endif
