/*
 * vllm-repro.h — what the vllm-NNN.c reproducers share: loading torch and
 * vLLM's _C library from the venv `make engines ENGINE=vllm` fills (or
 * argv[1]), and calling vLLM's CPU attention ops through torch's stable C
 * ABI as vLLM's Python backend calls them.  The declarations are
 * ../../engines/vllm/vllm_torch.h; everything else is our own code, written
 * against the wheel's public op schemas only.  No Python runs.
 */
#ifndef VLLM_REPRO_H
#define VLLM_REPRO_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engines/vllm/vllm_torch.h"

static vt_api T;
static void *R_torch_cpu;

/* bf16 by truncation (the reproducers use values that fit bf16 exactly)
 * and back. */
static inline uint16_t r_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}
static inline float r_from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* argv[1] or build/engines/vllm/venv: the venv's site-packages. */
static inline const char *r_site(int argc, char **argv) {
    static char site[1024];
    const char *venv = argc > 1 ? argv[1] : "build/engines/vllm/venv";
    snprintf(site, sizeof site, "%s/lib/python3.11/site-packages", venv);
    return site;
}

static inline void *r_open(const char *site, const char *rel, int mode) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", site, rel);
    void *h = dlopen(p, mode);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", p, dlerror());
        exit(2);
    }
    return h;
}

#define R_TAKE(field, sym) *(void **)(&T.field) = dlsym(R_torch_cpu, sym)

/* torch, then vLLM's build `lib` ("_C", "_C_AVX512", "_C_AVX2"); exits 2
 * when either is missing.  amx: also ask torch for the AMX tiles, as vLLM's
 * backend does through torch.cpu._is_amx_tile_supported(). */
static inline void r_load(int argc, char **argv, const char *lib, int amx) {
    const char *site = r_site(argc, argv);
    r_open(site, "torch/lib/libc10.so", RTLD_NOW | RTLD_GLOBAL);
    R_torch_cpu = r_open(site, "torch/lib/libtorch_cpu.so", RTLD_NOW | RTLD_GLOBAL);
    r_open(site, "torch/lib/libtorch.so", RTLD_NOW | RTLD_GLOBAL);
    R_TAKE(from_blob, "aoti_torch_create_tensor_from_blob_v2");
    R_TAKE(delete_tensor, "aoti_torch_delete_tensor_object");
    R_TAKE(data_ptr, "aoti_torch_get_data_ptr");
    R_TAKE(numel, "aoti_torch_get_numel");
    R_TAKE(new_string, "torch_new_string_handle");
    R_TAKE(new_ivalue, "torch_new_stable_ivalue");
    R_TAKE(call, "torch_call_dispatcher");
    R_TAKE(what, "torch_exception_get_what_without_backtrace");
    R_TAKE(dt_f32, "aoti_torch_dtype_float32");
    R_TAKE(dt_bf16, "aoti_torch_dtype_bfloat16");
    R_TAKE(dt_f16, "aoti_torch_dtype_float16");
    R_TAKE(dt_u8, "aoti_torch_dtype_uint8");
    R_TAKE(dt_i32, "aoti_torch_dtype_int32");
    R_TAKE(dt_i64, "aoti_torch_dtype_int64");
    R_TAKE(cpu, "aoti_torch_device_type_cpu");
    R_TAKE(strided, "aoti_torch_layout_strided");
    if (!T.call || !T.from_blob || !T.strided) {
        fprintf(stderr, "libtorch_cpu.so lacks torch 2.13's stable C ABI\n");
        exit(2);
    }
    if (amx) {
        _Bool (*init_amx)(void) = (_Bool (*)(void))dlsym(R_torch_cpu, "_ZN2at3cpu8init_amxEv");
        if (!init_amx || !init_amx()) {
            fprintf(stderr, "this CPU or kernel gives no AMX tiles\n");
            exit(2);
        }
    }
    char rel[64];
    snprintf(rel, sizeof rel, "vllm/%s.abi3.so", lib);
    r_open(site, rel, RTLD_LAZY | RTLD_LOCAL);   /* its ops register themselves */
}

/* ---- a call's stack (vllm_torch.h says how each type is encoded) ---- */
typedef struct r_stack {
    vt_ivalue v[20];
    int n;
} r_stack;

