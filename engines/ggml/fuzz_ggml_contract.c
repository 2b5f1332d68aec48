/*
 * engines/ggml/fuzz_ggml_contract.c — contract fuzzing of ggml's CPU flash
 * attention itself (not of our adapter): ggml_flash_attn_ext built and
 * computed through ggml's public API, loaded with dlopen from the packaged
 * libraries, with inputs inside and just outside what ggml.h documents
 * (q [Dk, T, Hq, n3], k [Dk, n_kv, Hkv, n3], v [Dv, n_kv, Hkv, n3], an f16
 * mask [n_kv, T, m2, m3] with Hq % m2 == 0, n3 % m3 == 0).
 *
 * Verdicts.  A GGML_ASSERT / GGML_ABORT is ggml refusing by design: the
 * abort callback longjmps back here (graph construction and planning run on
 * this thread; compute runs first with one thread, which is this thread)
 * and the abort is counted, not reported.  Findings are what ggml does not
 * refuse: a fault on the guard pages around every buffer we hand it (ggml
 * is not instrumented, so an out-of-bounds access is seen only there), a
 * hang (-timeout), a multi-thread run that disagrees with the one-thread
 * run, and, for inputs inside the contract, an output off an fp64 loop of
 * the op's documented semantics by more than ggml's declared rounding.
 * `make engines-fuzz`; the counts print at exit.
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

#include "ggml_load.h"

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
        accepted_outside, skipped;
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
            "%lu at compute (clean refusals); %lu computed (%lu checked against fp64, %lu outside "
            "the contract accepted without a fault), %lu skipped (FUZZ_GGML_SKIP)\n",
            stats.execs, stats.aborts_build, stats.aborts_plan, stats.aborts_compute,
            stats.computed, stats.checked, stats.accepted_outside, stats.skipped);
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
    atexit(print_stats);
    return 0;
}

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
    *exact = ok && !quant_k && !quant_v && c->mask_fill != 3;
    return ok;
}

/* ---- guarded buffers: flush against a PROT_NONE page after (or before) ---- */
typedef struct gbuf { void *map; size_t len; char *p; } gbuf;

static char *gb_alloc(gbuf *b, size_t bytes, int front, int misalign) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (bytes + (size_t)misalign + pg - 1) / pg * pg + pg;
    b->len = body + pg;
    b->map = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b->map == MAP_FAILED) abort();
    char *m = b->map;
    if (front) {   /* guard first: underruns fault */
        mprotect(m, pg, PROT_NONE);
        b->p = m + pg + misalign;
    } else {       /* guard last: overruns fault; flush, so alignment is what bytes gives */
        mprotect(m + body, pg, PROT_NONE);
        b->p = m + body - bytes;
    }
    return b->p;
}

static void gb_free(gbuf *b) {
    if (b->map) munmap(b->map, b->len);
    b->map = NULL;
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
    gbuf buf[B_COUNT];
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
    for (int i = 0; i <= B_OUT; i++) {
        if (!R->base[i]) continue;
        const int mis = i <= B_V ? c->misalign : 0;
        R->base[i]->data = gb_alloc(&R->buf[i], more.ggml_nbytes(R->base[i]), c->guard_front, mis);
        R->t[i]->data = (char *)R->base[i]->data + R->t[i]->view_offs;
    }
    fill(R->t[B_Q], c->amp_q, -1);
    fill(R->t[B_K], c->amp_k, -1);
    fill(R->t[B_V], c->amp_v, -1);
    if (R->t[B_MASK]) fill(R->t[B_MASK], 1, c->mask_fill);
    if (R->t[B_SINKS]) fill(R->t[B_SINKS], 3, -1);
}

static void teardown(run *R) {
    for (int i = 0; i < B_COUNT; i++) gb_free(&R->buf[i]);
    if (R->ctx) lib->base.ggml_free(R->ctx);
    memset(R, 0, sizeof *R);
}

