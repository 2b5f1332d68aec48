/*
 * test_engines.c — the adapter ABI's contract, held against every built-in
 * engine that opens here (attnguard always; ggml and ort once `make
 * engines` fetched them): each variant's words make a group; a mixed group
 * (unless the engine declares AG_CAP_MIXED_HEADS), a block
 * id outside the cache, a slot outside the cache, an option value no
 * variant offers, a thread count past the declared limit and a scratch
 * smaller than planned are refused (as their kind, when the engine names
 * kinds) and no handle is handed back; the entry points the ABI calls
 * optional are either there or NULL, never half.  Then the gaps one
 * engine declares (ggml's: slopes off its set, a block twice in a table,
 * ALiBi distances past f16's integers) come back AG_UNSUPPORTED.
 *
 * Everything through include/attnguard/engine.h: no engine's header.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "../../include/attnguard/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENGINES 8

typedef struct open_engine {
    const ag_engine *e;
    void *ctx;
    ag_caps caps;
} open_engine;

/* Opens engine `name` or skips the test saying why (not fetched here). */
static open_engine open_or_skip(const char *name) {
    open_engine o;
    memset(&o, 0, sizeof o);
    ag_msg msg;
    o.e = ag_engine_find(name, &msg);
    if (!o.e)   /* an external engine is built in only once make engines fetched it */
        cr_skip_test("engine %s is not built in here (make engines fetches it): %s", name,
                     msg.text);
    if (o.e->open(NULL, &o.ctx, &msg) != AG_OK)
        cr_skip_test("engine %s does not open here: %s", name, msg.text);
    o.e->caps(o.ctx, &o.caps);
    return o;
}

/* A refusal whose kind, when the engine names one, is `kind`. */
static void refused_as(ag_status st, const ag_msg *m, ag_refusal kind, const char *what) {
    cr_assert(st == AG_REFUSED, "%s: status %s (%s: %s), want AG_REFUSED", what,
              ag_status_name(st), m->code, m->text);
    cr_assert(m->refusal == AG_R_NONE || m->refusal == (int32_t)kind,
              "%s: refused as %s (%s: %s), want %s", what,
              ag_refusal_name((ag_refusal)m->refusal), m->code, m->text, ag_refusal_name(kind));
}

/* A small valid group: 8 query heads over 2 KV heads, f32 q/out, a cache
 * type the engine takes. */
static ag_group group_of(const open_engine *o, ag_layer *layers, int32_t n, const char *opt) {
    ag_group g;
    memset(&g, 0, sizeof g);
    g.layers = layers;
    g.num_layers = n;
    g.num_kv_heads = 2;
    g.head_dim = 32;
    g.block_size = 16;
    g.q_dtype = g.out_dtype = AG_F32;
    /* q's type where the engine's cache takes it (vLLM's holds q's type
     * or fp8 only), else f16 */
    g.kv_dtype = (o->caps.kv_dtypes & AG_DTYPE_BIT(AG_F32)) ? AG_F32 : AG_F16;
    g.model_num_heads = 8;
    g.num_threads = 1;
    g.options = opt;
    return g;
}

static ag_layer plain_layer(const char *name, int32_t heads) {
    ag_layer l;
    memset(&l, 0, sizeof l);
    l.name = name;
    l.num_heads = heads;
    l.window_left = l.window_right = -1;
    l.k_scale = l.v_scale = 1.0f;
    return l;
}

/* One parameter per built-in engine: its index (each test runs in a
 * process of its own, where a pointer from the parent would not hold). */
static int g_index[MAX_ENGINES];

ParameterizedTestParameters(engines, abi_contract) {
    const int n = ag_engine_list(NULL, 0);
    for (int i = 0; i < MAX_ENGINES; i++) g_index[i] = i;
    return cr_make_param_array(int, g_index, (size_t)(n < MAX_ENGINES ? n : MAX_ENGINES));
}

