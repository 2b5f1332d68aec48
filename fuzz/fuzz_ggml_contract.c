/*
 * fuzz_ggml_contract.c — contract fuzzing of ggml's CPU flash attention
 * itself (not of the adapter): ggml_flash_attn_ext built and computed
 * through ggml's public API, loaded with dlopen from the packaged
 * libraries, with inputs inside and just outside what ggml.h documents
 * (q [Dk, T, Hq, n3], k [Dk, n_kv, Hkv, n3], v [Dv, n_kv, Hkv, n3], an f16
 * mask [n_kv, T, m2, m3] with Hq % m2 == 0, n3 % m3 == 0).  Built when ggml
 * is (make engines); its limits are fuzz_ggml_contract.options.
 *
 * Verdicts.  A GGML_ASSERT / GGML_ABORT is ggml refusing by design: the
 * abort callback longjmps back here (graph construction and planning run on
 * this thread; compute runs first with one thread, which is this thread)
 * and the abort is counted, not reported.  Findings are what ggml does not
 * refuse, judged by the harness's own parts: every buffer ggml gets is a
 * guarded mapping (judge/guard.c: ggml is not instrumented, so an access
 * out of bounds shows on its PROT_NONE pages as input-bounds or
 * scratch-bounds), an output of an input inside the contract is compared
 * with the harness's reference (judge/ref.c, fed the op's own mask) within
 * the error model of ggml's rounding (judge/compare.c): differential; a
 * compute that fails inside the contract: bad-input; a hang: -timeout.
 * What the reference cannot express (K and V head sizes or head counts
 * that differ, quantized caches, NaN or infinite mask entries) is computed
 * under guard but not compared, and counted as such (docs/engines.md).
 * The counts print at exit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dlfcn.h>

#include "../engines/ggml/ggml_branches.h"
#include "../engines/ggml/ggml_load.h"
#include "../harness/judge/compare.h"
#include "../harness/judge/guard.h"
#include "../harness/judge/oracles.h"
#include "../harness/judge/reach.h"
#include "../harness/judge/ref.h"

/* ---- ggml, loaded once ---- */
static agg_lib *lib;
static struct {
    AGG_FN(ggml_view_4d);
    AGG_FN(ggml_nbytes);
    AGG_FN(ggml_prec_set_acc);
    AGG_FN(ggml_fp16_to_fp32);
    AGG_FN(ggml_is_contiguous);
} more;

/* ---- verdict counters, printed at exit ---- */
static struct {
    unsigned long execs, aborts_build, aborts_plan, aborts_compute, computed, checked,
        accepted_outside, skipped, unjudgeable;
    char msg[24][160];
    unsigned long msg_n[24];
    int nmsg;
} stats;

static void count_msg(const char *m) {
    const char *s = strstr(m, "ggml/src/");
    s = s ? s : m;
    for (int i = 0; i < stats.nmsg; i++)
        if (!strncmp(stats.msg[i], s, sizeof stats.msg[i] - 1)) {
            stats.msg_n[i]++;
            return;
        }
    if (stats.nmsg < 24) snprintf(stats.msg[stats.nmsg], sizeof stats.msg[0], "%s", s),
        stats.msg_n[stats.nmsg++] = 1;
}

static void print_stats(void) {
    fprintf(stderr,
            "fuzz_ggml_contract: %lu inputs: %lu GGML_ASSERT/ABORT at graph build, %lu at plan, "
            "%lu at compute (clean refusals); %lu computed (%lu checked against the reference, "
            "%lu inside the contract but outside what the reference expresses, %lu outside the "
            "contract accepted without a fault), %lu skipped (triaged classes)\n",
            stats.execs, stats.aborts_build, stats.aborts_plan, stats.aborts_compute,
            stats.computed, stats.checked, stats.unjudgeable, stats.accepted_outside,
            stats.skipped);
    for (int i = 0; i < stats.nmsg; i++) fprintf(stderr, "  %8lu x %s\n", stats.msg_n[i], stats.msg[i]);
}

/* ---- the abort callback: longjmp on this thread, a crash elsewhere ---- */
static _Thread_local int armed;
static jmp_buf on_abort;
static char abort_text[512];

