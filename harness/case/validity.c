/*
 * validity.c — the defect model (see validity.h): what each field of a case
 * may hold, which kind of refusal names its violation, and at which stage.
 * Several defects may coexist: the engine may name any of them, within the
 * stage that must see it.
 */
#include "validity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds one defect.  The oracles judge by (kind, stage, binds, limit)
 * alone; once only VALIDITY_KIND_SLOTS places are left, the list takes
 * only defects of a combination not listed yet, so a case with more
 * defects than the list holds (64 layers, each with a few) still has every
 * kind it deserves listed, whichever defect the engine meets first. */
#if defined(__GNUC__)
__attribute__((format(printf, 8, 0)))
#endif
static void vadd(case_defects *d, defect_stage stage, ag_refusal kind, int limit, uint32_t binds,
                 case_key key, int32_t index, const char *fmt, va_list ap) {
    if (d->n >= VALIDITY_MAX_DEFECTS) return;
    if (d->n >= VALIDITY_MAX_DEFECTS - VALIDITY_KIND_SLOTS)
        for (int i = 0; i < d->n; i++)
            if (d->d[i].kind == (int32_t)kind && d->d[i].stage == stage &&
                d->d[i].binds == binds && d->d[i].limit == limit)
                return;
    case_defect *x = &d->d[d->n++];
    x->kind = kind;
    x->limit = limit;
    x->stage = stage;
    x->binds = binds;
    x->key = key;
    x->index = index;
    vsnprintf(x->what, sizeof x->what, fmt, ap);
}

/* A value no engine may accept (negative, zero, non-finite, inconsistent). */
#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static void bad(case_defects *d, defect_stage stage, ag_refusal kind, case_key key, int32_t index,
                const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, stage, kind, 0, 0, key, index, fmt, ap);
    va_end(ap);
}

/* A value beyond a limit the engine declares: refused with `kind` or
 * AG_R_LIMIT. */
#if defined(__GNUC__)
__attribute__((format(printf, 7, 8)))
#endif
static void beyond(case_defects *d, defect_stage stage, ag_refusal kind, uint32_t binds,
                   case_key key, int32_t index, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, stage, kind, 1, binds, key, index, fmt, ap);
    va_end(ap);
}

/* A plan option's defect, binding engines that honour the split hint. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void split_defect(case_defects *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DEFECT_PLAN, AG_R_PLAN_OPTION, 0, AG_CAP_SPLIT_KV, CASE_KEY_SPLIT, -1, fmt, ap);
    va_end(ap);
}

static int dtype_ok(ag_dtype t) { return (unsigned)t < AG_DTYPE_COUNT; }
/* v past a declared limit (0: none) */
static int past(int64_t v, int64_t lim) { return lim > 0 && v > lim; }

/* ------------------------------------------------------- engine options */

/* Calls fn on every word of the space-separated `s`; stops at a non-zero
 * return and passes it on. */
static int each_word(const char *s, int (*fn)(const char *w, size_t n, void *ctx), void *ctx) {
    while (s && *s) {
        while (*s == ' ' || *s == '\t') s++;
        size_t n = strcspn(s, " \t");
        if (n) {
            int r = fn(s, n, ctx);
            if (r) return r;
        }
        s += n;
    }
    return 0;
}

typedef struct word_query {
    const char *w;
    size_t n;        /* the word's length, or its key's (up to '=') */
} word_query;

static int same_word(const char *w, size_t n, void *ctx) {
    const word_query *q = ctx;
    return n == q->n && memcmp(w, q->w, n) == 0;
}

static size_t key_len(const char *w, size_t n) {
    const char *eq = memchr(w, '=', n);
    return eq ? (size_t)(eq - w) : n;
}

static int same_key(const char *w, size_t n, void *ctx) {
    const word_query *q = ctx;
    return key_len(w, n) == q->n && memcmp(w, q->w, q->n) == 0;
}

/* 1 when some variant of e has a word for which `match` holds. */
static int vocab_has(const validity_engine *e, int (*match)(const char *, size_t, void *),
                     word_query *q) {
    for (int i = 0; e && i < e->n_variants; i++)
        if (e->variants[i].options && each_word(e->variants[i].options, match, q)) return 1;
    return 0;
}

