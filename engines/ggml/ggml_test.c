/*
 * engines/ggml/ggml_test.c — the ggml adapter checked on its own, through
 * the adapter ABI only, against a small fp64 loop of DESIGN §2 written
 * here (not the harness's reference).  `make engines-test`.
 *
 * Every shape runs on every CPU variant the adapter offers and with f32,
 * f16 and bf16 caches.  f32 caches are held to a tight bound (ggml computes
 * in f32 there, so a wrong mask cell or head mapping shows); f16 and bf16
 * to a bound from the precision group_info declares: q rounded to the
 * cache type (logit error d <= scale * u * sum|q_i k_i|, weights move by
 * e^(2d)) and, for an f16 accumulator, a rounding of u16 per key, taken
 * as 6 sqrt(n) u16 max|v| (the rounding errors of n steps add like a
 * random walk; the worst case n u16 would hide a wrong mask).
 * Prints one line per (variant, shape, dtype) and "N passed, M failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ggml_engine.h"

typedef struct req { int32_t q_len, seq_len; uint8_t causal; } req;
typedef struct shape {
    const char *name;
    int32_t hq, hkv, d, bs, wl, wr, threads, nreq;
    float softcap, scale;
    int alibi, sinks, share_first_block;
    req r[4];
} shape;

static const shape shapes[] = {
    {"decode", 8, 8, 64, 16, -1, -1, 2, 4, 0, 0, 0, 0, 0, {{1, 37, 1}, {1, 300, 1}, {1, 1, 1}, {1, 129, 1}}},
    {"decode-split", 8, 2, 64, 16, -1, -1, 2, 1, 0, 0, 0, 0, 0, {{1, 700, 1}}},
    {"prefill-chunk", 4, 4, 64, 16, -1, -1, 2, 2, 0, 0, 0, 0, 0, {{80, 200, 1}, {5, 9, 1}}},
    {"gqa", 8, 2, 32, 8, -1, -1, 1, 3, 0, 0, 0, 0, 1, {{3, 40, 1}, {1, 17, 1}, {2, 2, 1}}},
    {"window", 4, 2, 64, 16, 15, -1, 2, 2, 0, 0, 0, 0, 0, {{70, 150, 1}, {1, 90, 1}}},
    {"window-lr-noncausal", 4, 2, 32, 16, 7, 3, 1, 2, 0, 0, 0, 0, 0, {{20, 20, 0}, {5, 12, 0}}},
    {"softcap-scale", 4, 4, 64, 16, -1, -1, 2, 2, 30.0f, 0.3f, 0, 0, 0, {{4, 50, 1}, {1, 33, 1}}},
    {"sinks", 8, 4, 64, 16, -1, -1, 2, 2, 0, 0, 0, 1, 0, {{3, 60, 1}, {66, 66, 1}}},
    {"noncausal", 4, 4, 64, 16, -1, -1, 2, 2, 0, 0, 0, 0, 0, {{20, 20, 0}, {5, 12, 0}}},
    {"mixed-causal", 4, 1, 64, 16, 10, -1, 2, 2, 0, 0, 0, 0, 0, {{6, 30, 1}, {6, 30, 0}}},
    {"alibi", 8, 2, 64, 16, -1, -1, 2, 2, 0, 0, 1, 0, 0, {{3, 45, 1}, {7, 7, 0}}},
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* f32 -> f16 / bf16 bits, round to nearest even (finite inputs in range). */
static uint16_t to_f16(float f) {
    union { float f; uint32_t u; } x = {f};
    uint32_t sign = (x.u >> 16) & 0x8000u, a = x.u & 0x7fffffffu;
    if (a < 0x38800000u) { /* subnormal half */
        float h = fabsf(f) * 0x1.0p24f;
        return (uint16_t)(sign | (uint32_t)lrintf(h));
    }
    uint32_t r = a - 0x38000000u + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}
static float from_f16(uint16_t h) {
    uint32_t e = (h >> 10) & 31u, m = h & 1023u;
    float v = e ? ldexpf((float)(m | 1024u), (int)e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000u) ? -v : v;
}
static uint16_t to_bf16(float f) {
    union { float f; uint32_t u; } x = {f};
    return (uint16_t)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) {
    union { uint32_t u; float f; } x = {(uint32_t)h << 16};
    return x.f;
}

