/*
 * fuzz_api.c — malformed use of the public API (bad-input oracle).
 *
 * Input: [op] [arg] [n_lo] [n_hi] then the case bytes (harness/case/case_bytes.c).
 * The case gives a group, a batch and tensors (harness/case/problem.c, in the
 * engine's own view: tests/fixture.c); `op` picks what to
 * break, the top bits of n where in an array:
 *   0  allocation failure at the N-th allocation (N from n_lo/n_hi) through
 *      attn_group_desc.allocator: every stage returns its unfailed status or
 *      ATTN_E_NO_MEMORY, out-parameters stay unwritten on failure
 *   1  NULL for one pointer argument of one public function (or a pointer
 *      inside a description), chosen by `arg`: ATTN_E_NULL_ARG
 *   2  a huge, negative or garbage size / enum in a description, or one
 *      corrupted entry anywhere in a batch array (query_start_loc, seq_lens,
 *      block_table), a layer's ALiBi slopes or sinks: a refusal status
 *   3  a scratchpad one byte short, or misaligned: SCRATCH_TOO_SMALL/ALIGN
 *   4  a layer with a different head count than the plan: refused
 *   5  tensors that disagree with the plan: refused
 *   6  attn_reshape_and_cache with a garbage slot at any index, garbage
 *      token counts
 *   7  err == NULL everywhere, the name/message tables with garbage codes
 *   8  the cache writers on valid input: attn_reshape_and_cache(_from)
 *      with rows in f32, bf16, f16 or the cache's dtype, scales from 0 to
 *      huge, slots across block edges and skipped ones; the cache is read
 *      back against the harness's own conversion of each row, bit for
 *      bit (any NaN for a NaN), and every slot not written must keep its
 *      bytes (ORACLE_CACHE_WRITE)
 * Every call must return a listed status (never ATTN_E_INTERNAL, never a
 * crash), and after destroying everything the counting allocator must be
 * balanced (no leak).  Other violations fire ORACLE_BAD_INPUT.
 */
#include "../harness/case/case.h"
#include "../src/attn_plan_inspect.h"
#include "../harness/case/case_bytes.h"
#include "../harness/case/values.h"
#include "../harness/judge/oracles.h"
#include "../harness/judge/ref.h"
#include "fuzz_common.h"
#include "../harness/case/problem.h"
#include "../tests/fixture.h"
#include "../engines/attnguard/dtype_map.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs problem_init_zeros may build: a bigger case gets descriptions
 * only.  Statuses depend on shapes, not values, so the inputs are zeros
 * (op 8 fills the rows it writes itself) */
#define API_MAX_BYTES   ((size_t)1 << 20)
#define API_MAX_SCRATCH ((size_t)8 << 20)    /* scratchpads we allocate */
#define SENTINEL        ((void *)(uintptr_t)0x5e57)

/* ------------------------------------------------------------ reporting */

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void violation(const char *fmt, ...) {
    finding f;
    f.oracle = ORACLE_BAD_INPUT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.detail, sizeof f.detail, fmt, ap);
    va_end(ap);
    oracle_fire(&f);
}

static int listed(attn_status st) {
    return (unsigned)st < ATTN_STATUS_COUNT && st != ATTN_E_INTERNAL;
}

/* Every status must be listed; returns it for further checks. */
static attn_status chk(const char *call, attn_status st, const attn_error *err) {
    if (!listed(st))
        violation("%s returned %s (%d): %s", call, attn_status_name(st), (int)st,
                  err ? err->message : "");
    if (err && err->status != st)
        violation("%s returned %s but wrote err.status = %s", call, attn_status_name(st),
                  attn_status_name(err->status));
    return st;
}

static void want(const char *call, attn_status got, attn_status expected, const attn_error *err) {
    chk(call, got, err);
    if (got != expected)
        violation("%s returned %s, want %s: %s", call, attn_status_name(got),
                  attn_status_name(expected), err ? err->message : "");
}

static void refused(const char *call, attn_status got, const attn_error *err) {
    chk(call, got, err);
    if (got == ATTN_OK) violation("%s accepted malformed input (ATTN_OK)", call);
}

/* An index into an array of `count` elements from the top 9 bits of n
 * (the low bits choose the junk value and the field): spread over the
 * whole array, the last element included, not only its first entry. */
static size_t pick(unsigned n, size_t count) {
    const unsigned v = (n >> 7) & 511u;
    if (count <= 1) return 0;
    if (v == 511u) return count - 1;
    return (size_t)v * count / 511u;
}

/* ----------------------------------------------------- counting allocator */

typedef struct counting {
    size_t calls, fail_at, live;
} counting;

static void *c_alloc(void *ctx, size_t bytes) {
    counting *a = ctx;
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) return NULL;
    void *p = malloc(bytes);
    if (p) a->live++;
    return p;
}

static void c_free(void *ctx, void *p) {
    counting *a = ctx;
    if (!p) return;
    a->live--;
    free(p);
}

static void balanced(const counting *a, const char *when) {
    if (a->live != 0)
        violation("%s: %zu engine allocation(s) not freed after destroy (of %zu calls)", when,
                  a->live, a->calls);
}

/* -------------------------------------------------------------- fixture */

typedef struct fixture {
    problem p;
    afx_engine e;               /* the engine's view of p (its layout, attn_* descriptions) */
    counting count;
    attn_allocator alloc;
    attn_group_desc group;      /* p.group with our allocator */
    attn_plan_opts opts;
    attn_builder *b;
    attn_plan *plan;
    size_t scratch_bytes;
    void *scratch;              /* 64-aligned, scratch_bytes (+64 spare) */
    void *out;                  /* layer 0's output buffer */
    attn_layer_desc layer;      /* the layer runs use: layer 0, or for a group
                                   without layers one with the model-wide count */
} fixture;