ParameterizedTest(int *index, engines, abi_contract) {
    const char *names[MAX_ENGINES];
    cr_assert_lt(*index, ag_engine_list(names, MAX_ENGINES));
    const char *const *name = &names[*index];
    open_engine o = open_or_skip(*name);
    const ag_engine *e = o.e;
    ag_msg m;
    cr_assert_eq(o.caps.abi_version, AG_ENGINE_ABI_VERSION);
    cr_assert(e->create && e->destroy && e->kv_cache_bytes && e->write_kv && e->plan &&
                  e->plan_destroy && e->run,
              "%s: a required entry point is NULL", *name);

    /* every variant's words make a group; the default's name it */
    ag_variant v[32];
    const int nv = e->variants ? e->variants(o.ctx, v, 32) : 0;
    ag_layer L[2] = {plain_layer("layers.0", 8), plain_layer("layers.1", 8)};
    for (int i = 0; i < nv && i < 32; i++) {
        cr_assert(v[i].options && (i == 0) == (v[i].kind == AG_VARIANT_DEFAULT),
                  "%s: variant %d", *name, i);
        /* a twin is another entry of the list, by its exact words */
        int twin_at = -1;
        for (int j = 0; v[i].twin && j < nv && j < 32; j++)
            if (j != i && !strcmp(v[j].options, v[i].twin)) twin_at = j;
        cr_assert(!v[i].twin || twin_at >= 0, "%s: variant '%s' names twin '%s', not in the list",
                  *name, v[i].options, v[i].twin);
        ag_group g = group_of(&o, L, 2, v[i].options);
        void *grp = NULL;
        const ag_status st = e->create(o.ctx, &g, &grp, &m);
        /* a variant that lacks this plain group (vLLM's vec kernels take
         * blocks of 32 only) says so as unsupported, never as a refusal of
         * its own words; the default variant must take it */
        if (i > 0 && st == AG_UNSUPPORTED) continue;
        cr_assert_eq(st, AG_OK, "%s: variant '%s': %s", *name, v[i].options, m.text);
        e->destroy(grp);
    }
    /* each key the default names, with a value no variant offers */
    for (const char *w = nv > 0 ? v[0].options : ""; *w;) {
        w += strspn(w, " ");
        const size_t n = strcspn(w, " "), kl = strcspn(w, "= ");
        if (n > 0 && kl < n) {
            char bad[64];
            snprintf(bad, sizeof bad, "%.*s=no-such-path", (int)kl, w);
            ag_group g = group_of(&o, L, 2, bad);
            void *grp = NULL;
            refused_as(e->create(o.ctx, &g, &grp, &m), &m, AG_R_OPTIONS, bad);
            cr_assert_null(grp);
            /* the default's own word twice: a key given twice is refused
             * (docs/engines.md, create), though each word alone is valid */
            char twice[160];
            snprintf(twice, sizeof twice, "%.*s %.*s", (int)n, w, (int)n, w);
            g = group_of(&o, L, 2, twice);
            refused_as(e->create(o.ctx, &g, &grp, &m), &m, AG_R_OPTIONS, twice);
            cr_assert_null(grp);
            /* the key alone, without "=value": refused, not read as the
             * default (ggml took a bare "cpu" for its best variant) */
            char bare[64];
            snprintf(bare, sizeof bare, "%.*s", (int)kl, w);
            g = group_of(&o, L, 2, bare);
            refused_as(e->create(o.ctx, &g, &grp, &m), &m, AG_R_OPTIONS, bare);
            cr_assert_null(grp);
        }
        w += n;
    }
    /* a mixed group (Laguna's 48 and 64 heads): refused, unless the engine
     * declares it plans each layer with its own count */
    ag_layer mixed[2] = {plain_layer("full", 48), plain_layer("swa", 64)};
    ag_group gm = group_of(&o, mixed, 2, NULL);
    gm.num_kv_heads = 8;
    void *grp = NULL;
    if (o.caps.flags & AG_CAP_MIXED_HEADS) {
        cr_assert_eq(e->create(o.ctx, &gm, &grp, &m), AG_OK, "%s declares mixed heads: %s",
                     *name, m.text);
        e->destroy(grp);
        grp = NULL;
    } else {
        refused_as(e->create(o.ctx, &gm, &grp, &m), &m, AG_R_MIXED_HEADS, "mixed group");
        cr_assert_null(grp, "a refused create handed a group back");
    }
    /* threads past the declared limit */
    if (o.caps.max_threads > 0) {
        ag_group gt = group_of(&o, L, 2, NULL);
        gt.num_threads = o.caps.max_threads + 1;
        const ag_status st = e->create(o.ctx, &gt, &grp, &m);
        cr_assert(st == AG_REFUSED && (m.refusal == AG_R_NONE || m.refusal == AG_R_THREADS ||
                                       m.refusal == AG_R_LIMIT),
                  "%s: %d threads: %s %s", *name, (int)gt.num_threads, ag_status_name(st), m.text);
    }

    /* one group for the batch-level refusals */
    ag_group g = group_of(&o, L, 2, NULL);
    cr_assert_eq(e->create(o.ctx, &g, &grp, &m), AG_OK, "%s: %s", *name, m.text);
    size_t bytes = 0;
    cr_assert_eq(e->kv_cache_bytes(grp, 4, &bytes, &m), AG_OK, "%s", m.text);
    void *kc = calloc(1, bytes), *vc = calloc(1, bytes);
    float rows[2][2][32];
    memset(rows, 0, sizeof rows);
    const int64_t slot_out[2] = {0, 4 * 16};   /* the second past 4 blocks of 16 */
    refused_as(e->write_kv(grp, kc, vc, 4, rows, rows, 2, slot_out, &m), &m, AG_R_SLOT,
               "a slot outside the cache");
    int32_t qsl[2] = {0, 1}, seq[1] = {20}, bt_out[2] = {0, 9};
    ag_batch b = {1, qsl, seq, NULL, bt_out, 2, 4};
    ag_plan_opts po = {AG_SPLIT_AUTO, 0, 0};
    ag_plan_info info;
    void *plan = NULL;
    refused_as(e->plan(grp, &b, &po, &plan, &info, &m), &m, AG_R_BLOCK_ID,
               "block id 9 of a 4-block cache");
    cr_assert_null(plan);
    /* a scratch smaller than planned */
    int32_t bt_ok[2] = {0, 1};
    b.block_table = bt_ok;
    cr_assert_eq(e->plan(grp, &b, &po, &plan, &info, &m), AG_OK, "%s", m.text);
    /* the paths a plan names are among those the engine lists for this
     * machine (the reach table's rows) */
    if (e->paths) {
        const char *all[128], *mine[32];
        const int na = e->paths(NULL, all, 128), nm = e->paths(plan, mine, 32);
        cr_assert(na > 0 && na <= 128 && nm > 0 && nm <= 32, "%s: paths %d / %d", *name, na, nm);
        for (int i = 0; i < nm; i++) {
            int found = 0;
            for (int j = 0; j < na; j++) found |= strcmp(mine[i], all[j]) == 0;
            cr_assert(found, "%s: the plan's path '%s' is not in paths(NULL)", *name, mine[i]);
        }
    }
    if (info.scratch_bytes > 0) {
        float q[8 * 32], out[8 * 32];
        memset(q, 0, sizeof q);
        void *scratch = aligned_alloc(4096, (info.scratch_bytes + 4095) / 4096 * 4096);
        ag_run_args a = {q, kc, vc, &b, 1, scratch, info.scratch_bytes - 1, out};
        refused_as(e->run(plan, 0, &a, &m), &m, AG_R_SCRATCH, "scratch one byte short");
        free(scratch);
    }
    e->plan_destroy(plan);
    free(kc), free(vc);
    e->destroy(grp);
    e->close(o.ctx);
}

