/*
 * case.c — the case struct's default, its text form (*.case) in both
 * directions, and struct equality.
 *
 * Owns: the grammar of *.case files and the canonical print order.  Does not
 * own what a value means to the engine: raw values that the engine must
 * refuse (zero heads, q_len > kv_len, window -5, ...) parse fine; only the
 * syntax and the harness limits (CASE_MAX_*) are enforced here.
 *
 * Grammar, one entry per line:
 *     # comment            (also trailing, after whitespace: `x = 1  # note`)
 *     key = value
 * Scalar keys: name, expect, model_num_heads, kv_heads, head_dim, block_size,
 *   q_dtype, kv_dtype, out_dtype, dtype (all three; specific keys win),
 *   causal, threads, split, seed, blocks, isa.
 * List keys: requests = QxK, QxK, ...   (or `none`: zero requests)
 *            layer.<i> = heads=H [window=W|none] [softcap=C] [scale=S]
 *                        [alibi[=0|1]] [sinks[=0|1]]
 *            layers = none            (zero layers: model_num_heads fallback)
 * Dtypes are f32|bf16|f16 or a raw integer (an out-of-range enum, for
 * deliberately invalid cases).  split is auto|off|on|<N> (= FIXED N) or
 * raw:<mode>:<count> for an out-of-range mode.  expect is `ok` or a status
 * name without the ATTN_E_ prefix, any case (mixed_heads, bad_seq_len).
 */
#include "case.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void case_default(case_spec *c) {
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "default");
    c->num_layers = 1;
    /* every layer slot: a layer a caller adds by hand starts sane */
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        c->layers[l].window = -1;
        c->layers[l].window_left = c->layers[l].window_right = CASE_WINDOW_UNSET;
        c->layers[l].k_scale = c->layers[l].v_scale = 1.0f;
    }
    c->layers[0].num_heads = 8;
    c->model_num_heads = 8;
    c->num_kv_heads = 2;
    c->head_dim = 64;
    c->block_size = 16;
    c->q_dtype = c->kv_dtype = c->out_dtype = AG_F32;
    c->num_reqs = 1;
    for (int r = 0; r < CASE_MAX_REQS; r++) c->causal[r] = 1;   /* requests added by hand too */
    for (int t = 0; t < CASE_T_COUNT; t++) {
        c->values[t].dist = CASE_DIST_UNIFORM;
        c->values[t].amp = 1.0f;
    }
    c->q_len[0] = 1;
    c->kv_len[0] = 37;
    c->blocks = CASE_BLOCKS_CONTIGUOUS;
    c->threads = 1;
    c->split = ATTN_SPLIT_AUTO;
    c->split_count = 0;
    c->seed = 1;
    c->expect = ATTN_OK;
    c->options[0] = '\0';
}

/* ------------------------------------------------------ derived values */

void case_layer_window(const case_layer *L, int32_t *left, int32_t *right) {
    if (L->window_left != CASE_WINDOW_UNSET || L->window_right != CASE_WINDOW_UNSET) {
        *left = L->window_left == CASE_WINDOW_UNSET ? -1 : L->window_left;
        *right = L->window_right == CASE_WINDOW_UNSET ? -1 : L->window_right;
        return;
    }
    if (L->window >= 1) {
        *left = *right = L->window - 1;
        return;
    }
    /* -1: none; a raw invalid W (0, -5) maps to a pair no engine may accept
     * (below -1), so the refusal it deserves still comes */
    *left = *right = L->window == -1 ? -1 : (L->window == 0 ? -2 : L->window - 1);
}

/* slopes[h] = b^(h+1), b = 2^(-8/P) for the P = largest power of two <= n
 * heads; the remaining n - P heads take the odd powers of 2^(-4/P). */
void case_alibi_standard(int32_t n, float *out) {
    if (n <= 0) return;
    int32_t P = 1;
    while (P * 2 <= n) P *= 2;
    for (int32_t h = 0; h < P; h++) out[h] = (float)exp2(-8.0 * (double)(h + 1) / (double)P);
    for (int32_t j = 0; j < n - P; j++)
        out[P + j] = (float)exp2(-4.0 * (double)(2 * j + 1) / (double)P);
}