typedef struct opt_scan {
    const validity_engine *e;
    case_defects *d;          /* NULL: looking for a foreign key */
    char *why;
    size_t cap;
    const char *all;          /* the whole options string (a key given twice) */
} opt_scan;

typedef struct key_before {
    const char *w, *stop;     /* the key's word, and where to stop looking */
    size_t kl;
} key_before;

static int earlier_key(const char *w, size_t n, void *ctx) {
    const key_before *q = ctx;
    if (w >= q->stop) return -1; /* reached the word itself: no earlier one */
    return key_len(w, n) == q->kl && memcmp(w, q->w, q->kl) == 0;
}

static int scan_word(const char *w, size_t n, void *ctx) {
    opt_scan *s = ctx;
    word_query key = {w, key_len(w, n)}, whole = {w, n};
    if (!vocab_has(s->e, same_key, &key)) {
        if (s->d) return 0;   /* another engine's word: validity_foreign_options says so */
        if (s->why && s->cap) snprintf(s->why, s->cap, "option '%.*s'", (int)n, w);
        return 1;
    }
    if (s->d && !vocab_has(s->e, same_word, &whole))
        bad(s->d, DEFECT_CREATE, AG_R_OPTIONS, CASE_KEY_OPTIONS, -1,
            "options: '%.*s' is not among the engine's variants", (int)(n > 40 ? 40 : n), w);
    /* docs/engines.md, create: a key the engine knows, given twice, is refused (else
     * the later word would hide the earlier one) */
    key_before kb = {w, w, key.n};
    if (s->d && s->all && each_word(s->all, earlier_key, &kb) == 1)
        bad(s->d, DEFECT_CREATE, AG_R_OPTIONS, CASE_KEY_OPTIONS, -1,
            "options: '%.*s' sets %.*s a second time", (int)(n > 30 ? 30 : n), w,
            (int)(key.n > 20 ? 20 : key.n), w);
    return 0;
}

int validity_foreign_options(const case_spec *c, const validity_engine *e, char *why,
                             size_t cap) {
    opt_scan s = {e, NULL, why, cap, c->options};
    if (why && cap) why[0] = '\0';
    return each_word(c->options, scan_word, &s);
}

/* ---------------------------------------------------------------- layers */

static void layer_defects(const case_spec *c, int32_t l, const ag_caps *k, case_defects *d) {
    const defect_stage G = DEFECT_CREATE;
    const case_key K = CASE_KEY_LAYER;
    const case_layer *L = &c->layers[l];
    const int32_t hkv = c->num_kv_heads;
    const int heads_ok = L->num_heads >= 1 && !past(L->num_heads, k->max_heads);
    if (L->num_heads < 1)
        bad(d, G, AG_R_HEADS, K, l, "layers.%d.num_heads = %d", (int)l, (int)L->num_heads);
    else if (!heads_ok)
        beyond(d, G, AG_R_HEADS, 0, K, l, "layers.%d.num_heads = %d (limit %d)", (int)l,
               (int)L->num_heads, (int)k->max_heads);
    else if (hkv >= 1 && L->num_heads % hkv != 0)
        /* Hkv divides EVERY layer's count; a mixed group may be refused for
         * this as well as for the disagreement */
        bad(d, G, AG_R_HEADS, K, l, "layers.%d.num_heads = %d, not a multiple of kv_heads %d",
            (int)l, (int)L->num_heads, (int)hkv);
    int32_t lw, rw;
    case_layer_window(L, &lw, &rw);
    /* the engine sees the pair (the ABI has no shorthand): W is judged as
     * (W-1, W-1), and only W = 0 or below -1 is wrong as such */
    if (L->window_left == CASE_WINDOW_UNSET && L->window_right == CASE_WINDOW_UNSET &&
        (L->window < -1 || L->window == 0))
        bad(d, G, AG_R_WINDOW, K, l, "layers.%d.window = %d", (int)l, (int)L->window);
    else if (lw < -1 || rw < -1)
        bad(d, G, AG_R_WINDOW, K, l, "layers.%d.window = (%d, %d)", (int)l, (int)lw, (int)rw);
    else if (past(lw, k->max_seq_len) || past(rw, k->max_seq_len))
        beyond(d, G, AG_R_WINDOW, 0, K, l, "layers.%d.window = (%d, %d) (limit %d)", (int)l,
               (int)lw, (int)rw, (int)k->max_seq_len);
    if (!isfinite(L->softcap) || L->softcap < 0.0f)
        bad(d, G, AG_R_LAYER, K, l, "layers.%d.softcap = %g", (int)l, (double)L->softcap);
    if (!isfinite(L->scale) || L->scale < 0.0f)
        bad(d, G, AG_R_LAYER, K, l, "layers.%d.scale = %g", (int)l, (double)L->scale);
    /* explicit lists: every value finite, slopes within the declared bound */
    for (int which = 0; which < 2; which++) {
        const uint8_t src = which ? L->sinks : L->alibi;
        const uint16_t off = which ? L->sinks_off : L->alibi_off;
        if (src != CASE_SRC_LIST || !heads_ok || (int32_t)off + L->num_heads > c->list_len)
            continue;
        const char *name = which ? "sinks" : "alibi_slopes";
        for (int32_t h = 0; h < L->num_heads; h++) {
            const float x = c->list[off + h];
            if (!isfinite(x)) {
                bad(d, G, AG_R_LAYER, K, l, "layers.%d.%s[%d] = %g", (int)l, name, (int)h,
                    (double)x);
                break;
            }
            if (!which && k->max_alibi_slope > 0 && fabsf(x) > k->max_alibi_slope) {
                beyond(d, G, AG_R_LAYER, 0, K, l, "layers.%d.%s[%d] = %g (limit %g)", (int)l,
                       name, (int)h, (double)x, (double)k->max_alibi_slope);
                break;
            }
        }
    }
    const int fp8 = ag_dtype_is_fp8(c->kv_dtype);
    if (fp8 && (!isfinite(L->k_scale) || !(L->k_scale > 0.0f)))
        bad(d, G, AG_R_LAYER, K, l, "layers.%d.k_scale = %g", (int)l, (double)L->k_scale);
    if (fp8 && (!isfinite(L->v_scale) || !(L->v_scale > 0.0f)))
        bad(d, G, AG_R_LAYER, K, l, "layers.%d.v_scale = %g", (int)l, (double)L->v_scale);
}