/* ---- the fp64 loop of the op's documented semantics ---- */
static double at(const struct ggml_tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return get(x->type, (const char *)x->data + i0 * x->nb[0] + i1 * x->nb[1] + i2 * x->nb[2] +
                            i3 * x->nb[3]);
}

static float ggml_slope(float max_bias, uint32_t n_head, uint32_t h) {
    const uint32_t nl = 1u << (uint32_t)floor(log2(n_head));
    const float m0 = powf(2.0f, -(max_bias) / nl), m1 = powf(2.0f, -(max_bias / 2.0f) / nl);
    return h < nl ? powf(m0, h + 1) : powf(m1, 2 * (h - nl) + 1);
}

/* A view's elements as doubles, [i3][i2][i1][i0] (the fp64 loop's input). */
static double *dense(const struct ggml_tensor *x) {
    const int64_t *ne = x->ne;
    double *d = malloc((size_t)(ne[0] * ne[1] * ne[2] * ne[3] + 1) * sizeof(double)), *p = d;
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++) *p++ = at(x, i0, i1, i2, i3);
    return d;
}

/* Checks out [n3][T][hq][dv] against the loop; 0 and a report on stderr
 * when an element is off by more than the bound of ggml's rounding (q
 * rounded to K's type before Q.K, an f16 V accumulated in f16). */