/* ggml's declared gaps (docs/engines.md): AG_UNSUPPORTED, not a refusal
 * and not a wrong answer. */
Test(engines, ggml_declared_gaps) {
    open_engine o = open_or_skip("ggml");
    const ag_engine *e = o.e;
    ag_msg m;
    float off[8];
    for (int h = 0; h < 8; h++) off[h] = (float)exp2(-(double)(h + 1)) * 1.001f;
    ag_layer L = plain_layer("layers.0", 8);
    L.alibi_slopes = off;
    ag_group g = group_of(&o, &L, 1, NULL);
    void *grp = NULL;
    cr_assert_eq(e->create(o.ctx, &g, &grp, &m), AG_UNSUPPORTED, "slopes off ggml's set: %s",
                 m.text);
    cr_assert_null(grp);
    for (int h = 0; h < 8; h++) off[h] = (float)exp2(-(double)(h + 1));   /* max_bias 8 */
    cr_assert_eq(e->create(o.ctx, &g, &grp, &m), AG_OK, "standard slopes: %s", m.text);
    int32_t qsl[2] = {0, 1}, seq1[1] = {20}, twice[2] = {1, 1}, seq2[1] = {3000}, longt[188];
    for (int i = 0; i < 188; i++) longt[i] = i;
    ag_plan_opts po = {AG_SPLIT_AUTO, 0, 0};
    ag_plan_info info;
    void *plan = NULL;
    ag_batch b = {1, qsl, seq1, NULL, twice, 2, 4};
    cr_assert_eq(e->plan(grp, &b, &po, &plan, &info, &m), AG_UNSUPPORTED, "block twice: %s",
                 m.text);
    ag_batch far = {1, qsl, seq2, NULL, longt, 188, 188};
    cr_assert_eq(e->plan(grp, &far, &po, &plan, &info, &m), AG_UNSUPPORTED,
                 "ALiBi distance 2999: %s", m.text);
    e->destroy(grp);
    e->close(o.ctx);
}