static void fx_release(fixture *x) {
    attn_plan_destroy(x->plan);
    attn_builder_destroy(x->b);
    x->plan = NULL;
    x->b = NULL;
}

/* Create + build the case as given; 1 when both succeeded. */
static int fx_build(fixture *x) {
    attn_error err;
    attn_builder *b = SENTINEL;
    attn_status st = chk("attn_builder_create", attn_builder_create(&x->group, &b, &err), &err);
    if (st != ATTN_OK) {
        if (b != SENTINEL) violation("attn_builder_create returned %s but wrote *out",
                                     attn_status_name(st));
        return 0;
    }
    x->b = b;
    attn_plan *pl = SENTINEL;
    st = chk("attn_builder_build", attn_builder_build(b, &x->e.batch, &x->opts, &pl, &err), &err);
    if (st != ATTN_OK) {
        if (pl != SENTINEL) violation("attn_builder_build returned %s but wrote *out",
                                      attn_status_name(st));
        return 0;
    }
    x->plan = pl;
    return 1;
}

/* Scratch and layer-0 output for runs; 1 when available. */
static int fx_run_buffers(fixture *x) {
    if (!x->p.materialized || !x->plan) return 0;
    attn_error err;
    size_t bytes = 0;
    want("attn_plan_scratch_size", attn_plan_scratch_size(x->plan, &bytes, &err), ATTN_OK, &err);
    if (bytes > API_MAX_SCRATCH) return 0;
    x->scratch_bytes = bytes;
    x->scratch = aligned_alloc(64, (bytes / 64 + 2) * 64);
    size_t n = problem_out_elems(&x->p, 0), osz = ag_dtype_size(x->p.c.out_dtype);
    x->out = calloc(n ? n : 1, osz ? osz : 1);
    return x->scratch && x->out;
}

static void fx_free(fixture *x) {
    fx_release(x);
    free(x->scratch);
    free(x->out);
    afx_free(&x->e);
    problem_free(&x->p);
}

/* --------------------------------------------------------------- ops */

static void op_alloc_failure(fixture *x, unsigned n) {
    /* The unfailed statuses first, then the same sequence failing at n. */
    attn_error err;
    attn_builder *b = NULL;
    attn_plan *pl = NULL;
    attn_status c0 = chk("attn_builder_create", attn_builder_create(&x->group, &b, &err), &err);
    attn_status b0 = ATTN_OK;
    if (c0 == ATTN_OK)
        b0 = chk("attn_builder_build", attn_builder_build(b, &x->e.batch, &x->opts, &pl, &err),
                 &err);
    if (c0 == ATTN_OK && b0 == ATTN_OK) attn_plan_destroy(pl);
    if (c0 == ATTN_OK) attn_builder_destroy(b);
    balanced(&x->count, "unfailed create/build");

    x->count.calls = 0;
    x->count.fail_at = n;
    b = SENTINEL;
    attn_status c1 = chk("attn_builder_create", attn_builder_create(&x->group, &b, &err), &err);
    if (c1 != c0 && c1 != ATTN_E_NO_MEMORY)
        violation("attn_builder_create with allocation %u failing returned %s, unfailed %s", n,
                  attn_status_name(c1), attn_status_name(c0));
    if (c1 != ATTN_OK) {
        if (b != SENTINEL) violation("attn_builder_create returned %s but wrote *out",
                                     attn_status_name(c1));
        balanced(&x->count, "failed attn_builder_create");
        return;
    }
    pl = SENTINEL;
    attn_status b1 = chk("attn_builder_build",
                         attn_builder_build(b, &x->e.batch, &x->opts, &pl, &err), &err);
    if (b1 != b0 && b1 != ATTN_E_NO_MEMORY)
        violation("attn_builder_build with allocation %u failing returned %s, unfailed %s", n,
                  attn_status_name(b1), attn_status_name(b0));
    if (b1 != ATTN_OK && pl != SENTINEL)
        violation("attn_builder_build returned %s but wrote *out", attn_status_name(b1));
    if (b1 == ATTN_OK) attn_plan_destroy(pl);
    attn_builder_destroy(b);
    balanced(&x->count, "create/build with a failing allocation");
}