/* Stores f in the cache type, returns the value stored. */
static double store(ag_dtype t, void *p, size_t i, float f) {
    if (t == AG_F32) return ((float *)p)[i] = f;
    uint16_t h = t == AG_F16 ? to_f16(f) : to_bf16(f);
    ((uint16_t *)p)[i] = h;
    return t == AG_F16 ? from_f16(h) : from_bf16(h);
}

/* A buffer ending flush against an inaccessible page (start 64-aligned). */
static void *guarded(size_t bytes, void **map, size_t *len) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + 64 + pg - 1) / pg * pg;
    char *m = mmap(NULL, body + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    mprotect(m + body, pg, PROT_NONE);
    *map = m, *len = body + pg;
    return (void *)(((uintptr_t)(m + body) - bytes) & ~(uintptr_t)63);
}

static float ggml_slope(float max_bias, uint32_t n, uint32_t h) {
    uint32_t nl = 1u << (uint32_t)floor(log2(n));
    float m0 = powf(2.0f, -max_bias / nl), m1 = powf(2.0f, -(max_bias / 2.0f) / nl);
    return h < nl ? powf(m0, h + 1) : powf(m1, 2 * (h - nl) + 1);
}

static int passed, failed;
static void verdict(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verdict(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    ok ? passed++ : failed++;
}

/* Per cache type: the largest error seen and the largest error / bound. */
static double worst_err[3], worst_ratio[3];
static const char *dname[] = {"f32", "bf16", "f16"};

typedef struct world {         /* one shape's inputs, as the reference sees them */
    const shape *s;
    ag_dtype kv;
    int32_t T, stride, num_blocks, *qsl, *seq, *bt;
    uint8_t *causal;
    float *q, slopes[64], sinks[64];
    double *kd, *vd;           /* [cells][hkv][d], the values the cache holds */
} world;

/* fp64 attention for query row t, head h of layer l (l 1: global, no cap). */
static void reference(const world *w, int l, int32_t r, int32_t i, int32_t h, double *o,
                      double *bound) {
    const shape *s = w->s;
    const int32_t seq = w->seq[r], ql = w->qsl[r + 1] - w->qsl[r], t = w->qsl[r] + i;
    const int64_t p = w->causal[r] ? seq - ql + i : i;
    const int32_t wl = l ? -1 : s->wl, wr = l ? -1 : s->wr, kvh = h / (s->hq / s->hkv);
    const double cap = l ? 0 : s->softcap, scale = s->scale > 0 ? s->scale : 1 / sqrt(s->d);
    const double uq = w->kv == AG_F16 ? 0x1p-11 : w->kv == AG_BF16 ? 0x1p-8 : 0x1p-24;
    double *lg = malloc((size_t)seq * sizeof(double)), m = -INFINITY, den = 0, dmax = 0,
           vmax = 0;
    int n = 0;
    for (int64_t k = 0; k < seq; k++) {
        lg[k] = -INFINITY;
        if ((w->causal[r] && k > p) || (wl >= 0 && k < p - wl) || (wr >= 0 && k > p + wr))
            continue;
        const size_t cell = (size_t)w->bt[r * w->stride + k / s->bs] * s->bs + k % s->bs;
        const double *kr = w->kd + (cell * s->hkv + kvh) * s->d;
        const float *qr = w->q + ((size_t)t * s->hq + h) * s->d;
        double dot = 0, adot = 0;
        for (int32_t d = 0; d < s->d; d++) dot += qr[d] * kr[d], adot += fabs(qr[d] * kr[d]);
        double x = scale * dot;
        if (cap > 0) x = cap * tanh(x / cap);
        if (!l && s->alibi) x += w->slopes[h] * (double)(k - p);
        lg[k] = x;
        dmax = fmax(dmax, scale * (uq + s->d * 0x1p-24) * adot + 8 * 0x1p-24 * (fabs(x) + 1));
        m = fmax(m, x);
        n++;
    }
    const int sink = !l && s->sinks;
    if (sink) m = fmax(m, w->sinks[h]);
    for (int32_t d = 0; d < s->d; d++) o[d] = 0;
    for (int64_t k = 0; k < seq; k++) {
        if (lg[k] == -INFINITY) continue;
        const size_t cell = (size_t)w->bt[r * w->stride + k / s->bs] * s->bs + k % s->bs;
        const double *vr = w->vd + (cell * s->hkv + kvh) * s->d, e = exp(lg[k] - m);
        den += e;
        for (int32_t d = 0; d < s->d; d++) o[d] += e * vr[d], vmax = fmax(vmax, fabs(vr[d]));
    }
    if (sink) den += exp(w->sinks[h] - m);
    for (int32_t d = 0; d < s->d; d++) o[d] /= den;
    const double acc = w->kv == AG_F16 ? 6 * sqrt(n + 1.0) * 0x1p-11 : 4 * (n + 1) * 0x1p-24;
    *bound = vmax * (expm1(2 * dmax) + acc) + 1e-7;
    free(lg);
}

/* Block tables: each request's blocks drawn from a shuffled pool; with
 * share_first_block every request's first block is request 0's. */
static void make_batch(world *w) {
    const shape *s = w->s;
    int32_t total = 0;
    w->stride = 1;
    for (int r = 0; r < s->nreq; r++) {
        int32_t n = (s->r[r].seq_len + s->bs - 1) / s->bs;
        total += n;
        if (n > w->stride) w->stride = n;
    }
    w->num_blocks = total + 3;
    int32_t *pool = malloc((size_t)w->num_blocks * sizeof *pool), next = 0;
    for (int32_t i = 0; i < w->num_blocks; i++) pool[i] = i;
    for (int32_t i = w->num_blocks - 1; i > 0; i--) {
        int32_t j = (int32_t)((urand() + 1) * 0.5 * (i + 1)) % (i + 1), x = pool[i];
        pool[i] = pool[j], pool[j] = x;
    }
    w->bt = malloc((size_t)s->nreq * w->stride * sizeof *w->bt);
    w->qsl = malloc((size_t)(s->nreq + 1) * sizeof *w->qsl);
    w->seq = malloc((size_t)s->nreq * sizeof *w->seq);
    w->causal = malloc((size_t)s->nreq);
    w->qsl[0] = 0;
    for (int r = 0; r < s->nreq; r++) {
        for (int32_t j = 0; j < w->stride; j++)
            w->bt[r * w->stride + j] = j * s->bs < s->r[r].seq_len ? pool[next++] : -1;
        if (s->share_first_block && r > 0) w->bt[r * w->stride] = w->bt[0];
        w->qsl[r + 1] = w->qsl[r] + s->r[r].q_len;
        w->seq[r] = s->r[r].seq_len;
        w->causal[r] = s->r[r].causal;
    }
    w->T = w->qsl[s->nreq];
    free(pool);
}

/* Every cell of the cache gets a random row (through write_kv). */
static int fill_cache(const ag_engine *e, void *grp, world *w, void **kc, void **vc) {
    const shape *s = w->s;
    const size_t cells = (size_t)w->num_blocks * s->bs, n = cells * s->hkv * s->d;
    const size_t es = w->kv == AG_F32 ? 4 : 2;
    size_t bytes;
    ag_msg msg;
    if (e->kv_cache_bytes(grp, w->num_blocks, &bytes, &msg) != AG_OK || bytes != n * es) return 0;
    char *kr = malloc(n * es), *vr = malloc(n * es);
    int64_t *slot = malloc(cells * sizeof *slot);
    w->kd = malloc(n * sizeof(double)), w->vd = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        w->kd[i] = store(w->kv, kr, i, urand());
        w->vd[i] = store(w->kv, vr, i, urand());
    }
    for (size_t i = 0; i < cells; i++) slot[i] = (int64_t)i;
    *kc = calloc(1, bytes), *vc = calloc(1, bytes);
    ag_status st = e->write_kv(grp, *kc, *vc, w->num_blocks, kr, vr, (int32_t)cells, slot, &msg);
    free(kr), free(vr), free(slot);
    return st == AG_OK;
}

