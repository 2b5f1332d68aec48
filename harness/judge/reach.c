/*
 * reach.c — see reach.h.  Rows are "group/name" strings in one small
 * table; the expected ones (k_expected, plus the engine's variants and the
 * refusal kinds the defect model can ask for) are entered first.
 */
#include "reach.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REACH_ROWS 384
#define REACH_NAME 64

static struct {
    char name[REACH_NAME];
    unsigned long n;
} g_rows[REACH_ROWS];
static int g_nrows, g_seeded;
static unsigned long g_execs;

/* The features every campaign must reach (the list, and the
 * design's section 2), after the element types (seed_rows: from the ABI's
 * traits).  Refusal kinds and variants are added per engine. */
static const char *const k_expected[] = {
    "heads/gqa", "heads/mqa", "heads/mixed-group", "heads/model-wide-differs",
    "heads/no-layers", "layers/many", "window/W", "window/left-right", "window/global-among-windowed",
    "logits/softcap", "logits/scale", "logits/huge-scale", "logits/alibi-standard",
    "logits/alibi-list", "logits/sinks-seeded", "logits/sinks-list", "logits/fp8-scales",
    "batch/decode", "batch/prefill", "batch/chunk", "batch/non-causal", "batch/mixed-causal",
    "batch/many-requests", "blocks/shuffled", "blocks/shared", "blocks/last-full",
    "blocks/outside", "blocks/place-head", "values/uniform", "values/normal", "values/heavy",
    "values/const_row", "values/one_hot", "values/denormal", "values/extreme",
    "threads/1", "threads/2-8", "threads/9-64", "split/auto", "split/off", "split/on",
    "split/fixed", "case/invalid", "tier/ran", "tier/deep", "tier/perturbed",
};

/* Open addressing over the row names: a count is a hash and a compare,
 * for every feature of every input. */
#define REACH_SLOTS 1024
static int16_t g_slot[REACH_SLOTS];   /* row index + 1, 0: empty */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Row `key` ("group/name"), counted up by `by`. */
static void hit_by(const char *key, unsigned long by) {
    uint32_t i = name_hash(key) % REACH_SLOTS;
    for (int probe = 0; probe < REACH_SLOTS; probe++, i = (i + 1) % REACH_SLOTS) {
        const int r = g_slot[i] - 1;
        if (r < 0) break;
        if (!strcmp(g_rows[r].name, key)) {
            g_rows[r].n += by;
            return;
        }
    }
    if (g_nrows == REACH_ROWS || g_slot[i]) return;
    snprintf(g_rows[g_nrows].name, sizeof g_rows[0].name, "%s", key);
    for (char *k = g_rows[g_nrows].name; *k; k++)   /* the JSON keys stay plain */
        if (*k == '"' || *k == '\\' || (unsigned char)*k < 0x20) *k = '_';
    g_rows[g_nrows].n = by;
    g_slot[i] = (int16_t)(++g_nrows);
}

static void add(const char *group, const char *name, unsigned long by) {
    char key[REACH_NAME];
    snprintf(key, sizeof key, "%s/%s", group, name);
    hit_by(key, by);
}

static void hit(const char *row) { hit_by(row, 1); }

static void seed_rows(const engine_host *E) {
    /* q and out: the binary floats; kv: those and fp8 (block caches: per
     * engine, below) */
    static const char *const tensors[] = {"q", "kv", "out"};
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < AG_DTYPE_COUNT; t++) {
            const ag_dtype_traits *tr = ag_dtype_traits_of((ag_dtype)t);
            if (tr->kind == AG_KIND_FLOAT || (k == 1 && tr->kind == AG_KIND_FP8)) {
                char v[32];
                snprintf(v, sizeof v, "%s=%s", tensors[k], tr->name);
                add("dtype", v, 0);
            }
        }
    for (size_t i = 0; i < sizeof k_expected / sizeof k_expected[0]; i++)
        hit_by(k_expected[i], 0);
    /* the refusal kinds a case can deserve (validity.c) */
    static const ag_refusal kinds[] = {AG_R_MIXED_HEADS, AG_R_HEADS, AG_R_HEAD_DIM,
                                       AG_R_BLOCK_SIZE, AG_R_WINDOW, AG_R_LAYER, AG_R_DTYPE,
                                       AG_R_THREADS, AG_R_OPTIONS, AG_R_PLAN_OPTION, AG_R_BATCH,
                                       AG_R_LENGTH, AG_R_BLOCK_ID};
    for (size_t i = 0; E && i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i] == AG_R_MIXED_HEADS && (E->caps.flags & AG_CAP_MIXED_HEADS)) continue;
        if (kinds[i] == AG_R_OPTIONS && E->n_variants < 2) continue;
        if (kinds[i] == AG_R_PLAN_OPTION && !(E->caps.flags & AG_CAP_SPLIT_KV)) continue;
        add("refusal", ag_refusal_name(kinds[i]), 0);
    }
    for (int i = 0; E && i < E->n_variants; i++)
        add("variant", E->variants[i].options[0] ? E->variants[i].options : "default", 0);
    /* the block (quantized) caches the engine declares: rows it must reach */
    for (int t = 0; E && t < AG_DTYPE_COUNT; t++)
        if (ag_dtype_is_block((ag_dtype)t) && (E->caps.kv_dtypes & AG_DTYPE_BIT(t))) {
            char v[32];
            snprintf(v, sizeof v, "kv=%s", ag_dtype_name((ag_dtype)t));
            add("dtype", v, 0);
        }
    /* the code paths the engine can take here, by its own names */
    const char *names[128];
    const int n = E && E->e->paths ? E->e->paths(NULL, names, 128) : 0;
    for (int i = 0; i < n && i < 128; i++) add("path", names[i], 0);
}

