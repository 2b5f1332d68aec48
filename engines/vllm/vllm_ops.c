/*
 * engines/vllm/vllm_ops.c — vLLM's three CPU attention ops, called in
 * process through torch's dispatcher (private to the vllm adapter):
 *
 *   _C::get_scheduler_metadata       once per batch (the plan)
 *   _C::cpu_attn_reshape_and_cache   new K/V rows into the paged cache
 *   _C::cpu_attention_with_kv_cache  once per layer (the run)
 *
 * with the arguments vLLM's Python backend passes them (its
 * CPUAttentionMetadataBuilder.build, do_kv_cache_update and forward), over
 * tensors made on the harness's buffers (no copy).  The cache of one spec
 * is two buffers [num_blocks][Hkv][block_size][D] (vLLM's key_cache and
 * value_cache views); what the ops keep inside a block is vLLM's business.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vllm_group.h"

/* The stack of one call: values, with the tensor and string handles it
 * made (the dispatcher owns them once the call is made). */
typedef struct vo_stack {
    const vg_lib *L;
    vt_ivalue v[20];
    int n;
    int bad;
} vo_stack;

static void push(vo_stack *s, vt_ivalue v) {
    if (s->n < (int)(sizeof s->v / sizeof s->v[0])) s->v[s->n++] = v;
    else s->bad = 1;
}

static void push_i(vo_stack *s, int64_t x) { push(s, (vt_ivalue)x); }

static void push_f(vo_stack *s, double x) {
    vt_ivalue v;
    memcpy(&v, &x, sizeof v);
    push(s, v);
}

static void push_str(vo_stack *s, const char *str) {
    vt_string h = NULL;
    if (s->L->t.new_string(str, strlen(str), &h) != 0 || !h) s->bad = 1;
    push(s, (vt_ivalue)(uintptr_t)h);
}

static vt_tensor tensor(vo_stack *s, const void *data, int nd, const int64_t *sizes, int32_t dt) {
    int64_t strides[4], st = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = st;
        st *= sizes[i];
    }
    vt_tensor h = NULL;
    /* The tensor never writes through an input: vLLM's ops only read q,
     * the caches and the batch arrays (the harness has them read-only). */
    if (s->L->t.from_blob((void *)(uintptr_t)data, nd, sizes, strides, 0, dt, s->L->t.cpu(), 0,
                          &h, s->L->t.strided(), NULL, 0) != 0 || !h)
        s->bad = 1;
    return h;
}

static void push_t(vo_stack *s, const void *data, int nd, const int64_t *sizes, int32_t dt) {
    push(s, (vt_ivalue)(uintptr_t)tensor(s, data, nd, sizes, dt));
}

/* An optional tensor: absent (data NULL), or a pointer to its value. */
static void push_opt_t(vo_stack *s, const void *data, int nd, const int64_t *sizes, int32_t dt) {
    if (!data) {
        push(s, 0);
        return;
    }
    vt_ivalue *box = NULL;
    if (s->L->t.new_ivalue(&box) != 0 || !box) {
        s->bad = 1;
        push(s, 0);
        return;
    }
    *box = (vt_ivalue)(uintptr_t)tensor(s, data, nd, sizes, dt);
    push(s, (vt_ivalue)(uintptr_t)box);
}

static ag_status call(vo_stack *s, const char *op, ag_msg *msg) {
    if (s->bad)
        return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "VLLM_TORCH",
                       "%s: torch could not make the call's tensors", op);
    if (s->L->t.call(op, "", s->v, VT_ABI_2_13) != 0) {
        const char *w = s->L->t.what();
        return vg_fail(msg, AG_INTERNAL, AG_R_NONE, "VLLM_TORCH_CHECK", "%s: %s", op,
                       w && *w ? w : "(no message)");
    }
    return AG_OK;
}

static int32_t scalar_dt(const vg_lib *L, ag_dtype d) {
    return d == AG_F32 ? L->t.dt_f32() : d == AG_BF16 ? L->t.dt_bf16() : L->t.dt_f16();
}

static int32_t cache_dt(const vg_group *g) {
    const int fp8 = ag_dtype_is_fp8(g->kv_dt);
    return fp8 ? g->lib->t.dt_u8() : scalar_dt(g->lib, g->kv_dt);
}

static const char *cache_word(const vg_group *g) {
    return g->kv_dt == AG_FP8_E4M3 ? "fp8_e4m3" : g->kv_dt == AG_FP8_E5M2 ? "fp8_e5m2" : "auto";
}

/* OpenMP's thread count for the calling thread: vLLM's scheduler sizes by
 * omp_get_max_threads() and its kernels run that many. */
extern void omp_set_num_threads(int n);

