/*
 * test_isa.c — every SIMD kernel table held to the double-precision
 * reference AND to the portable "ref" table, through the public API with
 * group.isa set, plus the dispatch rules and the tables' shape.
 *
 * Grid (each ISA that attn_isa_available lists, "ref" included as its own
 * baseline): GQA ratios g = 1, 2, 6, 8, 9; D = 64, 80, 96, 128, 256 (and
 * odd/unaligned 72, 33 for the vector tails); block sizes 16 and 48;
 * windows none / 1 / 7 / 300; soft cap; ALiBi; sinks; decode kv_len 1, 7,
 * 213, 4097; prefill 5x5 and 134x517 (causal and not); fp32 / bf16 / f16
 * and mixed dtypes; split off / on / fixed; 1 and 2 threads.  The
 * combinations are enumerated deterministically so that every value of
 * every axis meets every ISA, without the full cartesian product.
 *
 * Tolerance: cmp_tolerance (harness/judge/compare.c) for every ISA.  No table
 * rounds an intermediate coarser than fp32: the avx512bf16 table feeds
 * VDPBF16PS with Q split into two bf16 terms (|error| <= 2^-16 |q|, so
 * the logit error is ~2^-8 of a bf16 rounding's, ~2.5e-6 rms for these
 * inputs, well inside the 3e-5 fp32 atol; see kernels/avx512bf16.c), so
 * no ISA-specific tolerance is needed.  Against the "ref" table each
 * output is within tol of the exact value, so the two differ by at most
 * 2 * tol: that is the bound used for the ISA-vs-ref comparison.
 *
 * Direct kernel tests: a tile whose rows see none of the key range leaves
 * (acc, m, l) bit for bit as they were (neutral rows), and key ranges that
 * start and end off the 16/32/64 tile edges match the portable tile.
 * No timing assertions.
 *
 * Honest about the CPU: the tables a test runs are the ones this CPU can
 * execute (each table's own CPU check, as dispatch uses it), never the ones
 * the build compiled.  The direct tile tests run once per compiled SIMD
 * table and skip (cr_skip_test, with the reason) where the CPU cannot run
 * it; the grid tests hold every table to the double-precision reference,
 * the SIMD ones also to the "ref" table (never "ref" to itself), and end
 * in a skip when no SIMD table ran, or a warning naming the tables left out.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "../../src/attn.h"
#include "../../src/internal.h"
#include "../../src/kernels/kernels_decl.h"
#include "../../src/kernels/dtype.h"
#include "../../harness/case/case.h"
#include "../../harness/judge/compare.h"
#include "../../harness/case/rng.h"
#include "../../harness/case/problem.h"
#include "../fixture.h"
#include "../../harness/judge/ref.h"
#include "../tutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ISAS 12

/* The SIMD tables this build compiled (kernels_decl.h), with the CPU check
 * dispatch uses for each; the last entry is a terminator.  `sym` is the
 * table's symbol suffix (avx512, avx512_emu); `name` is filled from the
 * table itself by table_name(). */
typedef struct simd_table {
    const char *sym;
    const attn_kernels *(*get)(void);
    int (*cpu)(void);
} simd_table;
#define SIMD_ENTRY(t) {#t, attn__kernels_##t, attn__cpu_##t},
static const simd_table k_simd[] = {ATTN__SIMD_TABLES(SIMD_ENTRY){NULL, NULL, NULL}};
#define N_SIMD ((int)(sizeof k_simd / sizeof k_simd[0]) - 1)

/* What a table's name must be for its symbol: "avx512" for avx512, and
 * "avx512@emu" for avx512_emu (an emulated table names the native one it
 * emulates in `emulates`, and only an emulated table does). */
static void check_table_name(const simd_table *e) {
    const attn_kernels *t = e->get();
    const size_t n = strlen(e->sym);
    const int emu = n > 4 && strcmp(e->sym + n - 4, "_emu") == 0;
    /* amx's is a simulation, not an emulation bit for bit
     * (src/kernels/amx_tiles.h): "amx@sim" */
    const int sim = emu && n == 7 && !strncmp(e->sym, "amx", 3);
    char want[40];
    snprintf(want, sizeof want, "%.*s%s", (int)(emu ? n - 4 : n), e->sym,
             sim ? "@sim" : emu ? "@emu" : "");
    cr_assert_str_eq(t->name, want);
    if (!emu) {
        cr_assert(t->emulates == NULL, "%s: a native table emulates nothing", t->name);
        return;
    }
    cr_assert(t->emulates && strlen(t->emulates) == n - 4 && !strncmp(t->emulates, e->sym, n - 4),
              "%s: emulates '%s'", t->name, t->emulates ? t->emulates : "(null)");
}
#define TABLE_NAME(i) (k_simd[i].get()->name)

/* Comma-separated names of the compiled SIMD tables this CPU can
 * (usable = 1) or cannot (usable = 0) run; returns how many. */
static int simd_names(int usable, char *buf, size_t cap) {
    int n = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_SIMD; i++) {
        if (!k_simd[i].cpu() != !usable) continue;
        used += (size_t)snprintf(buf + used, used < cap ? cap - used : 0, "%s%s", n ? ", " : "",
                                 TABLE_NAME(i));
        if (used >= cap) used = cap - 1;
        n++;
    }
    return n;
}

/* The end of a grid test: the SIMD tables it could not run, said aloud;
 * a skip when it held no SIMD table at all (only "ref", to the reference). */
static void simd_verdict(void) {
    char ran[128], left[128];
    const int nr = simd_names(1, ran, sizeof ran), nl = simd_names(0, left, sizeof left);
    if (nr == 0)
        TU_SKIP("no SIMD kernel table runs on this CPU (compiled: %s): only \"ref\" was "
                     "held to the reference",
                     nl ? left : "none");
    /* info, not warn: a warning makes Criterion exit non-zero */
    if (nl) cr_log_info("not run, this CPU cannot execute them: %s (ran: %s)", left, ran);
}

/* ------------------------------------------------------------ helpers */

static void *aligned_bytes(size_t n) {
    size_t m = (n + 63) & ~(size_t)63;
    return aligned_alloc(64, m ? m : 64);
}

/* The tuning profile of the builders run_on creates and of the tile
 * arguments args_for fills: 0 = the CPU's own (under_each_tune_profile
 * sets each in turn). */
static int32_t g_tune;
/* The precision of the builders run_on and create_tuned make. */
static attn_precision g_precision;

/* Run layer l of the problem on table `isa`; returns the output buffer
 * (out_dtype, caller frees) or NULL with a message in msg. */
static void *run_on(problem *p, int32_t l, const char *isa, int *rounded, char *msg,
                    size_t cap) {
    afx_engine fx;
    if (afx_init(&fx, p) != 0) {
        snprintf(msg, cap, "fixture: out of memory");
        return NULL;
    }
    attn_group_desc g = fx.group;
    g.isa = isa;
    g.tune = g_tune ? (g_tune == ATTN__TUNE_AMD ? "amd" : "intel") : NULL;
    g.precision = g_precision;
    attn_builder *b = NULL;
    attn_plan *plan = NULL;
    attn_error err;
    void *out = NULL, *scratch = NULL;
    attn_status st = attn_builder_create(&g, &b, &err);
    if (st) {
        snprintf(msg, cap, "create(%s): %s", isa, err.message);
        return NULL;
    }
    attn_builder_info bi;
    memset(&bi, 0, sizeof bi);
    attn_builder_get_info(b, &bi, NULL);
    *rounded = bi.bf16_rounding;
    attn_plan_opts o;
    memset(&o, 0, sizeof o);
    o.split = p->c.split;
    o.split_count = p->c.split_count;
    st = attn_builder_build(b, &fx.batch, &o, &plan, &err);
    if (st) {
        snprintf(msg, cap, "build(%s): %s", isa, err.message);
        goto done;
    }
    size_t bytes = 0;
    attn_plan_scratch_size(plan, &bytes, NULL);
    scratch = aligned_bytes(bytes);
    /* NaN-patterned scratch: a kernel may not rely on zeroed work areas */
    if (scratch) memset(scratch, 0xff, (bytes + 63) & ~(size_t)63);
    const size_t ob = problem_out_elems(p, l) * ag_dtype_size(p->c.out_dtype);
    out = malloc(ob);
    if (!scratch || !out) {
        snprintf(msg, cap, "out of memory");
        free(out);
        out = NULL;
        goto done;
    }
    memset(out, 0xff, ob); /* NaN in every dtype: unwritten elements fail */
    attn_tensors t = afx_tensors(&fx, p, l, out);
    st = attn_run(plan, &fx.layers[l], &t, scratch, bytes, &err);
    if (st) {
        snprintf(msg, cap, "run(%s): %s", isa, err.message);
        free(out);
        out = NULL;
    }
done:
    free(scratch);
    attn_plan_destroy(plan);
    attn_builder_destroy(b);
    afx_free(&fx);
    return out;
}


/* The tuning profiles (kernels.h, attn_group_desc.tune): the decode
 * tile's memory walk and, on the avx512bf16 table, bf16 prefill on
 * VDPBF16PS.  The tests that reach them run under each (g_tune: the
 * profile of the builders run_on creates and of the tile arguments
 * args_for fills; 0 = the CPU's own), so the profile this CPU would not
 * pick is held to the same contracts. */
static void under_each_tune_profile(void (*check)(void)) {
    static const int32_t pr[] = {ATTN__TUNE_INTEL, ATTN__TUNE_AMD};
    for (int i = 0; i < 2; i++) {
        g_tune = pr[i];
        check();
    }
    g_tune = 0;
}