/* ----------------------------------------------------------------- model */

void validity_defects(const case_spec *c, const validity_engine *e, case_defects *d) {
    static const ag_caps no_limits;
    const ag_caps *k = e && e->caps ? e->caps : &no_limits;
    memset(d, 0, sizeof *d);
    if (c->num_layers > CASE_MAX_LAYERS || c->num_reqs > CASE_MAX_REQS) {
        d->unexpressible = 1;
        return;
    }
    /* a slope or sink source the harness cannot form (not a value the
     * engine sees: the parser and the decoder never make one) */
    for (int32_t l = 0; l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        if (L->alibi >= CASE_SRC_COUNT || L->sinks >= CASE_SRC_COUNT ||
            (L->alibi == CASE_SRC_LIST && (int32_t)L->alibi_off + L->num_heads > c->list_len) ||
            (L->sinks == CASE_SRC_LIST && (int32_t)L->sinks_off + L->num_heads > c->list_len)) {
            d->unexpressible = 1;
            return;
        }
    }
    const defect_stage G = DEFECT_CREATE, P = DEFECT_PLAN;
    /* problem.c hands the engine max(0, num_layers) layers */
    const int32_t nl = c->num_layers < 0 ? 0 : c->num_layers;
    const int32_t hkv = c->num_kv_heads;
    const int hkv_ok = hkv >= 1 && !past(hkv, k->max_heads);

    /* ---- group ---- */
    if (hkv < 1) bad(d, G, AG_R_HEADS, CASE_KEY_KV_HEADS, -1, "num_kv_heads = %d", (int)hkv);
    else if (!hkv_ok)
        beyond(d, G, AG_R_HEADS, 0, CASE_KEY_KV_HEADS, -1, "num_kv_heads = %d (limit %d)",
               (int)hkv, (int)k->max_heads);
    if (c->head_dim < 1)
        bad(d, G, AG_R_HEAD_DIM, CASE_KEY_HEAD_DIM, -1, "head_dim = %d", (int)c->head_dim);
    else if (past(c->head_dim, k->max_head_dim))
        beyond(d, G, AG_R_HEAD_DIM, 0, CASE_KEY_HEAD_DIM, -1, "head_dim = %d (limit %d)",
               (int)c->head_dim, (int)k->max_head_dim);
    /* a block dtype's rows are whole blocks of 32 (engine.h, ag_dtype):
     * other rows cannot even be written */
    const ag_dtype dts[3] = {c->kv_dtype, c->q_dtype, c->out_dtype};
    for (int i = 0; i < 3 && c->head_dim >= 1; i++)
        if (dtype_ok(dts[i]) && c->head_dim % ag_dtype_block(dts[i]) != 0) {
            bad(d, G, AG_R_HEAD_DIM, CASE_KEY_HEAD_DIM, -1,
                "head_dim = %d, not whole %d-element blocks of %s", (int)c->head_dim,
                ag_dtype_block(dts[i]), ag_dtype_name(dts[i]));
            break;
        }
    if (c->block_size < 1)
        bad(d, G, AG_R_BLOCK_SIZE, CASE_KEY_BLOCK_SIZE, -1, "block_size = %d", (int)c->block_size);
    else if (past(c->block_size, k->max_block_size))
        beyond(d, G, AG_R_BLOCK_SIZE, 0, CASE_KEY_BLOCK_SIZE, -1, "block_size = %d (limit %d)",
               (int)c->block_size, (int)k->max_block_size);
    if (!dtype_ok(c->q_dtype))
        bad(d, G, AG_R_DTYPE, CASE_KEY_Q_DTYPE, -1, "q_dtype = %d", (int)c->q_dtype);
    if (!dtype_ok(c->kv_dtype))
        bad(d, G, AG_R_DTYPE, CASE_KEY_KV_DTYPE, -1, "kv_dtype = %d", (int)c->kv_dtype);
    if (!dtype_ok(c->out_dtype))
        bad(d, G, AG_R_DTYPE, CASE_KEY_OUT_DTYPE, -1, "out_dtype = %d", (int)c->out_dtype);
    if (c->threads < 1) bad(d, G, AG_R_THREADS, CASE_KEY_THREADS, -1, "threads = %d", (int)c->threads);
    else if (past(c->threads, k->max_threads))
        beyond(d, G, AG_R_THREADS, 0, CASE_KEY_THREADS, -1, "threads = %d (limit %d)",
               (int)c->threads, (int)k->max_threads);
    for (int32_t l = 0; l < nl; l++) layer_defects(c, l, k, d);
    if (nl == 0) {
        const int32_t m = c->model_num_heads;
        if (m < 1)
            bad(d, G, AG_R_HEADS, CASE_KEY_MODEL_HEADS, -1, "model_num_heads = %d (no layers)",
                (int)m);
        else if (past(m, k->max_heads))
            beyond(d, G, AG_R_HEADS, 0, CASE_KEY_MODEL_HEADS, -1,
                   "model_num_heads = %d (no layers; limit %d)", (int)m, (int)k->max_heads);
        else if (hkv_ok && m % hkv != 0)
            bad(d, G, AG_R_HEADS, CASE_KEY_MODEL_HEADS, -1,
                "model_num_heads = %d, not a multiple of kv_heads %d (no layers)", (int)m,
                (int)hkv);
    }
    /* an engine that plans each layer with its own count takes a mixed
     * group; every other engine must refuse it */
    for (int32_t l = 1; l < nl && !(k->flags & AG_CAP_MIXED_HEADS); l++)
        if (c->layers[l].num_heads != c->layers[0].num_heads) {
            d->mixed = 1;
            bad(d, G, AG_R_MIXED_HEADS, CASE_KEY_LAYER, l, "layers.0 has %d heads, layers.%d has %d",
                (int)c->layers[0].num_heads, (int)l, (int)c->layers[l].num_heads);
            break;
        }
    opt_scan os = {e, d, NULL, 0, c->options};
    each_word(c->options, scan_word, &os);

    /* ---- plan options: a hint to an engine without AG_CAP_SPLIT_KV ---- */
    if ((unsigned)c->split > AG_SPLIT_FIXED) split_defect(d, "split = %d", (int)c->split);
    else if (c->split == AG_SPLIT_FIXED && c->split_count < 1)
        split_defect(d, "split_count = %d", (int)c->split_count);
    else if (c->split == AG_SPLIT_FIXED && past(c->split_count, k->max_splits))
        beyond(d, P, AG_R_PLAN_OPTION, AG_CAP_SPLIT_KV, CASE_KEY_SPLIT, -1,
               "split_count = %d (limit %d)", (int)c->split_count, (int)k->max_splits);

    /* ---- batch ---- */
    if (c->num_reqs < 1)
        bad(d, P, AG_R_BATCH, CASE_KEY_REQUESTS, -1, "num_reqs = %d", (int)c->num_reqs);
    int64_t tokens = 0, blocks = 3;   /* problem.c's spare blocks */
    for (int32_t r = 0; r < c->num_reqs; r++) {
        if (c->q_len[r] < 1) {
            bad(d, P, AG_R_BATCH, CASE_KEY_REQUESTS, -1, "q_len[%d] = %d", (int)r,
                (int)c->q_len[r]);
        } else if (c->kv_len[r] < c->q_len[r]) {
            bad(d, P, AG_R_LENGTH, CASE_KEY_REQUESTS, -1, "kv_len[%d] = %d (q_len %d)", (int)r,
                (int)c->kv_len[r], (int)c->q_len[r]);
        } else if (past(c->kv_len[r], k->max_seq_len)) {
            beyond(d, P, AG_R_LENGTH, 0, CASE_KEY_REQUESTS, -1, "kv_len[%d] = %d (limit %d)",
                   (int)r, (int)c->kv_len[r], (int)k->max_seq_len);
        }
        if (c->causal[r] > 1)
            bad(d, P, AG_R_BATCH, CASE_KEY_CAUSAL, -1, "causal[%d] = %d", (int)r,
                (int)c->causal[r]);
        tokens += c->q_len[r] > 0 ? c->q_len[r] : 0;
        if (c->block_size >= 1 && c->kv_len[r] > 0)
            blocks += ((int64_t)c->kv_len[r] + c->block_size - 1) / c->block_size;
    }
    if (tokens > INT32_MAX)
        bad(d, P, AG_R_BATCH, CASE_KEY_REQUESTS, -1, "%lld query tokens", (long long)tokens);
    if (c->blocks == CASE_BLOCKS_OUTSIDE && c->num_reqs > 0 && c->kv_len[0] > 0)
        bad(d, P, AG_R_BLOCK_ID, CASE_KEY_BLOCKS, -1,
            "blocks = outside: request 0's last block id is one past the cache");
    if ((unsigned)c->blocks >= CASE_BLOCKS_COUNT) d->unexpressible = 1;
    /* The cache the run would address must fit size_t. */
    if (hkv_ok && c->head_dim >= 1 && c->block_size >= 1 && dtype_ok(c->kv_dtype)) {
        size_t x;
        if (__builtin_mul_overflow((size_t)blocks, (size_t)hkv, &x) ||
            __builtin_mul_overflow(x, (size_t)c->block_size, &x) ||
            __builtin_mul_overflow(x, (size_t)c->head_dim, &x) ||
            (c->head_dim % ag_dtype_block(c->kv_dtype) == 0 &&
             ag_dtype_bytes(c->kv_dtype, x, &x)))
            bad(d, P, AG_R_OVERFLOW, CASE_KEY_REQUESTS, -1, "a KV cache of %lld blocks overflows",
                (long long)blocks);
    }
}

int validity_allows(const case_defects *d, unsigned mask, int32_t kind) {
    for (int i = 0; i < d->n; i++)
        if ((d->d[i].stage & mask) &&
            (d->d[i].kind == kind || (d->d[i].limit && kind == AG_R_LIMIT)))
            return 1;
    return 0;
}

void validity_format(const case_defects *d, unsigned mask, char *buf, size_t cap) {
    size_t u = 0;
    if (!cap) return;
    buf[0] = '\0';
    u += (size_t)snprintf(buf, cap, "{");
    int first = 1;
    for (int i = 0; i < d->n && u < cap; i++) {
        if (!(d->d[i].stage & mask)) continue;
        u += (size_t)snprintf(buf + u, cap - u, "%s%s%s (%s)", first ? "" : ", ",
                              ag_refusal_name((ag_refusal)d->d[i].kind),
                              d->d[i].limit ? "|limit" : "", d->d[i].what);
        first = 0;
    }
    if (u < cap) snprintf(buf + u, cap - u, first ? "none: valid}" : "}");
}