/* The case's own features. */
static void count_case(const case_spec *c) {
    char v[32];
    snprintf(v, sizeof v, "q=%s", ag_dtype_name(c->q_dtype) ? ag_dtype_name(c->q_dtype) : "?");
    add("dtype", v, 1);
    snprintf(v, sizeof v, "kv=%s", ag_dtype_name(c->kv_dtype) ? ag_dtype_name(c->kv_dtype) : "?");
    add("dtype", v, 1);
    snprintf(v, sizeof v, "out=%s", ag_dtype_name(c->out_dtype) ? ag_dtype_name(c->out_dtype) : "?");
    add("dtype", v, 1);
    const int32_t hkv = c->num_kv_heads, nl = c->num_layers;
    int gqa = 0, mixed = 0, windowed = 0, global = 0, w = 0, lr = 0, cap = 0, scale = 0,
        huge = 0, alibi_std = 0, alibi_list = 0, sinks_std = 0, sinks_list = 0, kvs = 0;
    for (int32_t l = 0; l < nl && l < CASE_MAX_LAYERS; l++) {
        const case_layer *L = &c->layers[l];
        gqa |= hkv > 0 && L->num_heads > hkv;
        mixed |= L->num_heads != c->layers[0].num_heads;
        int32_t left, right;
        case_layer_window(L, &left, &right);
        const int win = left != -1 || right != -1;
        windowed |= win, global |= !win;
        w |= win && L->window_left == CASE_WINDOW_UNSET;
        lr |= win && L->window_left != CASE_WINDOW_UNSET;
        cap |= L->softcap != 0;
        scale |= L->scale != 0;
        huge |= fabsf(L->scale) > 1e3f;
        alibi_std |= L->alibi == CASE_SRC_STANDARD, alibi_list |= L->alibi == CASE_SRC_LIST;
        sinks_std |= L->sinks == CASE_SRC_STANDARD, sinks_list |= L->sinks == CASE_SRC_LIST;
        kvs |= ag_dtype_is_fp8(c->kv_dtype) && (L->k_scale != 1.0f || L->v_scale != 1.0f);
    }
    if (gqa) hit("heads/gqa");
    if (hkv == 1) hit("heads/mqa");
    if (mixed) hit("heads/mixed-group");
    if (nl > 0 && c->model_num_heads != c->layers[0].num_heads) hit("heads/model-wide-differs");
    if (nl == 0) hit("heads/no-layers");
    if (nl > 8) hit("layers/many");
    if (w) hit("window/W");
    if (lr) hit("window/left-right");
    if (windowed && global) hit("window/global-among-windowed");
    if (cap) hit("logits/softcap");
    if (scale) hit("logits/scale");
    if (huge) hit("logits/huge-scale");
    if (alibi_std) hit("logits/alibi-standard");
    if (alibi_list) hit("logits/alibi-list");
    if (sinks_std) hit("logits/sinks-seeded");
    if (sinks_list) hit("logits/sinks-list");
    if (kvs) hit("logits/fp8-scales");
    int decode = 0, prefill = 0, chunk = 0, nc = 0, mc = 0;
    for (int32_t r = 0; r < c->num_reqs && r < CASE_MAX_REQS; r++) {
        decode |= c->q_len[r] == 1;
        prefill |= c->q_len[r] > 1 && c->q_len[r] == c->kv_len[r];
        chunk |= c->q_len[r] > 1 && c->q_len[r] < c->kv_len[r];
        nc |= c->causal[r] == 0;
        mc |= c->causal[r] != c->causal[0];
    }
    if (decode) hit("batch/decode");
    if (prefill) hit("batch/prefill");
    if (chunk) hit("batch/chunk");
    if (nc) hit("batch/non-causal");
    if (mc) hit("batch/mixed-causal");
    if (c->num_reqs > 16) hit("batch/many-requests");
    if (c->blocks == CASE_BLOCKS_SHUFFLED) hit("blocks/shuffled");
    if (c->blocks == CASE_BLOCKS_REPEATED) hit("blocks/shared");
    if (c->blocks == CASE_BLOCKS_OUTSIDE) hit("blocks/outside");
    if (c->last_block_full) hit("blocks/last-full");
    if (c->place == CASE_PLACE_HEAD) hit("blocks/place-head");
    unsigned dists = 0;
    for (int t = 0; t < CASE_T_COUNT; t++) dists |= 1u << (c->values[t].dist % CASE_DIST_COUNT);
    for (int d = 0; d < CASE_DIST_COUNT; d++)
        if (dists & (1u << d)) add("values", case_dist_name(d), 1);
    hit(c->threads <= 1 ? "threads/1" : c->threads <= 8 ? "threads/2-8" : "threads/9-64");
    static const char *const split[] = {"split/auto", "split/off", "split/on", "split/fixed"};
    if ((unsigned)c->split <= AG_SPLIT_FIXED) hit(split[c->split]);
}