/* Every layer of materialized problem p on every available table: vs the
 * exact reference (tol) and vs the "ref" table's output (2 tol); a table
 * that reports bf16_rounding against the ranges of the bf16-rounding
 * model instead (afx_reference under the bf16 model), which are then the only
 * judge: the ref table's output lies inside them too.  text: the case,
 * for messages. */
static void check_problem_once(problem *p, const char *text) {
    const case_spec *c = &p->c;
    char msg[512];
    const char *isas[MAX_ISAS];
    const int n = attn_isa_available(isas, MAX_ISAS);
    cr_assert(n >= 1 && strcmp(isas[0], "ref") == 0, "attn_isa_available = %d", n);

    for (int32_t l = 0; l < c->num_layers; l++) {
        const size_t ne = problem_out_elems(p, l);
        double *exact = malloc(ne * sizeof(double));
        double *lo = malloc(ne * sizeof(double)), *hi = malloc(ne * sizeof(double));
        double *rlo = NULL, *rhi = NULL;
        double *base = malloc(ne * sizeof(double));
        cr_assert(exact && lo && hi && base);
        cr_assert_eq(afx_reference(p, l, 0, exact, lo, hi), 0, "reference refused\n%s", text);
        int rounded = 0;
        void *ref_out = run_on(p, l, "ref", &rounded, msg, sizeof msg);
        cr_assert(ref_out, "%s\n%s", msg, text);
        cr_assert(!rounded, "the ref table reports bf16 rounding");
        for (size_t i = 0; i < ne; i++) base[i] = cmp_elem_get(ref_out, i, c->out_dtype);
        const cmp_tol tol = cmp_tolerance(c->out_dtype);
        const cmp_tol tol2 = {2 * tol.atol, 2 * tol.rtol};
        for (int k = 0; k < n; k++) {
            void *out = run_on(p, l, isas[k], &rounded, msg, sizeof msg);
            cr_assert(out, "%s\n%s", msg, text);
            cmp_result r1, r2;
            int ok1, ok2;
            if (rounded) {
                if (!rlo) {
                    rlo = malloc(ne * sizeof(double)), rhi = malloc(ne * sizeof(double));
                    double *tmp = malloc(ne * sizeof(double));
                    cr_assert(rlo && rhi && tmp);
                    cr_assert_eq(afx_reference(p, l, 1, tmp, rlo, rhi), 0,
                                 "bf16-rounding reference refused\n%s", text);
                    free(tmp);
                }
                ok1 = cmp_compare(exact, rlo, rhi, out, c->out_dtype, ne, tol, &r1);
                ok2 = ok1, r2 = r1; /* the ranges are the only judge */
            } else {
                /* where rounding leaves an element a range, any value in it is right */
                ok1 = cmp_compare(exact, lo, hi, out, c->out_dtype, ne, tol, &r1);
                /* a SIMD table also against the portable one; "ref" is not
                 * compared with itself */
                if (strcmp(isas[k], "ref") != 0)
                    ok2 = cmp_compare(base, lo, hi, out, c->out_dtype, ne, tol2, &r2);
                else
                    ok2 = 1, r2 = r1;
            }
            const size_t w = ok1 ? r2.worst : r1.worst;
            cr_assert(ok1 && ok2,
                      "isa %s%s layer %d: vs exact %zu bad (max_abs %.3g), vs ref table %zu bad "
                      "(max_abs %.3g); element %zu got %.9g exact %.9g ref-table %.9g\n%s",
                      isas[k], rounded ? " (bf16 rounding)" : "", (int)l, r1.bad, r1.max_abs,
                      r2.bad, r2.max_abs, w, cmp_elem_get(out, w, c->out_dtype), exact[w],
                      base[w], text);
            free(out);
        }
        free(ref_out);
        free(exact);
        free(lo);
        free(hi);
        free(rlo);
        free(rhi);
        free(base);
    }
}

/* check_problem_once under each tuning profile. */
static problem *g_problem;
static const char *g_text;
static void check_g_problem(void) { check_problem_once(g_problem, g_text); }
static void check_problem(problem *p, const char *text) {
    g_problem = p, g_text = text;
    under_each_tune_profile(check_g_problem);
}

/* check_problem on the case's own generated inputs. */
static void check_case(const case_spec *c) {
    char text[2048], msg[512];
    case_format(text, sizeof text, c);
    problem p;
    cr_assert_eq(problem_init(&p, c, (size_t)1 << 30, msg, sizeof msg), 0, "%s\n%s", msg, text);
    cr_assert(p.materialized, "not materialized (%s)\n%s", p.unmaterialized_reason, text);
    check_problem(&p, text);
    problem_free(&p);
}

/* A one-layer case (the grid's building block). */
static case_spec mk(int32_t hq, int32_t hkv, int32_t d, int32_t bs, attn_dtype dt) {
    case_spec c;
    case_default(&c);
    snprintf(c.name, sizeof c.name, "isa-grid");
    c.num_layers = 1;
    c.layers[0].num_heads = hq;
    c.layers[0].window = -1;
    c.model_num_heads = hq;
    c.num_kv_heads = hkv;
    c.head_dim = d;
    c.block_size = bs;
    c.q_dtype = c.kv_dtype = c.out_dtype = (ag_dtype)dt;
    c.blocks = CASE_BLOCKS_SHUFFLED;
    return c;
}

static const int32_t k_g[] = {1, 2, 6, 8, 9};
static const int32_t k_d[] = {64, 80, 96, 128, 256};
static const int32_t k_bs[] = {16, 48};
static const int32_t k_win[] = {-1, 1, 7, 300};
static const attn_dtype k_dt[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16};
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Row i of an enumerated grid: coprime-ish strides over the axes so that
 * consecutive rows change every axis and all values appear. */
static case_spec grid_row(int i, int32_t q_len, int32_t kv_len, int causal) {
    const int32_t g = k_g[i % N(k_g)];
    const int32_t hkv = (g >= 8) ? 1 + (i / 5) % 2 : 2;
    case_spec c = mk(g * hkv, hkv, k_d[(i / 2) % N(k_d)], k_bs[(i / 3) % N(k_bs)],
                     k_dt[(i / 7) % N(k_dt)]);
    c.layers[0].window = k_win[(i / 4) % N(k_win)];
    c.layers[0].softcap = (i % 3 == 1) ? 5.0f : 0.0f;
    c.layers[0].alibi = (uint8_t)(i % 4 == 2);
    c.layers[0].sinks = (uint8_t)(i % 5 == 3);
    c.causal[0] = (uint8_t)causal;
    c.q_len[0] = q_len;
    c.kv_len[0] = kv_len;
    c.threads = 1 + i % 2;
    c.split = (i % 3 == 0) ? ATTN_SPLIT_ON : (i % 3 == 1) ? ATTN_SPLIT_OFF : ATTN_SPLIT_FIXED;
    c.split_count = 3;
    c.seed = 0x15a0000u + (uint64_t)i;
    if (i % 6 == 5) { /* mixed dtypes: q bf16, kv of the row, out f16 */
        c.q_dtype = AG_BF16;
        c.out_dtype = AG_F16;
    }
    return c;
}

/* ---------------------------------------------------------- the grid */

static void decode_rows(int32_t kv_len, int rows) {
    for (int i = 0; i < rows; i++) {
        case_spec c = grid_row(i, 1, kv_len, 1);
        check_case(&c);
    }
}

Test(isa, decode_kv1, .timeout = 120) { decode_rows(1, 30); simd_verdict(); }
Test(isa, decode_kv7, .timeout = 120) { decode_rows(7, 30); simd_verdict(); }
Test(isa, decode_kv213, .timeout = 120) { decode_rows(213, 30); simd_verdict(); }
Test(isa, decode_kv4097, .timeout = 240) { decode_rows(4097, 15); simd_verdict(); }

Test(isa, prefill_5x5, .timeout = 120) {
    for (int i = 0; i < 30; i++) {
        case_spec c = grid_row(i, 5, 5, i % 4 != 3);
        check_case(&c);
    }
    simd_verdict();
}

Test(isa, prefill_134x517, .timeout = 600) {
    /* the big shape: fewer rows, still every g, D and dtype */
    static const int pick[] = {0, 3, 7, 11, 14, 22};
    for (int k = 0; k < N(pick); k++) {
        case_spec c = grid_row(pick[k], 134, 517, k != 4);
        check_case(&c);
    }
    simd_verdict();
}

Test(isa, odd_head_dims, .timeout = 120) {
    /* D not a multiple of 16 / 8 / 2: masked vector tails, odd bf16 pairs */
    static const int32_t ds[] = {33, 72, 1, 17};
    for (int i = 0; i < N(ds); i++)
        for (int t = 0; t < N(k_dt); t++) {
            case_spec c = mk(6, 2, ds[i], 16, k_dt[t]);
            c.num_reqs = 2;
            c.q_len[0] = 1;
            c.kv_len[0] = 150;
            c.q_len[1] = 9;
            c.kv_len[1] = 70;
            c.layers[0].window = (i % 2) ? 7 : -1;
            c.seed = 77u + (uint64_t)(i * 3 + t);
            check_case(&c);
        }
    simd_verdict();
}