static void check_layer(const ag_engine *e, void *plan, const ag_plan_info *info, world *w,
                        const ag_batch *b, void *kc, void *vc, int l, const char *opt) {
    const shape *s = w->s;
    const size_t ob = (size_t)w->T * s->hq * s->d * sizeof(float);
    void *m1, *m2, *m3;
    size_t l1, l2, l3, need = 0;
    ag_msg msg;
    void *scratch = guarded(info->scratch_bytes, &m1, &l1);
    float *out = guarded(ob, &m2, &l2), *out2 = guarded(ob, &m3, &l3);
    ag_run_args a = {w->q, kc, vc, b, w->T, scratch, info->scratch_bytes, out};
    ag_status st = e->extents(plan, l, &need, 1, &msg);
    if (st == AG_OK) st = e->run(plan, l, &a, &msg);
    a.out = out2;
    if (st == AG_OK) st = e->run(plan, l, &a, &msg);
    double err = 0, ratio = 0, *o = malloc((size_t)s->d * sizeof(double)), bound;
    for (int32_t r = 0; st == AG_OK && r < s->nreq; r++)
        for (int32_t i = 0; i < w->qsl[r + 1] - w->qsl[r]; i++)
            for (int32_t h = 0; h < s->hq; h++) {
                reference(w, l, r, i, h, o, &bound);
                const float *g = out + ((size_t)(w->qsl[r] + i) * s->hq + h) * s->d;
                for (int32_t d = 0; d < s->d; d++) {
                    double e1 = fabs(g[d] - o[d]);
                    if (!(e1 <= err)) err = e1;
                    if (!(e1 / bound <= ratio)) ratio = e1 / bound;
                }
            }
    const int di = w->kv == AG_F32 ? 0 : w->kv == AG_BF16 ? 1 : 2;
    if (err > worst_err[di]) worst_err[di] = err;
    if (ratio > worst_ratio[di]) worst_ratio[di] = ratio;
    const int same = st == AG_OK && !memcmp(out, out2, ob);
    verdict(st == AG_OK && ratio <= 1 && same && need <= info->scratch_bytes,
            "%-17s %-19s %-4s layer %d: max |err| %.3g, err/bound %.3f, scratch %zu%s%s%s",
            opt, s->name, dname[di], l, err, ratio, info->scratch_bytes,
            same ? "" : ", NOT bitwise repeatable", st == AG_OK ? "" : ", run: ",
            st == AG_OK ? "" : msg.text);
    free(o);
    munmap(m1, l1), munmap(m2, l2), munmap(m3, l3);
}