static int check(const run *R, const float *out, const char *which) {
    const fcase *c = &R->c;
    const struct ggml_tensor *m = R->t[B_MASK];
    const double uq = c->tk == GGML_TYPE_F16 ? 0x1p-11 : c->tk == GGML_TYPE_BF16 ? 0x1p-8 : 0x1p-24;
    const int f16acc = c->tv == GGML_TYPE_F16;
    double *Q = dense(R->t[B_Q]), *K = dense(R->t[B_K]), *V = dense(R->t[B_V]);
    double *M = m ? dense(m) : NULL;
    double *lg = malloc((size_t)(c->nkv + 1) * sizeof(double)), *o = malloc((size_t)c->dv * sizeof(double));
    int ok = 1;
    for (int64_t i3 = 0; ok && i3 < c->n3q; i3++)
        for (int64_t t = 0; ok && t < c->T; t++)
            for (int64_t h = 0; ok && h < c->hq; h++) {
                const int64_t kh = h / (c->hq / c->hk), vh = h / (c->hq / c->hv);
                const double slope = c->max_bias > 0 ? ggml_slope(c->max_bias, (uint32_t)c->hq, (uint32_t)h) : 1.0;
                const double *qr = Q + ((i3 * c->hq + h) * c->T + t) * c->dk;
                const double *mr = M ? M + (((i3 % c->m3) * c->m2 + h % c->m2) * c->m1 + t) * c->m0 : NULL;
                double mx = -INFINITY, dmax = 0, vmax = 0, den = 0;
                int n = 0;
                for (int64_t j = 0; j < c->nkv; j++) {
                    const double mv = mr ? slope * mr[j] : 0.0;
                    const double *kr = K + ((i3 * c->hk + kh) * c->nkv + j) * c->dk;
                    lg[j] = -INFINITY;
                    if (mv == -INFINITY) continue;
                    double dot = 0, adot = 0;
                    for (int64_t d = 0; d < c->dk; d++) dot += qr[d] * kr[d], adot += fabs(qr[d] * kr[d]);
                    double s = c->scale * dot;
                    if (c->softcap > 0) s = c->softcap * tanh(s / c->softcap);
                    lg[j] = s + mv;
                    mx = fmax(mx, lg[j]);
                    dmax = fmax(dmax, fabs(c->scale) * (uq + (c->dk + 4) * 0x1p-24) * adot +
                                          0x1p-21 * (fabs(s) + fabs(mv) + c->softcap + 1));
                    n++;
                }
                const double sink = c->sinks ? at(R->t[B_SINKS], h, 0, 0, 0) : -INFINITY;
                mx = fmax(mx, sink);
                for (int64_t d = 0; d < c->dv; d++) o[d] = 0;
                for (int64_t j = 0; j < c->nkv; j++) {
                    if (lg[j] == -INFINITY) continue;
                    const double e = exp(lg[j] - mx), *vr = V + ((i3 * c->hv + vh) * c->nkv + j) * c->dv;
                    den += e;
                    for (int64_t d = 0; d < c->dv; d++) o[d] += e * vr[d], vmax = fmax(vmax, fabs(vr[d]));
                }
                if (c->sinks && mx > -INFINITY) den += exp(sink - mx);
                const double acc = f16acc ? 6 * sqrt(n + 1.0) * 0x1p-11 : 4 * (n + 2) * 0x1p-24;
                const double bound = vmax * (expm1(2 * dmax) + acc + 1e-6) + 1e-30;
                for (int64_t d = 0; ok && d < c->dv; d++) {
                    const double want = den > 0 ? o[d] / den : 0.0;
                    const float got = out[((i3 * c->T + t) * c->hq + h) * c->dv + d];
                    if (!(fabs(got - want) <= bound)) {
                        fprintf(stderr,
                                "fuzz_ggml_contract: WRONG RESULT (%s run) at n3 %lld, row %lld, head "
                                "%lld, dim %lld: ggml %.9g, fp64 %.9g, bound %.3g (%d visible keys, "
                                "max|v| %g)\n", which, (long long)i3, (long long)t, (long long)h,
                                (long long)d, (double)got, want, bound, n, vmax);
                        ok = 0;
                    }
                }
            }
    free(lg), free(o), free(Q), free(K), free(V), free(M);
    return ok;
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

/* FUZZ_GGML_SKIP=<condition>,...: inputs breaking a condition already
 * triaged (reports/findings/) are not run, so a campaign goes on past it. */
static int skipped(const fcase *c) {
    const char *skip = getenv("FUZZ_GGML_SKIP");
    char why[256], *save = NULL;
    int exact;
    if (!skip || in_contract(c, &exact, why, sizeof why)) return 0;
    for (char *w = strtok_r(why, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (strstr(skip, w)) return 1;
    return 0;
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
        return 0;
    }
    phase = 0, armed = 1;
    build(&R);
    phase = 1;
    struct ggml_cplan cp = cpu->ggml_graph_plan(R.gf, 1, NULL);
    armed = 0;
    place(&R);
    cp.work_data = (uint8_t *)gb_alloc(&R.buf[B_WORK1], cp.work_size, R.c.guard_front, 0);
    phase = 2, armed = 1;
    enum ggml_status st = cpu->ggml_graph_compute(R.gf, &cp);
    armed = 0;
    stats.computed++;
    char why[256];
    int exact, inside = in_contract(&R.c, &exact, why, sizeof why);
    const size_t ob = more.ggml_nbytes(R.t[B_OUT]);
    float *out1 = malloc(ob ? ob : 1);
    memcpy(out1, R.t[B_OUT]->data, ob);
    int ok = st == GGML_STATUS_SUCCESS || !inside;
    if (ok && exact) ok = check(&R, out1, "1-thread");
    if (ok && R.c.threads > 1) {
        phase = 1, armed = 1;
        struct ggml_cplan cpn = cpu->ggml_graph_plan(R.gf, R.c.threads, NULL);
        armed = 0;
        cpn.work_data = (uint8_t *)gb_alloc(&R.buf[B_WORKN], cpn.work_size, R.c.guard_front, 0);
        st = cpu->ggml_graph_compute(R.gf, &cpn);   /* a GGML_ASSERT here aborts: a finding */
        ok = st == GGML_STATUS_SUCCESS || !inside;
        /* the same as the one-thread run, or within the bound on its own */
        if (ok && exact && memcmp(out1, R.t[B_OUT]->data, ob))
            ok = check(&R, R.t[B_OUT]->data, "multi-thread");
    }
    if (!inside) stats.accepted_outside++;
    if (exact) stats.checked++;
    if (!ok) {
        fprintf(stderr, "fuzz_ggml_contract: FINDING (status %d)\n", (int)st);
        describe(&R.c);
        abort();
    }
    free(out1);
    teardown(&R);
    return 0;
}