Test(isa, laguna_mixed_batch, .timeout = 300) {
    /* two groups' worth of layers on one KV spec: 48 full heads, 64 heads
     * window 512 (separate cases: a group must share num_heads) */
    for (int w = 0; w < 2; w++) {
        case_spec c = mk(w ? 64 : 48, 8, 128, 16, ATTN_DTYPE_BF16);
        c.layers[0].window = w ? 512 : -1;
        c.num_reqs = 4;
        c.q_len[0] = 1; c.kv_len[0] = 1300;
        c.q_len[1] = 1; c.kv_len[1] = 700;
        c.q_len[2] = 1; c.kv_len[2] = 40;
        c.q_len[3] = 37; c.kv_len[3] = 600;
        c.threads = 2;
        c.split = ATTN_SPLIT_AUTO;
        c.seed = 0x1a9u + (uint64_t)w;
        check_case(&c);
    }
    simd_verdict();
}

/* A huge scale (the API accepts any finite one): q x scale near FLT_MAX
 * overflowed the fp32 dot products — NaN logits in the AVX-512 decode
 * tile, wrong-signed saturated sums in the others (fuzz_attention,
 * corpus/cases/huge-scale-decode.case).  The executor now takes powers of
 * two out of q (attn_tile_args.qk_exp).  Decode and prefill, f32 and bf16,
 * with and without a soft cap. */
Test(isa, huge_scale, .timeout = 120) {
    for (int v = 0; v < 4; v++) {
        case_spec c = mk(32, 8, 64, 16, v % 2 ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F32);
        c.layers[0].softcap = v < 2 ? 50.0f : 0.0f;
        c.layers[0].scale = v < 2 ? 1.5e38f : 3e30f;
        c.layers[0].sinks = 1;
        c.q_len[0] = v < 2 ? 1 : 37;
        c.kv_len[0] = v < 2 ? 300 : 37;
        c.seed = 0x5ca1e0u + (uint64_t)v;
        check_case(&c);
    }
    simd_verdict();
}

/* An exactly cancelling f16 dot product at scale 1.66e38 under a soft cap
 * (fuzz_attention, corpus/cases/huge-scale-cancel.case): the exact logit
 * is 0, an fp32 engine's rounding residue reaches the cap.  The SIMD
 * tables land at one end of the row's range, the portable one at the
 * other; both must pass, and every other element stays a point. */
Test(isa, huge_scale_cancelling_dot, .timeout = 120) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load("corpus/cases/huge-scale-cancel.case", &c, err, sizeof err), 0, "%s",
                 err);
    check_case(&c);
    simd_verdict();
}

/* Huge query values (not a huge scale): q elements near 2^127 make the
 * fp32 dot products' partial sums overflow to +inf and -inf (NaN).  The
 * executor scales such q rows down by an exact power of two and the kernels
 * multiply each logit back (normalise_q, attn_tile_args.qk_exp); with the
 * soft cap the true logits are +-50.  Decode and prefill, fp32 and bf16
 * KV.  Fails when normalise_q misses the largest element (tried: a min
 * instead of a max over the elements). */
/* Huge logits without a soft cap (corpus/cases/huge-scale-nocap.case: the
 * fuzzer's scale 2.91e38 made +inf logits and NaN outputs on every table):
 * decode rows of one and of 300 keys, a 32-token prefill (the lanes tile
 * for fp32), sinks, ALiBi, split rows merged across threads; fp32 and bf16
 * KV against the fp64 reference. */
Test(isa, huge_scale_nocap, .timeout = 120) {
    for (int v = 0; v < 6; v++) {
        case_spec c = mk(16, 4, 64, 16, v % 2 ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F32);
        c.layers[0].softcap = 0.0f;
        c.layers[0].scale = v < 4 ? 2.9e38f : 1e30f;
        c.layers[0].sinks = v % 3 == 0;
        c.layers[0].alibi = v >= 4;
        c.q_len[0] = v < 2 ? 1 : v < 4 ? 1 : 32;
        c.kv_len[0] = v < 2 ? 1 : v < 4 ? 300 : 200;
        c.threads = 2;
        c.split = ATTN_SPLIT_ON;
        c.seed = 0x5ca1e8u + (uint64_t)v;
        check_case(&c);
    }
    simd_verdict();
}

Test(isa, huge_q, .timeout = 120) {
    for (int v = 0; v < 6; v++) {
        case_spec c = mk(8, 2, 64, 16, ATTN_DTYPE_F32);
        c.kv_dtype = v % 2 ? AG_BF16 : AG_F32;
        c.layers[0].softcap = v < 4 ? 50.0f : 0.0f; /* 4, 5: logits beyond FLT_MAX */
        c.layers[0].scale = 1.0f;
        c.q_len[0] = v < 2 ? 1 : 21;
        c.kv_len[0] = v < 2 ? 300 : 40;
        c.seed = 0x9e0u + (uint64_t)v;
        char text[2048], msg[512];
        case_format(text, sizeof text, &c);
        problem p;
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, msg, sizeof msg), 0, "%s", msg);
        cr_assert(p.materialized);
        float *q = p.q[0];
        const size_t nq = (size_t)p.num_tokens * (size_t)c.layers[0].num_heads * (size_t)c.head_dim;
        for (size_t i = 0; i < nq; i++) q[i] = ldexpf(q[i], 127); /* exact, < FLT_MAX */
        check_problem(&p, text);
        problem_free(&p);
    }
    simd_verdict();
}

/* Huge q over tiny keys: q elements near 2^45 (past the 2^32 at which the
 * executor scales q rows down, normalise_q), K near 2^-45, so the logits
 * are ordinary numbers and the softmax is not one-hot.  On this f32 cache
 * such rows go to the executor's fp64 path (src/wide.c, which takes q as
 * it is): its results must match the reference with split rows merged
 * too.  Decode and prefill, with and without a soft cap. */
Test(isa, huge_q_tiny_k, .timeout = 120) {
    for (int v = 0; v < 4; v++) {
        case_spec c = mk(8, 2, 64, 16, ATTN_DTYPE_F32);
        c.layers[0].softcap = v % 2 ? 20.0f : 0.0f;
        c.layers[0].scale = 0.125f;
        c.q_len[0] = v < 2 ? 1 : 21;
        c.kv_len[0] = v < 2 ? 300 : 40;
        c.threads = 2;
        c.split = ATTN_SPLIT_ON;
        c.seed = 0x7e0u + (uint64_t)v;
        char text[2048], msg[512];
        case_format(text, sizeof text, &c);
        problem p;
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, msg, sizeof msg), 0, "%s", msg);
        cr_assert(p.materialized);
        float *q = p.q[0], *k = p.k_rows;
        const size_t nq = (size_t)p.num_tokens * (size_t)c.layers[0].num_heads * (size_t)c.head_dim;
        for (size_t i = 0; i < nq; i++) q[i] = ldexpf(q[i], 45);        /* exact */
        for (size_t i = 0; i < p.row_elems; i++) k[i] = ldexpf(k[i], -45); /* exact */
        check_problem(&p, text);
        problem_free(&p);
    }
    simd_verdict();
}

/* Huge q over an f16 cache (corpus/cases/huge-q-f16-exponent.case): the
 * rows normalise_q scales down and the kernels multiply back, the one way
 * into that exponent now that f32 and bf16 caches send such rows to the
 * fp64 path.  Fails with the exponent one off (make INJECT=large_q_exponent). */
Test(isa, huge_q_f16_exponent, .timeout = 120) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load("corpus/cases/huge-q-f16-exponent.case", &c, err, sizeof err), 0,
                 "%s", err);
    check_case(&c);
    simd_verdict();
}

/* Rows fp32 cannot carry (src/wide.c, executor.c needs_wide), each found
 * by fuzz_attention on the normal build and failing on every table before
 * the fp64 path: K near FLT_MAX in f32 and bf16 caches overflowing Q.K
 * (NaN rows, a lost order of logits), and huge q rows on f32 and bf16
 * caches whose small elements, flushed to fp32 subnormals, decided the
 * logits (soft caps, sinks, huge scales, bf16 out), and a scale of 1e4
 * over K near FLT_MAX under a soft cap (split_scale_wide_kv). */
Test(isa, wide_rows, .timeout = 120) {
    static const char *const files[] = {
        "corpus/cases/bf16-k-near-max-overflow.case", "corpus/cases/f32-extreme-qk-overflow.case",
        "corpus/cases/f32-extreme-qkv-sinks.case",    "corpus/cases/huge-q-scale-subnormal-k.case",
        "corpus/cases/huge-q-bf16-huge-scale-sinks.case",
        "corpus/cases/huge-q-softcap-bf16-out.case",
        "corpus/cases/scale-over-k-near-max-softcap.case",
    };
    for (int i = 0; i < N(files); i++) {
        case_spec c;
        char err[256];
        cr_assert_eq(case_load(files[i], &c, err, sizeof err), 0, "%s", err);
        check_case(&c);
    }
    simd_verdict();
}

Test(isa, noncausal_windows, .timeout = 120) {
    for (int i = 0; i < N(k_win); i++) {
        case_spec c = mk(8, 2, 64, 48, k_dt[i % N(k_dt)]);
        for (int32_t r = 0; r < CASE_MAX_REQS; r++) c.causal[r] = 0;
        c.layers[0].window = k_win[i];
        c.layers[0].softcap = 30.0f;
        c.layers[0].alibi = 1;
        c.num_reqs = 2;
        c.q_len[0] = 40; c.kv_len[0] = 130;
        c.q_len[1] = 3; c.kv_len[1] = 3;
        c.split = ATTN_SPLIT_ON;
        c.threads = 2;
        c.seed = 5u + (uint64_t)i;
        check_case(&c);
    }
    simd_verdict();
}

