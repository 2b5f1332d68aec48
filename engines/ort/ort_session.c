/*
 * engines/ort/ort_session.c — the ORT sessions of a group: the one-node
 * model each is made from, the session options, and the harness's
 * allocator handed to ORT for every buffer the session allocates.
 *
 * One session per distinct layer (og_key) and graph input set, created by
 * the first run that needs it and kept for the group's life, as a serving
 * engine keeps one per model: dims are symbolic (batch, query rows, keys),
 * so every batch shape of the group runs through the same session.
 *
 * ORT's own memory: the CPU arena and the memory-pattern planner are off,
 * so each buffer is one allocator call of its own size; when the group has
 * an allocator, its bridge (ort_alloc.c) is registered on the environment
 * while the session is created with "session.use_env_allocators" = "1", so
 * the session takes it for all its allocations (the kernels' temporary
 * buffers included) and keeps it after the environment forgets it.  The
 * environment has one slot per kind of memory, hence the process-wide
 * lock around registering and creating.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_proto.h"
#include "ort_group.h"

/* ---- the node ---- */
#define DIM(v) {(v), NULL}
#define SYM(s) {0, (s)}
#define INT_ATTR(n, v) {(n), ONNX_ATTR_INT, 0.0f, (v)}
#define FLOAT_ATTR(n, v) {(n), ONNX_ATTR_FLOAT, (v), 0}

/* GroupQueryAttention (com.microsoft): query/key/value BSNH (packed: the
 * query input holds each row's q, K and V heads one after another, key and
 * value absent), past and present BNSH, seqlens_k = total - 1, a scalar
 * total length, cos_cache and sin_cache (inputs 7 and 8, [C][D/2]) with
 * do_rotary, and head_sink as input 11 (9 and 10, position ids and bias,
 * left out). */
static int gqa_model(const og_group *g, const og_key *k, int io, uint8_t **out, size_t *len) {
    const int et = g->t_dt == AG_F16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const int64_t hq = k->hq, hkv = g->hkv, d = g->d;
    const int packed = io == OG_IO_GQA_PACKED, rot = g->rotary != OG_ROT_NONE;
    const char *pres = io == OG_IO_GQA_SEPARATE ? "T" : "M";
    const onnx_value in[12] = {
        {"query", et, 3, {SYM("B"), SYM("S"), DIM((packed ? hq + 2 * hkv : hq) * d)}},
        {packed ? "" : "key", et, 3, {SYM("B"), SYM("S"), DIM(hkv * d)}},
        {packed ? "" : "value", et, 3, {SYM("B"), SYM("S"), DIM(hkv * d)}},
        {"past_key", et, 4, {SYM("B"), DIM(hkv), SYM("M"), DIM(d)}},
        {"past_value", et, 4, {SYM("B"), DIM(hkv), SYM("M"), DIM(d)}},
        {"seqlens_k", ORTA_T_INT32, 1, {SYM("B")}},
        {"total_sequence_length", ORTA_T_INT32, 0, {{0, NULL}}},
        {rot ? "cos_cache" : "", et, 2, {SYM("C"), DIM(d / 2)}},
        {rot ? "sin_cache" : "", et, 2, {SYM("C"), DIM(d / 2)}},
        {"", 0, 0, {{0, NULL}}}, {"", 0, 0, {{0, NULL}}},
        {"head_sink", et, 1, {DIM(hq)}},
    };
    const onnx_value outs[3] = {
        {"output", et, 3, {SYM("B"), SYM("S"), DIM(hq * d)}},
        {"present_key", et, 4, {SYM("B"), DIM(hkv), SYM(pres), DIM(d)}},
        {"present_value", et, 4, {SYM("B"), DIM(hkv), SYM(pres), DIM(d)}},
    };
    onnx_attr at[8] = {INT_ATTR("num_heads", hq), INT_ATTR("kv_num_heads", hkv),
                       FLOAT_ATTR("scale", k->scale)};
    int na = 3;
    if (k->softcap > 0.0f) at[na++] = (onnx_attr)FLOAT_ATTR("softcap", k->softcap);
    if (k->window > 0) at[na++] = (onnx_attr)INT_ATTR("local_window_size", k->window);
    if (k->sink == OG_SINK_SMOOTH) at[na++] = (onnx_attr)INT_ATTR("smooth_softmax", 1);
    if (rot) at[na++] = (onnx_attr)INT_ATTR("do_rotary", 1);
    if (g->rotary == OG_ROT_INTERLEAVED) at[na++] = (onnx_attr)INT_ATTR("rotary_interleaved", 1);
    const onnx_node_model m = {
        .ir_version = 10, .opset_onnx = 21, .opset_ms = 1,
        .op_type = "GroupQueryAttention", .domain = "com.microsoft",
        .in = in, .n_in = k->sink == OG_SINK_HEAD ? 12 : rot ? 9 : 7, .out = outs, .n_out = 3,
        .attr = at, .n_attr = na,
    };
    return onnx_encode_model(&m, out, len);
}

