/*
 * bench/run_ceiling.c — see run_ceiling.h.  Owns which candidates a row
 * has, what each is called in the reports, and the conversion of a loop's
 * figure into the row's metric; the loops and their clocks are
 * util_limits.c's.
 */
#include "run_ceiling.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The element type of the arithmetic walk for a KV dtype; -1: none. */
static int row_elem(ag_dtype kv) {
    switch (kv) {
    case AG_F32: return LIMITS_F32;
    case AG_F16: return LIMITS_F16;
    case AG_BF16: return LIMITS_BF16;
    case AG_FP8_E4M3: return LIMITS_E4M3;
    case AG_FP8_E5M2: return LIMITS_E5M2;
    default: return -1;
    }
}

/* Which peak bounds a row's instruction path. */
typedef enum peak_kind { PEAK_FMA, PEAK_DOT, PEAK_AMX } peak_kind;
static peak_kind path_kind(const row_spec *s, const bench_limits *L, int t) {
    /* bf16 prefill on the engine's AMX tile (attnguard's amx table) */
    if (L->amx_path && s->kv == AG_BF16 && s->kind != ROW_DECODE && L->amx[t] > 0) return PEAK_AMX;
    /* the AVX-512 tables may compute bf16 and fp8 caches with VDPBF16PS */
    if ((s->kv == AG_BF16 || ag_dtype_is_fp8(s->kv)) && L->bf16[t] > L->fma[t]) return PEAK_DOT;
    return PEAK_FMA;
}

/* The compute peak of a row's instruction path, GFLOP/s: the AMX tile
 * peak for bf16 prefill and the Laguna batch where the engine runs them on
 * AMX; else the faster of the FMA and bf16 dot peaks for a bf16 or fp8
 * cache; the fp32 FMA peak otherwise. */
static double path_peak(const row_spec *s, const bench_limits *L, int t, const char **name) {
    static const char *const names[] = {"fp32 FMA peak", "bf16 dot peak (VDPBF16PS)",
                                        "AMX tile peak (TDPBF16PS)"};
    const peak_kind k = path_kind(s, L, t);
    if (name) *name = names[k];
    return k == PEAK_AMX ? L->amx[t] : k == PEAK_DOT ? L->bf16[t] : L->fma[t];
}

/* The same peak measured again now. */
static double peak_again(const row_spec *s, const bench_limits *L, int t) {
    switch (path_kind(s, L, t)) {
    case PEAK_AMX: return limits_amx_peak(t, 20000000);
    case PEAK_DOT: return limits_bf16_peak(t, 20000000);
    default: return limits_fma_peak(t, 20000000);
    }
}

/* The product step of a row's path, GFLOP/s (0: none): on FMAs the
 * register block's (limits_gemm_peak), on AMX tiles the 2 x 2 block's with
 * its tile loads (limits_amx_step); the start-of-run figure, or (again)
 * measured now.  what: its name in the reports. */
static double step_rate(const row_spec *s, const bench_limits *L, int t, int again, char *what,
                        size_t cap) {
    switch (path_kind(s, L, t)) {
    case PEAK_FMA:
        if (!(L->gemm[t] > 0)) return 0;
        if (what)
            snprintf(what, cap, "its product step (%d x %d FMAs with their loads, in L1)",
                     L->gemm_rows, L->gemm_vecs);
        return again ? limits_gemm_peak(t, 20000000) : L->gemm[t];
    case PEAK_AMX:
        if (!(L->amx_step[t] > 0)) return 0;
        if (what) snprintf(what, cap, "its product step (2 x 2 tile products with their loads, in L1)");
        return again ? limits_amx_step(t, 20000000) : L->amx_step[t];
    default: return 0;
    }
}

/* The bytes a decode row's loops run over: the whole buffer (cold: every
 * pass reads from DRAM) or the row's own K and V (hot: read again). */
static size_t span(const row_spec *s, const bench_limits *L) {
    return s->cold ? L->buf_bytes : (size_t)row_bytes(s);
}

/* One walk, measured once per run for each (span, layout, arithmetic,
 * threads): rows sharing a loop share its figure. */
typedef struct memo {
    size_t bytes, es;
    int bs, el, t;
    double gbs;
} memo;
static memo g_memo[64];
static int g_nmemo;

static double walk_once(const bench_limits *L, size_t bytes, size_t es, int bs, int el, int t) {
    for (int i = 0; i < g_nmemo; i++) {
        const memo *m = &g_memo[i];
        if (m->bytes == bytes && m->es == es && m->bs == bs && m->el == el && m->t == t)
            return m->gbs;
    }
    const double gbs = limits_walk(L, bytes, es, bs, el, t, 3);
    if (g_nmemo < (int)(sizeof g_memo / sizeof g_memo[0]))
        g_memo[g_nmemo++] = (memo){bytes, es, bs, el, t, gbs};
    return gbs;
}

/* The Laguna batch's roofline in GFLOP/s of its useful flops: each item
 * at the larger of its bytes over the DRAM read and its flops over the
 * path's peak (run_judge.c keeps the items for the report). */