/* ------------------------------------------------- direct tile edges */

/* The direct tile tests run once per table (Criterion parameters: an
 * index into k_simd; REF_IX the portable table; NONE_IX when the build
 * compiled no SIMD table).  g_table is the parameter's table; tables()
 * hands it to the checks, whose loops run over it. */
#define REF_IX (-1)
#define NONE_IX (-2)
static const attn_kernels *g_table;

static int tables(const attn_kernels **out) {
    out[0] = g_table;
    return 1;
}

static int table_ix[MAX_ISAS + 1];

/* The compiled SIMD tables (NONE_IX if none), with_ref: "ref" first. */
static struct criterion_test_params table_params(int with_ref) {
    size_t n = 0;
    if (with_ref) table_ix[n++] = REF_IX;
    for (int i = 0; i < N_SIMD && i < MAX_ISAS; i++) table_ix[n++] = i;
    if (n == 0) table_ix[n++] = NONE_IX;
    return cr_make_param_array(int, table_ix, n);
}

/* Sets g_table to the parameter's table, or skips saying why not. */
static void use_table(int ix) {
    if (ix == NONE_IX) TU_SKIP("no SIMD kernel table is compiled into this build (mk/isa.mk)");
    if (ix == REF_IX) {
        g_table = attn__kernels_ref();
        return;
    }
    cr_assert(ix >= 0 && ix < N_SIMD, "table parameter %d", ix);
    if (!k_simd[ix].cpu())
        TU_SKIP("%s: this CPU cannot execute the table's instructions; not tested here",
                     TABLE_NAME(ix));
    g_table = k_simd[ix].get();
    check_table_name(&k_simd[ix]);
}

/* A cache of `keys` keys, D dims, one KV head, block size bs, values in
 * [-1, 1); blocks in reverse order so the block table matters. */
typedef struct mini {
    float *k, *v;
    int32_t *blocks;
    int32_t nb;
} mini;

static void mini_init(mini *m, int32_t keys, int32_t D, int32_t bs, uint64_t seed) {
    m->nb = (keys + bs - 1) / bs;
    const size_t n = (size_t)m->nb * (size_t)bs * (size_t)D;
    m->k = malloc(n * sizeof(float));
    m->v = malloc(n * sizeof(float));
    m->blocks = malloc((size_t)m->nb * sizeof(int32_t));
    cr_assert(m->k && m->v && m->blocks);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        m->k[i] = (float)rng_unit(&s);
        m->v[i] = (float)rng_unit(&s);
    }
    for (int32_t b = 0; b < m->nb; b++) m->blocks[b] = m->nb - 1 - b;
}

static void mini_free(mini *m) {
    free(m->k);
    free(m->v);
    free(m->blocks);
}

typedef struct tile_bufs {
    float *q, *acc, *m, *l, *scores, *kv;
} tile_bufs;

static void bufs_init(tile_bufs *b, int32_t rows, int32_t D, int32_t kv_tile, uint64_t seed) {
    b->q = aligned_bytes((size_t)rows * (size_t)D * 4);
    b->acc = aligned_bytes((size_t)rows * (size_t)D * 4);
    b->m = aligned_bytes((size_t)rows * 4);
    b->l = aligned_bytes((size_t)rows * 4);
    b->scores = aligned_bytes((size_t)rows * (size_t)kv_tile * 4);
    b->kv = aligned_bytes(2 * (size_t)kv_tile * (size_t)D * 4);
    cr_assert(b->q && b->acc && b->m && b->l && b->scores && b->kv);
    uint64_t s = seed;
    for (size_t i = 0; i < (size_t)rows * (size_t)D; i++) {
        b->q[i] = (float)(rng_unit(&s) / sqrt((double)D));
        b->acc[i] = 0.0f;
    }
    for (int32_t r = 0; r < rows; r++) {
        b->m[r] = -INFINITY;
        b->l[r] = 0.0f;
    }
}

static void bufs_free(tile_bufs *b) {
    free(b->q); free(b->acc); free(b->m); free(b->l); free(b->scores); free(b->kv);
}

static attn_tile_args args_for(const mini *mc, tile_bufs *b, int32_t n_tok, int32_t g,
                               int32_t D, int32_t bs, int32_t seq, int32_t pos0, int32_t k0,
                               int32_t k1, int32_t window, int32_t kv_tile) {
    attn_tile_args a;
    memset(&a, 0, sizeof a);
    a.n_tok = n_tok;
    a.g = g;
    a.head_dim = D;
    a.q = b->q;
    a.pos0 = pos0;
    a.seq_len = seq;
    a.causal = 1;
    /* a causal row's window of W keys (mask.h's shorthand) */
    a.window_left = window > 0 ? window - 1 : -1;
    a.window_right = window > 0 ? 0 : -1;
    a.k_cache = mc->k;
    a.v_cache = mc->v;
    a.block_stride = (size_t)bs * (size_t)D;
    a.head_offset = 0;
    a.blocks = mc->blocks;
    a.block_size = bs;
    a.k0 = k0;
    a.k1 = k1;
    a.kv_tile = kv_tile;
    a.tune = g_tune;
    a.acc = b->acc;
    a.m = b->m;
    a.l = b->l;
    a.scores = b->scores;
    a.kv = b->kv;
    return a;
}

static void tile_neutral_check(void) {
    /* window 3 at positions 100..103: none of keys [0, 90) is visible.
     * Rows hold a prior state that must survive bit for bit. */
    const attn_kernels *tb[MAX_ISAS];
    const int nt = tables(tb);
    const int32_t D = 80, bs = 16, g = 3, n_tok = 4, rows = g * n_tok;
    mini mc;
    mini_init(&mc, 112, D, bs, 9);
    for (int k = 0; k < nt; k++) {
        tile_bufs b;
        bufs_init(&b, rows, D, tb[k]->kv_tile, 10);
        for (int32_t r = 0; r < rows; r++) {
            b.m[r] = r % 2 ? -INFINITY : 0.25f * (float)r;
            b.l[r] = r % 2 ? 0.0f : 1.5f;
            for (int32_t d = 0; d < D; d++) b.acc[(size_t)r * D + d] = r % 2 ? 0.0f : 0.01f * (float)d;
        }
        attn_tile_args a = args_for(&mc, &b, n_tok, g, D, bs, 112, 100, 0, 90, 3, tb[k]->kv_tile);
        tb[k]->tile[ATTN_DTYPE_F32](&a);
        for (int32_t r = 0; r < rows; r++) {
            cr_assert(r % 2 ? (b.m[r] == -INFINITY && b.l[r] == 0.0f)
                            : (b.m[r] == 0.25f * (float)r && b.l[r] == 1.5f),
                      "%s: row %d state changed (m %g l %g)", tb[k]->name, (int)r, b.m[r], b.l[r]);
            for (int32_t d = 0; d < D; d++)
                cr_assert_eq(b.acc[(size_t)r * D + d], r % 2 ? 0.0f : 0.01f * (float)d,
                             "%s: row %d acc[%d] changed", tb[k]->name, (int)r, (int)d);
        }
        bufs_free(&b);
    }
    mini_free(&mc);
}

static void tile_edges_check(void) {
    /* key ranges less than, equal to, more than and straddling the 16 /
     * 32 / 64 key tiles, split-style starts, mixed visibility in a chunk */
    static const int32_t ranges[][2] = {{0, 1}, {0, 15}, {0, 16}, {0, 17}, {0, 32}, {0, 63},
                                        {0, 64}, {0, 65}, {5, 70}, {31, 97}, {63, 129},
                                        {100, 197}};
    const attn_kernels *tb[MAX_ISAS];
    const int nt = tables(tb);
    const attn_kernels *ref = attn__kernels_ref();
    const int32_t D = 96, bs = 48, g = 4, n_tok = 3, rows = g * n_tok, seq = 200;
    mini mc;
    mini_init(&mc, seq, D, bs, 21);
    for (int k = 0; k < nt; k++) {
        for (int ri = 0; ri < N(ranges); ri++) {
            for (int win = 0; win < 2; win++) {
                const int32_t window = win ? 40 : -1;
                tile_bufs x, y;
                bufs_init(&x, rows, D, ref->kv_tile, 30 + (uint64_t)ri);
                bufs_init(&y, rows, D, tb[k]->kv_tile, 30 + (uint64_t)ri);
                /* positions: last tokens of the request, so causal masks
                 * cut chunks mid-way for the larger ranges */
                const int32_t pos0 = ranges[ri][1] - 2 > 0 ? ranges[ri][1] - 2 : 0;
                const int32_t k1 = ranges[ri][1] < pos0 + n_tok ? ranges[ri][1] : pos0 + n_tok;
                if (ranges[ri][0] >= k1) {
                    bufs_free(&x);
                    bufs_free(&y);
                    continue;
                }
                attn_tile_args ax = args_for(&mc, &x, n_tok, g, D, bs, seq, pos0, ranges[ri][0],
                                             k1, window, ref->kv_tile);
                attn_tile_args ay = args_for(&mc, &y, n_tok, g, D, bs, seq, pos0, ranges[ri][0],
                                             k1, window, tb[k]->kv_tile);
                ref->tile[ATTN_DTYPE_F32](&ax);
                tb[k]->tile[ATTN_DTYPE_F32](&ay);
                for (int32_t r = 0; r < rows; r++) {
                    const int m_ok = x.m[r] == y.m[r] ||
                                     (isfinite(x.m[r]) && isfinite(y.m[r]) &&
                                      fabsf(x.m[r] - y.m[r]) <= 1e-5f * (1.0f + fabsf(x.m[r])));
                    cr_assert(m_ok,
                              "%s range [%d,%d) w %d row %d: m %g vs ref %g", tb[k]->name,
                              (int)ranges[ri][0], (int)k1, (int)window, (int)r, y.m[r], x.m[r]);
                    cr_assert(fabsf(x.l[r] - y.l[r]) <= 1e-5f * (1.0f + x.l[r]),
                              "%s range [%d,%d) row %d: l %g vs ref %g", tb[k]->name,
                              (int)ranges[ri][0], (int)k1, (int)r, y.l[r], x.l[r]);
                    for (int32_t d = 0; d < D; d++) {
                        const float ex = x.acc[(size_t)r * D + d], ey = y.acc[(size_t)r * D + d];
                        cr_assert(fabsf(ex - ey) <= 3e-5f * (1.0f + x.l[r]),
                                  "%s range [%d,%d) row %d acc[%d]: %g vs ref %g", tb[k]->name,
                                  (int)ranges[ri][0], (int)k1, (int)r, (int)d, ey, ex);
                    }
                }
                bufs_free(&x);
                bufs_free(&y);
            }
        }
    }
    mini_free(&mc);
}