static const char *const dist_names[CASE_DIST_COUNT] = {
    "uniform", "normal", "heavy", "const_row", "one_hot", "denormal", "extreme",
};

int case_dist_parse(const char *s) {
    for (int i = 0; i < CASE_DIST_COUNT; i++)
        if (strcmp(s, dist_names[i]) == 0) return i;
    return -1;
}

const char *case_dist_name(int dist) {
    return dist >= 0 && dist < CASE_DIST_COUNT ? dist_names[dist] : NULL;
}

/* ---------------------------------------------------------------- helpers */

static const char *const blocks_names[CASE_BLOCKS_COUNT] = {
    "contiguous", "shuffled", "repeated",
};

/* Message "line N: key: ..." into errbuf; always returns -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int perr(char *errbuf, size_t errlen, int line, const char *key, const char *fmt, ...) {
    if (!errbuf || errlen == 0) return -1;
    int n = 0;
    if (key && key[0])
        n = snprintf(errbuf, errlen, "line %d: %s: ", line, key);
    else
        n = snprintf(errbuf, errlen, "line %d: ", line);
    if (n < 0) n = 0;
    if ((size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static char *trim(char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* A whole token (no trailing garbage) as int32, base 10. */
static int parse_i32(const char *s, int32_t *out) {
    if (!s || !*s) return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') return -1;
    if (v < INT32_MIN || v > INT32_MAX) return -1;
    *out = (int32_t)v;
    return 0;
}

/* Decimal or 0x-hex u64; no sign. */
static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        if (!isxdigit((unsigned char)s[2])) return -1;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno != 0 || end == s || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Any float strtof accepts, including nan/inf (deliberately invalid layers). */
static int parse_f32(const char *s, float *out) {
    if (!s || !*s) return -1;
    char *end = NULL;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end != '\0') return -1;
    /* ERANGE on underflow still yields the nearest float: accept it; an
     * overflow yields +-inf, which is also what the text asked for. */
    *out = v;
    return 0;
}

static int parse_dtype(const char *s, ag_dtype *out) {
    for (int d = 0; d < AG_DTYPE_COUNT; d++)
        if (strcmp(s, ag_dtype_name((ag_dtype)d)) == 0) { *out = (ag_dtype)d; return 0; }
    int32_t v;
    if (parse_i32(s, &v) == 0) { *out = (ag_dtype)v; return 0; }
    return -1;
}

static int parse_bool(const char *s, int32_t *out) {
    if (strcmp(s, "0") == 0) { *out = 0; return 0; }
    if (strcmp(s, "1") == 0) { *out = 1; return 0; }
    return -1;
}

/* The status whose name, without "ATTN_E_" (or "ATTN_"), matches s. */
static int parse_status(const char *s, attn_status *out) {
    if (strcasecmp(s, "ok") == 0) { *out = ATTN_OK; return 0; }
    for (int st = 1; st < (int)ATTN_STATUS_COUNT; st++) {
        const char *full = attn_status_name((attn_status)st);
        if (!full) continue;
        const char *tail = full;
        if (strncmp(tail, "ATTN_E_", 7) == 0) tail += 7;
        else if (strncmp(tail, "ATTN_", 5) == 0) tail += 5;
        if (strcasecmp(s, tail) == 0 || strcasecmp(s, full) == 0) {
            *out = (attn_status)st;
            return 0;
        }
    }
    return -1;
}

/* Names and isa strings: printable, no whitespace, no '#', fit the field. */
static int parse_word(const char *s, char *dst, size_t cap) {
    size_t n = strlen(s);
    if (n >= cap) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!isgraph(ch) || ch == '#') return -1;
    }
    memcpy(dst, s, n + 1);
    return 0;
}