static double roofline(const row_spec *s, double dram, double peak) {
    row_item it[ROW_MAX_ITEMS];
    const int n = row_items(s, it);
    double sec = 0;
    for (int i = 0; i < n && dram > 0 && peak > 0; i++)
        sec += it[i].count * fmax(it[i].bytes / (dram * 1e9), it[i].flops / (peak * 1e9));
    return sec > 0 ? row_flops(s) / sec * 1e-9 : 0;
}

static void add(bench_ceiling *c, ceil_kind k, double v, const char *what) {
    if (!(v > 0) || c->n >= CEIL_MAX) return;
    c->kind[c->n] = k;
    c->start[c->n] = c->best[c->n] = v;
    snprintf(c->what[c->n], sizeof c->what[c->n], "%s", what);
    if (c->n == 0 || v < c->best[c->bind]) c->bind = c->n;
    c->n++;
}

void ceiling_measure(bench_row *b, const bench_limits *L) {
    const row_spec *s = b->spec;
    const int t = b->threads;
    bench_ceiling *c = &b->ceil;
    memset(c, 0, sizeof *c);
    if (!L->buf) return;
    const char *peak_name;
    const double peak = path_peak(s, L, t, &peak_name);
    /* a row computes its products with a register-blocked step that needs
     * operand loads beside its FMAs or tile products (step_rate) */
    char what[96] = "";
    const double step = step_rate(s, L, t, 0, what, sizeof what);
    if (s->kind == ROW_PREFILL) {
        add(c, CEIL_PEAK, peak, peak_name);
        add(c, CEIL_STEP, step, what);
        return;
    }
    if (s->kind == ROW_LAGUNA) {
        add(c, CEIL_ROOF, roofline(s, L->dram[t], peak), "its roofline");
        if (step > 0)
            add(c, CEIL_ROOF_STEP, roofline(s, L->dram[t], step),
                "its roofline at its product step's rate");
        return;
    }
    const size_t es = ag_dtype_size(s->kv), bytes = span(s, L);
    const int el = row_elem(s->kv);
    if (s->cold) add(c, CEIL_READ, L->dram[t], "DRAM read");
    else {
        snprintf(what, sizeof what, "read of its %.0f MB of K and V, again and again",
                 (double)bytes / 1e6);
        add(c, CEIL_READ, limits_read_span(L, bytes, t, 3), what);
    }
    snprintf(what, sizeof what, "walk of its layout (%s, bs %d, %d keys a step)",
             ag_dtype_name(s->kv), s->block_size, limits_chunk(L, es));
    add(c, CEIL_LAYOUT, walk_once(L, bytes, es, s->block_size, -1, t), what);
    /* the arithmetic walk does LIMITS_ARITH_G FMAs per vector: the rows'
     * query heads per KV head */
    if (el >= 0 && 32 / s->hkv == LIMITS_ARITH_G) {
        snprintf(what, sizeof what, "that walk with its arithmetic (%s widened, %d FMAs a vector)",
                 limits_elem_name[el], LIMITS_ARITH_G);
        add(c, CEIL_STREAM, walk_once(L, bytes, es, s->block_size, el, t), what);
    }
    /* the row's bytes in the time its flops take at the peak */
    const double flops = row_flops(s);
    if (flops > 0 && peak > 0) add(c, CEIL_PEAK, row_bytes(s) / (flops / (peak * 1e9)) * 1e-9, peak_name);
}

/* Candidate k of b measured now, in the row's metric. */
static double again(const bench_row *b, int k, const bench_limits *L) {
    const bench_ceiling *c = &b->ceil;
    const row_spec *s = b->spec;
    const int t = b->threads;
    const size_t es = ag_dtype_size(s->kv);
    switch (c->kind[k]) {
    case CEIL_READ:
        return s->cold ? limits_read_bw(L, t, 2) : limits_read_span(L, span(s, L), t, 2);
    case CEIL_LAYOUT: return limits_walk(L, span(s, L), es, s->block_size, -1, t, 2);
    case CEIL_STREAM: return limits_walk(L, span(s, L), es, s->block_size, row_elem(s->kv), t, 2);
    case CEIL_PEAK: {
        const double p = peak_again(s, L, t);
        if (s->kind == ROW_PREFILL) return p;
        return row_bytes(s) / (row_flops(s) / (p * 1e9)) * 1e-9;
    }
    case CEIL_STEP: return step_rate(s, L, t, 1, NULL, 0);
    case CEIL_ROOF:
        return roofline(s, limits_read_bw(L, t, 2), peak_again(s, L, t));
    case CEIL_ROOF_STEP: return roofline(s, limits_read_bw(L, t, 2), step_rate(s, L, t, 1, NULL, 0));
    }
    return 0;
}

void ceiling_again(bench_row *b, const bench_limits *L) {
    bench_ceiling *c = &b->ceil;
    /* the start-of-run figure gives way to the first measurement next to
     * the row: minutes apart, the machine can be in another phase */
    for (int k = 0; k < c->n; k++) {
        const double v = again(b, k, L);
        c->best[k] = c->again ? fmax(c->best[k], v) : v > 0 ? v : c->best[k];
    }
    c->again++;
    /* any candidate may have moved past the one that bound */
    for (int k = 0; k < c->n; k++)
        if (c->best[k] < c->best[c->bind]) c->bind = k;
}