/* The n fp32 values x as a cache of dtype dt (rounded by dtype.h; the
 * tiles and the portable twin then read the same codes); caller frees. */
static void *cache_as(attn_dtype dt, const float *x, size_t n) {
    unsigned char *b = malloc(n * attn_dtype_size(dt) + 1);
    cr_assert_not_null(b);
    for (size_t i = 0; i < n; i++) switch (dt) {
        case ATTN_DTYPE_F32: ((float *)(void *)b)[i] = x[i]; break;
        case ATTN_DTYPE_BF16: ((uint16_t *)(void *)b)[i] = attn__f32_to_bf16(x[i]); break;
        case ATTN_DTYPE_F16: ((uint16_t *)(void *)b)[i] = attn__f32_to_f16(x[i]); break;
        case ATTN_DTYPE_FP8_E4M3: b[i] = attn__f32_to_fp8e4m3(x[i]); break;
        default: b[i] = attn__f32_to_fp8e5m2(x[i]); break;
        }
    return b;
}

/* Single-token items (decode, and split pieces of a decode row): the
 * avx512 tables route them to their own tile (kernels/avx512_decode.c:
 * 16- to 64-key chunks by profile, 4-row Q.K blocks, bf16 pairs widened
 * in an even/odd layout), under each of its memory profiles.  Held to the portable tile for every KV dtype, group sizes on
 * both sides of its 4-row / 6-row blocks and of its 16-row limit, head
 * dims with 16- and 32-element tails and past its 256 limit, key ranges
 * straddling its 64-key chunks, windows, soft cap and ALiBi, and a prior
 * state in every row (the calls compose). */
static void tile_decode_check(void) {
    static const int32_t gs[] = {1, 3, 4, 5, 7, 12, 16, 17};
    static const int32_t ds[] = {33, 64, 80, 128, 200, 256, 320};
    static const int32_t ranges[][2] = {{0, 1}, {0, 63}, {0, 64}, {0, 65}, {0, 127},
                                        {0, 128}, {0, 129}, {3, 260}, {127, 385}, {200, 301}};
    static const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16,
                                     ATTN_DTYPE_FP8_E4M3, ATTN_DTYPE_FP8_E5M2};
    const attn_kernels *tb[MAX_ISAS];
    const int nt = tables(tb);
    const attn_kernels *ref = attn__kernels_ref();
    const int32_t bs = 16, seq = 400;
    int combos = 0;
    for (int di = 0; di < N(ds); di++) {
        const int32_t D = ds[di];
        mini mc;
        mini_init(&mc, seq, D, bs, 40 + (uint64_t)di);
        const size_t n = (size_t)mc.nb * (size_t)bs * (size_t)D;
        void *kx[N(dts)], *vx[N(dts)]; /* the fp32 values as each dtype */
        for (int h = 0; h < N(dts); h++) {
            kx[h] = cache_as(dts[h], mc.k, n);
            vx[h] = cache_as(dts[h], mc.v, n);
        }
        for (int gi = 0; gi < N(gs); gi++) {
            const int32_t g = gs[gi];
            float alibi[32];
            for (int32_t j = 0; j < g; j++) alibi[j] = -0.01f * (float)(j + 1);
            for (int ri = 0; ri < N(ranges); ri++) {
                /* vary the rest along the loop indices */
                const int v = di + gi + ri;
                const attn_dtype dt = dts[v % N(dts)];
                const int32_t window = (v % 4 == 1) ? 90 : (v % 4 == 3) ? 1 : -1;
                const int32_t pos0 = ranges[ri][1] - 1 + (v % 2) * 3;
                for (int k = 0; k < nt; k++) {
                    tile_bufs x, y;
                    bufs_init(&x, g, D, ref->kv_tile, 50 + (uint64_t)v);
                    bufs_init(&y, g, D, tb[k]->kv_tile, 50 + (uint64_t)v);
                    for (int32_t r = 0; r < g; r++) { /* a prior state, odd rows fresh */
                        const float m0 = r % 2 ? -INFINITY : 0.5f, l0 = r % 2 ? 0.0f : 2.0f;
                        x.m[r] = y.m[r] = m0;
                        x.l[r] = y.l[r] = l0;
                        for (int32_t d = 0; d < D; d++)
                            x.acc[(size_t)r * D + d] = y.acc[(size_t)r * D + d] =
                                r % 2 ? 0.0f : 0.02f * (float)(d % 7) - 0.05f;
                    }
                    attn_tile_args ax = args_for(&mc, &x, 1, g, D, bs, seq, pos0, ranges[ri][0],
                                                 ranges[ri][1], window, ref->kv_tile);
                    attn_tile_args ay = args_for(&mc, &y, 1, g, D, bs, seq, pos0, ranges[ri][0],
                                                 ranges[ri][1], window, tb[k]->kv_tile);
                    ax.k_cache = ay.k_cache = kx[v % N(dts)];
                    ax.v_cache = ay.v_cache = vx[v % N(dts)];
                    if (v % 3 == 1) ax.softcap = ay.softcap = 3.0f;
                    if (v % 5 == 2) ax.alibi = ay.alibi = alibi;
                    ref->tile[dt](&ax);
                    tb[k]->tile[dt](&ay);
                    combos++;
                    for (int32_t r = 0; r < g; r++) {
                        const int m_ok = x.m[r] == y.m[r] ||
                                         (isfinite(x.m[r]) && isfinite(y.m[r]) &&
                                          fabsf(x.m[r] - y.m[r]) <= 1e-5f * (1.0f + fabsf(x.m[r])));
                        cr_assert(m_ok, "%s %s D %d g %d [%d,%d) w %d row %d: m %g vs ref %g",
                                  tb[k]->name, attn_dtype_name(dt), (int)D, (int)g,
                                  (int)ranges[ri][0], (int)ranges[ri][1], (int)window, (int)r,
                                  y.m[r], x.m[r]);
                        cr_assert(fabsf(x.l[r] - y.l[r]) <= 1e-5f * (1.0f + x.l[r]),
                                  "%s %s D %d g %d [%d,%d) row %d: l %g vs ref %g", tb[k]->name,
                                  attn_dtype_name(dt), (int)D, (int)g, (int)ranges[ri][0],
                                  (int)ranges[ri][1], (int)r, y.l[r], x.l[r]);
                        for (int32_t d = 0; d < D; d++) {
                            const float ex = x.acc[(size_t)r * D + d], ey = y.acc[(size_t)r * D + d];
                            cr_assert(fabsf(ex - ey) <= 3e-5f * (1.0f + x.l[r]),
                                      "%s %s D %d g %d [%d,%d) row %d acc[%d]: %g vs ref %g",
                                      tb[k]->name, attn_dtype_name(dt), (int)D, (int)g,
                                      (int)ranges[ri][0], (int)ranges[ri][1], (int)r, (int)d, ey,
                                      ex);
                        }
                    }
                    bufs_free(&x);
                    bufs_free(&y);
                }
            }
        }
        for (int h = 0; h < N(dts); h++) {
            free(kx[h]);
            free(vx[h]);
        }
        mini_free(&mc);
    }
    cr_assert(combos > 0);
}


/* fp32 items of 32 .. 128 rows in whole vectors of 16: the avx512 tables
 * route them to the lanes tile (kernels/avx512_lanes.c: q transposed into
 * 64-row panels, key-major score panels, vertical softmax).  Held to the
 * portable tile over row counts on both sides of its panel and vector
 * edges (36 and 132 rows take the general tile), head dims with 16-dim
 * tails, key ranges and causal diagonals that cut its 64-key chunks and
 * 6-key blocks, split-style starts, windows, soft cap, ALiBi, 2^qk_exp
 * logit scaling and a prior state in every row. */