static void op_null(fixture *x, unsigned arg) {
    attn_error err;
    attn_builder *b = NULL;
    attn_plan *pl = NULL;
    attn_builder_info bi;
    attn_plan_info pi;
    size_t n = 0;
    const attn_region *regs = NULL;
    const attn_work_item *items = NULL;
    const attn_reduction *reds = NULL;
    const attn_layer_desc *L = &x->layer;
    switch (arg % 48) {
    /* functions that need nothing built */
    case 0: want("create(group=NULL)", attn_builder_create(NULL, &b, &err), ATTN_E_NULL_ARG, &err); return;
    case 1: want("create(out=NULL)", attn_builder_create(&x->group, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 2: want("get_info(builder=NULL)", attn_builder_get_info(NULL, &bi, &err), ATTN_E_NULL_ARG, &err); return;
    case 3: want("build(builder=NULL)", attn_builder_build(NULL, &x->e.batch, NULL, &pl, &err), ATTN_E_NULL_ARG, &err); return;
    case 4: want("scratch_size(plan=NULL)", attn_plan_scratch_size(NULL, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 5: want("regions(plan=NULL)", attn_plan_regions(NULL, &regs, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 6: want("extents(plan=NULL)", attn_plan_layer_extents(NULL, L, 8, &n, 1, &err), ATTN_E_NULL_ARG, &err); return;
    case 7: want("plan_get_info(plan=NULL)", attn_plan_get_info(NULL, &pi, &err), ATTN_E_NULL_ARG, &err); return;
    case 8: want("items(plan=NULL)", attn_plan_items(NULL, &items, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 9: want("reductions(plan=NULL)", attn_plan_reductions(NULL, &reds, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 10: want("run(plan=NULL)", attn_run(NULL, L, NULL, NULL, 0, &err), ATTN_E_NULL_ARG, &err); return;
    case 11: want("reshape(kv=NULL)", attn_reshape_and_cache(NULL, 1, &n, &n, 1, NULL, &n, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 12: attn_builder_destroy(NULL); attn_plan_destroy(NULL); return;
    case 13: if (attn_isa_available(NULL, 0) < 1) violation("attn_isa_available(NULL, 0) < 1"); return;
    case 14: {
        attn_allocator bad = x->alloc;
        bad.alloc = NULL;
        attn_group_desc g = x->group;
        g.allocator = &bad;
        refused("create(allocator.alloc=NULL)", attn_builder_create(&g, &b, &err), &err);
        return;
    }
    case 15: {
        attn_allocator bad = x->alloc;
        bad.free = NULL;
        attn_group_desc g = x->group;
        g.allocator = &bad;
        refused("create(allocator.free=NULL)", attn_builder_create(&g, &b, &err), &err);
        return;
    }
    case 16:
        if (x->group.num_layers > 0) {
            attn_group_desc g = x->group;
            g.layers = NULL;
            want("create(group.layers=NULL)", attn_builder_create(&g, &b, &err), ATTN_E_NULL_ARG, &err);
        }
        return;
    default: break;
    }
    if (!fx_build(x)) return;
    attn_batch bt = x->e.batch;
    switch (arg % 48) {
    case 17: want("get_info(out=NULL)", attn_builder_get_info(x->b, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 18: want("build(batch=NULL)", attn_builder_build(x->b, NULL, NULL, &pl, &err), ATTN_E_NULL_ARG, &err); return;
    case 19: want("build(out=NULL)", attn_builder_build(x->b, &bt, NULL, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 20:
        bt.query_start_loc = NULL;
        want("build(batch.query_start_loc=NULL)", attn_builder_build(x->b, &bt, NULL, &pl, &err), ATTN_E_NULL_ARG, &err);
        return;
    case 21:
        bt.seq_lens = NULL;
        want("build(batch.seq_lens=NULL)", attn_builder_build(x->b, &bt, NULL, &pl, &err), ATTN_E_NULL_ARG, &err);
        return;
    case 22:
        bt.block_table = NULL;
        want("build(batch.block_table=NULL)", attn_builder_build(x->b, &bt, NULL, &pl, &err), ATTN_E_NULL_ARG, &err);
        return;
    case 23: {
        /* opts NULL is allowed: the defaults */
        attn_status st = chk("build(opts=NULL)", attn_builder_build(x->b, &bt, NULL, &pl, &err), &err);
        if (st == ATTN_OK) attn_plan_destroy(pl);
        return;
    }
    case 24: want("scratch_size(bytes=NULL)", attn_plan_scratch_size(x->plan, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 25: want("regions(regions=NULL)", attn_plan_regions(x->plan, NULL, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 26: want("regions(count=NULL)", attn_plan_regions(x->plan, &regs, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 27: want("extents(layer=NULL)", attn_plan_layer_extents(x->plan, NULL, x->p.c.head_dim, &n, 1, &err), ATTN_E_NULL_ARG, &err); return;
    case 28: want("extents(extents=NULL)", attn_plan_layer_extents(x->plan, L, x->p.c.head_dim, NULL, 1, &err), ATTN_E_NULL_ARG, &err); return;
    case 29: want("plan_get_info(out=NULL)", attn_plan_get_info(x->plan, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 30: want("items(items=NULL)", attn_plan_items(x->plan, NULL, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 31: want("items(count=NULL)", attn_plan_items(x->plan, &items, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    case 32: want("reductions(reds=NULL)", attn_plan_reductions(x->plan, NULL, &n, &err), ATTN_E_NULL_ARG, &err); return;
    case 33: want("reductions(count=NULL)", attn_plan_reductions(x->plan, &reds, NULL, &err), ATTN_E_NULL_ARG, &err); return;
    default: break;
    }
    if (!fx_run_buffers(x)) return;
    attn_tensors t = afx_tensors(&x->e, &x->p, 0, x->out);
    void *s = x->scratch;
    size_t sb = x->scratch_bytes;
    switch (arg % 48) {
    case 34: want("run(layer=NULL)", attn_run(x->plan, NULL, &t, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    case 35: want("run(tensors=NULL)", attn_run(x->plan, L, NULL, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    case 36:
        if (sb) want("run(scratch=NULL)", attn_run(x->plan, L, &t, NULL, sb, &err), ATTN_E_NULL_ARG, &err);
        return;
    case 37: t.q = NULL; want("run(tensors.q=NULL)", attn_run(x->plan, L, &t, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    case 38: t.out = NULL; want("run(tensors.out=NULL)", attn_run(x->plan, L, &t, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    case 39: t.k_cache = NULL; want("run(tensors.k_cache=NULL)", attn_run(x->plan, L, &t, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    case 40: t.v_cache = NULL; want("run(tensors.v_cache=NULL)", attn_run(x->plan, L, &t, s, sb, &err), ATTN_E_NULL_ARG, &err); return;
    default: break;
    }
    /* reshape_and_cache: one token, written to slot 0 */
    attn_kv_desc kv = x->group.kv;
    size_t row = (size_t)kv.num_kv_heads * (size_t)kv.head_dim * attn_dtype_size(kv.dtype);
    void *key = calloc(1, row ? row : 1), *val = calloc(1, row ? row : 1);
    int64_t slot = 0;
    int32_t nb = x->p.num_blocks;
    void *kc = x->e.k_cache, *vc = x->e.v_cache;
    if (key && val) switch (arg % 48) {
    case 41: want("reshape(key=NULL)", attn_reshape_and_cache(&kv, nb, NULL, val, 1, &slot, kc, vc, &err), ATTN_E_NULL_ARG, &err); break;
    case 42: want("reshape(value=NULL)", attn_reshape_and_cache(&kv, nb, key, NULL, 1, &slot, kc, vc, &err), ATTN_E_NULL_ARG, &err); break;
    case 43: want("reshape(slot_mapping=NULL)", attn_reshape_and_cache(&kv, nb, key, val, 1, NULL, kc, vc, &err), ATTN_E_NULL_ARG, &err); break;
    case 44: want("reshape(k_cache=NULL)", attn_reshape_and_cache(&kv, nb, key, val, 1, &slot, NULL, vc, &err), ATTN_E_NULL_ARG, &err); break;
    case 45: want("reshape(v_cache=NULL)", attn_reshape_and_cache(&kv, nb, key, val, 1, &slot, kc, NULL, &err), ATTN_E_NULL_ARG, &err); break;
    default: chk("reshape(valid)", attn_reshape_and_cache(&kv, nb, key, val, 1, &slot, kc, vc, NULL), NULL); break;
    }
    free(key);
    free(val);
}

/* One garbage value in a description of a valid case. */
static void op_garbage(fixture *x, unsigned arg, unsigned n) {
    attn_error err;
    attn_builder *b = NULL;
    attn_group_desc g = x->group;
    attn_layer_desc layers[CASE_MAX_LAYERS];
    memcpy(layers, x->e.layers, sizeof layers);
    g.layers = g.num_layers > 0 ? layers : NULL;
    static const int32_t junk[8] = {0, -1, -7, INT32_MIN, INT32_MAX, 1 << 30, 65536, 4097};
    int32_t j = junk[n % 8];
    const char *what = NULL;
    int must_refuse = 1;
    switch (arg % 16) {
    case 0: g.num_layers = j < 0 ? j : ATTN_MAX_LAYERS + 1 + (j & 7); what = "num_layers"; break;
    case 1: g.num_threads = j <= 0 ? j : ATTN_MAX_THREADS + 1 + (j & 0xFFFF); what = "num_threads"; break;
    case 2: g.kv.num_kv_heads = j <= 0 ? j : ATTN_MAX_HEADS + 1 + (j & 0xFFFF); what = "kv.num_kv_heads"; break;
    case 3: g.kv.head_dim = j <= 0 ? j : ATTN_MAX_HEAD_DIM + 1 + (j & 0xFFFF); what = "kv.head_dim"; break;
    case 4: g.kv.block_size = j <= 0 ? j : ATTN_MAX_BLOCK_SIZE + 1 + (j & 0xFFFF); what = "kv.block_size"; break;
    case 5: g.q_dtype = (attn_dtype)(j < 0 ? j : ATTN_DTYPE_COUNT + (j & 0xFF)); what = "q_dtype"; break;
    case 6: g.kv.dtype = (attn_dtype)(j < 0 ? j : ATTN_DTYPE_COUNT + (j & 0xFF)); what = "kv.dtype"; break;
    case 7: g.out_dtype = (attn_dtype)(j < 0 ? j : ATTN_DTYPE_COUNT + (j & 0xFF)); what = "out_dtype"; break;
    case 8: g.num_layers = 0; g.layers = NULL; g.model_num_heads = j <= 0 ? j : ATTN_MAX_HEADS + 1 + (j & 0xFFFF); what = "model_num_heads"; break;
    case 9: if (g.num_layers < 1) return; layers[n % (unsigned)g.num_layers].window = j == -1 ? 0 : (j < -1 ? j : (1 << 28) + 1 + (j & 0xFFFF)); what = "layer.window"; break;
    case 10: if (g.num_layers < 1) return; layers[n % (unsigned)g.num_layers].softcap = (n & 8) ? NAN : -INFINITY; what = "layer.softcap"; break;
    case 11: if (g.num_layers < 1) return; layers[n % (unsigned)g.num_layers].scale = (n & 8) ? INFINITY : -1.0f; what = "layer.scale"; break;
    case 12: if (g.num_layers < 1) return; layers[n % (unsigned)g.num_layers].num_heads = j <= 0 ? j : ATTN_MAX_HEADS + 1 + (j & 0xFFFF); what = "layer.num_heads"; break;
    case 13:
        if (n & 2) {
            g.isa = (n & 1) ? "bogus" : "avx512-but-longer-than-any-name";
            what = "isa";
            break;
        }
        /* a non-finite slope or sink at any head of any layer */
        if (g.num_layers < 1) return;
        {
            attn_layer_desc *L = &layers[(n >> 2) % (unsigned)g.num_layers];
            const size_t H = L->num_heads > 0 ? (size_t)L->num_heads : 0;
            if (!H || H > 4096) return;
            float *arr = malloc(H * sizeof *arr);
            if (!arr) return;
            const int sinks = (n & 1) != 0;
            const float *src = sinks ? L->sinks : L->alibi_slopes;
            for (size_t h = 0; h < H; h++) arr[h] = src ? src[h] : 0.25f;
            arr[pick(n, H)] = (n & 4) ? NAN : INFINITY;
            if (sinks) L->sinks = arr;
            else L->alibi_slopes = arr;
            char call[64];
            snprintf(call, sizeof call, "create(layer.%s[%zu] = %s)", sinks ? "sinks" : "alibi_slopes",
                     pick(n, H), (n & 4) ? "nan" : "inf");
            attn_status st = attn_builder_create(&g, &b, &err);
            refused(call, st, &err);
            if (st == ATTN_OK) attn_builder_destroy(b);
            free(arr);
            return;
        }
    case 14: if (attn_strerror((attn_status)j) == NULL || attn_status_name((attn_status)j) == NULL)
                 violation("attn_strerror/attn_status_name(%d) returned NULL", (int)j);
             if ((j < 0 || j >= ATTN_DTYPE_COUNT) &&
                 (attn_dtype_name((attn_dtype)j) != NULL || attn_dtype_size((attn_dtype)j) != 0))
                 violation("attn_dtype_name/size(%d) accepted a garbage dtype", (int)j);
             return;
    default: must_refuse = 0; break;   /* batch and plan options below */
    }
    if (what) {
        char call[64];
        snprintf(call, sizeof call, "create(%s = garbage %d)", what, (int)j);
        attn_status st = attn_builder_create(&g, &b, &err);
        if (must_refuse) refused(call, st, &err);
        else chk(call, st, &err);
        if (st == ATTN_OK) attn_builder_destroy(b);
        return;
    }
    /* Batch arrays and plan options: a copy of the batch, one field bent. */
    if (!fx_build(x)) return;   /* the unbent batch must plan first */
    attn_plan_destroy(x->plan);
    x->plan = NULL;
    attn_status st;
    attn_batch bt = x->e.batch;
    int32_t R = bt.num_reqs;
    int32_t *qsl = malloc(((size_t)R + 1) * sizeof *qsl), *seq = malloc((size_t)R * sizeof *seq);
    size_t cells = (size_t)R * (size_t)bt.block_table_stride;
    int32_t *tab = malloc((cells ? cells : 1) * sizeof *tab);
    if (!qsl || !seq || !tab) goto done;
    memcpy(qsl, bt.query_start_loc, ((size_t)R + 1) * sizeof *qsl);
    memcpy(seq, bt.seq_lens, (size_t)R * sizeof *seq);
    if (cells) memcpy(tab, bt.block_table, cells * sizeof *tab);
    bt.query_start_loc = qsl;
    bt.seq_lens = seq;
    bt.block_table = tab;
    attn_plan_opts o = x->opts;
    const unsigned r = (unsigned)pick(n, (size_t)R);
    switch ((n >> 3) % 14) {
    case 0: bt.num_reqs = (j <= 0) ? j : ATTN_MAX_REQS + 1 + (j & 0xFFFF); what = "num_reqs"; break;
    case 1: qsl[r + 1] = qsl[r]; what = "query_start_loc (empty request)"; break;
    case 2:
        if (n & 4) {   /* a later entry below its predecessor */
            const size_t i = 1 + pick(n, (size_t)R);
            qsl[i] = qsl[i - 1] - 1 - (j & 7);
            what = "query_start_loc decreasing";
        } else {
            qsl[0] = j == 0 ? 1 : j;
            what = "query_start_loc[0]";
        }
        break;
    case 3: seq[r] = qsl[r + 1] - qsl[r] - 1; what = "seq_lens < q_len"; break;
    case 4: seq[r] = j >= 0 ? (1 << 28) + 1 + (j & 0xFF) : j; what = "seq_lens (huge/negative)"; break;
    case 5: bt.block_table_stride = j <= 0 ? j : 0; what = "block_table_stride"; break;
    case 6: { /* any entry a request uses (seq_len >= 1: at least its first) */
        if (!cells || x->p.c.block_size < 1) goto done;
        const size_t used = ((size_t)seq[r] + (size_t)x->p.c.block_size - 1) /
                            (size_t)x->p.c.block_size;
        const size_t at = (size_t)r * (size_t)bt.block_table_stride + pick(n * 31u, used);
        tab[at] = j < 0 ? j : bt.num_blocks + (j & 0xFFFF);
        what = "block id";
        break;
    }
    case 7: bt.num_blocks = j < 0 ? j : 0; what = "num_blocks"; break;
    case 8: o.split = (attn_split_mode)(j < 0 ? j : 4 + (j & 0xFF)); what = "opts.split"; break;
    case 9: o.split = ATTN_SPLIT_FIXED; o.split_count = j <= 0 ? j : ATTN_MAX_SPLITS + 1 + (j & 0xFF); what = "opts.split_count"; break;
    case 10: o.redzone = (n & 1) ? (size_t)-1 : (size_t)ATTN_ALIGN + 1; what = "opts.redzone"; break;
    case 11: o.redzone = (size_t)ATTN_MAX_REDZONE + ATTN_ALIGN; what = "opts.redzone (over limit)"; break;
    case 12: qsl[R] = INT32_MAX; what = "query_start_loc[num_reqs] = INT32_MAX"; break;
    default: bt.causal = j; what = "causal"; must_refuse = -1; break;
    }
    attn_plan *pl = SENTINEL;
    char call[96];
    snprintf(call, sizeof call, "build(%s, garbage %d)", what, (int)j);
    st = attn_builder_build(x->b, &bt, &o, &pl, &err);
    if (must_refuse == -1) chk(call, st, &err);
    else refused(call, st, &err);
    if (st == ATTN_OK) attn_plan_destroy(pl);
    else if (pl != SENTINEL) violation("%s returned %s but wrote *out", call, attn_status_name(st));
done:
    free(qsl);
    free(seq);
    free(tab);
}

static void op_scratch(fixture *x, unsigned arg) {
    if (!fx_build(x) || !fx_run_buffers(x)) return;
    attn_error err;
    attn_tensors t = afx_tensors(&x->e, &x->p, 0, x->out);
    const attn_layer_desc *L = &x->layer;
    if (x->group.num_layers < 1) return;
    if (arg & 1) {
        /* One byte short, at the end of an exactly sized buffer. */
        if (x->scratch_bytes == 0) return;
        size_t short_by = x->scratch_bytes - 1;
        unsigned char *s = aligned_alloc(64, (short_by / 64 + 1) * 64);
        if (!s) return;
        want("run(scratch one byte short)", attn_run(x->plan, L, &t, s, short_by, &err),
             ATTN_E_SCRATCH_TOO_SMALL, &err);
        free(s);
    } else {
        unsigned off = 1 + (arg >> 1) % 63;
        want("run(misaligned scratch)",
             attn_run(x->plan, L, &t, (unsigned char *)x->scratch + off, x->scratch_bytes, &err),
             ATTN_E_SCRATCH_ALIGN, &err);
    }
}

static void op_layer_mismatch(fixture *x, unsigned arg) {
    if (x->group.num_layers < 1 || !fx_build(x) || !fx_run_buffers(x)) return;
    attn_error err;
    attn_layer_desc L = x->layer;
    int32_t hkv = x->group.kv.num_kv_heads, h = L.num_heads;
    int32_t k = 1 + (int32_t)(arg % 4);
    L.num_heads = (arg & 4) && h > hkv * k ? h - hkv * k : h + hkv * k;   /* a valid other count */
    L.alibi_slopes = NULL;
    L.sinks = NULL;
    /* Buffers big enough for the claimed count: a refusal must come from
     * the plan check, not from luck. */
    size_t elems = (size_t)x->p.num_tokens * (size_t)L.num_heads * (size_t)x->group.kv.head_dim;
    size_t qs = attn_dtype_size(x->group.q_dtype), os = attn_dtype_size(x->group.out_dtype);
    if (elems > ((size_t)16 << 20)) return;
    void *q = calloc(elems ? elems : 1, qs), *out = calloc(elems ? elems : 1, os);
    if (q && out) {
        attn_tensors t = afx_tensors(&x->e, &x->p, 0, out);
        t.q = q;
        if (arg & 8) t.num_heads = L.num_heads;
        char call[96];
        snprintf(call, sizeof call, "run(layer with %d heads, plan built for %d)", (int)L.num_heads,
                 (int)h);
        refused(call, attn_run(x->plan, &L, &t, x->scratch, x->scratch_bytes, &err), &err);
    }
    free(q);
    free(out);
}

static void op_tensor_mismatch(fixture *x, unsigned arg) {
    if (x->group.num_layers < 1 || !fx_build(x) || !fx_run_buffers(x)) return;
    attn_error err;
    attn_tensors t = afx_tensors(&x->e, &x->p, 0, x->out);
    const char *what;
    switch (arg % 8) {
    case 0: t.num_tokens += 1; what = "num_tokens + 1"; break;
    case 1: t.num_tokens -= 1; what = "num_tokens - 1"; break;
    case 2: t.q_dtype = (attn_dtype)((t.q_dtype + 1) % ATTN_DTYPE_COUNT); what = "q_dtype"; break;
    case 3: t.kv_dtype = (attn_dtype)(t.kv_dtype + 3); what = "kv_dtype garbage"; break;
    case 4: t.num_blocks -= 1; what = "num_blocks - 1"; break;
    case 5: t.head_dim += 1; what = "head_dim + 1"; break;
    case 6: t.block_size = -t.block_size; what = "block_size negated"; break;
    default: t.out = (void *)(uintptr_t)t.q; what = "out aliases q"; break;
    }
    char call[64];
    snprintf(call, sizeof call, "run(tensors.%s)", what);
    refused(call, attn_run(x->plan, &x->layer, &t, x->scratch, x->scratch_bytes, &err), &err);
}

static void op_reshape(fixture *x, unsigned arg, unsigned n) {
    if (!x->p.materialized) return;
    attn_error err;
    attn_kv_desc kv = x->group.kv;
    int32_t nb = x->p.num_blocks, T = 1 + (int32_t)(n % 8);
    size_t row = (size_t)kv.num_kv_heads * (size_t)kv.head_dim * attn_dtype_size(kv.dtype);
    void *key = calloc((size_t)T, row ? row : 1), *val = calloc((size_t)T, row ? row : 1);
    int64_t slots[8];
    int64_t cap = (int64_t)nb * kv.block_size;   /* >= 1: the problem is materialized */
    if (cap < 1) cap = 1;
    for (int32_t i = 0; i < T; i++)
        slots[i] = (int64_t)(((uint64_t)n * 7u + (uint64_t)i * 13u) % (uint64_t)cap);
    const char *what = "valid";
    int expect_bad = 1;
    int32_t T_call = T;
    const size_t at = pick(n, (size_t)T);
    switch (arg % 6) {
    case 0: slots[at] = cap; what = "slot == capacity"; break;
    case 1: slots[at] = -2; what = "slot -2"; break;
    case 2: slots[T / 2] = INT64_MAX; what = "slot INT64_MAX"; break;
    case 3: T_call = -(int32_t)(1 + n % 5); what = "num_tokens negative"; break;
    case 4: slots[0] = -1; what = "slot -1 (skip)"; expect_bad = 0; break;
    default: expect_bad = 0; break;
    }
    if (key && val) {
        char call[64];
        snprintf(call, sizeof call, "reshape_and_cache(%s)", what);
        attn_status st = attn_reshape_and_cache(&kv, nb, key, val, T_call, slots, x->e.k_cache,
                                                x->e.v_cache, &err);
        if (expect_bad) refused(call, st, &err);
        else want(call, st, ATTN_OK, &err);
    }
    free(key);
    free(val);
}

/* ------------------------------------------------------- cache writers */

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void cache_violation(const char *fmt, ...) {
    finding f;
    f.oracle = ORACLE_CACHE_WRITE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.detail, sizeof f.detail, fmt, ap);
    va_end(ap);
    oracle_fire(&f);
}

#define CACHE_OP_MAX_BYTES ((size_t)256 << 10)   /* per cache: filled and scanned whole */
#define CACHE_OP_MAX_TOKENS 24

/* The element the cache should hold for element i of a source row, by
 * the harness's own code (values_store, ag_dtype_decode), into out (es bytes). */
static void expected_elem(attn_dtype dd, attn_dtype sd, const void *src, size_t i, float scale,
                          uint8_t *out) {
    const size_t es = attn_dtype_size(dd);
    if (sd == dd) {   /* a plain copy, whatever the bits */
        memcpy(out, (const uint8_t *)src + i * es, es);
        return;
    }
    float f = (float)ag_dtype_decode(src, i, ag_dtype_of(sd));   /* f32/bf16/f16: exact */
    if (ag_dtype_is_fp8(ag_dtype_of(dd)) && scale != 1.0f) f /= scale;   /* rounded to fp32 */
    values_store(out, 0, ag_dtype_of(dd), (double)f);
}

/* Compares one slot's row of one cache with the rows it came from.  No
 * coverage feedback in these loops: their branches say nothing new. */
FUZZ_NO_COVERAGE static void check_slot(const char *which, const attn_kv_desc *kv, const uint8_t *cache,
                       attn_dtype sd, const uint8_t *rows, int32_t token, int64_t slot,
                       float scale) {
    const size_t D = (size_t)kv->head_dim, H = (size_t)kv->num_kv_heads,
                 bs = (size_t)kv->block_size, es = attn_dtype_size(kv->dtype),
                 ses = attn_dtype_size(sd);
    const size_t blk = (size_t)slot / bs, off = (size_t)slot % bs;
    for (size_t h = 0; h < H; h++) {
        const uint8_t *got = cache + (((blk * H + h) * bs + off) * D) * es;
        const uint8_t *src = rows + ((size_t)token * H + h) * D * ses;
        for (size_t d = 0; d < D; d++) {
            uint8_t want_b[4];
            expected_elem(kv->dtype, sd, src, d, scale, want_b);
            if (!memcmp(got + d * es, want_b, es)) continue;
            const double g = ag_dtype_decode(got, d, ag_dtype_of(kv->dtype)),
                         w = ag_dtype_decode(want_b, 0, ag_dtype_of(kv->dtype));
            if (isnan(g) && isnan(w)) continue;   /* "NaN kept": any NaN code */
            cache_violation("%s cache, token %d -> slot %lld (block %zu, offset %zu), kv head %zu, "
                            "element %zu: stored %.9g, the row's %s %.9g converted to %s with "
                            "scale %g is %.9g",
                            which, (int)token, (long long)slot, blk, off, h, d, g,
                            attn_dtype_name(sd), ag_dtype_decode(src, d, ag_dtype_of(sd)),
                            attn_dtype_name(kv->dtype), (double)scale, w);
        }
    }
}

/* Every slot not written keeps the fill byte. */
FUZZ_NO_COVERAGE static void check_untouched(const char *which, const attn_kv_desc *kv, const uint8_t *cache,
                            size_t slots, const uint8_t *written, uint8_t fill) {
    const size_t D = (size_t)kv->head_dim, H = (size_t)kv->num_kv_heads,
                 bs = (size_t)kv->block_size, row = D * attn_dtype_size(kv->dtype);
    for (size_t s = 0; s < slots; s++) {
        if (written[s]) continue;
        for (size_t h = 0; h < H; h++) {
            const uint8_t *p = cache + ((s / bs * H + h) * bs + s % bs) * row;
            for (size_t b = 0; b < row; b++)
                if (p[b] != fill)
                    cache_violation("%s cache: slot %zu (kv head %zu, byte %zu) was written "
                                    "though no token maps to it", which, s, h, b);
        }
    }
}

static void op_cache(fixture *x, unsigned arg, unsigned n) {
    if (!x->p.materialized) return;
    const attn_kv_desc kv = x->group.kv;
    attn_error err;
    const int32_t nb = x->p.num_blocks;
    /* the case's KV spec must be one the writers accept: others are op 6's */
    const float k1 = 1.0f;
    if (attn_reshape_and_cache_from(&kv, nb, kv.dtype, &k1, &k1, 0, (const int64_t *)&k1, 0, 0,
                                    x->e.k_cache, x->e.v_cache, &err) != ATTN_OK)
        return;
    const attn_dtype dd = kv.dtype;
    static const attn_dtype srcs[4] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16,
                                       ATTN_DTYPE_COUNT /* = the cache's own */};
    attn_dtype sd = srcs[arg % 4];
    if (sd == ATTN_DTYPE_COUNT) sd = dd;
    static const float scales[8] = {0.0f, 1.0f, 0.5f, 2.5f, 1.0f / 448, 3e-39f, 7e37f, 0.3f};
    const float ks = scales[(arg >> 2) % 8], vs = scales[(arg >> 5) % 8];

    const size_t D = (size_t)kv.head_dim, H = (size_t)kv.num_kv_heads;
    const size_t slots = (size_t)nb * (size_t)kv.block_size, row = H * D;
    const size_t cache_bytes = slots * row * attn_dtype_size(dd);
    if (cache_bytes > CACHE_OP_MAX_BYTES) return;
    int32_t T = 1 + (int32_t)(n % CACHE_OP_MAX_TOKENS);
    if ((size_t)T > slots) T = (int32_t)slots;

    /* slots: a run of consecutive ones from a drawn start (so writes cross
     * block edges), wrapping around; some tokens skipped with -1 */
    int64_t map[CACHE_OP_MAX_TOKENS];
    uint64_t h = 0x9e3779b97f4a7c15ull * (1 + (uint64_t)n + ((uint64_t)arg << 16) +
                                            ((uint64_t)nb << 24));
    const size_t start = (size_t)(h % slots);
    for (int32_t i = 0; i < T; i++) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        map[i] = (h >> 60) == 0 ? -1 : (int64_t)((start + (size_t)i) % slots);
    }
    void *key = malloc((size_t)T * row * attn_dtype_size(sd));
    void *val = malloc((size_t)T * row * attn_dtype_size(sd));
    uint8_t *written = calloc(slots, 1);
    if (!key || !val || !written) {
        free(key), free(val), free(written);
        return;
    }
    values_fill(key, (size_t)T * row, D, ag_dtype_of(sd), &x->p.c.values[CASE_T_K], h ^ 0x6b);
    values_fill(val, (size_t)T * row, D, ag_dtype_of(sd), &x->p.c.values[CASE_T_V], h ^ 0x76);
    memset(x->e.k_cache, 0xa5, cache_bytes);
    memset(x->e.v_cache, 0x5a, cache_bytes);

    char call[96];
    attn_status st;
    if (sd == dd && (arg & 128)) {
        snprintf(call, sizeof call, "reshape_and_cache(%d tokens, %s)", (int)T,
                 attn_dtype_name(dd));
        st = attn_reshape_and_cache(&kv, nb, key, val, T, map, x->e.k_cache, x->e.v_cache, &err);
    } else {
        snprintf(call, sizeof call, "reshape_and_cache_from(%d tokens, %s -> %s, scales %g %g)",
                 (int)T, attn_dtype_name(sd), attn_dtype_name(dd), (double)ks, (double)vs);
        st = attn_reshape_and_cache_from(&kv, nb, sd, key, val, T, map, ks, vs, x->e.k_cache,
                                         x->e.v_cache, &err);
    }
    want(call, st, ATTN_OK, &err);
    /* the scale the writer divides by: 0 means 1, and only into fp8 */
    const float kdiv = ks > 0.0f ? ks : 1.0f, vdiv = vs > 0.0f ? vs : 1.0f;
    for (int32_t i = 0; i < T; i++) {
        if (map[i] < 0) continue;
        written[map[i]] = 1;
        check_slot("K", &kv, x->e.k_cache, sd, key, i, map[i], kdiv);
        check_slot("V", &kv, x->e.v_cache, sd, val, i, map[i], vdiv);
    }
    check_untouched("K", &kv, x->e.k_cache, slots, written, 0xa5);
    check_untouched("V", &kv, x->e.v_cache, slots, written, 0x5a);
    free(key);
    free(val);
    free(written);
}

/* The whole valid sequence with err == NULL: nothing may write through it. */
static void op_err_null(fixture *x) {
    attn_builder *b = NULL;
    attn_plan *pl = NULL;
    if (chk("create(err=NULL)", attn_builder_create(&x->group, &b, NULL), NULL) != ATTN_OK) return;
    attn_builder_info bi;
    chk("get_info(err=NULL)", attn_builder_get_info(b, &bi, NULL), NULL);
    if (chk("build(err=NULL)", attn_builder_build(b, &x->e.batch, &x->opts, &pl, NULL), NULL) ==
        ATTN_OK) {
        size_t n = 0;
        const attn_region *regs;
        attn_plan_info pi;
        chk("scratch_size(err=NULL)", attn_plan_scratch_size(pl, &n, NULL), NULL);
        chk("regions(err=NULL)", attn_plan_regions(pl, &regs, &n, NULL), NULL);
        chk("plan_get_info(err=NULL)", attn_plan_get_info(pl, &pi, NULL), NULL);
        chk("build(builder=NULL, err=NULL)", attn_builder_build(NULL, NULL, NULL, NULL, NULL), NULL);
        attn_plan_destroy(pl);
    }
    attn_builder_destroy(b);
    const char *names[8];
    int k = attn_isa_available(names, 8);
    if (k < 1 || attn_isa_available(names, -1) < 0) violation("attn_isa_available returned %d", k);
}

/* ----------------------------------------------------------------- entry */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_common_init("fuzz_api");
    return 0;
}

const char *__lsan_default_suppressions(void) { return FUZZ_LSAN_SUPPRESSIONS; }
const char *__asan_default_options(void) { return FUZZ_ASAN_OPTIONS; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned op = size > 0 ? data[0] : 0, arg = size > 1 ? data[1] : 0;
    unsigned n = (size > 2 ? data[2] : 0) | (size > 3 ? (unsigned)data[3] << 8 : 0u);
    case_spec c;
    case_decode(size > 4 ? data + 4 : NULL, size > 4 ? size - 4 : 0, &c);
    /* Keep runs cheap: this target is about statuses, not numbers. */
    int64_t tokens = 0, keys = 0;
    for (int32_t r = 0; r < c.num_reqs; r++) {
        tokens += c.q_len[r] > 0 ? c.q_len[r] : 0;
        keys += c.kv_len[r] > 0 ? c.kv_len[r] : 0;
    }
    if (tokens > 4096 || keys > (1 << 16) || c.threads > 8) return 0;

    fixture x;
    memset(&x, 0, sizeof x);
    char msg[256];
    if (problem_init_zeros(&x.p, &c, API_MAX_BYTES, msg, sizeof msg) != 0) return 0;
    if (afx_init_zeroed(&x.e, &x.p) != 0) {
        problem_free(&x.p);
        return 0;
    }
    x.alloc.alloc = c_alloc;
    x.alloc.free = c_free;
    x.alloc.ctx = &x.count;
    x.group = x.e.group;
    x.group.allocator = &x.alloc;
    x.opts.split = c.split;
    x.opts.split_count = c.split_count;
    x.opts.redzone = 0;
    if (c.num_layers > 0) {
        x.layer = x.e.layers[0];
    } else {
        /* A group with no layers plans with model_num_heads; a run still
         * needs a valid layer, else every run call is refused for the layer
         * (ATTN_E_BAD_HEADS) before the defect under test is looked at. */
        x.layer.name = "model";
        x.layer.num_heads = c.model_num_heads;
        x.layer.window = -1;
    }

    switch (op % 9) {
    case 0: op_alloc_failure(&x, 1 + n % 48); break;
    case 1: op_null(&x, arg); break;
    case 2: op_garbage(&x, arg, n); break;
    case 3: op_scratch(&x, arg); break;
    case 4: op_layer_mismatch(&x, arg); break;
    case 5: op_tensor_mismatch(&x, arg); break;
    case 6: op_reshape(&x, arg, n); break;
    case 7: op_err_null(&x); break;
    default: op_cache(&x, arg, n); break;
    }
    fx_free(&x);
    balanced(&x.count, "after destroy");
    return 0;
}
