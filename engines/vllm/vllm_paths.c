/*
 * engines/vllm/vllm_paths.c — the ABI's paths for the vllm adapter: the
 * branches of vLLM's CPU attention that depend on the call, as its source
 * (csrc/cpu/cpu_attn*.hpp, read for facts) takes them, named so the reach
 * table can count each one (private to the adapter).
 *
 *   impl=<isa>          the implementation that runs (AMX, VEC, VEC16)
 *   <isa>/d=<D>         each head dim of each implementation vLLM builds
 *   gqa, mha            the scheduler's GQA path (mq a multiple of Hq/Hkv:
 *                       one reduction slot per KV head) or its fallback
 *   split-reduce, no-split   KV splits merged by the reduction, or none
 *   decode, prefill     every q_len 1, or some request with more
 *   causal, noncausal, dynamic-causal   the op's flag, or per request
 *   window, softcap, alibi, sinks       a layer's optional inputs
 *   kv=<dtype>          the cache's element type (fp8 caches decoded in the
 *                       kernel with the layer's scales)
 *   heads-differ        a layer runs with other heads than the scheduler
 *                       was told (heads=model on a Laguna-like group)
 */
#include <string.h>

#include "vllm_group.h"

static const int32_t k_dims[] = {32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512};

/* "<isa>/d=<D>" for every pair vLLM builds, in one static table. */
static const char *const k_dim_names[VG_ISA_COUNT][12] = {
    {"amx/d=32", NULL, "amx/d=64", NULL, "amx/d=96", NULL, "amx/d=128", "amx/d=160",
     "amx/d=192", "amx/d=224", "amx/d=256", "amx/d=512"},
    {"vec/d=32", NULL, "vec/d=64", NULL, "vec/d=96", NULL, "vec/d=128", "vec/d=160",
     "vec/d=192", "vec/d=224", "vec/d=256", "vec/d=512"},
    {"vec16/d=32", "vec16/d=48", "vec16/d=64", "vec16/d=80", "vec16/d=96", "vec16/d=112",
     "vec16/d=128", "vec16/d=160", "vec16/d=192", "vec16/d=224", "vec16/d=256",
     "vec16/d=512"},
};

static const char *const k_impl[VG_ISA_COUNT] = {"impl=amx", "impl=vec", "impl=vec16"};

typedef struct vp_out {
    const char **names;
    int cap, n;
} vp_out;

static void add(vp_out *o, const char *name) {
    if (!name) return;
    if (o->n < o->cap && o->names) o->names[o->n] = name;
    o->n++;
}

static int has_amx(const vg_lib *L) { return L->has_amx && L->build == VG_BUILD_AVX512BF16; }

static int every_path(const vg_lib *L, vp_out *o) {
    for (int i = 0; i < VG_ISA_COUNT; i++) {
        if (i == VG_ISA_AMX && !has_amx(L)) continue;
        add(o, k_impl[i]);
        for (size_t d = 0; d < sizeof k_dims / sizeof k_dims[0]; d++) add(o, k_dim_names[i][d]);
    }
    static const char *const rest[] = {"gqa", "mha", "split-reduce", "no-split", "decode",
                                       "prefill", "causal", "noncausal", "dynamic-causal",
                                       "window", "softcap", "alibi", "sinks", "kv=f32",
                                       "kv=bf16", "kv=f16"};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) add(o, rest[i]);
    if (L->build != VG_BUILD_AVX2) {
        add(o, "kv=fp8e4m3");
        add(o, "kv=fp8e5m2");
    }
    if (L->heads == VG_HEADS_MODEL) add(o, "heads-differ");
    return o->n;
}

int vg_paths(void *plan, const char **names, int cap) {
    vp_out o = {names, cap, 0};
    const vg_plan *P = plan;
    if (!P) {
        /* every path this machine can take: the reach table's rows.  The
         * loaded library is process-wide, so any group's will do: without
         * one (no plan), the table names what this CPU offers. */
        const vg_lib *L = vg_current_lib();
        if (!L) return 0;
        return every_path(L, &o);
    }
    const vg_group *g = P->g;
    const vg_isa eff = vg_effective_isa(g);
    add(&o, k_impl[eff]);
    for (size_t d = 0; d < sizeof k_dims / sizeof k_dims[0]; d++)
        if (k_dims[d] == g->d) add(&o, k_dim_names[eff][d]);
    int gqa = 0, mha = 0, win = 0, cap_ = 0, alibi = 0, sinks = 0, differ = 0;
    for (int32_t l = 0; l < g->nl; l++) {
        const vg_layer *ly = &g->layers[l];
        if (vg_model_gqa(g, ly->hq)) gqa = 1;
        else mha = 1;
        win |= ly->window >= 0;
        cap_ |= ly->softcap > 0.0f;
        alibi |= ly->alibi != NULL;
        sinks |= ly->sinks != NULL;
        differ |= ly->hq != g->plan_heads;
    }
    if (gqa) add(&o, "gqa");
    if (mha) add(&o, "mha");
    add(&o, P->m_reductions > 0 ? "split-reduce" : "no-split");
    int prefill = 0;
    for (int32_t r = 0; r < P->R; r++) prefill |= P->qsl[r + 1] - P->qsl[r] > 1;
    add(&o, prefill ? "prefill" : "decode");
    add(&o, P->dyn ? "dynamic-causal" : P->causal ? "causal" : "noncausal");
    if (win) add(&o, "window");
    if (cap_) add(&o, "softcap");
    if (alibi) add(&o, "alibi");
    if (sinks) add(&o, "sinks");
    static const char *const kv[] = {"kv=f32", "kv=bf16", "kv=f16", "kv=fp8e4m3", "kv=fp8e5m2"};
    if ((unsigned)g->kv_dt < 5) add(&o, kv[g->kv_dt]);
    if (differ) add(&o, "heads-differ");
    return o.n;
}