static void tile_lanes_check(void) {
    static const int32_t shapes[][2] = {{8, 4}, {12, 4}, {16, 4}, {20, 4}, {28, 4},
                                        {32, 4}, {9, 4},  {33, 4}, {48, 1}, {128, 1}};
    static const int32_t ds[] = {16, 40, 100, 128, 136};
    static const int32_t ranges[][2] = {{0, 64}, {0, 97}, {0, 130}, {5, 200}, {61, 129},
                                        {64, 300}};
    const attn_kernels *tb[MAX_ISAS];
    const int nt = tables(tb);
    const attn_kernels *ref = attn__kernels_ref();
    const int32_t bs = 16, seq = 300;
    int combos = 0;
    for (int di = 0; di < N(ds); di++) {
        const int32_t D = ds[di];
        mini mc;
        mini_init(&mc, seq, D, bs, 70 + (uint64_t)di);
        for (int si = 0; si < N(shapes); si++) {
            const int32_t n_tok = shapes[si][0], g = shapes[si][1], rows = n_tok * g;
            float alibi[4];
            for (int32_t j = 0; j < g; j++) alibi[j] = -0.02f * (float)(j + 1);
            for (int ri = 0; ri < N(ranges); ri++) {
                const int v = di + si + ri;
                const int32_t window = (v % 4 == 1) ? 70 : (v % 4 == 3) ? 5 : -1;
                /* the last n_tok tokens end at the range's end (diagonal in
                 * the last chunks), or every key is in the past */
                const int32_t pos0 = v % 2 ? ranges[ri][1] - n_tok : seq - n_tok;
                if (pos0 < 0) continue;
                for (int k = 0; k < nt; k++) {
                    tile_bufs x, y;
                    bufs_init(&x, rows, D, ref->kv_tile, 80 + (uint64_t)v);
                    bufs_init(&y, rows, D, tb[k]->kv_tile, 80 + (uint64_t)v);
                    for (int32_t r = 0; r < rows; r++) { /* a prior state, every third row fresh */
                        const float m0 = r % 3 ? 0.25f : -INFINITY, l0 = r % 3 ? 1.5f : 0.0f;
                        x.m[r] = y.m[r] = m0;
                        x.l[r] = y.l[r] = l0;
                        for (int32_t d = 0; d < D; d++)
                            x.acc[(size_t)r * D + d] = y.acc[(size_t)r * D + d] =
                                r % 3 ? 0.03f * (float)(d % 5) - 0.05f : 0.0f;
                    }
                    attn_tile_args ax = args_for(&mc, &x, n_tok, g, D, bs, seq, pos0,
                                                 ranges[ri][0], ranges[ri][1], window, ref->kv_tile);
                    attn_tile_args ay = args_for(&mc, &y, n_tok, g, D, bs, seq, pos0,
                                                 ranges[ri][0], ranges[ri][1], window,
                                                 tb[k]->kv_tile);
                    if (v % 3 == 1) ax.softcap = ay.softcap = 2.0f;
                    if (v % 5 == 2) ax.alibi = ay.alibi = alibi;
                    if (v % 7 == 3) ax.qk_exp = ay.qk_exp = 2;
                    ref->tile[ATTN_DTYPE_F32](&ax);
                    tb[k]->tile[ATTN_DTYPE_F32](&ay);
                    combos++;
                    for (int32_t r = 0; r < rows; r++) {
                        const int m_ok = x.m[r] == y.m[r] ||
                                         (isfinite(x.m[r]) && isfinite(y.m[r]) &&
                                          fabsf(x.m[r] - y.m[r]) <= 1e-5f * (1.0f + fabsf(x.m[r])));
                        cr_assert(m_ok, "%s D %d rows %d [%d,%d) w %d row %d: m %g vs ref %g",
                                  tb[k]->name, (int)D, (int)rows, (int)ranges[ri][0],
                                  (int)ranges[ri][1], (int)window, (int)r, y.m[r], x.m[r]);
                        cr_assert(fabsf(x.l[r] - y.l[r]) <= 1e-5f * (1.0f + x.l[r]),
                                  "%s D %d rows %d [%d,%d) row %d: l %g vs ref %g", tb[k]->name,
                                  (int)D, (int)rows, (int)ranges[ri][0], (int)ranges[ri][1],
                                  (int)r, y.l[r], x.l[r]);
                        for (int32_t d = 0; d < D; d++) {
                            const float ex = x.acc[(size_t)r * D + d], ey = y.acc[(size_t)r * D + d];
                            cr_assert(fabsf(ex - ey) <= 3e-5f * (1.0f + x.l[r]),
                                      "%s D %d rows %d [%d,%d) row %d acc[%d]: %g vs ref %g",
                                      tb[k]->name, (int)D, (int)rows, (int)ranges[ri][0],
                                      (int)ranges[ri][1], (int)r, (int)d, ey, ex);
                        }
                    }
                    bufs_free(&x);
                    bufs_free(&y);
                }
            }
        }
        mini_free(&mc);
    }
    cr_assert(combos > 0);
}

/* ----------------------------------------------------------- dispatch */

/* tile_heads (kernels.h): several KV heads' single-token items walked
 * together must give every item bit for bit what the table's own tile
 * gives it alone — same arithmetic per head, only the order of the heads'
 * chunks differs.  Heads of one paged cache (block stride Hkv x bs x D),
 * each with its own q and a prior state (odd rows fresh), run counts that
 * cross the decode tile's stack batches (8 heads at g 4, D 128), group
 * sizes and head dims it does not take (g 17, D 320: the per-item
 * fallback), windows, soft cap, ALiBi, key ranges that cut its chunks,
 * and a next-item prefetch hint. */
static void tile_heads_check(void) {
    static const struct { int32_t g, D, n; } shapes[] = {
        {4, 128, 2}, {4, 128, 8}, {4, 128, 9}, {1, 64, 16}, {6, 80, 5},
        {16, 256, 3}, {17, 64, 2}, {2, 320, 3}, {5, 33, 7},
    };
    static const int32_t ranges[][2] = {{0, 1}, {0, 64}, {0, 129}, {3, 260}, {127, 385}};
    static const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16,
                                     ATTN_DTYPE_FP8_E4M3, ATTN_DTYPE_FP8_E5M2};
    const attn_kernels *tb[MAX_ISAS];
    const int nt = tables(tb);
    const int32_t bs = 16, seq = 400, nb = seq / bs;
    int combos = 0;
    for (int si = 0; si < (int)(sizeof shapes / sizeof *shapes); si++) {
        const int32_t g = shapes[si].g, D = shapes[si].D, n = shapes[si].n;
        /* cache[nb][n heads][bs][D], blocks in reverse order */
        const size_t ne = (size_t)nb * (size_t)n * (size_t)bs * (size_t)D;
        float *k32 = malloc(ne * 4), *v32 = malloc(ne * 4);
        int32_t *blocks = malloc((size_t)nb * sizeof(int32_t));
        cr_assert(k32 && v32 && blocks);
        uint64_t s = 900 + (uint64_t)si;
        for (size_t i = 0; i < ne; i++) {
            k32[i] = (float)rng_unit(&s);
            v32[i] = (float)rng_unit(&s);
        }
        for (int32_t b = 0; b < nb; b++) blocks[b] = nb - 1 - b;
        float alibi[ATTN__HEAD_RUN_MAX * 17];
        for (int32_t j = 0; j < n * g; j++) alibi[j] = -0.01f * (float)(j % 7 + 1);
        for (int ri = 0; ri < (int)(sizeof ranges / sizeof *ranges); ri++) {
            const int v = si + ri;
            const attn_dtype dt = dts[v % N(dts)];
            const int32_t window = (v % 4 == 1) ? 90 : (v % 4 == 3) ? 1 : -1;
            const int32_t pos0 = ranges[ri][1] - 1 + (v % 2) * 3;
            void *kc = cache_as(dt, k32, ne), *vc = cache_as(dt, v32, ne);
            for (int k = 0; k < nt; k++) {
                if (!tb[k]->tile_heads[dt]) continue;
                tile_bufs x[ATTN__HEAD_RUN_MAX], y[ATTN__HEAD_RUN_MAX];
                attn_tile_args ax[ATTN__HEAD_RUN_MAX], ay[ATTN__HEAD_RUN_MAX];
                for (int32_t h = 0; h < n; h++) {
                    bufs_init(&x[h], g, D, tb[k]->kv_tile, 70 + (uint64_t)(v * 31 + h));
                    bufs_init(&y[h], g, D, tb[k]->kv_tile, 70 + (uint64_t)(v * 31 + h));
                    for (int32_t r = 0; r < g; r++) { /* a prior state, odd rows fresh */
                        const float m0 = r % 2 ? -INFINITY : 0.25f * (float)(h % 3);
                        x[h].m[r] = y[h].m[r] = m0;
                        x[h].l[r] = y[h].l[r] = r % 2 ? 0.0f : 1.5f;
                        for (int32_t d = 0; d < D; d++)
                            x[h].acc[(size_t)r * D + d] = y[h].acc[(size_t)r * D + d] =
                                r % 2 ? 0.0f : 0.01f * (float)((d + h) % 5) - 0.02f;
                    }
                    /* args_for's single-head cache, then this cache's heads */
                    const mini mc = {k32, v32, blocks, nb};
                    attn_tile_args a = args_for(&mc, &x[h], 1, g, D, bs, seq, pos0, ranges[ri][0],
                                                ranges[ri][1], window, tb[k]->kv_tile);
                    a.softcap = v % 3 == 1 ? 3.0f : 0.0f;
                    a.alibi = v % 5 == 2 ? alibi + (size_t)h * (size_t)g : NULL;
                    a.k_cache = kc;
                    a.v_cache = vc;
                    a.block_stride = (size_t)n * (size_t)bs * (size_t)D;
                    a.head_offset = (size_t)h * (size_t)bs * (size_t)D;
                    /* the next item: the following head, or for the last a
                     * short range of head 0 */
                    a.next_blocks = blocks;
                    a.next_head_offset = (size_t)((h + 1) % n) * (size_t)bs * (size_t)D;
                    a.next_k0 = h + 1 < n ? a.k0 : 5;
                    a.next_k1 = h + 1 < n ? a.k1 : 40;
                    ax[h] = ay[h] = a; /* a points at x[h]'s buffers */
                    ay[h].q = y[h].q, ay[h].acc = y[h].acc, ay[h].m = y[h].m, ay[h].l = y[h].l;
                    ay[h].scores = y[h].scores, ay[h].kv = y[h].kv;
                }
                tb[k]->tile_heads[dt](ax, n);
                for (int32_t h = 0; h < n; h++) tb[k]->tile[dt](&ay[h]);
                combos++;
                for (int32_t h = 0; h < n; h++) {
                    const size_t rb = (size_t)g * sizeof(float), ab = rb * (size_t)D;
                    cr_assert(!memcmp(x[h].m, y[h].m, rb) && !memcmp(x[h].l, y[h].l, rb) &&
                                  !memcmp(x[h].acc, y[h].acc, ab),
                              "%s %s g %d D %d n %d [%d,%d) w %d head %d: tile_heads differs "
                              "from tile (m[0] %g vs %g, acc[0] %g vs %g)",
                              tb[k]->name, attn_dtype_name(dt), (int)g, (int)D, (int)n,
                              (int)ranges[ri][0], (int)ranges[ri][1], (int)window, (int)h,
                              x[h].m[0], y[h].m[0], x[h].acc[0], y[h].acc[0]);
                    bufs_free(&x[h]);
                    bufs_free(&y[h]);
                }
            }
            free(kc);
            free(vc);
        }
        free(k32); free(v32); free(blocks);
    }
    cr_assert(combos > 0, "%s: no tile_heads run was exercised", g_table->name);
}

