/*
 * defects.c — the harness's own model of which statuses a case deserves:
 * every defect of a case (bad heads, dims, windows, dtypes, threads, batch,
 * mixed layer head counts, ...) with the API stage that must see it and the
 * status it deserves.  Written from attn.h's contract, not from src/; the
 * bad-input and mixed-heads oracles (oracles.c) judge the engine by it.
 */
#include "validity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- defect model */

/* Each adds one defect with the AG_CAP_* bits that make it bind an engine
 * (oracles.h, case_defect.binds). */

#if defined(__GNUC__)
__attribute__((format(printf, 5, 0)))
#endif
static void add(case_defects *d, defect_stage stage, attn_status st, uint32_t binds,
                const char *fmt, va_list ap) {
    /* The oracles judge by (status, stage, binds) alone.  The list takes
     * defects as they come until ORACLE_KIND_SLOTS places are left, then
     * only those of a kind not listed yet: a case with more defects than
     * the list holds (64 layers, each with a few) still has every status
     * it deserves listed, whichever defect the engine meets first. */
    if (d->n >= ORACLE_MAX_DEFECTS) return;
    if (d->n >= ORACLE_MAX_DEFECTS - ORACLE_KIND_SLOTS)
        for (int i = 0; i < d->n; i++)
            if (d->d[i].status == st && d->d[i].stage == stage && d->d[i].binds == binds) return;
    case_defect *x = &d->d[d->n++];
    x->status = st;
    x->stage = stage;
    x->binds = binds;
    vsnprintf(x->what, sizeof x->what, fmt, ap);
}

/* A value no engine may accept (negative, zero, non-finite, inconsistent). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void defect(case_defects *d, defect_stage stage, attn_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, stage, st, 0, fmt, ap);
    va_end(ap);
}

/* A value beyond one of attnguard's own limits (attn.h's ATTN_MAX_*): its
 * engine must refuse it, another engine may also compute it. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void beyond(case_defects *d, defect_stage stage, attn_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, stage, st, AG_CAP_ATTN_CODES, fmt, ap);
    va_end(ap);
}

/* A plan option's defect (ATTN_E_BAD_OPTION at plan), binding as given. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void option_defect(case_defects *d, uint32_t binds, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, DEFECT_BUILD, ATTN_E_BAD_OPTION, binds, fmt, ap);
    va_end(ap);
}

static int dtype_ok(ag_dtype t) { return (unsigned)t < AG_DTYPE_COUNT; }
static int heads_ok(int32_t h) { return h >= 1 && h <= ATTN_MAX_HEADS; }

static int window_ok(int32_t w) { return w >= -1 && w <= ATTN_MAX_SEQ_LEN; }

static int isa_known(const char *name) {
    const char *names[16];
    int n = attn_isa_available(names, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

/* attnguard's engine options ("isa=<table> tune=<profile>"): an unknown
 * table or profile, here or in $ATTN_ISA / $ATTN_TUNE, is ATTN_E_BAD_ISA.
 * (Cases with options run on the attnguard engine only: engine_host.c.) */
static void option_defects(const case_spec *c, case_defects *d) {
    char buf[CASE_OPTIONS_LEN];
    snprintf(buf, sizeof buf, "%s", c->options);
    const char *isa = NULL, *tune = NULL;
    char *save = NULL;
    for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (strncmp(w, "isa=", 4) == 0) isa = w + 4;
        else if (strncmp(w, "tune=", 5) == 0) tune = w + 5;
        else defect(d, DEFECT_CREATE, ATTN_E_BAD_ISA, "options: '%.32s'", w);
    }
    const char *env_isa = getenv("ATTN_ISA"), *env_tune = getenv("ATTN_TUNE");
    if (!isa && env_isa && env_isa[0]) isa = env_isa;
    if (!tune && env_tune && env_tune[0]) tune = env_tune;
    if (isa && !isa_known(isa))
        defect(d, DEFECT_CREATE, ATTN_E_BAD_ISA, "isa = '%.32s'", isa);
    if (tune && strcmp(tune, "intel") != 0 && strcmp(tune, "amd") != 0)
        defect(d, DEFECT_CREATE, ATTN_E_BAD_ISA, "tune = '%.32s'", tune);
}

