/*
 * engine_host.c — the engine this harness process drives, opened once, and
 * the capability test of a case (see engine_host.h).  The only harness file
 * that knows how a case's features map onto AG_CAP_* flags.
 */
#include "engine_host.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static engine_host g_host;
static int g_open;               /* 1 opened, -1 failed (g_err says why) */
static char g_err[AG_MSG_TEXT_LEN + 64];
static const char *g_name;
static const char *g_options;
/* The opened engine's name, kept past its close (the skip counts print at
 * exit, after it); adapters' names are static strings, and an adapter
 * object stays loaded for the life of the process. */
static const char *g_opened_name;

int engine_host_select(const char *name, const char *options, char *err, size_t cap) {
    if (g_open == 1 && g_host.e && name && strcmp(name, g_host.e->name) != 0) {
        if (err && cap) snprintf(err, cap, "engine %s is already in use", g_host.e->name);
        return -1;
    }
    g_name = name;
    g_options = options;
    return engine_host_current(err, cap) ? 0 : -1;
}

static void close_at_exit(void) {
    if (g_open == 1) engine_host_close(&g_host);
    g_open = 0;
}

static int open_table(engine_host *h, const ag_engine *e, const char *options, char *err,
                      size_t cap) {
    ag_msg msg;
    ag_status st = e->open(options, &h->ctx, &msg);
    if (st != AG_OK) {
        if (err && cap)
            snprintf(err, cap, "engine %s: %s: %s", e->name, ag_status_name(st), msg.text);
        return -1;
    }
    h->e = e;
    /* the process's subject: the first engine it opens (check opens
     * attnguard's own after it, as a second opinion, never the subject) */
    if (!g_opened_name) g_opened_name = e->name;
    e->caps(h->ctx, &h->caps);
    int n = e->variants ? e->variants(h->ctx, h->variants, ENGINE_HOST_MAX_VARIANTS) : 0;
    if (n < 1) {
        h->variants[0].options = "";
        h->variants[0].kind = AG_VARIANT_DEFAULT;
        n = 1;
    }
    h->n_variants = n < ENGINE_HOST_MAX_VARIANTS ? n : ENGINE_HOST_MAX_VARIANTS;
    return 0;
}

int engine_host_open(engine_host *h, const char *name, const char *options, char *err,
                     size_t cap) {
    ag_msg msg;
    memset(h, 0, sizeof *h);
    const ag_engine *e = ag_engine_find(name, &msg);
    if (!e) {
        if (err && cap) snprintf(err, cap, "%s", msg.text);
        return -1;
    }
    return open_table(h, e, options, err, cap);
}

int engine_host_adopt(const ag_engine *e, const char *options, char *err, size_t cap) {
    if (g_open != 0) {
        if (err && cap) snprintf(err, cap, "an engine is already in use");
        return -1;
    }
    memset(&g_host, 0, sizeof g_host);
    ag_msg msg;
    if (ag_engine_check(e, NULL, &msg) != 0) {
        if (err && cap) snprintf(err, cap, "%s", msg.text);
        return -1;
    }
    g_open = open_table(&g_host, e, options, g_err, sizeof g_err) == 0 ? 1 : -1;
    if (g_open == 1) atexit(close_at_exit);
    if (g_open != 1 && err && cap) snprintf(err, cap, "%s", g_err);
    return g_open == 1 ? 0 : -1;
}

void engine_host_close(engine_host *h) {
    if (h && h->e && h->e->close) h->e->close(h->ctx);
    if (h) memset(h, 0, sizeof *h);
}

const engine_host *engine_host_current(char *err, size_t cap) {
    if (g_open == 0) {
        const char *name = g_name ? g_name : getenv("ATTNGUARD_ENGINE");
        const char *opts = g_options ? g_options : getenv("ATTNGUARD_ENGINE_OPTIONS");
        g_open = engine_host_open(&g_host, name, opts, g_err, sizeof g_err) == 0 ? 1 : -1;
        if (g_open == 1) atexit(close_at_exit);
    }
    if (g_open == 1) return &g_host;
    if (err && cap) snprintf(err, cap, "%s", g_err);
    return NULL;
}