static inline void r_i(r_stack *s, int64_t x) { s->v[s->n++] = (vt_ivalue)x; }
static inline void r_f(r_stack *s, double x) { memcpy(&s->v[s->n++], &x, sizeof x); }
static inline void r_str(r_stack *s, const char *str) {
    vt_string h;
    T.new_string(str, strlen(str), &h);
    s->v[s->n++] = (vt_ivalue)(uintptr_t)h;
}
static inline vt_tensor r_tensor(const void *data, int nd, const int64_t *sizes, int32_t dt) {
    int64_t st[4], m = 1;
    for (int i = nd - 1; i >= 0; i--) st[i] = m, m *= sizes[i];
    vt_tensor h = NULL;
    T.from_blob((void *)(uintptr_t)data, nd, sizes, st, 0, dt, T.cpu(), 0, &h, T.strided(), NULL, 0);
    return h;
}
static inline void r_t(r_stack *s, const void *data, int nd, const int64_t *sizes, int32_t dt) {
    s->v[s->n++] = (vt_ivalue)(uintptr_t)r_tensor(data, nd, sizes, dt);
}
static inline void r_none(r_stack *s) { s->v[s->n++] = 0; }
static inline void r_opt_t(r_stack *s, const void *data, int nd, const int64_t *sizes, int32_t dt) {
    vt_ivalue *box;
    T.new_ivalue(&box);
    *box = (vt_ivalue)(uintptr_t)r_tensor(data, nd, sizes, dt);
    s->v[s->n++] = (vt_ivalue)(uintptr_t)box;
}
/* 0, or 1 with torch's message printed */
static inline int r_call(r_stack *s, const char *op) {
    if (T.call(op, "", s->v, VT_ABI_2_13) == 0) return 0;
    fprintf(stderr, "%s: %s\n", op, T.what());
    return 1;
}

/* ---- one paged request, as vLLM's backend lays it out ---- */
typedef struct r_batch {
    int32_t R, T, nb, stride;   /* requests, query tokens, blocks, block-table stride */
    int32_t qsl[9], seq[8];
    int32_t *bt;                /* [R][stride], block b of request r = its own block */
} r_batch;

/* Requests of q_len q[r] over seq[r] keys, each on consecutive blocks. */
static inline void r_batch_make(r_batch *b, int32_t R, const int32_t *q, const int32_t *seq, int32_t bs) {
    b->R = R;
    b->qsl[0] = 0;
    b->stride = 0;
    for (int32_t r = 0; r < R; r++) {
        b->qsl[r + 1] = b->qsl[r] + q[r];
        b->seq[r] = seq[r];
        const int32_t n = (seq[r] + bs - 1) / bs;
        if (n > b->stride) b->stride = n;
    }
    b->T = b->qsl[R];
    b->bt = calloc((size_t)R * (size_t)b->stride, sizeof *b->bt);
    b->nb = 0;
    for (int32_t r = 0; r < R; r++)
        for (int32_t j = 0; j < (seq[r] + bs - 1) / bs; j++) b->bt[r * b->stride + j] = b->nb++;
}

/* vLLM's get_scheduler_metadata for b (isa "vec", "vec16", "amx"); NULL on
 * a refusal (printed). */
static inline vt_tensor r_schedule(const r_batch *b, int64_t hq, int64_t hkv, int64_t d, int32_t dt,
                            int causal, int64_t window, const char *isa, int split,
                            const char *kv) {
    r_stack s = {.n = 0};
    const int64_t R = b->R, R1 = b->R + 1;
    r_i(&s, b->R);
    r_i(&s, hq);
    r_i(&s, hkv);
    r_i(&s, d);
    r_t(&s, b->seq, 1, &R, T.dt_i32());
    r_i(&s, dt);
    r_t(&s, b->qsl, 1, &R1, T.dt_i32());
    r_i(&s, causal);
    r_i(&s, window);
    r_str(&s, isa);
    r_i(&s, split);
    r_none(&s);
    r_str(&s, kv);
    return r_call(&s, "_C::get_scheduler_metadata") ? NULL : (vt_tensor)(uintptr_t)s.v[0];
}

/* vLLM's cpu_attn_reshape_and_cache: rows [T][hkv][d] of dtype rows_dt
 * into caches [nb][hkv][bs][d] of dtype cache_dt, slot i = row i. */
static inline int r_write(const void *k, const void *v, int32_t rows_dt, void *kc, void *vc,
                   int32_t cache_dt, int64_t ntok, int64_t hkv, int64_t d, int64_t nb, int64_t bs,
                   const char *isa, const char *kv) {
    int64_t *slots = malloc((size_t)ntok * sizeof *slots);
    for (int64_t i = 0; i < ntok; i++) slots[i] = i;
    const int64_t rs[3] = {ntok, hkv, d}, cs[4] = {nb, hkv, bs, d};
    r_stack s = {.n = 0};
    r_t(&s, k, 3, rs, rows_dt);
    r_t(&s, v, 3, rs, rows_dt);
    r_t(&s, kc, 4, cs, cache_dt);
    r_t(&s, vc, 4, cs, cache_dt);
    r_t(&s, slots, 1, &ntok, T.dt_i64());
    r_str(&s, isa);
    r_f(&s, 1.0);
    r_f(&s, 1.0);
    r_str(&s, kv);
    const int rc = r_call(&s, "_C::cpu_attn_reshape_and_cache");
    free(slots);
    return rc;
}

/* vLLM's cpu_attention_with_kv_cache: q and out [T][hq][d] of dtype dt. */
typedef struct r_layer {
    double scale, softcap;
    int64_t window;             /* vLLM's sliding_window, -1 none */
} r_layer;