static void run_shape(const ag_engine *e, void *ctx, const char *opt, const shape *s,
                      ag_dtype kv) {
    world w = {.s = s, .kv = kv};
    for (int32_t h = 0; h < s->hq; h++)
        w.slopes[h] = ggml_slope(8.0f, (uint32_t)s->hq, (uint32_t)h), w.sinks[h] = 3 * urand();
    ag_layer L[2] = {
        {"local", s->hq, s->wl, s->wr, s->softcap, s->scale, s->alibi ? w.slopes : NULL,
         s->sinks ? w.sinks : NULL, 1, 1},
        {"global", s->hq, -1, -1, 0, s->scale, NULL, NULL, 1, 1}};
    ag_group g = {L, 2, s->hkv, s->d, s->bs, AG_F32, kv, AG_F32, s->hq, s->threads, opt, NULL};
    void *grp = NULL, *plan = NULL, *kc = NULL, *vc = NULL;
    ag_msg msg;
    memset(&msg, 0, sizeof msg);
    ag_plan_info info;
    ag_plan_opts po = {0};
    make_batch(&w);
    ag_batch b = {s->nreq, w.qsl, w.seq, w.causal, w.bt, w.stride, w.num_blocks};
    w.q = malloc((size_t)w.T * s->hq * s->d * sizeof(float));
    for (size_t i = 0; i < (size_t)w.T * s->hq * s->d; i++) w.q[i] = urand();
    ag_status st = e->create(ctx, &g, &grp, &msg);
    if (st == AG_OK && !fill_cache(e, grp, &w, &kc, &vc)) st = AG_INTERNAL;
    if (st == AG_OK) st = e->plan(grp, &b, &po, &plan, &info, &msg);
    if (st != AG_OK)
        verdict(0, "%-17s %-19s %s: %s %s", opt, s->name, dname[kv], msg.code, msg.text);
    for (int l = 0; st == AG_OK && l < 2; l++) check_layer(e, plan, &info, &w, &b, kc, vc, l, opt);
    if (plan) e->plan_destroy(plan);
    if (grp) e->destroy(grp);
    free(kc), free(vc), free(w.kd), free(w.vd), free(w.q);
    free(w.bt), free(w.qsl), free(w.seq), free(w.causal);
}