/* ------------------------------------------- one test per table */

ParameterizedTestParameters(isa, tile_neutral_rows_untouched) { return table_params(1); }
ParameterizedTest(int *ix, isa, tile_neutral_rows_untouched) {
    use_table(*ix);
    tile_neutral_check();
}

ParameterizedTestParameters(isa, tile_edges_match_ref) { return table_params(0); }
ParameterizedTest(int *ix, isa, tile_edges_match_ref) {
    use_table(*ix);
    tile_edges_check();
}

ParameterizedTestParameters(isa, tile_decode_matches_ref) { return table_params(0); }
ParameterizedTest(int *ix, isa, tile_decode_matches_ref, .timeout = 480) {
    use_table(*ix);
    under_each_tune_profile(tile_decode_check);
}

ParameterizedTestParameters(isa, tile_lanes_matches_ref) { return table_params(0); }
ParameterizedTest(int *ix, isa, tile_lanes_matches_ref, .timeout = 240) {
    use_table(*ix);
    tile_lanes_check();
}

ParameterizedTestParameters(isa, tile_heads_match_tile) { return table_params(0); }
ParameterizedTest(int *ix, isa, tile_heads_match_tile, .timeout = 480) {
    use_table(*ix);
    int any = 0;
    for (int d = 0; d < ATTN_DTYPE_COUNT; d++) any |= g_table->tile_heads[d] != NULL;
    if (!any) TU_SKIP("%s has no tile_heads entry (decode runs stay one item at a time)",
                           g_table->name);
    under_each_tune_profile(tile_heads_check);
}


static attn_status create_tuned(const char *isa, const char *tune, attn_dtype kv,
                                attn_builder_info *info, attn_error *err) {
    attn_layer_desc l;
    memset(&l, 0, sizeof l);
    l.num_heads = 8;
    l.window = -1;
    attn_group_desc g;
    memset(&g, 0, sizeof g);
    g.layers = &l;
    g.num_layers = 1;
    g.kv.num_kv_heads = 2;
    g.kv.head_dim = 64;
    g.kv.block_size = 16;
    g.kv.dtype = kv;
    g.num_threads = 1;
    g.isa = isa;
    g.tune = tune;
    g.precision = g_precision;
    attn_builder *b = NULL;
    attn_status st = attn_builder_create(&g, &b, err);
    if (st == ATTN_OK && info) attn_builder_get_info(b, info, NULL);
    attn_builder_destroy(b);
    return st;
}

/* The tuning profile: explicit, else $ATTN_TUNE, else the CPU vendor; an
 * unknown name is a clear error; attn_builder_info names it, and reports
 * bf16 rounding exactly for avx512bf16 x (bf16 or fp8 KV) x "amd", and
 * amx x (bf16 KV, or fp8 KV x "amd"). */
Test(isa, tune_names_and_rounding) {
    attn_builder_info bi;
    attn_error err;
    cr_assert_eq(create_tuned("ref", "amd", ATTN_DTYPE_BF16, &bi, NULL), ATTN_OK);
    cr_assert_str_eq(bi.tune, "amd");
    cr_assert_eq(bi.bf16_rounding, 0, "the portable table never rounds");
    cr_assert_eq(create_tuned("ref", "intel", ATTN_DTYPE_F32, &bi, NULL), ATTN_OK);
    cr_assert_str_eq(bi.tune, "intel");
    cr_assert_eq(create_tuned("ref", "zen", ATTN_DTYPE_F32, NULL, &err), ATTN_E_BAD_ISA);
    cr_assert(strstr(err.message, "\"zen\"") && strstr(err.message, "intel, amd"), "%s",
              err.message);
    setenv("ATTN_TUNE", "bogus", 1);
    cr_assert_eq(create_tuned("ref", NULL, ATTN_DTYPE_F32, NULL, &err), ATTN_E_BAD_ISA);
    cr_assert(strstr(err.message, "ATTN_TUNE"), "%s", err.message);
    cr_assert_eq(create_tuned("ref", "intel", ATTN_DTYPE_F32, NULL, NULL), ATTN_OK,
                 "an explicit profile wins over the variable");
    setenv("ATTN_TUNE", "amd", 1);
    cr_assert_eq(create_tuned("ref", NULL, ATTN_DTYPE_F32, &bi, NULL), ATTN_OK);
    cr_assert_str_eq(bi.tune, "amd");
    unsetenv("ATTN_TUNE");
    cr_assert_eq(create_tuned("ref", NULL, ATTN_DTYPE_F32, &bi, NULL), ATTN_OK);
    cr_assert(!strcmp(bi.tune, "intel") || !strcmp(bi.tune, "amd"), "%s", bi.tune);
    const char *isas[MAX_ISAS];
    const int n = attn_isa_available(isas, MAX_ISAS);
    for (int i = 0; i < n; i++) {
        const int bf16tab = !strncmp(isas[i], "avx512bf16", 10); /* native or @emu */
        const int amxtab = !strncmp(isas[i], "amx", 3);            /* rounds bf16 on any profile */
        for (int e = 0; e < 2; e++) /* precision: default, exact */
            for (int t = 0; t < 2; t++)
                for (int d = 0; d < 4; d++) { /* f32 never rounds; bf16 prefill, fp8 decode do */
                    static const attn_dtype kvs[4] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16,
                                                      ATTN_DTYPE_FP8_E4M3, ATTN_DTYPE_FP8_E5M2};
                    const attn_dtype kv = kvs[d];
                    g_precision = e ? ATTN_PRECISION_EXACT : ATTN_PRECISION_DEFAULT;
                    cr_assert_eq(create_tuned(isas[i], t ? "amd" : "intel", kv, &bi, NULL), ATTN_OK);
                    const int rounds = !e && (((bf16tab || amxtab) && t && d) || (amxtab && d == 1));
                    cr_assert_eq(bi.bf16_rounding, rounds, "%s %s %s %s", isas[i],
                                 t ? "amd" : "intel", attn_dtype_name(kv), e ? "exact" : "default");
                    cr_assert_eq(bi.precision, g_precision);
                }
    }
    g_precision = (attn_precision)2;
    cr_assert_eq(create_tuned("ref", NULL, ATTN_DTYPE_F32, NULL, &err), ATTN_E_BAD_OPTION);
    cr_assert(strstr(err.message, "precision = 2"), "%s", err.message);
    g_precision = ATTN_PRECISION_DEFAULT;
}

/* A builder for the table isa and the default tuning profile. */
static attn_status create_with(const char *isa, attn_builder_info *info) {
    return create_tuned(isa, NULL, ATTN_DTYPE_F32, info, NULL);
}

Test(isa, env_bogus_is_bad_isa) {
    setenv("ATTN_ISA", "bogus", 1);
    cr_assert_eq(create_with(NULL, NULL), ATTN_E_BAD_ISA);
    /* an explicit, valid name wins over the variable */
    cr_assert_eq(create_with("ref", NULL), ATTN_OK);
    unsetenv("ATTN_ISA");
    cr_assert_eq(create_with(NULL, NULL), ATTN_OK);
}