static inline int r_attend(const r_batch *b, const void *q, void *out, int32_t dt, const void *kc,
                    const void *vc, int32_t cache_dt, int64_t hq, int64_t hkv, int64_t d,
                    int64_t bs, int causal, const r_layer *ly, vt_tensor meta, const char *kv) {
    const int64_t qs[3] = {b->T, hq, d}, cs[4] = {b->nb, hkv, bs, d};
    const int64_t R = b->R, R1 = b->R + 1, bts[2] = {b->R, b->stride};
    int64_t mlen;
    void *mp;
    T.numel(meta, &mlen);
    T.data_ptr(meta, &mp);
    r_stack s = {.n = 0};
    r_t(&s, q, 3, qs, dt);
    r_t(&s, kc, 4, cs, cache_dt);
    r_t(&s, vc, 4, cs, cache_dt);
    r_t(&s, out, 3, qs, dt);
    r_t(&s, b->qsl, 1, &R1, T.dt_i32());
    r_t(&s, b->seq, 1, &R, T.dt_i32());
    r_f(&s, ly->scale);
    r_i(&s, causal);
    r_none(&s);
    r_i(&s, ly->window);
    r_t(&s, b->bt, 2, bts, T.dt_i32());
    r_f(&s, ly->softcap);
    r_t(&s, mp, 1, &mlen, T.dt_u8());
    r_none(&s);
    r_none(&s);
    r_f(&s, 1.0);
    r_f(&s, 1.0);
    r_str(&s, kv);
    return r_call(&s, "_C::cpu_attention_with_kv_cache");
}

/* OpenMP's thread count: vLLM's scheduler and kernels use it. */
extern void omp_set_num_threads(int n);

/* Deterministic values in [-1, 1). */
static inline float r_val(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* One request, one key whose K row is 0 (so every logit is 0 whatever q
 * and the scale, and the exact output is that key's V row), q = 1 in
 * every element: the output row of d elements through implementation isa
 * over an fp8 cache of kind kv (vLLM's own writer, bf16 rows, scale 1) at
 * this softmax scale.  d <= 64, bs <= 32.  -1 when vLLM could not be called. */
static inline int r_one_zero_key(const char *isa, const char *kv, double scale,
                                 const uint16_t *vrow, int d, int bs, float *got) {
    uint16_t k[64] = {0}, q[64], out[64];
    uint8_t kc[32 * 64] = {0}, vc[32 * 64] = {0};
    if (d > 64 || bs > 32) return -1;
    for (int i = 0; i < d; i++) q[i] = r_bf16(1.0f);
    if (r_write(k, vrow, T.dt_bf16(), kc, vc, T.dt_u8(), 1, 1, d, 1, bs, isa, kv)) return -1;
    const int32_t ql = 1, seq = 1;
    r_batch b;
    r_batch_make(&b, 1, &ql, &seq, bs);
    vt_tensor meta = r_schedule(&b, 1, 1, d, T.dt_bf16(), 1, -1, isa, 1, kv);
    const r_layer ly = {scale, 0.0, -1};
    if (!meta || r_attend(&b, q, out, T.dt_bf16(), kc, vc, T.dt_u8(), 1, 1, d, bs, 1, &ly, meta, kv))
        return -1;
    for (int i = 0; i < d; i++) got[i] = r_from_bf16(out[i]);
    return 0;
}

/* Elements of got[0..n) that are not want's (NaN counts as wrong). */
static inline int r_count_wrong(const float *got, const float *want, int n) {
    int w = 0;
    for (int i = 0; i < n; i++) w += !(got[i] == want[i]);
    return w;
}

/* A V row of n values every fp8 kind holds exactly (1, 1.25, 1.5, 1.75
 * times 2^0..2^4, alternating in sign): want[] as floats, v[] as bf16. */
static inline void r_fp8_exact_row(float *want, uint16_t *v, int n) {
    for (int i = 0; i < n; i++) {
        want[i] = (1.0f + 0.25f * (float)(i % 4)) * (float)(1 << (i % 5)) * (i % 2 ? -1.0f : 1.0f);
        v[i] = r_bf16(want[i]);
    }
}

/* r_one_zero_key through configurations a and b (implementation, fp8
 * kind) at one scale: bad[0], bad[1] their wrong elements against want,
 * *b0 b's first element.  -1 when vLLM could not be called. */
static inline int r_pair_wrong(const char *isa_a, const char *kv_a, const char *isa_b,
                               const char *kv_b, double scale, const uint16_t *vrow,
                               const float *want, int d, int bs, int bad[2], float *b0) {
    float a[64], b[64];
    if (r_one_zero_key(isa_a, kv_a, scale, vrow, d, bs, a) ||
        r_one_zero_key(isa_b, kv_b, scale, vrow, d, bs, b))
        return -1;
    bad[0] = r_count_wrong(a, want, d);
    bad[1] = r_count_wrong(b, want, d);
    *b0 = b[0];
    return 0;
}

#endif /* VLLM_REPRO_H */