/* Inputs the adapter must turn away with a status, never pass to ggml. */
static void refusals(const ag_engine *e, void *ctx) {
    float bad_slopes[8], slopes[8];
    for (int h = 0; h < 8; h++)
        bad_slopes[h] = (float)exp2(-8.0 * (h + 1) / 8.0) * 1.001f,
        slopes[h] = ggml_slope(8.0f, 8, (uint32_t)h);
    ag_layer mixed[2] = {{"full", 48, -1, -1, 0, 0, NULL, NULL, 1, 1},
                         {"swa", 64, 511, -1, 0, 0, NULL, NULL, 1, 1}};
    ag_layer alibi_bad = {NULL, 8, -1, -1, 0, 0, bad_slopes, NULL, 1, 1};
    ag_layer alibi_ok = {NULL, 8, -1, -1, 0, 0, slopes, NULL, 1, 1};
    struct { const char *what; ag_layer *l; int n; ag_dtype q; const char *opt; ag_status want; } c[] = {
        {"mixed head counts 48/64", mixed, 2, AG_F32, NULL, AG_REFUSED},
        {"alibi slopes off ggml's set", &alibi_bad, 1, AG_F32, NULL, AG_UNSUPPORTED},
        {"q in bf16", &alibi_ok, 1, AG_BF16, NULL, AG_UNSUPPORTED},
        {"unknown cpu variant", &alibi_ok, 1, AG_F32, "cpu=pentium", AG_REFUSED},
        {"unknown option", &alibi_ok, 1, AG_F32, "threads=3", AG_REFUSED},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        ag_group g = {c[i].l, c[i].n, 8, 128, 16, c[i].q, AG_F16, AG_F32, 48, 1, c[i].opt, NULL};
        void *grp = NULL;
        ag_msg msg;
    memset(&msg, 0, sizeof msg);
        ag_status st = e->create(ctx, &g, &grp, &msg);
        verdict(st == c[i].want, "refuse %-28s -> %d %s: %s", c[i].what, (int)st, msg.code,
                msg.text);
        if (grp) e->destroy(grp);
    }
    /* batches: a block outside the cache, a block twice, ALiBi beyond f16's integers */
    ag_group g = {&alibi_ok, 1, 8, 64, 16, AG_F32, AG_F32, AG_F32, 8, 1, NULL, NULL};
    void *grp = NULL, *plan = NULL;
    ag_msg msg;
    if (e->create(ctx, &g, &grp, &msg) != AG_OK) {
        verdict(0, "create for batch refusals: %s", msg.text);
        return;
    }
    int32_t qsl[2] = {0, 1}, seq1[1] = {20}, seq2[1] = {3000}, bt_out[2] = {0, 9},
            bt_twice[2] = {1, 1}, bt_long[188];
    for (int i = 0; i < 188; i++) bt_long[i] = i;
    struct { const char *what; const int32_t *seq, *bt; int32_t stride, nb; ag_status want; } b[] = {
        {"block id outside the cache", seq1, bt_out, 2, 4, AG_REFUSED},
        {"one block twice in a table", seq1, bt_twice, 2, 4, AG_UNSUPPORTED},
        {"ALiBi distance 2999 > 2048", seq2, bt_long, 188, 188, AG_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        ag_batch bb = {1, qsl, b[i].seq, NULL, b[i].bt, b[i].stride, b[i].nb};
        ag_plan_info info;
        ag_plan_opts po = {0};
        ag_status st = e->plan(grp, &bb, &po, &plan, &info, &msg);
        verdict(st == b[i].want, "refuse %-28s -> %d %s: %s", b[i].what, (int)st, msg.code,
                msg.text);
        if (st == AG_OK) e->plan_destroy(plan);
    }
    e->destroy(grp);
}

int main(int argc, char **argv) {
    const ag_engine *e = ag_engine_ggml();
    void *ctx = NULL;
    ag_msg msg;
    memset(&msg, 0, sizeof msg);
    if (e->open(NULL, &ctx, &msg) != AG_OK) {
        printf("FAIL ggml adapter open: %s %s\n0 passed, 1 failed\n", msg.code, msg.text);
        return 1;
    }
    ag_variant vars[64];
    const char *names[64];
    int nv = e->variants(ctx, vars, 64);
    for (int v = 0; v < nv && v < 64; v++) names[v] = vars[v].options;
    /* argv[1]: only variants whose option contains it (e.g. zen4) */
    for (int v = 0; v < nv && v < 64; v++) {
        if (argc > 1 && !strstr(names[v], argv[1])) continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (ag_dtype t = AG_F32; t <= AG_F16; t++) run_shape(e, ctx, names[v], &shapes[s], t);
    }
    refusals(e, ctx);
    e->close(ctx);
    for (int d = 0; d < 3; d++)
        printf("kv %-4s: largest |err| %.3g, largest err/bound %.3f\n", dname[d], worst_err[d],
               worst_ratio[d]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