void reach_count(const case_spec *c, const check_report *rep, const engine_host *E,
                 unsigned flags) {
    if (!g_seeded) {
        seed_rows(E);
        g_seeded = 1;
    }
    g_execs++;
    count_case(c);
    if (flags & REACH_RAN) hit("tier/ran");
    if (flags & REACH_DEEP) hit("tier/deep");
    if (flags & REACH_PERTURBED) hit("tier/perturbed");
    if (flags & REACH_PLAN_ONLY) hit("tier/plan-only");
    if (!rep) return;
    if (rep->refused_create >= 0 || rep->refused_plan >= 0) {
        hit("case/invalid");
        const int32_t k = rep->refused_create >= 0 ? rep->refused_create : rep->refused_plan;
        add("refusal", ag_refusal_name((ag_refusal)k), 1);
    }
    /* a row for split-merge regions only where plans describe regions at
     * all (vLLM's do not: its splits are its own path rows) */
    if (rep->regions_described && E && (E->caps.flags & AG_CAP_SPLIT_KV))
        hit_by("split/planned", 0);
    if (rep->split_planned) hit("split/planned");
    for (int i = 0; E && i < E->n_variants && i < 32; i++)
        if (rep->variants_run & (1u << i))
            add("variant", E->variants[i].options[0] ? E->variants[i].options : "default", 1);
    for (int i = 0; i < rep->n_paths; i++) add("path", rep->paths[i], 1);
    for (int32_t l = 0; l < rep->num_layers && l < CASE_MAX_LAYERS; l++)
        if (rep->layers[l].judged) reach_judged(rep->layers[l].cmp.n, &rep->layers[l].why);
}

/* The judged figures: elements and rows compared, and open by reason. */
static uint64_t g_elems, g_rows_all, g_rows_open, g_open[REF_WHY_COUNT], g_open_rows[REF_WHY_COUNT];

void reach_judged(size_t elems, const ref_unjudged *why) {
    g_elems += elems;
    if (!why) return;
    g_rows_all += why->rows_all;
    g_rows_open += why->rows;
    for (int w = 0; w < REF_WHY_COUNT; w++) {
        g_open[w] += why->elems[w];
        g_open_rows[w] += why->rows_why[w];
    }
}

void reach_enter(const char *group, const char *const *names, int n) {
    for (int i = 0; i < n; i++) add(group, names[i], 0);
}

void reach_exec(void) { g_execs++; }

void reach_hit(const char *group, const char *name) { add(group, name, 1); }

/* A reason as a JSON string: the harness's own words, but an option word
 * in them comes from the input's bytes; a quote, backslash or control
 * byte there is written as '?'. */
static void json_reason(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) fputc(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ? '?' : *s, f);
    fputc('"', f);
}

int reach_write(const char *path, const char *target) {
    if (!path || !*path) return 0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "{\"target\": \"%s\", \"execs\": %lu, \"rows\": {", target ? target : "?",
            g_execs);
    for (int i = 0; i < g_nrows; i++)
        fprintf(f, "%s\n  \"%s\": %lu", i ? "," : "", g_rows[i].name, g_rows[i].n);
    /* "judged": what the differential compared and what it left open, by
     * reason (ref.h's list): the summary's unjudged share */
    fprintf(f, "\n}, \"judged\": {\"elems\": %llu, \"rows\": %llu, \"rows_open\": %llu, "
               "\"open\": {", (unsigned long long)g_elems, (unsigned long long)g_rows_all,
            (unsigned long long)g_rows_open);
    for (int w = 0; w < REF_WHY_COUNT; w++)
        fprintf(f, "%s\"%s\": [%llu, %llu]", w ? ", " : "", ref_why_name(w),
                (unsigned long long)g_open[w], (unsigned long long)g_open_rows[w]);
    /* "skipped": executions whose case needs a capability the engine does
     * not declare (engine_host.h), by reason: the summary's skip share */
    const char *why[32];
    long n[32], total = 0;
    const int k = engine_host_skips(why, n, 32, &total);
    fprintf(f, "}}, \"skipped\": {\"execs\": %ld, \"reasons\": {", total);
    for (int i = 0; i < k; i++) {
        fputs(i ? ", " : "", f);
        json_reason(f, why[i]);
        fprintf(f, ": %ld", n[i]);
    }
    fprintf(f, "}}}\n");
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}

void reach_flush_every(const char *path, const char *target, double seconds) {
    static struct timespec last;
    struct timespec now;
    if (!path || !*path) return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - last.tv_sec) + 1e-9 * (double)(now.tv_nsec - last.tv_nsec) <
        seconds)
        return;
    last = now;
    reach_write(path, target);
}