/* "QxK, QxK, ..." or "none". */
static int parse_requests(char *v, case_spec *c, char *errbuf, size_t errlen, int line) {
    if (strcmp(v, "none") == 0) {
        c->num_reqs = 0;
        return 0;
    }
    int32_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        char *x = strchr(t, 'x');
        if (!x) x = strchr(t, 'X');
        if (!x) return perr(errbuf, errlen, line, "requests", "expected QxK, got '%s'", t);
        *x = '\0';
        int32_t q, k;
        if (parse_i32(trim(t), &q) || parse_i32(trim(x + 1), &k))
            return perr(errbuf, errlen, line, "requests", "bad integer in '%s'x'%s'", t, x + 1);
        if (n >= CASE_MAX_REQS)
            return perr(errbuf, errlen, line, "requests", "more than %d requests",
                        CASE_MAX_REQS);
        c->q_len[n] = q;
        c->kv_len[n] = k;
        n++;
    }
    if (n == 0) return perr(errbuf, errlen, line, "requests", "empty list (use 'none')");
    c->num_reqs = n;
    return 0;
}

/* "heads=H window=W softcap=C scale=S alibi sinks" */
static int parse_layer(char *v, case_layer *L, char *errbuf, size_t errlen, int line,
                       const char *key) {
    memset(L, 0, sizeof(*L));
    L->window = -1;
    L->window_left = L->window_right = CASE_WINDOW_UNSET;
    L->k_scale = L->v_scale = 1.0f;
    int have_heads = 0;
    unsigned seen = 0;
    char *save = NULL;
    for (char *tok = strtok_r(v, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        const char *val = NULL;
        if (eq) {
            *eq = '\0';
            val = eq + 1;
        }
        static const char *const fields[] = {"heads", "window", "softcap", "scale",
                                             "alibi", "sinks"};
        int f = -1;
        for (int i = 0; i < 6; i++)
            if (strcmp(tok, fields[i]) == 0) f = i;
        if (f < 0) return perr(errbuf, errlen, line, key, "unknown layer field '%s'", tok);
        if (seen & (1u << f)) return perr(errbuf, errlen, line, key, "duplicate field '%s'", tok);
        seen |= 1u << f;
        if (f < 4 && !val) return perr(errbuf, errlen, line, key, "'%s' needs a value", tok);
        int32_t b = 1;
        int bad = 0;
        switch (f) {
        case 0: bad = parse_i32(val, &L->num_heads); have_heads = 1; break;
        case 1:
            if (strcmp(val, "none") == 0) L->window = -1;
            else bad = parse_i32(val, &L->window);
            break;
        case 2: bad = parse_f32(val, &L->softcap); break;
        case 3: bad = parse_f32(val, &L->scale); break;
        case 4:
            if (val) bad = parse_bool(val, &b);
            L->alibi = b ? CASE_SRC_STANDARD : CASE_SRC_NONE;
            break;
        default:
            if (val) bad = parse_bool(val, &b);
            L->sinks = b ? CASE_SRC_STANDARD : CASE_SRC_NONE;
            break;
        }
        if (bad) return perr(errbuf, errlen, line, key, "bad value '%s' for '%s'",
                             val ? val : "", tok);
    }
    if (!have_heads) return perr(errbuf, errlen, line, key, "missing heads=");
    return 0;
}

/* ------------------------------------------------------------------ parse */

enum {
    K_NAME, K_EXPECT, K_MODEL_HEADS, K_KV_HEADS, K_HEAD_DIM, K_BLOCK_SIZE, K_Q_DTYPE,
    K_KV_DTYPE, K_OUT_DTYPE, K_DTYPE, K_CAUSAL, K_THREADS, K_SPLIT, K_SEED, K_BLOCKS,
    K_ISA, K_REQUESTS, K_LAYERS, K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "name", "expect", "model_num_heads", "kv_heads", "head_dim", "block_size", "q_dtype",
    "kv_dtype", "out_dtype", "dtype", "causal", "threads", "split", "seed", "blocks",
    "isa", "requests", "layers",
};

static int parse_split(const char *v, case_spec *c) {
    if (strcmp(v, "auto") == 0) { c->split = ATTN_SPLIT_AUTO; c->split_count = 0; return 0; }
    if (strcmp(v, "off") == 0) { c->split = ATTN_SPLIT_OFF; c->split_count = 0; return 0; }
    if (strcmp(v, "on") == 0) { c->split = ATTN_SPLIT_ON; c->split_count = 0; return 0; }
    if (strncmp(v, "raw:", 4) == 0) {
        char tmp[64];
        if (strlen(v + 4) >= sizeof(tmp)) return -1;
        strcpy(tmp, v + 4);
        char *colon = strchr(tmp, ':');
        if (!colon) return -1;
        *colon = '\0';
        int32_t m, n;
        if (parse_i32(tmp, &m) || parse_i32(colon + 1, &n)) return -1;
        c->split = (attn_split_mode)m;
        c->split_count = n;
        return 0;
    }
    int32_t n;
    if (parse_i32(v, &n)) return -1;
    c->split = ATTN_SPLIT_FIXED;
    c->split_count = n;
    return 0;
}

static int parse_scalar(int k, const char *v, case_spec *c, ag_dtype *dtype_all,
                        int32_t *causal_all) {
    switch (k) {
    case K_NAME: return parse_word(v, c->name, sizeof(c->name));
    case K_EXPECT: return parse_status(v, &c->expect);
    case K_MODEL_HEADS: return parse_i32(v, &c->model_num_heads);
    case K_KV_HEADS: return parse_i32(v, &c->num_kv_heads);
    case K_HEAD_DIM: return parse_i32(v, &c->head_dim);
    case K_BLOCK_SIZE: return parse_i32(v, &c->block_size);
    case K_Q_DTYPE: return parse_dtype(v, &c->q_dtype);
    case K_KV_DTYPE: return parse_dtype(v, &c->kv_dtype);
    case K_OUT_DTYPE: return parse_dtype(v, &c->out_dtype);
    case K_DTYPE: return parse_dtype(v, dtype_all);
    case K_CAUSAL: return parse_bool(v, causal_all);
    case K_THREADS: return parse_i32(v, &c->threads);
    case K_SPLIT: return parse_split(v, c);
    case K_SEED: return parse_u64(v, &c->seed);
    case K_BLOCKS:
        for (int i = 0; i < CASE_BLOCKS_COUNT; i++)
            if (strcmp(v, blocks_names[i]) == 0) { c->blocks = (case_blocks)i; return 0; }
        return -1;
    case K_ISA: {
        /* the historical spelling of the attnguard engine's `options = isa=X` */
        char isa[CASE_OPTIONS_LEN - 4];
        if (parse_word(v, isa, sizeof(isa))) return -1;
        if (isa[0]) snprintf(c->options, sizeof(c->options), "isa=%s", isa);
        else c->options[0] = '\0';
        return 0;
    }
    default: return -1;
    }
}

int case_parse(const char *text, case_spec *out, char *errbuf, size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!text || !out) return perr(errbuf, errlen, 0, NULL, "NULL argument");

    case_spec c;
    case_default(&c);
    int seen[K_COUNT] = {0};
    int have_layer[CASE_MAX_LAYERS] = {0};
    int layer_lines = 0;
    ag_dtype dtype_all = AG_F32;
    int32_t causal_all = 1;
    char buf[4096];
    int line = 0;
    const char *p = text;

    while (*p) {
        line++;
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len >= sizeof(buf)) return perr(errbuf, errlen, line, NULL, "line too long");
        memcpy(buf, p, len);
        buf[len] = '\0';
        p = nl ? nl + 1 : p + len;

        /* A '#' at the start or after whitespace opens a comment. */
        for (size_t i = 0; i < len; i++) {
            if (buf[i] == '#' && (i == 0 || isspace((unsigned char)buf[i - 1]))) {
                buf[i] = '\0';
                break;
            }
        }
        char *s = trim(buf);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) return perr(errbuf, errlen, line, NULL, "expected 'key = value'");
        *eq = '\0';
        char *key = trim(s);
        char *val = trim(eq + 1);

        if (strncmp(key, "layer.", 6) == 0) {
            int32_t idx;
            if (parse_i32(key + 6, &idx) || idx < 0 || idx >= CASE_MAX_LAYERS)
                return perr(errbuf, errlen, line, key, "layer index must be 0..%d",
                            CASE_MAX_LAYERS - 1);
            if (have_layer[idx]) return perr(errbuf, errlen, line, key, "duplicate layer");
            if (seen[K_LAYERS])
                return perr(errbuf, errlen, line, key, "conflicts with 'layers = none'");
            char lkey[32];
            snprintf(lkey, sizeof(lkey), "layer.%d", (int)idx);
            if (parse_layer(val, &c.layers[idx], errbuf, errlen, line, lkey)) return -1;
            have_layer[idx] = 1;
            layer_lines++;
            continue;
        }
        int k = -1;
        for (int i = 0; i < K_COUNT; i++)
            if (strcmp(key, key_names[i]) == 0) k = i;
        if (k < 0) return perr(errbuf, errlen, line, key, "unknown key");
        if (seen[k]) return perr(errbuf, errlen, line, key, "duplicate key");
        seen[k] = line;
        if (k == K_REQUESTS) {
            if (parse_requests(val, &c, errbuf, errlen, line)) return -1;
        } else if (k == K_LAYERS) {
            if (strcmp(val, "none") != 0)
                return perr(errbuf, errlen, line, key, "only 'none' is allowed (use layer.<i>)");
            if (layer_lines)
                return perr(errbuf, errlen, line, key, "conflicts with layer.<i> lines");
        } else if (parse_scalar(k, val, &c, &dtype_all, &causal_all)) {
            return perr(errbuf, errlen, line, key, "bad value '%s'", val);
        }
    }

    if (seen[K_LAYERS]) {
        c.num_layers = 0;
    } else if (layer_lines) {
        for (int i = 0; i < layer_lines; i++)
            if (!have_layer[i])
                return perr(errbuf, errlen, line, "layer", "layer indices must be 0..%d "
                            "without gaps; layer.%d is missing", layer_lines - 1, i);
        for (int i = layer_lines; i < CASE_MAX_LAYERS; i++)
            memset(&c.layers[i], 0, sizeof(c.layers[i]));
        c.num_layers = layer_lines;
    }
    if (c.num_layers == 0)
        memset(c.layers, 0, sizeof(c.layers));
    if (seen[K_DTYPE]) {
        if (!seen[K_Q_DTYPE]) c.q_dtype = dtype_all;
        if (!seen[K_KV_DTYPE]) c.kv_dtype = dtype_all;
        if (!seen[K_OUT_DTYPE]) c.out_dtype = dtype_all;
    }
    for (int32_t r = 0; r < c.num_reqs; r++) c.causal[r] = (uint8_t)causal_all;
    /* Requests beyond num_reqs are zero so that equality is plain. */
    for (int32_t r = c.num_reqs; r < CASE_MAX_REQS; r++) c.q_len[r] = c.kv_len[r] = c.causal[r] = 0;
    *out = c;
    return 0;
}