static void fuzz_on_abort(const char *m) {
    snprintf(abort_text, sizeof abort_text, "%s", m);
    if (armed) {
        armed = 0;
        longjmp(on_abort, 1);
    }
    /* a GGML_ASSERT on a worker thread after the one-thread run passed:
     * ggml refused late and aborts (a finding to triage) */
    fprintf(stderr, "fuzz_ggml_contract: GGML abort outside the caught phases: %s\n", m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ag_msg msg;
    if (agg_load(NULL, &lib, &msg) != AG_OK) {
        fprintf(stderr, "fuzz_ggml_contract: %s\n", msg.text);
        exit(1);
    }
    *(void **)&more.ggml_view_4d = dlsym(lib->base_handle, "ggml_view_4d");
    *(void **)&more.ggml_nbytes = dlsym(lib->base_handle, "ggml_nbytes");
    *(void **)&more.ggml_prec_set_acc = dlsym(lib->base_handle, "ggml_prec_set_acc");
    *(void **)&more.ggml_fp16_to_fp32 = dlsym(lib->base_handle, "ggml_fp16_to_fp32");
    *(void **)&more.ggml_is_contiguous = dlsym(lib->base_handle, "ggml_is_contiguous");
    if (!more.ggml_view_4d || !more.ggml_nbytes || !more.ggml_fp16_to_fp32 ||
        !more.ggml_is_contiguous) {
        fprintf(stderr, "fuzz_ggml_contract: ggml lacks a needed symbol\n");
        exit(1);
    }
    lib->base.ggml_set_abort_callback(fuzz_on_abort);
    guard_install_fault_handler();
    /* ggml's branches at zero: the layouts are the adapter's, not ggml's */
    for (int i = 0; i < GGP_COUNT; i++)
        if (i != P_UNIFIED && i != P_STREAMS) reach_enter("path", &ggp_names[i], 1);
    atexit(print_stats);
    return 0;
}

/* A GGML_ASSERT caught by longjmp leaves what ggml allocated on its way
 * there (context memory freed below, a threadpool's bookkeeping) behind by
 * design: the fuzzer counts those aborts, not leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libggml\nleak:libomp.so\n"; }

/* ---- the input, decoded ---- */
typedef struct rd { const uint8_t *p; size_t n; } rd;
static unsigned u8(rd *r) { return r->n ? (r->n--, *r->p++) : 0; }
#define PICK(r, tab) (tab)[u8(r) % (sizeof(tab) / sizeof((tab)[0]))]

typedef struct fcase {
    int variant, threads, layout, pad, misalign, guard_front, mask_fill, sinks, prec;
    int64_t dk, dv, T, hq, hk, hv, nkv, nkv_v, n3q, n3k, n3v, m0, m1, m2, m3;
    enum ggml_type tq, tk, tv, tm;      /* tm: GGML_TYPE_COUNT = no mask */
    float scale, max_bias, softcap, amp_q, amp_k, amp_v;
    uint64_t seed;
} fcase;

static void decode(rd *r, fcase *c) {
    static const int64_t D[] = {1, 2, 3, 7, 8, 16, 32, 40, 64, 80, 96, 112, 128, 256, 0, 576};
    static const int64_t T[] = {1, 1, 1, 2, 3, 5, 8, 16, 63, 64, 65, 100, 128, 0, 1, 7};
    static const int64_t H[] = {1, 2, 3, 4, 6, 8, 12, 16};
    static const int64_t N[] = {1, 2, 17, 63, 64, 65, 100, 256, 511, 512, 513, 700, 1024, 1025, 0, 3};
    static const enum ggml_type TQ[] = {GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32,
                                        GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16};
    static const enum ggml_type TK[] = {GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F32,
                                        GGML_TYPE_F32, GGML_TYPE_BF16, GGML_TYPE_Q8_0, GGML_TYPE_Q4_0};
    static const enum ggml_type TM[] = {GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_F16,
                                        GGML_TYPE_F16, GGML_TYPE_F16, GGML_TYPE_COUNT, GGML_TYPE_F32};
    static const int dM0[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 7, -100000, 64, 3};
    static const int dM1[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 1, 63, -100000, 2, 5};
    static const float SC[] = {0, 0, 0, 0, 0, 0, 0, 0, 0.1f, 1, -1, 1e30f, NAN, 1e-30f, 2, 0};
    static const float MB[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 1, 16, -1, NAN, 0.5f};
    static const float CAP[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 50, 1, -5, NAN, 1e-3f};
    static const int SINKS[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 3};
    static const int PREC[] = {-1, -1, -1, -1, -1, -1, -1, -1, GGML_PREC_F32, GGML_PREC_F32,
                               GGML_PREC_F32, GGML_PREC_F32, GGML_PREC_DEFAULT, GGML_PREC_F16,
                               GGML_PREC_BF16, 7};
    static const float AMP[] = {1, 1, 4, 0.01f}, AMPV[] = {1, 1, 16, 1000};
    c->variant = (int)(u8(r) % (unsigned)lib->nvar);
    /* one input in four runs threaded too: a disposable ggml threadpool per
     * compute costs ~20 ms on a loaded 2-core machine */
    static const int THR[] = {1, 1, 1, 1, 1, 2, 3, 4};
    c->threads = PICK(r, THR);
    c->dk = PICK(r, D);
    c->dv = u8(r) % 8 != 7 ? c->dk : PICK(r, D);
    c->T = PICK(r, T);
    c->hq = PICK(r, H);
    unsigned hsel = u8(r);
    c->hk = hsel % 8 != 7 ? c->hq / (int64_t)(1u << (hsel % 3)) : 1 + (int64_t)(hsel % 5);
    if (c->hk < 1) c->hk = 1;
    c->hv = u8(r) % 8 != 7 ? c->hk : 1 + (int64_t)(u8(r) % 5);
    c->nkv = PICK(r, N);
    c->nkv_v = u8(r) % 16 != 15 ? c->nkv : c->nkv + (int64_t)(u8(r) % 3) - 1;
    unsigned n3 = u8(r) % 16;
    c->n3q = n3 >= 14 ? 2 : 1;
    c->n3k = n3 == 15 ? 1 : c->n3q;
    c->n3v = c->n3k;
    c->tq = PICK(r, TQ);
    c->tk = PICK(r, TK);
    c->tv = u8(r) % 8 != 7 ? c->tk : PICK(r, TK);
    c->tm = PICK(r, TM);
    c->m0 = c->nkv + PICK(r, dM0);
    c->m1 = c->T + PICK(r, dM1);
    if (c->m0 < 0) c->m0 = 0;
    if (c->m1 < 0) c->m1 = 0;
    unsigned m2 = u8(r) % 16;
    c->m2 = m2 < 11 ? 1 : m2 < 13 ? c->hq : m2 < 14 ? 2 : m2 < 15 ? 3 : 2 * c->hq;
    c->m3 = u8(r) % 8 != 7 ? 1 : c->n3q + 1;
    c->mask_fill = (int)(u8(r) % 4);
    c->scale = PICK(r, SC);
    if (c->scale == 0 && c->dk > 0) c->scale = 1.0f / sqrtf((float)c->dk);
    c->max_bias = PICK(r, MB);
    c->softcap = PICK(r, CAP);
    c->sinks = PICK(r, SINKS);
    c->prec = PICK(r, PREC);
    c->layout = (int)(u8(r) % 2);
    c->pad = u8(r) % 8 != 7 ? 0 : 1 + (int)(u8(r) % 16);
    c->misalign = u8(r) % 16 != 15 ? 0 : 1 + (int)(u8(r) % 4);
    c->guard_front = (int)(u8(r) % 2);
    c->amp_q = PICK(r, AMP), c->amp_k = PICK(r, AMP), c->amp_v = PICK(r, AMPV);
    c->seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 8; i++) c->seed = c->seed * 131 + u8(r);
    /* keep one input's arithmetic (and the fp64 check) near 2^21 MACs */
    while (c->T * c->hq * c->nkv * (c->dk + c->dv + 1) * c->n3q > ((int64_t)1 << 21))
        c->nkv > c->T ? (c->nkv /= 2, c->nkv_v /= 2, c->m0 /= 2) : (c->T /= 2, c->m1 /= 2);
}