/* attnguard's emulated tables ("isa=avx512@emu"): each is a kernels
 * variant, and the twin of the native table it emulates whenever that
 * table is a variant here too (so the harness holds them to the same
 * bytes); with no native table on this CPU, of nothing.  A simulated one
 * ("isa=amx@sim", not bit for bit) is the twin of nothing. */
static const char *isa_word(const char *options, size_t *len) {
    const char *w = strstr(options, "isa=");
    if (!w) return NULL;
    *len = strcspn(w + 4, " ");
    return w + 4;
}
Test(engines, attnguard_emulated_twins) {
    open_engine o = open_or_skip("attnguard");
    ag_variant v[32];
    const int nv = o.e->variants(o.ctx, v, 32);
    int emulated = 0;
    for (int i = 0; i < nv && i < 32; i++) {
        size_t n;
        const char *isa = isa_word(v[i].options, &n);
        const char *at = isa ? memchr(isa, '@', n) : NULL;
        if (!at) {
            cr_assert_null(v[i].twin, "native variant '%s' names a twin", v[i].options);
            continue;
        }
        emulated++;
        cr_assert_eq(v[i].kind, AG_VARIANT_KERNELS, "%s", v[i].options);
        const size_t base = (size_t)(at - isa);
        int native = -1;
        for (int j = 0; j < nv && j < 32; j++) {
            size_t m;
            const char *o2 = isa_word(v[j].options, &m);
            if (o2 && m == base && !strncmp(o2, isa, base)) native = j;
        }
        if (native < 0 || !strncmp(at, "@sim", 4))
            cr_assert_null(v[i].twin, "%s: twin '%s' without its native table", v[i].options,
                           v[i].twin);
        else
            cr_assert(v[i].twin && !strcmp(v[i].twin, v[native].options), "%s: twin '%s', want '%s'",
                      v[i].options, v[i].twin ? v[i].twin : "(none)", v[native].options);
    }
    o.e->close(o.ctx);
    if (!emulated) cr_skip_test("this build has no emulated tables (mk/isa.mk, EMU_TABLES)");
}

/* ORT's option words combine only as its variants do (engines/ort/
 * MAPPING.md, "Variants"): packed QKV is GQA's, with past and present in
 * one buffer; the rotary step is GQA's; every other combination is
 * refused as options, the word named. */
Test(engines, ort_option_combinations) {
    open_engine o = open_or_skip("ort");
    const ag_engine *e = o.e;
    static const char *const refused[] = {"op=attention qkv=packed", "op=gqa kv=separate qkv=packed",
                                          "op=gqa qkv=fused", "op=attention kv=shared",
                                          "op=attention rotary=half", "op=gqa rotary=quarter"};
    static const char *const made[] = {"op=gqa kv=shared qkv=packed", "op=gqa qkv=packed",
                                       "op=gqa kv=separate qkv=separate",
                                       "op=gqa kv=separate rotary=interleaved",
                                       "op=gqa qkv=packed rotary=half"};
    ag_layer L = plain_layer("layers.0", 8);
    ag_msg m;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ag_group g = group_of(&o, &L, 1, refused[i]);
        void *grp = NULL;
        refused_as(e->create(o.ctx, &g, &grp, &m), &m, AG_R_OPTIONS, refused[i]);
        cr_assert_null(grp, "%s: a handle came back with the refusal", refused[i]);
        cr_assert(strstr(m.text, "qkv") || strstr(m.text, "kv=") || strstr(m.text, "rotary"),
                  "%s: the message names no option word: %s", refused[i], m.text);
    }
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        ag_group g = group_of(&o, &L, 1, made[i]);
        void *grp = NULL;
        cr_assert_eq(e->create(o.ctx, &g, &grp, &m), AG_OK, "%s: %s", made[i], m.text);
        e->destroy(grp);
    }
    /* the rotary step wants head_dim a multiple of 16: a gap, not a refusal */
    ag_group g = group_of(&o, &L, 1, "op=gqa rotary=half");
    g.head_dim = 24;
    void *grp = NULL;
    cr_assert_eq(e->create(o.ctx, &g, &grp, &m), AG_UNSUPPORTED, "rotary at head_dim 24: %s",
                 m.text);
    cr_assert_null(grp);
    e->close(o.ctx);
}