int case_load(const char *path, case_spec *out, char *errbuf, size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!path || !out) return perr(errbuf, errlen, 0, NULL, "NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* Case files are small; refuse anything absurd instead of reading it. */
    enum { MAX_CASE_FILE = 1 << 20 };
    char *text = malloc(MAX_CASE_FILE + 1);
    if (!text) {
        fclose(f);
        if (errbuf && errlen) snprintf(errbuf, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t n = fread(text, 1, MAX_CASE_FILE + 1, f);
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err || n > MAX_CASE_FILE) {
        free(text);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s: %s", path, rd_err ? "read error" : "file too large");
        return -1;
    }
    text[n] = '\0';
    if (memchr(text, '\0', n)) {
        free(text);
        if (errbuf && errlen) snprintf(errbuf, errlen, "%s: NUL byte in text", path);
        return -1;
    }
    char msg[256];
    int rc = case_parse(text, out, msg, sizeof(msg));
    free(text);
    if (rc && errbuf && errlen) snprintf(errbuf, errlen, "%s: %s", path, msg);
    return rc;
}

/* ------------------------------------------------------------------ print */

typedef struct sbuf {
    char *buf;
    size_t cap, len;   /* len counts what would have been written */
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *sb, const char *fmt, ...) {
    char dummy[1];
    char *dst = dummy;
    size_t room = 0;
    if (sb->buf && sb->len < sb->cap) {
        dst = sb->buf + sb->len;
        room = sb->cap - sb->len;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(room ? dst : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) sb->len += (size_t)n;
}

static void sb_dtype(sbuf *sb, const char *key, ag_dtype d) {
    const char *name = ag_dtype_name(d);
    if (name) sb_printf(sb, "%s = %s\n", key, name);
    else sb_printf(sb, "%s = %d\n", key, (int)d);
}

static void sb_status(sbuf *sb, attn_status st) {
    if (st == ATTN_OK) {
        sb_printf(sb, "expect = ok\n");
        return;
    }
    const char *full = attn_status_name(st);
    const char *tail = full ? full : "?";
    if (strncmp(tail, "ATTN_E_", 7) == 0) tail += 7;
    else if (strncmp(tail, "ATTN_", 5) == 0) tail += 5;
    sb_printf(sb, "expect = ");
    for (const char *q = tail; *q; q++) sb_printf(sb, "%c", tolower((unsigned char)*q));
    sb_printf(sb, "\n");
}

size_t case_format(char *buf, size_t cap, const case_spec *c) {
    sbuf sb = {buf, cap, 0};
    if (buf && cap) buf[0] = '\0';
    if (!c) return 0;
    /* empty strings print as "key =" (no trailing blank) and parse back as "" */
    sb_printf(&sb, "name =%s%s\n", c->name[0] ? " " : "", c->name);
    sb_status(&sb, c->expect);
    sb_printf(&sb, "model_num_heads = %" PRId32 "\n", c->model_num_heads);
    sb_printf(&sb, "kv_heads = %" PRId32 "\n", c->num_kv_heads);
    sb_printf(&sb, "head_dim = %" PRId32 "\n", c->head_dim);
    sb_printf(&sb, "block_size = %" PRId32 "\n", c->block_size);
    sb_dtype(&sb, "q_dtype", c->q_dtype);
    sb_dtype(&sb, "kv_dtype", c->kv_dtype);
    sb_dtype(&sb, "out_dtype", c->out_dtype);
    sb_printf(&sb, "causal = %d\n", c->num_reqs > 0 ? (int)c->causal[0] : 1);
    sb_printf(&sb, "threads = %" PRId32 "\n", c->threads);
    switch (c->split) {
    case ATTN_SPLIT_AUTO: sb_printf(&sb, "split = auto\n"); break;
    case ATTN_SPLIT_OFF: sb_printf(&sb, "split = off\n"); break;
    case ATTN_SPLIT_ON: sb_printf(&sb, "split = on\n"); break;
    case ATTN_SPLIT_FIXED: sb_printf(&sb, "split = %" PRId32 "\n", c->split_count); break;
    default:
        sb_printf(&sb, "split = raw:%d:%" PRId32 "\n", (int)c->split, c->split_count);
        break;
    }
    sb_printf(&sb, "seed = 0x%016" PRIx64 "\n", c->seed);
    if ((unsigned)c->blocks < CASE_BLOCKS_COUNT)
        sb_printf(&sb, "blocks = %s\n", blocks_names[c->blocks]);
    else
        sb_printf(&sb, "blocks = invalid-%d\n", (int)c->blocks); /* does not parse */
    if (strncmp(c->options, "isa=", 4) == 0)
        sb_printf(&sb, "isa = %s\n", c->options + 4);
    int32_t nr = c->num_reqs;
    if (nr <= 0 || nr > CASE_MAX_REQS) {
        sb_printf(&sb, "requests = none\n");
    } else {
        sb_printf(&sb, "requests = ");
        for (int32_t r = 0; r < nr; r++)
            sb_printf(&sb, "%s%" PRId32 "x%" PRId32, r ? ", " : "", c->q_len[r], c->kv_len[r]);
        sb_printf(&sb, "\n");
    }
    int32_t nl = c->num_layers;
    if (nl <= 0 || nl > CASE_MAX_LAYERS) {
        sb_printf(&sb, "layers = none\n");
    } else {
        for (int32_t l = 0; l < nl; l++) {
            const case_layer *L = &c->layers[l];
            sb_printf(&sb, "layer.%" PRId32 " = heads=%" PRId32, l, L->num_heads);
            if (L->window == -1) sb_printf(&sb, " window=none");
            else sb_printf(&sb, " window=%" PRId32, L->window);
            sb_printf(&sb, " softcap=%.9g scale=%.9g", (double)L->softcap, (double)L->scale);
            if (L->alibi) sb_printf(&sb, " alibi");
            if (L->sinks) sb_printf(&sb, " sinks");
            sb_printf(&sb, "\n");
        }
    }
    return sb.len;
}

void case_print(FILE *f, const case_spec *c) {
    if (!f || !c) return;
    char small[4096];
    size_t n = case_format(small, sizeof(small), c);
    if (n < sizeof(small)) {
        fputs(small, f);
        return;
    }
    char *big = malloc(n + 1);
    if (!big) return;
    case_format(big, n + 1, c);
    fputs(big, f);
    free(big);
}

/* ------------------------------------------------------------------ equal */

/* Floats are equal when their bits are, or when both are NaN (the text form
 * keeps NaN-ness and sign but not the payload). */
static int feq(float a, float b) {
    if (isnan(a) && isnan(b)) return 1;
    return memcmp(&a, &b, sizeof(a)) == 0;
}

int case_equal(const case_spec *a, const case_spec *b) {
    if (!a || !b) return a == b;
    if (strncmp(a->name, b->name, CASE_NAME_LEN) != 0) return 0;
    if (strncmp(a->options, b->options, CASE_OPTIONS_LEN) != 0) return 0;
    if (a->num_layers != b->num_layers || a->model_num_heads != b->model_num_heads ||
        a->num_kv_heads != b->num_kv_heads || a->head_dim != b->head_dim ||
        a->block_size != b->block_size || a->q_dtype != b->q_dtype ||
        a->kv_dtype != b->kv_dtype || a->out_dtype != b->out_dtype ||
        a->num_reqs != b->num_reqs || a->blocks != b->blocks ||
        a->threads != b->threads || a->split != b->split || a->seed != b->seed ||
        a->expect != b->expect)
        return 0;
    /* split_count means something only for FIXED and raw (invalid) modes. */
    if (a->split != ATTN_SPLIT_AUTO && a->split != ATTN_SPLIT_OFF &&
        a->split != ATTN_SPLIT_ON && a->split_count != b->split_count)
        return 0;
    int32_t nl = a->num_layers;
    if (nl < 0) nl = 0;
    if (nl > CASE_MAX_LAYERS) nl = CASE_MAX_LAYERS;
    for (int32_t l = 0; l < nl; l++) {
        const case_layer *x = &a->layers[l], *y = &b->layers[l];
        if (x->num_heads != y->num_heads || x->window != y->window ||
            !feq(x->softcap, y->softcap) || !feq(x->scale, y->scale) ||
            (x->alibi != 0) != (y->alibi != 0) || (x->sinks != 0) != (y->sinks != 0))
            return 0;
    }
    int32_t nr = a->num_reqs;
    if (nr < 0) nr = 0;
    if (nr > CASE_MAX_REQS) nr = CASE_MAX_REQS;
    for (int32_t r = 0; r < nr; r++)
        if (a->q_len[r] != b->q_len[r] || a->kv_len[r] != b->kv_len[r] ||
            a->causal[r] != b->causal[r])
            return 0;
    return 1;
}