Test(isa, explicit_names) {
    static const char *const all[] = {"ref", "avx2", "avx512", "avx512bf16", "amx", "avx512@emu",
                                      "avx512bf16@emu", "amx@sim"};
    const char *isas[MAX_ISAS];
    const int n = attn_isa_available(isas, MAX_ISAS);
    cr_assert_eq(create_with("bogus", NULL), ATTN_E_BAD_ISA);
    cr_assert_eq(create_with("AVX2", NULL), ATTN_E_BAD_ISA); /* names are exact */
    for (int i = 0; i < N(all); i++) {
        int avail = 0;
        for (int k = 0; k < n; k++) avail |= strcmp(isas[k], all[i]) == 0;
        attn_builder_info info;
        memset(&info, 0, sizeof info);
        const attn_status st = create_with(all[i], &info);
        if (avail) {
            cr_assert_eq(st, ATTN_OK, "%s is listed as available", all[i]);
            cr_assert_str_eq(info.isa, all[i]);
        } else {
            /* not compiled in or not on this CPU: refused, never used */
            cr_assert_eq(st, ATTN_E_BAD_ISA, "%s is not available", all[i]);
        }
        setenv("ATTN_ISA", all[i], 1);
        cr_assert_eq(create_with(NULL, NULL), avail ? ATTN_OK : ATTN_E_BAD_ISA, "ATTN_ISA=%s",
                     all[i]);
        unsetenv("ATTN_ISA");
    }
    /* the default is the best (last) available native table: the
     * emulated ones are listed after it and run only when named */
    int best = n - 1;
    while (best > 0 && strchr(isas[best], '@')) best--;
    for (int k = 0; k < best; k++) cr_assert(!strchr(isas[k], '@'), "%s before a native table", isas[k]);
    attn_builder_info info;
    cr_assert_eq(create_with(NULL, &info), ATTN_OK);
    cr_assert_str_eq(info.isa, isas[best]);
}

Test(isa, tables_start_from_ref) {
    /* structure only, nothing executed: every compiled table, whatever
     * this CPU can run */
    const attn_kernels *ref = attn__kernels_ref();
    for (int k = 0; k < N_SIMD; k++) {
        const attn_kernels *t = k_simd[k].get();
        check_table_name(&k_simd[k]);
        cr_assert(t->rows_target >= 1 && t->kv_tile >= 1, "%s", t->name);
        cr_assert(t->merge == ref->merge, "%s: merge is not the portable one", t->name);
        for (int d = 0; d < ATTN_DTYPE_COUNT; d++) {
            /* every KV dtype has a tile; q and out are never fp8 */
            const int fp8 = d == ATTN_DTYPE_FP8_E4M3 || d == ATTN_DTYPE_FP8_E5M2;
            cr_assert(t->tile[d] && (fp8 || (t->load_q[d] && t->store[d])),
                      "%s: NULL entry for %s", t->name, attn_dtype_name((attn_dtype)d));
        }
    }
#if defined(ATTN_HAVE_AVX512) && defined(ATTN_HAVE_AVX512BF16) /* both compiled */
    const attn_kernels *a = attn__kernels_avx512(), *b = attn__kernels_avx512bf16();
    cr_assert(a->rows_target == b->rows_target && a->rows_multiple == b->rows_multiple &&
              a->kv_tile == b->kv_tile);
    /* its own routers for bf16 (VDPBF16PS tiles) and fp8 (the decode
     * tile's dot path); the avx512 table's everywhere else */
    for (int d = 0; d < ATTN_DTYPE_COUNT; d++) {
        cr_assert(a->load_q[d] == b->load_q[d] && a->store[d] == b->store[d]);
        const int own = d == ATTN_DTYPE_BF16 || d == ATTN_DTYPE_FP8_E4M3 || d == ATTN_DTYPE_FP8_E5M2;
        cr_assert_eq(a->tile[d] != b->tile[d], own, "tile %s", attn_dtype_name((attn_dtype)d));
        cr_assert_eq(a->tile_heads[d] != b->tile_heads[d], own, "tile_heads %s",
                     attn_dtype_name((attn_dtype)d));
    }
#endif
#if defined(ATTN_HAVE_AVX512BF16) && defined(ATTN_HAVE_AMX)
    const attn_kernels *bt = attn__kernels_avx512bf16(), *c = attn__kernels_amx();
    cr_assert(bt->rows_target == c->rows_target && bt->rows_multiple == c->rows_multiple &&
              bt->kv_tile == c->kv_tile);
    /* its own router for bf16 (the AMX tile); the avx512bf16 table's elsewhere */
    for (int d = 0; d < ATTN_DTYPE_COUNT; d++) {
        cr_assert(bt->load_q[d] == c->load_q[d] && bt->store[d] == c->store[d]);
        const int own = d == ATTN_DTYPE_BF16;
        cr_assert_eq(bt->tile[d] != c->tile[d], own, "amx tile %s", attn_dtype_name((attn_dtype)d));
        cr_assert_eq(bt->tile_heads[d] != c->tile_heads[d], own, "amx tile_heads %s",
                     attn_dtype_name((attn_dtype)d));
    }
#endif
}

/* load_q's answer is what the executor's scaling of huge q rows acts on
 * (normalise_q): every table this CPU runs, each q dtype, must return the
 * largest |element| it wrote, NaNs counted as 0, as its fp32 bits.  Rows
 * of 111 elements (no multiple of any vector: the masked tails count),
 * the largest in a tail, a NaN beside it.  Without it huge q rows would
 * not be scaled, which the output oracles cannot always see (logits that
 * large leave elements unjudged). */
Test(isa, load_q_reports_its_maximum) {
    const attn_kernels *tabs[8] = {attn__kernels_ref()};
    int nt = 1;
    for (int k = 0; k < N_SIMD && nt < 8; k++)
        if (k_simd[k].cpu()) tabs[nt++] = k_simd[k].get();
    const attn_dtype dts[3] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16};
    enum { N_TOK = 3, G = 3, HD = 37, W = G * HD, TS = 130 };
    for (int di = 0; di < 3; di++) {
        const attn_dtype dt = dts[di];
        /* f16 tops out at 65504: its largest is 2^15 */
        const float big = dt == ATTN_DTYPE_F16 ? -0x1p15f : -0x1p40f;
        unsigned char src[N_TOK * TS * 4];
        for (int i = 0; i < N_TOK * TS; i++) {
            float v = (float)((i * 37) % 29 - 14) / 16.0f; /* exact in every dtype */
            if (i == TS + W - 1) v = big;                 /* token 1's last element */
            if (i == TS + W - 2) v = NAN;
            if (dt == ATTN_DTYPE_F32) memcpy(src + 4 * i, &v, 4);
            else {
                const uint16_t h = dt == ATTN_DTYPE_BF16 ? attn__f32_to_bf16(v) : attn__f32_to_f16(v);
                memcpy(src + 2 * i, &h, 2);
            }
        }
        for (int t = 0; t < nt; t++) {
            float dst[N_TOK * W];
            const uint32_t mb = tabs[t]->load_q[dt](src, TS, N_TOK, G, HD, 0.5f, dst);
            const float want = -0.5f * big;
            uint32_t wb;
            memcpy(&wb, &want, 4);
            cr_assert_eq(mb, wb, "%s, q %s: load_q returned 0x%08x, the largest |element| is %g (0x%08x)",
                         tabs[t]->name, attn_dtype_name(dt), (unsigned)mb, (double)want, (unsigned)wb);
        }
    }
}

/* ATTN_PRECISION_EXACT on the paths that round by default (the
 * avx512bf16 table under tune "amd": bf16 prefill, fp8 decode): the
 * builder says it does not round, and the output holds the fp32 tolerance
 * against the reference, where the default run (which rounds) differs
 * from it. */
Test(isa, precision_exact_never_rounds, .timeout = 120) {
    int usable = 0;
    for (int i = 0; i < N_SIMD; i++)
        usable |= !strcmp(TABLE_NAME(i), "avx512bf16") && k_simd[i].cpu();
    if (!usable) TU_SKIP("avx512bf16 is not compiled in or this CPU cannot run it");
    for (int v = 0; v < 2; v++) { /* bf16 prefill, e4m3 decode */
        case_spec c = mk(8, 2, 128, 16, ATTN_DTYPE_BF16);
        if (v) c.kv_dtype = AG_FP8_E4M3; /* q and out stay bf16 / fp32 */
        c.out_dtype = AG_F32;
        c.q_len[0] = v ? 1 : 96;
        c.kv_len[0] = 300;
        c.seed = 0xe4ac7u + (uint64_t)v;
        const char *what = v ? "fp8 decode" : "bf16 prefill";
        char msg[512];
        problem p;
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, msg, sizeof msg), 0, "%s", msg);
        const size_t ne = problem_out_elems(&p, 0);
        double *exact = malloc(ne * sizeof(double)), *lo = malloc(ne * sizeof(double)),
               *hi = malloc(ne * sizeof(double));
        cr_assert(exact && lo && hi);
        cr_assert_eq(afx_reference(&p, 0, 0, exact, lo, hi), 0);
        g_tune = ATTN__TUNE_AMD;
        int rounded = -1;
        g_precision = ATTN_PRECISION_EXACT;
        void *ex = run_on(&p, 0, "avx512bf16", &rounded, msg, sizeof msg);
        cr_assert(ex, "%s", msg);
        cr_assert_eq(rounded, 0, "%s: exact precision reports bf16 rounding", what);
        g_precision = ATTN_PRECISION_DEFAULT;
        void *df = run_on(&p, 0, "avx512bf16", &rounded, msg, sizeof msg);
        cr_assert(df, "%s", msg);
        cr_assert_eq(rounded, 1, "%s: the default amd run no longer rounds: pick another path", what);
        g_tune = 0;
        cmp_result r;
        const cmp_tol tol = cmp_tolerance(c.out_dtype);
        cr_assert(cmp_compare(exact, lo, hi, ex, c.out_dtype, ne, tol, &r),
                  "%s, exact precision: %zu elements outside the fp32 tolerance (max_abs %g)", what,
                  r.bad, r.max_abs);
        cr_assert(memcmp(ex, df, ne * sizeof(float)) != 0, "%s: the default run did not round", what);
        free(ex), free(df), free(exact), free(lo), free(hi);
        problem_free(&p);
    }
}