/* Written from attn.h's contract: what each field may hold and which status
 * names its violation.  Group defects are the builder's; batch and option
 * defects the plan's.  Several defects may coexist: the engine may name
 * any of them (within the stage that must see it). */
void oracle_case_defects(const case_spec *c, case_defects *d) {
    memset(d, 0, sizeof *d);
    if (c->num_layers > CASE_MAX_LAYERS || c->num_reqs > CASE_MAX_REQS) {
        d->unexpressible = 1;
        return;
    }
    const defect_stage G = DEFECT_CREATE, B = DEFECT_BUILD;
    /* problem_init hands the engine max(0, num_layers) layers */
    const int32_t nl = c->num_layers < 0 ? 0 : c->num_layers;
    const int32_t hkv = c->num_kv_heads;

    /* ---- group ---- */
    if (hkv < 1) defect(d, G, ATTN_E_BAD_HEADS, "num_kv_heads = %d", (int)hkv);
    else if (!heads_ok(hkv)) beyond(d, G, ATTN_E_BAD_HEADS, "num_kv_heads = %d", (int)hkv);
    if (c->head_dim < 1) defect(d, G, ATTN_E_BAD_HEAD_DIM, "head_dim = %d", (int)c->head_dim);
    else if (c->head_dim > ATTN_MAX_HEAD_DIM)
        beyond(d, G, ATTN_E_BAD_HEAD_DIM, "head_dim = %d", (int)c->head_dim);
    if (c->block_size < 1)
        defect(d, G, ATTN_E_BAD_BLOCK_SIZE, "block_size = %d", (int)c->block_size);
    else if (c->block_size > ATTN_MAX_BLOCK_SIZE)
        beyond(d, G, ATTN_E_BAD_BLOCK_SIZE, "block_size = %d", (int)c->block_size);
    if (!dtype_ok(c->q_dtype)) defect(d, G, ATTN_E_BAD_DTYPE, "q_dtype = %d", (int)c->q_dtype);
    if (!dtype_ok(c->kv_dtype)) defect(d, G, ATTN_E_BAD_DTYPE, "kv_dtype = %d", (int)c->kv_dtype);
    if (!dtype_ok(c->out_dtype))
        defect(d, G, ATTN_E_BAD_DTYPE, "out_dtype = %d", (int)c->out_dtype);
    if (c->threads < 1) defect(d, G, ATTN_E_BAD_THREADS, "threads = %d", (int)c->threads);
    else if (c->threads > ATTN_MAX_THREADS)
        beyond(d, G, ATTN_E_BAD_THREADS, "threads = %d", (int)c->threads);
    for (int32_t l = 0; l < nl; l++) {
        const case_layer *L = &c->layers[l];
        if (L->num_heads < 1)
            defect(d, G, ATTN_E_BAD_HEADS, "layers.%d.num_heads = %d", (int)l, (int)L->num_heads);
        else if (!heads_ok(L->num_heads))
            beyond(d, G, ATTN_E_BAD_HEADS, "layers.%d.num_heads = %d", (int)l, (int)L->num_heads);
        else if (heads_ok(hkv) && L->num_heads % hkv != 0)
            /* attn.h: Hkv divides EVERY layer's num_heads; a mixed group may
             * be refused for this as well as for the disagreement. */
            defect(d, G, ATTN_E_BAD_HEADS, "layers.%d.num_heads = %d %% kv_heads %d", (int)l,
                   (int)L->num_heads, (int)hkv);
        int32_t lw, rw;
        case_layer_window(L, &lw, &rw);
        /* the engine sees the pair (the ABI has no shorthand): W is judged
         * as (W-1, W-1), and only W = 0 or below -1 is wrong as such */
        if (L->window_left == CASE_WINDOW_UNSET && L->window_right == CASE_WINDOW_UNSET &&
            (L->window < -1 || L->window == 0))
            defect(d, G, ATTN_E_BAD_WINDOW, "layers.%d.window = %d", (int)l, (int)L->window);
        else if (lw < -1 || rw < -1)
            defect(d, G, ATTN_E_BAD_WINDOW, "layers.%d.window = (%d, %d)", (int)l, (int)lw,
                   (int)rw);
        else if (!window_ok(lw) || !window_ok(rw))
            beyond(d, G, ATTN_E_BAD_WINDOW, "layers.%d.window = (%d, %d)", (int)l, (int)lw,
                   (int)rw);
        if (!isfinite(L->softcap) || L->softcap < 0.0f)
            defect(d, G, ATTN_E_BAD_LAYER, "layers.%d.softcap = %g", (int)l, (double)L->softcap);
        if (!isfinite(L->scale) || L->scale < 0.0f)
            defect(d, G, ATTN_E_BAD_LAYER, "layers.%d.scale = %g", (int)l, (double)L->scale);
        /* explicit lists: every value finite, slopes within
         * ATTN_MAX_ALIBI_SLOPE (attn.h) */
        for (int which = 0; which < 2; which++) {
            const uint8_t src = which ? L->sinks : L->alibi;
            const uint16_t off = which ? L->sinks_off : L->alibi_off;
            if (src != CASE_SRC_LIST || !heads_ok(L->num_heads) ||
                (int32_t)off + L->num_heads > c->list_len)
                continue;
            for (int32_t h = 0; h < L->num_heads; h++) {
                const float x = c->list[off + h];
                const char *name = which ? "sinks" : "alibi_slopes";
                if (!isfinite(x)) {
                    defect(d, G, ATTN_E_BAD_LAYER, "layers.%d.%s[%d] = %g", (int)l, name, (int)h,
                           (double)x);
                    break;
                }
                if (!which && fabs((double)x) > ATTN_MAX_ALIBI_SLOPE) {
                    beyond(d, G, ATTN_E_BAD_LAYER, "layers.%d.%s[%d] = %g", (int)l, name, (int)h,
                           (double)x);
                    break;
                }
            }
        }
        const int fp8 = c->kv_dtype == AG_FP8_E4M3 || c->kv_dtype == AG_FP8_E5M2;
        if (fp8 && (!isfinite(L->k_scale) || !(L->k_scale > 0.0f)))
            defect(d, G, ATTN_E_BAD_LAYER, "layers.%d.k_scale = %g", (int)l, (double)L->k_scale);
        if (fp8 && (!isfinite(L->v_scale) || !(L->v_scale > 0.0f)))
            defect(d, G, ATTN_E_BAD_LAYER, "layers.%d.v_scale = %g", (int)l, (double)L->v_scale);
    }
    if (nl == 0) {
        if (c->model_num_heads < 1)
            defect(d, G, ATTN_E_BAD_HEADS, "model_num_heads = %d (no layers)",
                   (int)c->model_num_heads);
        else if (!heads_ok(c->model_num_heads))
            beyond(d, G, ATTN_E_BAD_HEADS, "model_num_heads = %d (no layers)",
                   (int)c->model_num_heads);
        else if (heads_ok(hkv) && c->model_num_heads % hkv != 0)
            defect(d, G, ATTN_E_BAD_HEADS, "model_num_heads = %d %% kv_heads %d (no layers)",
                   (int)c->model_num_heads, (int)hkv);
    }
    for (int32_t l = 1; l < nl; l++)
        if (c->layers[l].num_heads != c->layers[0].num_heads) {
            d->mixed = 1;
            defect(d, G, ATTN_E_MIXED_HEADS, "layers.0 has %d heads, layers.%d has %d",
                   (int)c->layers[0].num_heads, (int)l, (int)c->layers[l].num_heads);
            break;
        }

    option_defects(c, d);

    /* ---- plan options: a hint to an engine without AG_CAP_SPLIT_KV ---- */
    const uint32_t SK = AG_CAP_SPLIT_KV;
    if ((unsigned)c->split > ATTN_SPLIT_FIXED)
        option_defect(d, SK, "split = %d", (int)c->split);
    else if (c->split == ATTN_SPLIT_FIXED && c->split_count < 1)
        option_defect(d, SK, "split_count = %d", (int)c->split_count);
    else if (c->split == ATTN_SPLIT_FIXED && c->split_count > ATTN_MAX_SPLITS)
        option_defect(d, SK | AG_CAP_ATTN_CODES, "split_count = %d", (int)c->split_count);

    /* ---- batch ---- */
    if (c->num_reqs < 1) defect(d, B, ATTN_E_BAD_BATCH, "num_reqs = %d", (int)c->num_reqs);
    int64_t tokens = 0, blocks = 3;   /* problem.c's spare blocks */
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (c->q_len[r] < 1) {
            defect(d, B, ATTN_E_BAD_BATCH, "q_len[%d] = %d", (int)r, (int)c->q_len[r]);
        } else if (c->kv_len[r] < c->q_len[r]) {
            defect(d, B, ATTN_E_BAD_SEQ_LEN, "kv_len[%d] = %d (q_len %d)", (int)r,
                   (int)c->kv_len[r], (int)c->q_len[r]);
        } else if (c->kv_len[r] > ATTN_MAX_SEQ_LEN) {
            beyond(d, B, ATTN_E_BAD_SEQ_LEN, "kv_len[%d] = %d (q_len %d)", (int)r,
                   (int)c->kv_len[r], (int)c->q_len[r]);
        }
        if (c->causal[r] > 1)
            defect(d, B, ATTN_E_BAD_BATCH, "causal[%d] = %d", (int)r, (int)c->causal[r]);
        tokens += c->q_len[r];
        if (c->block_size >= 1 && c->kv_len[r] > 0)
            blocks += ((int64_t)c->kv_len[r] + c->block_size - 1) / c->block_size;
    }
    if (tokens > INT32_MAX) defect(d, B, ATTN_E_BAD_BATCH, "%lld query tokens", (long long)tokens);
    /* The cache the run would address must fit size_t. */
    if (heads_ok(hkv) && c->head_dim >= 1 && c->block_size >= 1 && dtype_ok(c->kv_dtype)) {
        size_t x;
        if (__builtin_mul_overflow((size_t)blocks, (size_t)hkv, &x) ||
            __builtin_mul_overflow(x, (size_t)c->block_size, &x) ||
            __builtin_mul_overflow(x, (size_t)c->head_dim, &x) ||
            __builtin_mul_overflow(x, ag_dtype_size(c->kv_dtype), &x))
            defect(d, B, ATTN_E_OVERFLOW, "KV cache of %lld blocks overflows", (long long)blocks);
    }
}

int oracle_defects_allow(const case_defects *d, unsigned mask, attn_status st) {
    for (int i = 0; i < d->n; i++)
        if ((d->d[i].stage & mask) && d->d[i].status == st) return 1;
    return 0;
}

void oracle_defects_format(const case_defects *d, unsigned mask, char *buf, size_t cap) {
    size_t u = 0;
    if (!cap) return;
    buf[0] = '\0';
    u += (size_t)snprintf(buf, cap, "{");
    int first = 1;
    for (int i = 0; i < d->n && u < cap; i++) {
        if (!(d->d[i].stage & mask)) continue;
        u += (size_t)snprintf(buf + u, cap - u, "%s%s (%s)", first ? "" : ", ",
                              attn_status_name(d->d[i].status), d->d[i].what);
        first = 0;
    }
    if (u < cap) snprintf(buf + u, cap - u, first ? "none: valid}" : "}");
}