/* Attention (ONNX opset 24): Q/K/V as 3-D BSH with the head counts as
 * attributes, K/V holding every key of the request (no past inputs),
 * nonpad_kv_seqlen the keys per request; either is_causal (aligned to the
 * end of the keys when nonpad_kv_seqlen is given) or a boolean mask. */
static int attention_model(const og_group *g, const og_key *k, int io, uint8_t **out,
                           size_t *len) {
    const int et = g->t_dt == AG_F16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const int64_t hq = k->hq, hkv = g->hkv, d = g->d;
    const int mask = io == OG_IO_ATT_MASK;
    const onnx_value in[7] = {
        {"Q", et, 3, {SYM("B"), SYM("S"), DIM(hq * d)}},
        {"K", et, 3, {SYM("B"), SYM("T"), DIM(hkv * d)}},
        {"V", et, 3, {SYM("B"), SYM("T"), DIM(hkv * d)}},
        {mask ? "attn_mask" : "", ORTA_T_BOOL, 4, {SYM("B"), DIM(1), SYM("S"), SYM("T")}},
        {"", 0, 0, {{0, NULL}}}, {"", 0, 0, {{0, NULL}}},
        {"nonpad_kv_seqlen", ORTA_T_INT64, 1, {SYM("B")}},
    };
    const onnx_value outs[1] = {{"Y", et, 3, {SYM("B"), SYM("S"), DIM(hq * d)}}};
    onnx_attr at[7] = {INT_ATTR("q_num_heads", hq), INT_ATTR("kv_num_heads", hkv),
                       FLOAT_ATTR("scale", k->scale), INT_ATTR("is_causal", !mask),
                       /* softmax in f32 whatever T is (1 = TensorProto FLOAT) */
                       INT_ATTR("softmax_precision", ORTA_T_FLOAT)};
    int na = 5;
    if (k->softcap > 0.0f) at[na++] = (onnx_attr)FLOAT_ATTR("softcap", k->softcap);
    const onnx_node_model m = {
        .ir_version = 10, .opset_onnx = 24, .opset_ms = 0, .op_type = "Attention", .domain = "",
        .in = in, .n_in = 7, .out = outs, .n_out = 1, .attr = at, .n_attr = na,
    };
    return onnx_encode_model(&m, out, len);
}

/* ---- sessions ---- */
static ag_status options(const og_group *g, OrtSessionOptions **out, ag_msg *msg) {
    const orta_fns *f = &g->lib->f;
    OrtSessionOptions *o = NULL;
    ag_status st = orta_check(g->lib, f->CreateSessionOptions(&o), msg, "CreateSessionOptions");
    if (st != AG_OK) return st;
    OrtStatus *s = f->SetIntraOpNumThreads(o, g->threads);
    if (!s) s = f->SetInterOpNumThreads(o, 1);
    if (!s) s = f->SetSessionGraphOptimizationLevel(o, ORTA_OPT_DISABLE_ALL);
    if (!s) s = f->SetSessionLogSeverityLevel(o, ORTA_LOG_FATAL);
    if (!s) s = f->DisableCpuMemArena(o);
    if (!s) s = f->DisableMemPattern(o);
    /* workers sleep between runs: the harness and other work need the cores */
    if (!s) s = f->AddSessionConfigEntry(o, "session.intra_op.allow_spinning", "0");
    if (!s && g->alloc) s = f->AddSessionConfigEntry(o, "session.use_env_allocators", "1");
    if ((st = orta_check(g->lib, s, msg, "session options")) != AG_OK) {
        f->ReleaseSessionOptions(o);
        return st;
    }
    *out = o;
    return AG_OK;
}