/* What the harness's reference expresses (docs/design.md section 2, plus
 * the op's mask): one head size and one head count for K and V; and an
 * output to compare (T >= 1). */
static int judgeable(const fcase *c) { return c->dk == c->dv && c->hk == c->hv && c->T >= 1; }

/* The documented contract, one named condition each; `why` gets the names
 * of those an input breaks (every such input is a precondition ggml should
 * refuse).  `exact`: inside, and the fp64 check applies. */
static int in_contract(const fcase *c, int *exact, char *why, size_t cap) {
    const int quant_k = c->tk == GGML_TYPE_Q8_0 || c->tk == GGML_TYPE_Q4_0;
    const int quant_v = c->tv == GGML_TYPE_Q8_0 || c->tv == GGML_TYPE_Q4_0;
    const struct { int ok; const char *name; } cond[] = {
        {c->tq == GGML_TYPE_F32, "q-not-f32"},
        {c->dk >= 1 && c->dv >= 1, "zero-head-dim"},
        {c->nkv_v == c->nkv, "v-rows-differ-from-k"},
        {c->hq % c->hk == 0, "hq-not-multiple-of-k-heads"},
        {c->hq % c->hv == 0, "hq-not-multiple-of-v-heads"},
        {c->n3q == c->n3k && c->n3q == c->n3v, "dim3-mismatch"},
        {isfinite(c->scale), "scale-not-finite"},
        {isfinite(c->softcap) && c->softcap >= 0, "softcap-negative-or-nan"},
        {isfinite(c->max_bias) && c->max_bias >= 0, "max-bias-negative-or-nan"},
        {c->max_bias <= 0 || c->tm != GGML_TYPE_COUNT, "alibi-without-mask"},
        {c->sinks == 0 || c->sinks == 1, "sinks-misshapen"},
        {c->prec == -1 || c->prec == GGML_PREC_F32 || c->prec == GGML_PREC_DEFAULT, "prec-not-f32"},
        {c->tm == GGML_TYPE_COUNT || c->tm == GGML_TYPE_F16, "mask-not-f16"},
        {c->tm == GGML_TYPE_COUNT || c->m0 >= c->nkv, "mask-row-shorter-than-n-kv"},
        {c->tm == GGML_TYPE_COUNT || c->m1 >= c->T, "mask-fewer-rows-than-queries"},
        {c->tm == GGML_TYPE_COUNT || (c->m2 >= 1 && c->hq % c->m2 == 0), "mask-dim2-not-dividing-hq"},
        {c->tm == GGML_TYPE_COUNT || (c->m3 >= 1 && c->n3q % c->m3 == 0), "mask-dim3-not-dividing"},
    };
    int ok = 1;
    why[0] = '\0';
    for (size_t i = 0; i < sizeof cond / sizeof cond[0]; i++) {
        if (cond[i].ok) continue;
        ok = 0;
        size_t u = strlen(why);
        snprintf(why + u, cap - u, "%s%s", u ? "," : "", cond[i].name);
    }
    *exact = ok && !quant_k && !quant_v && c->mask_fill != 3 && judgeable(c);
    return ok;
}

