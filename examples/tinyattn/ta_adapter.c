/*
 * ta_adapter.c — tinyattn behind attnguard's adapter ABI
 * (<attnguard/engine.h>, from the installed kit: pkg-config --cflags
 * attnguard).  Maps the ABI's group, batch and run onto tinyattn's
 * builder, plan and forward, and tinyattn's statuses onto the ABI's
 * refusal kinds (the table below).  Entry points: the required ones and
 * `extents`, which states what a layer will touch (tinyattn's own layout
 * for the layer's head count) so that a scratch sized short is a `sizing`
 * finding at plan time, before any kernel runs.  Build with
 * -DTA_ADAPTER_NO_EXTENTS=1 to leave it out: the same bug is then found
 * only when a layer runs and writes into the guard page after the scratch
 * (`scratch-bounds`).  No variants, group_info (fp32 throughout), regions
 * or paths.
 */
#include <attnguard/engine.h>

#include "tinyattn.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tinyattn's statuses in the ABI's words: the refusal kind the harness
 * judges, and the engine's own name for msg.code. */
static const struct {
    ag_refusal kind;
    const char *code;
} k_status[] = {
    [TA_OK] = {AG_R_NONE, ""},
    [TA_E_ARG] = {AG_R_NULL, "TA_E_ARG"},
    [TA_E_HEADS] = {AG_R_HEADS, "TA_E_HEADS"},
    [TA_E_HEAD_DIM] = {AG_R_HEAD_DIM, "TA_E_HEAD_DIM"},
    [TA_E_BLOCK_SIZE] = {AG_R_BLOCK_SIZE, "TA_E_BLOCK_SIZE"},
    [TA_E_WINDOW] = {AG_R_WINDOW, "TA_E_WINDOW"},
    [TA_E_LAYER] = {AG_R_LAYER, "TA_E_LAYER"},
    [TA_E_KV_TYPE] = {AG_R_DTYPE, "TA_E_KV_TYPE"},
    [TA_E_BATCH] = {AG_R_BATCH, "TA_E_BATCH"},
    [TA_E_SEQ_LEN] = {AG_R_LENGTH, "TA_E_SEQ_LEN"},
    [TA_E_BLOCK] = {AG_R_BLOCK_ID, "TA_E_BLOCK"},
    [TA_E_SLOT] = {AG_R_SLOT, "TA_E_SLOT"},
    [TA_E_SPLIT] = {AG_R_PLAN_OPTION, "TA_E_SPLIT"},
    [TA_E_LIMIT] = {AG_R_LIMIT, "TA_E_LIMIT"},
    [TA_E_OVERFLOW] = {AG_R_OVERFLOW, "TA_E_OVERFLOW"},
    [TA_E_NOMEM] = {AG_R_RESOURCE, "TA_E_NOMEM"},
    [TA_E_LAYER_INDEX] = {AG_R_MISMATCH, "TA_E_LAYER_INDEX"},
    [TA_E_SCRATCH] = {AG_R_SCRATCH, "TA_E_SCRATCH"},
};

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static ag_status say(ag_msg *msg, ag_status st, ag_refusal kind, const char *fmt, ...) {
    if (!msg) return st;
    msg->refusal = st == AG_OK ? AG_R_NONE : kind;
    msg->code[0] = msg->text[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* A tinyattn status as the ABI's: out of memory is the engine's failure,
 * everything else a refusal of the caller's input. */
static ag_status from_ta(ta_status st, const ta_error *err, ag_msg *msg) {
    if (st == TA_OK) return say(msg, AG_OK, AG_R_NONE, NULL);
    const int known = (unsigned)st < sizeof k_status / sizeof k_status[0];
    const ag_status as = st == TA_E_NOMEM ? AG_INTERNAL : known ? AG_REFUSED : AG_INTERNAL;
    say(msg, as, known ? k_status[st].kind : AG_R_NONE, "%s", err->text);
    if (msg) snprintf(msg->code, sizeof msg->code, "%s", known ? k_status[st].code : "TA_?");
    return as;
}

typedef struct grp {
    ta_builder *b;
    ta_layer *layers;        /* the group's layers in tinyattn's form */
    int32_t num_layers;
    int32_t *heads;          /* [num_layers] */
} grp;

typedef struct plan {
    const grp *G;
    ta_plan *p;
    const ag_batch *batch;
} plan;

static ag_status a_open(const char *options, void **ctx, ag_msg *msg) {
    if (!ctx) return say(msg, AG_REFUSED, AG_R_NULL, "open: ctx is NULL");
    *ctx = NULL;
    if (options && options[strspn(options, " ")])
        return say(msg, AG_REFUSED, AG_R_OPTIONS,
                   "open: tinyattn takes no options (given '%.200s')", options);
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static void a_close(void *ctx) { (void)ctx; }

static void a_caps(void *ctx, ag_caps *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    out->abi_version = AG_ENGINE_ABI_VERSION;
    out->flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_WINDOW_LR | AG_CAP_SOFTCAP | AG_CAP_ALIBI |
                 AG_CAP_SINKS | AG_CAP_SCALE | AG_CAP_PAGED | AG_CAP_SHARED_BLOCKS |
                 AG_CAP_NONCAUSAL | AG_CAP_MIXED_CAUSAL | AG_CAP_SPLIT_KV | AG_CAP_BITWISE |
                 AG_CAP_MIXED_HEADS;
    out->q_dtypes = AG_DTYPE_BIT(AG_F32);
    out->kv_dtypes = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16);
    out->out_dtypes = AG_DTYPE_BIT(AG_F32);
    out->max_heads = TA_MAX_HEADS;
    out->max_head_dim = TA_MAX_HEAD_DIM;
    out->max_block_size = TA_MAX_BLOCK_SIZE;
    out->max_splits = TA_MAX_PIECES;
    out->max_abs_logit = FLT_MAX;   /* <q, k> and its scaling in fp32, no rescaling */
}

static void a_destroy(void *gp) {
    grp *G = gp;
    if (!G) return;
    ta_builder_destroy(G->b);
    free(G->layers);
    free(G->heads);
    free(G);
}

/* A dtype outside the ABI's enumeration is a defect of the input; one
 * inside it that tinyattn lacks is a missing feature. */
static ag_status check_dtype(const char *what, ag_dtype d, uint32_t have, ag_msg *msg) {
    if ((unsigned)d >= AG_DTYPE_COUNT)
        return say(msg, AG_REFUSED, AG_R_DTYPE, "%s %d: not an ag_dtype", what, (int)d);
    if (!(have & AG_DTYPE_BIT(d)))
        return say(msg, AG_UNSUPPORTED, AG_R_NONE, "%s %s: tinyattn takes f32%s", what,
                   ag_dtype_name(d), strcmp(what, "kv_dtype") == 0 ? " or f16" : "");
    return AG_OK;
}

static ag_status a_create(void *ctx, const ag_group *in, void **out, ag_msg *msg) {
    (void)ctx;
    if (!in || !out || (in->num_layers > 0 && !in->layers))
        return say(msg, AG_REFUSED, AG_R_NULL, "create: the group, its layers or out is NULL");
    *out = NULL;
    ag_status st;
    if ((st = check_dtype("q_dtype", in->q_dtype, AG_DTYPE_BIT(AG_F32), msg)) != AG_OK ||
        (st = check_dtype("kv_dtype", in->kv_dtype, AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16),
                          msg)) != AG_OK ||
        (st = check_dtype("out_dtype", in->out_dtype, AG_DTYPE_BIT(AG_F32), msg)) != AG_OK)
        return st;
    if (in->num_threads < 1)
        return say(msg, AG_REFUSED, AG_R_THREADS, "num_threads %d", (int)in->num_threads);
    /* tinyattn runs on the calling thread: any positive count is served by it */
    grp *G = calloc(1, sizeof *G);
    const size_t nl = in->num_layers > 0 ? (size_t)in->num_layers : 0;
    if (G && nl) {
        G->layers = calloc(nl, sizeof *G->layers);
        G->heads = calloc(nl, sizeof *G->heads);
    }
    if (!G || (nl && (!G->layers || !G->heads))) {
        a_destroy(G);
        return say(msg, AG_INTERNAL, AG_R_RESOURCE, "create: out of memory for %zu layers", nl);
    }
    for (size_t l = 0; l < nl; l++) {
        const ag_layer *L = &in->layers[l];
        G->layers[l] = (ta_layer){L->num_heads, L->window_left, L->window_right, L->scale,
                                  L->softcap, L->alibi_slopes, L->sinks};
        G->heads[l] = L->num_heads;
    }
    G->num_layers = in->num_layers;
    const ta_group tg = {G->layers, in->num_layers, in->num_kv_heads, in->head_dim, in->block_size,
                         in->kv_dtype == AG_F16 ? TA_KV_F16 : TA_KV_F32, in->model_num_heads};
    ta_error err;
    st = from_ta(ta_builder_create(&tg, &G->b, &err), &err, msg);
    if (st != AG_OK) {
        a_destroy(G);
        return st;
    }
    *out = G;
    return st;
}

static ag_status a_kv_cache_bytes(void *gp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const grp *G = gp;
    ta_error err;
    return from_ta(ta_cache_bytes(G ? G->b : NULL, num_blocks, bytes, &err), &err, msg);
}

static ag_status a_write_kv(void *gp, void *k_cache, void *v_cache, int32_t num_blocks,
                            const void *k_rows, const void *v_rows, int32_t num_tokens,
                            const int64_t *slots, ag_msg *msg) {
    const grp *G = gp;
    ta_error err;
    return from_ta(ta_write_kv(G ? G->b : NULL, k_cache, v_cache, num_blocks, k_rows, v_rows,
                               num_tokens, slots, &err),
                   &err, msg);
}

static ag_status a_plan(void *gp, const ag_batch *b, const ag_plan_opts *opts, void **out,
                        ag_plan_info *info, ag_msg *msg) {
    const grp *G = gp;
    if (!G || !b || !out || !info)
        return say(msg, AG_REFUSED, AG_R_NULL, "plan: the group, batch, plan or info is NULL");
    *out = NULL;
    ta_batch tb = {b->num_reqs, b->query_start_loc, b->seq_lens, b->causal, b->block_table,
                   b->block_table_stride, b->num_blocks, TA_SPLIT_AUTO, 0};
    if (opts) {   /* the ABI's split modes are tinyattn's, in another order */
        static const ta_split k_split[] = {[AG_SPLIT_AUTO] = TA_SPLIT_AUTO,
                                           [AG_SPLIT_OFF] = TA_SPLIT_NEVER,
                                           [AG_SPLIT_ON] = TA_SPLIT_ALWAYS,
                                           [AG_SPLIT_FIXED] = TA_SPLIT_FIXED};
        if ((unsigned)opts->split > AG_SPLIT_FIXED)
            return say(msg, AG_REFUSED, AG_R_PLAN_OPTION, "plan: split mode %d", (int)opts->split);
        tb.split = k_split[opts->split];
        tb.pieces = opts->split_count;
    }
    plan *P = calloc(1, sizeof *P);
    if (!P) return say(msg, AG_INTERNAL, AG_R_RESOURCE, "plan: out of memory");
    ta_error err;
    const ag_status st = from_ta(ta_plan_create(G->b, &tb, &P->p, &err), &err, msg);
    if (st != AG_OK) {
        free(P);
        return st;
    }
    P->G = G;
    P->batch = b;
    info->scratch_bytes = ta_plan_scratch_bytes(P->p);
    info->scratch_align = TA_SCRATCH_ALIGN;
    info->regions = NULL;
    info->num_regions = 0;
    *out = P;
    return st;
}

static void a_plan_destroy(void *pp) {
    plan *P = pp;
    if (P) ta_plan_destroy(P->p);
    free(P);
}

#if !(defined(TA_ADAPTER_NO_EXTENTS) && TA_ADAPTER_NO_EXTENTS)
/* need[0]: the scratch the layer's run will touch (no region table). */
static ag_status a_extents(void *pp, int32_t layer, size_t *need, size_t count, ag_msg *msg) {
    const plan *P = pp;
    if (!P || !need || count < 1)
        return say(msg, AG_REFUSED, AG_R_NULL, "extents: plan or need is NULL, or count 0");
    if (layer < 0 || layer >= P->G->num_layers)
        return say(msg, AG_REFUSED, AG_R_MISMATCH, "extents: layer %d of %d", (int)layer,
                   (int)P->G->num_layers);
    ta_error err;
    return from_ta(ta_plan_layer_bytes(P->p, P->G->heads[layer], &need[0], &err), &err, msg);
}
#endif

static ag_status a_run(void *pp, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const plan *P = pp;
    if (!P || !a) return say(msg, AG_REFUSED, AG_R_NULL, "run: plan or args is NULL");
    if (a->batch != P->batch)
        return say(msg, AG_REFUSED, AG_R_MISMATCH, "run: another batch than the plan's");
    ta_error err;
    return from_ta(ta_forward(P->p, layer, a->q, a->k_cache, a->v_cache, a->scratch,
                              a->scratch_bytes, a->out, &err),
                   &err, msg);
}

static const ag_engine k_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "tinyattn",
#if defined(PLANTED_MODEL_HEADS) && PLANTED_MODEL_HEADS
    .summary = "examples/tinyattn: paged f32 attention, split-KV decode (PLANTED: slots sized "
               "from model_num_heads)",
#else
    .summary = "examples/tinyattn: paged f32 attention with split-KV decode",
#endif
    .open = a_open,
    .close = a_close,
    .caps = a_caps,
    .create = a_create,
    .destroy = a_destroy,
    .kv_cache_bytes = a_kv_cache_bytes,
    .write_kv = a_write_kv,
    .plan = a_plan,
    .plan_destroy = a_plan_destroy,
#if !(defined(TA_ADAPTER_NO_EXTENTS) && TA_ADAPTER_NO_EXTENTS)
    .extents = a_extents,
#endif
    .run = a_run,
};

const ag_engine *attnguard_engine(void) { return &k_engine; }