ag_status vg_op_schedule(vg_plan *P, ag_msg *msg) {
    const vg_group *g = P->g;
    const vg_lib *L = g->lib;
    vo_stack s = {.L = L};
    const int64_t R = P->R, R1 = P->R + 1;
    omp_set_num_threads(g->threads);
    push_i(&s, P->R);
    push_i(&s, g->plan_heads);
    push_i(&s, g->hkv);
    push_i(&s, g->d);
    push_t(&s, P->seq, 1, &R, L->t.dt_i32());
    push_i(&s, scalar_dt(L, g->dt));
    push_t(&s, P->qsl, 1, &R1, L->t.dt_i32());
    push_i(&s, P->causal);
    push_i(&s, g->window);
    push_str(&s, vg_isa_name(g->isa));
    push_i(&s, P->split);
    push_opt_t(&s, P->dyn, 1, &R, L->t.dt_i32());
    push_str(&s, cache_word(g));
    vg_scratch_begin();
    ag_status st = call(&s, "_C::get_scheduler_metadata", msg);
    unsigned calls = 0;
    P->requested = vg_scratch_requested(&calls);
    if (st != AG_OK) return st;
    P->meta = (vt_tensor)(uintptr_t)s.v[0];
    void *p = NULL;
    if (L->t.data_ptr(P->meta, &p) != 0 || L->t.numel(P->meta, &P->meta_len) != 0)
        return vg_fail(msg, AG_INTERNAL, AG_R_NONE, "VLLM_METADATA",
                       "torch could not read the scheduler's metadata tensor");
    P->meta_bytes = p;
    if (calls != 1)
        return vg_fail(msg, AG_INTERNAL, AG_R_NONE, "VLLM_GUARD",
                       "vLLM's scheduler asked its scratchpad manager %u times (0.32.0 asks "
                       "once): the adapter cannot tell the plan's scratch size", calls);
    return vg_model_read(P, msg);
}

/* fp8 codes decoded by the ABI's definition of the layout (attnguard/dtype.h),
 * for the cache writer below. */
static float *fp8_rows(const void *codes, size_t n, ag_dtype d) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; f && i < n; i++) f[i] = (float)ag_dtype_decode(codes, i, d);
    return f;
}

ag_status vg_op_write(const vg_group *g, vg_isa isa, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slots, ag_msg *msg) {
    const vg_lib *L = g->lib;
    const int fp8 = ag_dtype_is_fp8(g->kv_dt);
    vo_stack s = {.L = L};
    const int64_t rows[3] = {num_tokens, g->hkv, g->d};
    const int64_t cache[4] = {num_blocks, g->hkv, g->bs, g->d};
    const int64_t n = num_tokens;
    /* fp8: the rows arrive as codes; vLLM's op quantizes values with
     * 1 / k_scale, so the codes go in decoded (exact in f32) with scale 1
     * and come out as the same codes.  The layers' own scales are the
     * attention op's. */
    float *kf = NULL, *vf = NULL;
    if (fp8) {
        const size_t cnt = (size_t)num_tokens * (size_t)g->hkv * (size_t)g->d;
        kf = fp8_rows(k_rows, cnt, g->kv_dt);
        vf = fp8_rows(v_rows, cnt, g->kv_dt);
        if (!kf || !vf) {
            free(kf);
            free(vf);
            return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "write_kv: decoded rows");
        }
    }
    push_t(&s, fp8 ? kf : k_rows, 3, rows, fp8 ? L->t.dt_f32() : scalar_dt(L, g->kv_dt));
    push_t(&s, fp8 ? vf : v_rows, 3, rows, fp8 ? L->t.dt_f32() : scalar_dt(L, g->kv_dt));
    push_t(&s, k_cache, 4, cache, cache_dt(g));
    push_t(&s, v_cache, 4, cache, cache_dt(g));
    push_t(&s, slots, 1, &n, L->t.dt_i64());
    push_str(&s, vg_isa_name(isa));
    push_f(&s, 1.0);
    push_f(&s, 1.0);
    push_str(&s, cache_word(g));
    ag_status st = call(&s, "_C::cpu_attn_reshape_and_cache", msg);
    free(kf);
    free(vf);
    return st;
}

ag_status vg_op_attend(const vg_plan *P, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const vg_group *g = P->g;
    const vg_lib *L = g->lib;
    const vg_layer *ly = &g->layers[layer];
    vo_stack s = {.L = L};
    const int64_t qs[3] = {P->T, ly->hq, g->d};
    const int64_t cache[4] = {P->nblocks, g->hkv, g->bs, g->d};
    const int64_t R = P->R, R1 = P->R + 1, hq = ly->hq;
    const int64_t bt[2] = {P->R, P->stride};
    const int fp8 = ag_dtype_is_fp8(g->kv_dt);
    omp_set_num_threads(g->threads);
    push_t(&s, a->q, 3, qs, scalar_dt(L, g->dt));
    push_t(&s, a->k_cache, 4, cache, cache_dt(g));
    push_t(&s, a->v_cache, 4, cache, cache_dt(g));
    push_t(&s, a->out, 3, qs, scalar_dt(L, g->dt));
    push_t(&s, P->qsl, 1, &R1, L->t.dt_i32());
    push_t(&s, P->seq, 1, &R, L->t.dt_i32());
    push_f(&s, ly->scale);
    push_i(&s, P->causal);
    push_opt_t(&s, ly->alibi, 1, &hq, L->t.dt_f32());
    push_i(&s, ly->window);
    push_t(&s, P->bt, 2, bt, L->t.dt_i32());
    push_f(&s, ly->softcap);
    /* the plan's metadata: a new handle to it, which the call consumes */
    vt_tensor meta = NULL;
    void *mp = NULL;
    if (L->t.data_ptr(P->meta, &mp) == 0)
        meta = tensor(&s, mp, 1, &P->meta_len, L->t.dt_u8());
    push(&s, (vt_ivalue)(uintptr_t)meta);
    push_opt_t(&s, ly->sinks, 1, &hq, L->t.dt_f32());
    push_opt_t(&s, P->dyn, 1, &R, L->t.dt_i32());
    push_f(&s, fp8 ? ly->k_scale : 1.0);
    push_f(&s, fp8 ? ly->v_scale : 1.0);
    push_str(&s, cache_word(g));
    return call(&s, "_C::cpu_attention_with_kv_cache", msg);
}