/* Inputs and outputs the node declares, for the probe of positions 30/31. */
static void io_counts(const og_group *g, const og_key *k, int io, size_t *ni, size_t *no) {
    if (g->op == OG_GQA)
        *ni = (k->sink == OG_SINK_HEAD ? 8 : 7) - (io == OG_IO_GQA_PACKED ? 2 : 0) +
              (g->rotary != OG_ROT_NONE ? 2 : 0),
        *no = 3;
    else *ni = io == OG_IO_ATT_MASK ? 5 : 4, *no = 1;
}

static ag_status create(og_group *g, const og_key *k, int io, OrtSession **out, ag_msg *msg) {
    const orta_lib *lib = g->lib;
    uint8_t *model = NULL;
    size_t len = 0;
    int e = g->op == OG_GQA ? gqa_model(g, k, io, &model, &len)
                            : attention_model(g, k, io, &model, &len);
    if (e != 0) return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "model encoding");
    OrtSessionOptions *o = NULL;
    ag_status st = options(g, &o, msg);
    if (st == AG_OK) {
        og_bridge_take(&g->bridge);
        pthread_mutex_lock(&g->lib->env_mu);
        OrtStatus *s = g->alloc ? lib->f.RegisterAllocator(lib->env, &g->bridge.ort) : NULL;
        if (!s) {
            s = lib->f.CreateSessionFromArray(lib->env, model, len, o, out);
            if (g->alloc) {   /* the session keeps its reference; the env slot is freed */
                OrtStatus *u = lib->f.UnregisterAllocator(lib->env, lib->cpu);
                if (!s) s = u;
                else if (u) lib->f.ReleaseStatus(u);
            }
        }
        pthread_mutex_unlock(&g->lib->env_mu);
        st = og_bridge_verdict(&g->bridge, orta_check(lib, s, msg, "CreateSessionFromArray"), msg,
                               "CreateSessionFromArray");
        lib->f.ReleaseSessionOptions(o);
    }
    free(model);
    if (st != AG_OK) return st;
    size_t ni = 0, no = 0, wi, wo;
    io_counts(g, k, io, &wi, &wo);
    if (lib->f.SessionGetInputCount(*out, &ni) || lib->f.SessionGetOutputCount(*out, &no) ||
        ni != wi || no != wo) {
        lib->f.ReleaseSession(*out);
        *out = NULL;
        return orta_fail(msg, AG_INTERNAL, AG_R_NONE, "ORT_API_PROBE",
                         "session has %zu inputs, %zu outputs; the node declares %zu, %zu "
                         "(SessionGetInputCount/OutputCount positions?)", ni, no, wi, wo);
    }
    return AG_OK;
}

ag_status og_session(og_group *g, int32_t l, int io, OrtSession **out, ag_msg *msg) {
    og_sess *s = &g->sess[g->layers[l].sess];
    ag_status st = AG_OK;
    pthread_mutex_lock(&g->mu);
    if (!s->s[io]) st = create(g, &s->key, io, &s->s[io], msg);
    *out = s->s[io];
    pthread_mutex_unlock(&g->mu);
    return st;
}

void og_sessions_free(og_group *g) {
    for (int32_t i = 0; g->sess && i < g->nsess; i++)
        for (int io = 0; io < OG_IO_KINDS; io++)
            if (g->sess[i].s[io]) g->lib->f.ReleaseSession(g->sess[i].s[io]);
}