/* ----------------------------------------------------- capability test */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int lacks(char *why, size_t cap, const char *fmt, ...) {
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* The slopes of a layer equal the standard set for its head count. */
static int slopes_standard(const case_spec *c, const case_layer *L) {
    if (L->alibi == CASE_SRC_STANDARD) return 1;
    if (L->alibi != CASE_SRC_LIST || L->num_heads <= 0 || L->num_heads > CASE_MAX_HEADS) return 0;
    float std[CASE_MAX_HEADS];
    case_alibi_standard(L->num_heads, std);
    return memcmp(std, c->list + L->alibi_off, (size_t)L->num_heads * sizeof(float)) == 0;
}

static int lacks_dtype(uint32_t set, ag_dtype d) {
    return (unsigned)d < AG_DTYPE_COUNT && !(set & AG_DTYPE_BIT(d));
}

int engine_host_unsupported(const engine_host *E, const case_spec *c, char *why, size_t cap) {
    return engine_host_unsupported_at(E, c, why, cap, NULL, NULL);
}

/* `lacks` at key k (layer l). */
#define LACKS_AT(k, l, ...) (at(key, index, (k), (l)), lacks(why, cap, __VA_ARGS__))

static void at(case_key *key, int32_t *index, case_key k, int32_t l) {
    if (key) *key = k;
    if (index) *index = l;
}

int engine_host_unsupported_at(const engine_host *E, const case_spec *c, char *why, size_t cap,
                               case_key *key, int32_t *index) {
    const ag_caps *k = &E->caps;
    const uint32_t f = k->flags;
    /* a dtype outside the enum is a defect for the engine to refuse, not a
     * missing capability */
    if (lacks_dtype(k->q_dtypes, c->q_dtype))
        return LACKS_AT(CASE_KEY_Q_DTYPE, -1, "q dtype %s", ag_dtype_name(c->q_dtype));
    if (lacks_dtype(k->kv_dtypes, c->kv_dtype))
        return LACKS_AT(CASE_KEY_KV_DTYPE, -1, "kv dtype %s", ag_dtype_name(c->kv_dtype));
    if (lacks_dtype(k->out_dtypes, c->out_dtype))
        return LACKS_AT(CASE_KEY_OUT_DTYPE, -1, "out dtype %s", ag_dtype_name(c->out_dtype));
    char word[64];
    const validity_engine ve = engine_host_validity(E);
    if (validity_foreign_options(c, &ve, word, sizeof word))
        return LACKS_AT(CASE_KEY_OPTIONS, -1, "another engine's %s", word);
    const int fp8 = ag_dtype_is_fp8(c->kv_dtype);
    for (int32_t l = 0; l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        if (L->num_heads != c->num_kv_heads && !(f & AG_CAP_GQA)) return LACKS_AT(CASE_KEY_LAYER, l, "GQA");
        int32_t lw, rw;
        case_layer_window(L, &lw, &rw);
        if ((lw != -1 || rw != -1) && !(f & (AG_CAP_WINDOW | AG_CAP_WINDOW_LR)))
            return LACKS_AT(CASE_KEY_LAYER, l, "sliding window");
        if (lw != rw && !(f & AG_CAP_WINDOW_LR)) return LACKS_AT(CASE_KEY_LAYER, l, "(left, right) window");
        if (L->softcap != 0 && !(f & AG_CAP_SOFTCAP)) return LACKS_AT(CASE_KEY_LAYER, l, "soft cap");
        if (L->scale != 0 && !(f & AG_CAP_SCALE)) return LACKS_AT(CASE_KEY_LAYER, l, "scale");
        if (L->alibi != CASE_SRC_NONE && !(f & AG_CAP_ALIBI) &&
            !((f & AG_CAP_ALIBI_STANDARD) && slopes_standard(c, L)))
            return LACKS_AT(CASE_KEY_LAYER, l, "%s", L->alibi == CASE_SRC_LIST ? "ALiBi slopes outside the standard set"
                                                            : "ALiBi");
        if (L->sinks != CASE_SRC_NONE && !(f & AG_CAP_SINKS)) return LACKS_AT(CASE_KEY_LAYER, l, "sinks");
        if (fp8 && (L->k_scale != 1.0f || L->v_scale != 1.0f) && !(f & AG_CAP_KV_SCALES))
            return LACKS_AT(CASE_KEY_LAYER, l, "fp8 k_scale/v_scale");
    }
    if (c->blocks != CASE_BLOCKS_CONTIGUOUS && !(f & AG_CAP_PAGED))
        return LACKS_AT(CASE_KEY_BLOCKS, -1, "paged blocks in any order");
    if (c->blocks == CASE_BLOCKS_REPEATED && !(f & AG_CAP_SHARED_BLOCKS))
        return LACKS_AT(CASE_KEY_BLOCKS, -1, "blocks shared between requests");
    int any_nc = 0, mixed = 0;
    for (int32_t r = 0; r < c->num_reqs && r < CASE_MAX_REQS; r++) {
        any_nc |= c->causal[r] == 0;
        mixed |= c->causal[r] != c->causal[0];
    }
    if (any_nc && !(f & AG_CAP_NONCAUSAL)) return LACKS_AT(CASE_KEY_CAUSAL, -1, "non-causal requests");
    if (mixed && !(f & AG_CAP_MIXED_CAUSAL))
        return LACKS_AT(CASE_KEY_CAUSAL, -1, "causal and non-causal requests in one batch");
    if (why && cap) why[0] = '\0';
    at(key, index, CASE_KEY_COUNT, -1);
    return 0;
}

/* ------------------------------------------------------------ skip counts */

#define MAX_REASONS 32
static struct {
    char why[64];
    long n;
} g_skips[MAX_REASONS];
static long g_skips_other;

void engine_host_count_skip(const char *why) {
    /* the capability, not the input's value: a quoted word (an option of
     * another engine, straight from the fuzzer's bytes) is left out, so
     * that one capability is one count whatever the words */
    char key[64];
    size_t k = 0;
    for (const char *s = why ? why : "?"; *s && k + 1 < sizeof key; s++) {
        if (s[0] == ' ' && s[1] == '\'') {   /* to the closing quote, or the end of a cut one */
            const char *close = strchr(s + 2, '\'');
            if (!close) break;
            s = close;
            continue;
        }
        key[k++] = *s;
    }
    key[k] = '\0';
    for (int i = 0; i < MAX_REASONS; i++) {
        if (g_skips[i].n && strcmp(g_skips[i].why, key) == 0) {
            g_skips[i].n++;
            return;
        }
        if (!g_skips[i].n) {
            memcpy(g_skips[i].why, key, sizeof key);
            g_skips[i].n = 1;
            return;
        }
    }
    g_skips_other++;
}

void engine_host_print_skips(FILE *f, const char *prefix) {
    long total = g_skips_other;
    for (int i = 0; i < MAX_REASONS; i++) total += g_skips[i].n;
    if (!total) return;
    /* named: a fuzz target's log is often the only place that says which
     * engine it drove (an adapter linked in, ClusterFuzzLite's runs) */
    fprintf(f, "%s%ld skipped (%s lacks):", prefix ? prefix : "", total,
            g_opened_name ? g_opened_name : "the engine");
    for (int i = 0; i < MAX_REASONS && g_skips[i].n; i++)
        fprintf(f, "%s %s (%ld)", i ? "," : "", g_skips[i].why, g_skips[i].n);
    if (g_skips_other) fprintf(f, ", other reasons (%ld)", g_skips_other);
    fputc('\n', f);
}

int engine_host_skips(const char **why, long *n, int cap, long *total) {
    long all = g_skips_other;
    int k = 0;
    for (int i = 0; i < MAX_REASONS && g_skips[i].n; i++) {
        all += g_skips[i].n;
        if (k < cap) {
            why[k] = g_skips[i].why;
            n[k++] = g_skips[i].n;
        }
    }
    if (total) *total = all;
    return k;
}