/* ---- guarded buffers: the harness's (judge/guard.c) ---- */

/* A buffer of `bytes` for operand `label`, its first byte after a PROT_NONE
 * page (front, moved on by `misalign` bytes) or its last byte against one. */
static char *gb_alloc(guard *g, const char *label, size_t bytes, int front, int misalign) {
    if (guard_init_placed(g, label, bytes + (front ? (size_t)misalign : 0), front) != 0) abort();
    g->oracle = oracle_name(strcmp(label, "work") ? ORACLE_INPUT_BOUNDS : ORACLE_SCRATCH_BOUNDS);
    return (char *)g->buf + (front ? misalign : 0);
}

/* ---- values ---- */
static uint64_t rs;
static float frand(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (float)((double)(rs >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void put(enum ggml_type t, char *p, float f) {
    if (t == GGML_TYPE_F32) memcpy(p, &f, 4);
    else if (t == GGML_TYPE_F16) {
        ggml_fp16_t h = lib->base.ggml_fp32_to_fp16(f);
        memcpy(p, &h, 2);
    } else if (t == GGML_TYPE_BF16) {
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        memcpy(p, &h, 2);
    }
}

static double get(enum ggml_type t, const char *p) {
    if (t == GGML_TYPE_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    if (t == GGML_TYPE_F16) return more.ggml_fp16_to_fp32(h);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Fills every element of view x (random bytes for block-quantized types). */
static void fill(struct ggml_tensor *x, float amp, int mask_fill) {
    const int64_t *ne = x->ne;
    const size_t es = x->type == GGML_TYPE_F32 ? 4 : 2;
    if (x->type != GGML_TYPE_F32 && x->type != GGML_TYPE_F16 && x->type != GGML_TYPE_BF16) {
        size_t n = more.ggml_nbytes(x);
        for (size_t i = 0; i < n; i++) ((unsigned char *)x->data)[i] = (unsigned char)(rs >> 24), frand();
        return;
    }
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                    char *p = (char *)x->data + i0 * es + i1 * x->nb[1] + i2 * x->nb[2] +
                              i3 * x->nb[3];
                    float f = amp * frand();
                    if (mask_fill >= 0) {   /* a mask: 0, -inf, finite biases, NaN / +inf */
                        float u = frand();
                        f = mask_fill == 0 ? 0.0f
                            : u < -0.3f    ? -INFINITY
                            : mask_fill == 1 ? 0.0f
                            : mask_fill == 3 && u > 0.9f ? (u > 0.95f ? NAN : INFINITY)
                                                         : 8.0f * (u - 1.0f) * 0.5f;
                    }
                    put(x->type, p, f);
                }
}

/* ---- one input's graph and buffers ---- */
enum { B_Q, B_K, B_V, B_MASK, B_SINKS, B_OUT, B_WORK1, B_WORKN, B_COUNT };
typedef struct run {
    fcase c;
    struct ggml_context *ctx;
    struct ggml_tensor *t[B_OUT + 1];     /* views handed to the op, and out */
    struct ggml_tensor *base[B_OUT + 1];  /* what the buffers back */
    struct ggml_cgraph *gf;
    guard buf[B_COUNT];
} run;

/* A [d, rows, heads, n3] operand: contiguous, or (layout 1) a view of
 * [d, heads, rows, n3] as llama.cpp permutes q, k and v, optionally with
 * padded rows (non-contiguous). */
static struct ggml_tensor *leaf(run *R, int i, enum ggml_type t, int64_t d, int64_t rows,
                                int64_t heads, int64_t n3) {
    const fcase *c = &R->c;
    const int plain = t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
    const int64_t pad = plain ? c->pad : 0;
    struct ggml_tensor *b = lib->base.ggml_new_tensor_4d(
        R->ctx, t, d + pad, c->layout ? heads : rows, c->layout ? rows : heads, n3);
    R->base[i] = b;
    if (!pad && !c->layout) return R->t[i] = b;
    return R->t[i] = more.ggml_view_4d(R->ctx, b, d, rows, heads, n3,
                                        c->layout ? b->nb[2] : b->nb[1],
                                        c->layout ? b->nb[1] : b->nb[2], b->nb[3], 0);
}

static void build(run *R) {
    const agg_base *f = &lib->base;
    const fcase *c = &R->c;
    size_t mem = 24 * f->ggml_tensor_overhead() + f->ggml_graph_overhead_custom(16, false) + 4096;
    R->ctx = f->ggml_init((struct ggml_init_params){mem, NULL, true});
    struct ggml_tensor *q = leaf(R, B_Q, c->tq, c->dk, c->T, c->hq, c->n3q);
    struct ggml_tensor *k = leaf(R, B_K, c->tk, c->dk, c->nkv, c->hk, c->n3k);
    struct ggml_tensor *v = leaf(R, B_V, c->tv, c->dv, c->nkv_v, c->hv, c->n3v);
    struct ggml_tensor *m = NULL;
    if (c->tm != GGML_TYPE_COUNT)
        m = R->t[B_MASK] = R->base[B_MASK] =
            f->ggml_new_tensor_4d(R->ctx, c->tm, c->m0, c->m1, c->m2, c->m3);
    R->t[B_OUT] = R->base[B_OUT] =
        f->ggml_flash_attn_ext(R->ctx, q, k, v, m, c->scale, c->max_bias, c->softcap);
    if (c->sinks) {
        R->t[B_SINKS] = R->base[B_SINKS] = f->ggml_new_tensor_1d(
            R->ctx, c->sinks == 3 ? GGML_TYPE_F16 : GGML_TYPE_F32, c->hq + (c->sinks == 2));
        f->ggml_flash_attn_ext_add_sinks(R->t[B_OUT], R->t[B_SINKS]);
    }
    if (c->prec >= 0 && more.ggml_prec_set_acc)
        more.ggml_prec_set_acc(R->t[B_OUT], (enum ggml_prec)c->prec);
    R->gf = f->ggml_new_graph_custom(R->ctx, 16, false);
    f->ggml_build_forward_expand(R->gf, R->t[B_OUT]);
}

/* Every operand and the output get a guarded buffer of exactly their size. */
static void place(run *R) {
    const fcase *c = &R->c;
    static const char *const label[B_OUT + 1] = {"q", "k", "v", "mask", "sinks", "out"};
    for (int i = 0; i <= B_OUT; i++) {
        if (!R->base[i]) continue;
        const int mis = i <= B_V ? c->misalign : 0;
        R->base[i]->data =
            gb_alloc(&R->buf[i], label[i], more.ggml_nbytes(R->base[i]), c->guard_front, mis);
        R->t[i]->data = (char *)R->base[i]->data + R->t[i]->view_offs;
    }
    fill(R->t[B_Q], c->amp_q, -1);
    fill(R->t[B_K], c->amp_k, -1);
    fill(R->t[B_V], c->amp_v, -1);
    if (R->t[B_MASK]) fill(R->t[B_MASK], 1, c->mask_fill);
    if (R->t[B_SINKS]) fill(R->t[B_SINKS], 3, -1);
}

static void teardown(run *R) {
    for (int i = 0; i < B_COUNT; i++) guard_free(&R->buf[i]);
    if (R->ctx) lib->base.ggml_free(R->ctx);
    memset(R, 0, sizeof *R);
}

/* ---- the judge: the harness's reference over the op's operands ---- */

static int64_t idx(const struct ggml_tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return i0 * (int64_t)x->nb[0] + i1 * (int64_t)x->nb[1] + i2 * (int64_t)x->nb[2] +
           i3 * (int64_t)x->nb[3];
}

static ag_dtype ag_of(enum ggml_type t) {
    return t == GGML_TYPE_F16 ? AG_F16 : t == GGML_TYPE_BF16 ? AG_BF16 : AG_F32;
}

/* Element (i0, i1, i2, i3) of view x (f32, f16 or bf16: each exact in f32). */
static float elem(const struct ggml_tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (float)get(x->type, (const char *)x->data + idx(x, i0, i1, i2, i3));
}

static float ggml_slope(float max_bias, uint32_t n_head, uint32_t h) {
    const uint32_t nl = 1u << (uint32_t)floor(log2(n_head));
    const float m0 = powf(2.0f, -(max_bias) / nl), m1 = powf(2.0f, -(max_bias / 2.0f) / nl);
    return h < nl ? powf(m0, h + 1) : powf(m1, 2 * (h - nl) + 1);
}

/* The op's inputs as the reference reads them: each of the n3 batch
 * entries a non-causal request of T queries over its n_kv keys (one block
 * of n_kv slots), q [tokens][hq][dk] and K/V rows [slot][hk][dk] widened to
 * f32 (exactly: K and V may differ in type), the mask made dense
 * [tokens][hq][n_kv], ggml's ALiBi slopes scaling it, the sinks, and a
 * negative scale moved onto q (a sign flip). */
typedef struct judged {
    ref_input in;
    float *q, *k, *v;
    float *mask, *slopes, *sinks;
    int32_t *qsl, *seq, *bt;
    uint8_t *causal;
} judged;

static void judged_free(judged *J) {
    free(J->q), free(J->k), free(J->v), free(J->mask), free(J->slopes), free(J->sinks);
    free(J->qsl), free(J->seq), free(J->bt), free(J->causal);
}

static void judged_init(const run *R, judged *J) {
    const fcase *c = &R->c;
    const int64_t n3 = c->n3q, T = c->T, hq = c->hq, hk = c->hk, nkv = c->nkv, D = c->dk;
    const struct ggml_tensor *q = R->t[B_Q], *k = R->t[B_K], *v = R->t[B_V], *m = R->t[B_MASK];
    memset(J, 0, sizeof *J);
    const double sign = c->scale < 0 ? -1.0 : 1.0;
    J->q = malloc((size_t)(n3 * T * hq * D) * sizeof(float));
    J->k = malloc((size_t)(n3 * nkv * hk * D) * sizeof(float) + 4);
    J->v = malloc((size_t)(n3 * nkv * hk * D) * sizeof(float) + 4);
    J->qsl = malloc((size_t)(n3 + 1) * sizeof(int32_t));
    J->seq = malloc((size_t)n3 * sizeof(int32_t));
    J->bt = malloc((size_t)n3 * sizeof(int32_t));
    J->causal = calloc((size_t)n3, 1);
    if (m) J->mask = malloc((size_t)(n3 * T * hq * nkv) * sizeof(float) + 4);
    if (c->max_bias > 0) J->slopes = malloc((size_t)hq * sizeof(float));
    if (c->sinks) J->sinks = malloc((size_t)hq * sizeof(float));
    if (!J->q || !J->k || !J->v || !J->qsl || !J->seq || !J->bt || !J->causal ||
        (m && !J->mask) || (c->max_bias > 0 && !J->slopes) || (c->sinks && !J->sinks))
        abort();
    for (int64_t r = 0; r < n3; r++) {
        J->qsl[r] = (int32_t)(r * T);
        J->seq[r] = (int32_t)nkv;
        J->bt[r] = (int32_t)r;
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((r * T + t) * hq + h) * D + d] = (float)(sign * elem(q, d, t, h, r));
        for (int64_t j = 0; j < nkv; j++)
            for (int64_t h = 0; h < hk; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((r * nkv + j) * hk + h) * D + d);
                    J->k[at] = elem(k, d, j, h, r);
                    J->v[at] = elem(v, d, j, h, r);
                }
        for (int64_t t = 0; m && t < T; t++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t j = 0; j < nkv; j++)
                    J->mask[((r * T + t) * hq + h) * nkv + j] = (float)more.ggml_fp16_to_fp32(
                        *(const ggml_fp16_t *)((const char *)m->data +
                                               idx(m, j, t, h % c->m2, r % c->m3)));
    }
    J->qsl[n3] = (int32_t)(n3 * T);
    for (int64_t h = 0; J->slopes && h < hq; h++)
        J->slopes[h] = ggml_slope(c->max_bias, (uint32_t)hq, (uint32_t)h);
    for (int64_t h = 0; J->sinks && h < hq; h++)
        J->sinks[h] = (float)get(R->t[B_SINKS]->type,
                                 (const char *)R->t[B_SINKS]->data + h * R->t[B_SINKS]->nb[0]);
    ref_input *in = &J->in;
    in->num_reqs = (int32_t)n3;
    in->query_start_loc = J->qsl;
    in->seq_lens = J->seq;
    in->causal = J->causal;
    in->block_table = J->bt;
    in->block_table_stride = 1;
    in->num_blocks = (int32_t)n3;
    in->num_heads = (int32_t)hq;
    in->num_kv_heads = (int32_t)hk;
    in->head_dim = (int32_t)D;
    in->block_size = nkv > 0 ? (int32_t)nkv : 1;   /* n_kv 0: a request with no key */
    in->window_left = in->window_right = -1;
    in->softcap = c->softcap;
    in->scale = fabs((double)c->scale);
    in->alibi_slopes = J->slopes;
    in->sinks = J->sinks;
    in->q = J->q;
    in->q_dtype = AG_F32;
    in->k_rows = J->k;
    in->v_rows = J->v;
    in->kv_dtype = AG_F32;
    in->k_scale = in->v_scale = 1.0;
    in->mask = J->mask;
    in->mask_tstride = hq * nkv;
    in->mask_hstride = nkv;
    in->mask_times_slope = 1;
}

/* The rounding ggml declares (the adapter's, docs/engines.md): q in K's
 * type before Q.K, f32 weights, an f16 V accumulated in f16. */
static ag_precision ggml_precision(const fcase *c) {
    const ag_dtype kt = ag_of(c->tk);
    return (ag_precision){kt, AG_F32, c->tv == GGML_TYPE_F16 ? AG_F16 : AG_F32, 1};
}

static void describe(const fcase *c);

/* out [n3][T][hq][dv] (f32) against the reference; fires the differential
 * oracle (after describing the input) when an element leaves its range. */
static void judge(const run *R, const float *out, const char *which) {
    const fcase *c = &R->c;
    judged J;
    judged_init(R, &J);
    const size_t n = (size_t)(c->n3q * c->T * c->hq * c->dv);
    double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double)),
           *hi = malloc(n * sizeof(double));
    if (!val || !lo || !hi) abort();
    const ref_model md =
        cmp_error_model(ggml_precision(c), J.in.q_dtype, J.in.kv_dtype, (int32_t)c->dk);
    finding f;
    oracle_clean(&f);
    if (ref_attention_range(&J.in, md, val, lo, hi) != 0) {
        oracle_found(&f, ORACLE_BAD_INPUT, "the reference refused an input the contract "
                     "fuzzer calls judgeable (harness bug)");
    } else {
        cmp_result res;
        if (!cmp_compare(val, lo, hi, out, AG_F32, n, cmp_tolerance(AG_F32), &res)) {
            const size_t w = res.worst, dv = (size_t)c->dv, hq = (size_t)c->hq;
            oracle_found(&f, ORACLE_DIFFERENTIAL,
                         "ggml_flash_attn_ext (%s run, variant %s): %zu of %zu elements outside "
                         "the reference's range; worst at n3 %zu, row %zu, head %zu, dim %zu: "
                         "got %.9g want %.9g (ggml's rounding allows [%.9g, %.9g])",
                         which, lib->var[c->variant].name, res.bad, n,
                         w / (dv * hq * (size_t)c->T), (w / (dv * hq)) % (size_t)c->T,
                         (w / dv) % hq, w % dv, (double)out[w], val[w], lo[w], hi[w]);
        }
    }
    free(val), free(lo), free(hi);
    judged_free(&J);
    if (f.oracle != ORACLE_NONE) {
        describe(c);
        oracle_fire(&f);
    }
}

static void describe(const fcase *c) {
    char why[256];
    int exact, inside = in_contract(c, &exact, why, sizeof why);
    fprintf(stderr, "  contract: %s%s\n", inside ? "inside" : "outside: ", why);
    fprintf(stderr,
            "  case: variant %s, threads %d, dk %lld dv %lld, T %lld, hq %lld hk %lld hv %lld, "
            "n_kv %lld (v %lld), n3 %lld/%lld/%lld, types q %d k %d v %d mask %d [%lld %lld %lld "
            "%lld] fill %d, scale %g max_bias %g softcap %g, sinks %d, prec %d, layout %d pad %d "
            "misalign %d guard %s, amp %g/%g/%g\n",
            lib->var[c->variant].name, c->threads, (long long)c->dk, (long long)c->dv,
            (long long)c->T, (long long)c->hq, (long long)c->hk, (long long)c->hv,
            (long long)c->nkv, (long long)c->nkv_v, (long long)c->n3q, (long long)c->n3k,
            (long long)c->n3v, c->tq, c->tk, c->tv, c->tm, (long long)c->m0, (long long)c->m1,
            (long long)c->m2, (long long)c->m3, c->mask_fill, (double)c->scale,
            (double)c->max_bias, (double)c->softcap, c->sinks, c->prec, c->layout, c->pad,
            c->misalign, c->guard_front ? "front" : "back", (double)c->amp_q, (double)c->amp_k,
            (double)c->amp_v);
}

/* Inputs breaking a contract condition already reported
 * (reports/findings/ggml-001..003) are not run, so a campaign finds what is
 * new; FUZZ_GGML_SKIP=<condition>,... replaces the list (empty: run all). */
static const char *const k_triaged = "q-not-f32,v-rows-differ-from-k,hq-not-multiple-of-v-heads,"
                                     "mask-row-shorter-than-n-kv,mask-fewer-rows-than-queries";

static int skipped(const fcase *c) {
    const char *skip = getenv("FUZZ_GGML_SKIP");
    if (!skip) skip = k_triaged;
    char why[256], *save = NULL;
    int exact;
    if (!skip || in_contract(c, &exact, why, sizeof why)) return 0;
    for (char *w = strtok_r(why, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (strstr(skip, w)) return 1;
    return 0;
}

/* A compute that fails on an input inside the contract: bad-input. */
static void refused_inside(const fcase *c, enum ggml_status st, int inside, const char *which) {
    if (st == GGML_STATUS_SUCCESS || !inside) return;
    finding f;
    oracle_found(&f, ORACLE_BAD_INPUT, "ggml_graph_compute (%s run) returned status %d on an "
                 "input inside the documented contract", which, (int)st);
    describe(c);
    oracle_fire(&f);
}

/* ---- the reach table: ggml's branches each computed op took ---- */
static int ggp_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? GGP_F32 : t == GGML_TYPE_F16 ? GGP_F16 : t == GGML_TYPE_BF16 ? GGP_BF16
                                                                                          : GGP_OTHER;
}

/* Adds the branches of the op computed on `threads` threads to on[]
 * (engines/ggml/ggml_branches.h: the adapter's classification, fed this
 * target's own calling form). */
static void op_branches(const fcase *c, int threads, int *on) {
    const ggp_op o = {c->T, c->hq, c->n3q, c->nkv, c->dk, c->dv, c->hk,
                      ggp_type(c->tq), ggp_type(c->tk), ggp_type(c->tv),
                      c->tm != GGML_TYPE_COUNT, c->sinks != 0, c->softcap, c->max_bias,
                      threads, ggp_simd_width(lib->var[c->variant].name)};
    ggp_op_branches(&o, on);
}

static void reach_flush(const int *on) {
    for (int i = 0; i < GGP_COUNT; i++)
        if (on[i]) reach_hit("path", ggp_names[i]);
    reach_flush_every(getenv("ATTNGUARD_REACH"), "fuzz_ggml_contract", 2.0);
}

/* ---- one input ---- */
static run R;                  /* static: valid after longjmp */
static volatile int phase;     /* 0 build, 1 plan, 2 compute */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size};
    memset(&R, 0, sizeof R);
    decode(&r, &R.c);
    rs = R.c.seed | 1;
    stats.execs++;
    reach_exec();
    static int on[GGP_COUNT];   /* the branches this input's computes took (static: the
                                   abort's longjmp returns here) */
    memset(on, 0, sizeof on);
    const agg_cpu *cpu = &lib->var[R.c.variant].cpu;
    if (getenv("FUZZ_GGML_VERBOSE")) describe(&R.c);
    if (skipped(&R.c)) {
        stats.skipped++;
        return 0;
    }
    if (setjmp(on_abort)) {
        count_msg(abort_text);
        phase == 0 ? stats.aborts_build++ : phase == 1 ? stats.aborts_plan++ : stats.aborts_compute++;
        teardown(&R);
        reach_flush(on);
        return 0;
    }
    phase = 0, armed = 1;
    build(&R);
    phase = 1;
    struct ggml_cplan cp = cpu->ggml_graph_plan(R.gf, 1, NULL);
    armed = 0;
    place(&R);
    cp.work_data = (uint8_t *)gb_alloc(&R.buf[B_WORK1], "work", cp.work_size, R.c.guard_front, 0);
    phase = 2, armed = 1;
    enum ggml_status st = cpu->ggml_graph_compute(R.gf, &cp);
    armed = 0;
    stats.computed++;
    if (st == GGML_STATUS_SUCCESS) op_branches(&R.c, 1, on);
    char why[256];
    int exact, inside = in_contract(&R.c, &exact, why, sizeof why);
    const size_t ob = more.ggml_nbytes(R.t[B_OUT]);
    float *out1 = malloc(ob ? ob : 1);
    memcpy(out1, R.t[B_OUT]->data, ob);
    refused_inside(&R.c, st, inside, "1-thread");
    if (exact) judge(&R, out1, "1-thread");
    if (R.c.threads > 1) {
        phase = 1, armed = 1;
        struct ggml_cplan cpn = cpu->ggml_graph_plan(R.gf, R.c.threads, NULL);
        armed = 0;
        cpn.work_data =
            (uint8_t *)gb_alloc(&R.buf[B_WORKN], "work", cpn.work_size, R.c.guard_front, 0);
        st = cpu->ggml_graph_compute(R.gf, &cpn);   /* a GGML_ASSERT here aborts: a finding */
        if (st == GGML_STATUS_SUCCESS) op_branches(&R.c, R.c.threads, on);
        refused_inside(&R.c, st, inside, "multi-thread");
        /* the same as the one-thread run, or within the range on its own */
        if (exact && memcmp(out1, R.t[B_OUT]->data, ob)) judge(&R, R.t[B_OUT]->data, "multi-thread");
    }
    if (!inside) stats.accepted_outside++;
    if (exact) stats.checked++;
    else if (inside) stats.unjudgeable++;
    free(out1);
    teardown(&R);
    reach_flush(on);
    return 0;
}
