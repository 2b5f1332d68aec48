/*
 * case_text.c — the text form of a case (*.case) in both directions:
 * case_parse / case_load read it, case_format / case_print write the
 * canonical form (which parses back to an equal case).
 *
 * Owns: the grammar of *.case files and the canonical print order; the
 * reference for users is docs/case-format.md (every key, with examples).
 * Does not own what a value means to the engine: raw values the engine must
 * refuse (zero heads, q_len > kv_len, window -5, causal 2, a NaN slope ...)
 * parse fine; only the syntax and the harness limits (CASE_MAX_*) are
 * enforced here.
 *
 * Grammar, one entry per line:
 *     # comment            (also trailing, after whitespace: `x = 1  # note`)
 *     key = value
 * Scalar keys: name expect model_num_heads kv_heads head_dim block_size
 *   q_dtype kv_dtype out_dtype dtype (all three; specific keys win) causal
 *   threads split seed blocks last_block_full place options isa (input
 *   shorthand for `options = isa=X`) q_values k_values v_values values (all
 *   three; specific keys win).
 * List keys: requests = QxK[c|n|cN], ...  (or `none`: zero requests)
 *            layer.<i> = heads=H [window=W|none] [left=L] [right=R]
 *                        [softcap=C] [scale=S] [k_scale=K] [v_scale=V]
 *                        [alibi[=standard|0|1|[s0,s1,...]]]
 *                        [sinks[=seeded|0|1|[x0,x1,...]]]
 *            layers = none            (zero layers: model_num_heads fallback)
 * Floats are anything strtof reads (nan, inf included) or 2^k.
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
#include <sys/stat.h>

static const char *const blocks_names[CASE_BLOCKS_COUNT] = {
    "contiguous", "shuffled", "repeated", "outside",
};
static const char *const place_names[CASE_PLACE_COUNT] = {"tail", "head"};
static const char *const tensor_keys[CASE_T_COUNT] = {"q_values", "k_values", "v_values"};

/* ---------------------------------------------------------------- helpers */

/* Message "line N: key: ..." into errbuf; always returns -1.  The key and
 * the values it quotes come from the text: a byte that is not printable
 * ASCII (an escape sequence, a control character, invalid UTF-8) is shown
 * as \xNN, so no text can drive the terminal the message is printed on. */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int perr(char *errbuf, size_t errlen, int line, const char *key, const char *fmt, ...) {
    if (!errbuf || errlen == 0) return -1;
    char raw[512];
    int n = 0;
    if (key && key[0])
        n = snprintf(raw, sizeof raw, "line %d: %s: ", line, key);
    else
        n = snprintf(raw, sizeof raw, "line %d: ", line);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof raw) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw + n, sizeof raw - (size_t)n, fmt, ap);
        va_end(ap);
    }
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p && o + 1 < errlen; p++) {
        if (*p >= 0x20 && *p < 0x7F) {
            errbuf[o++] = (char)*p;
        } else {
            if (o + 5 > errlen) break;   /* never half an escape */
            snprintf(errbuf + o, 5, "\\x%02x", *p);
            o += 4;
        }
    }
    errbuf[o] = '\0';
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

/* Any float strtof accepts, including nan/inf (deliberately invalid layers),
 * or [-]2^k for k in -149..127 (exact powers of two, subnormals included). */
static int parse_f32(const char *s, float *out) {
    if (!s || !*s) return -1;
    const char *p = s;
    int neg = 0;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    if (p[0] == '2' && p[1] == '^') {
        int32_t k;
        if (parse_i32(p + 2, &k) || k < -149 || k > 127) return -1;
        float v = ldexpf(1.0f, (int)k);
        *out = neg ? -v : v;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end != '\0') return -1;
    /* A number past float's range is refused, not read as +-inf (write
     * `inf` for that), and so is a non-zero one that rounds to zero (0
     * means "default" for a scale).  A result in the subnormals is the
     * nearest float: kept. */
    if (errno == ERANGE && (isinf(v) || v == 0.0f)) return -1;
    *out = v;
    return 0;
}

/* %.9g (exact for any float), or 2^k for a positive power of two that %.9g
 * would print with an exponent (2^-20, not 9.53674316e-07). */
static void fmt_f32(char *out, size_t cap, float f) {
    snprintf(out, cap, "%.9g", (double)f);
    if (isfinite(f) && f > 0.0f && strchr(out, 'e')) {
        int e;
        if (frexpf(f, &e) == 0.5f) snprintf(out, cap, "2^%d", e - 1);
    }
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

/* A causal flag: 0, 1, or a raw byte 2..255 (deliberately invalid). */
static int parse_causal(const char *s, int32_t *out) {
    int32_t v;
    if (parse_i32(s, &v) || v < 0 || v > 255) return -1;
    *out = v;
    return 0;
}

static int parse_name_of(const char *s, const char *const *names, int n, int *out) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) { *out = i; return 0; }
    return -1;
}

/* `ok`, or the name of a refusal kind of the ABI (ag_refusal_name). */
static int parse_expect(const char *s, int32_t *out) {
    if (strcmp(s, "ok") == 0) {
        *out = AG_R_NONE;
        return 0;
    }
    const int k = ag_refusal_parse(s);
    if (k <= AG_R_NONE) return -1;
    *out = k;
    return 0;
}

/* Names and option words: printable, no whitespace, no '#', fit the field. */
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

/* Engine options: words separated by blanks, stored one blank apart. */
static int parse_options(const char *v, char *dst) {
    char tmp[CASE_OPTIONS_LEN];
    size_t n = 0;
    for (const char *p = v; *p;) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        if (n) {
            if (n + 1 >= sizeof tmp) return -1;
            tmp[n++] = ' ';
        }
        while (*p && !isspace((unsigned char)*p)) {
            if (!isgraph((unsigned char)*p) || n + 1 >= sizeof tmp) return -1;
            tmp[n++] = *p++;
        }
    }
    tmp[n] = '\0';
    memcpy(dst, tmp, n + 1);
    return 0;
}

/* "dist [amp]": a case_dist name and a finite amplitude > 0 (default 1). */
static int parse_values(char *v, case_values *out) {
    char *save = NULL;
    char *d = strtok_r(v, " \t", &save), *a = strtok_r(NULL, " \t", &save);
    if (!d || strtok_r(NULL, " \t", &save)) return -1;
    int dist = case_dist_parse(d);
    if (dist < 0) return -1;
    float amp = 1.0f;
    if (a && (parse_f32(a, &amp) || !isfinite(amp) || !(amp > 0.0f))) return -1;
    out->dist = (uint8_t)dist;
    out->amp = amp;
    return 0;
}

/* ---------------------------------------------------------- requests */

/* "QxK" with an optional causality suffix: c (causal), n (non-causal), cN
 * (raw flag N, 0..255).  *flag = -1 without a suffix. */
static int parse_request(char *t, int32_t *q, int32_t *k, int32_t *flag) {
    char *x = strchr(t, 'x');
    if (!x) x = strchr(t, 'X');
    if (!x) return -1;
    *x = '\0';
    char *ks = trim(x + 1);
    char *suf = ks;
    if (*suf == '-' || *suf == '+') suf++;
    while (isdigit((unsigned char)*suf)) suf++;
    *flag = -1;
    if (*suf == 'n' && suf[1] == '\0') {
        *flag = 0;
    } else if (*suf == 'c') {
        *flag = 1;
        if (suf[1] && parse_causal(suf + 1, flag)) return -1;
    } else if (*suf) {
        return -1;
    }
    *suf = '\0';
    return parse_i32(trim(t), q) || parse_i32(ks, k) ? -1 : 0;
}

/* "QxK, QxK, ..." or "none".  flags[r] = suffix flag or -1. */
static int parse_requests(char *v, case_spec *c, int32_t *flags, char *errbuf, size_t errlen,
                          int line) {
    if (strcmp(v, "none") == 0) {
        c->num_reqs = 0;
        return 0;
    }
    if (!*v) return perr(errbuf, errlen, line, "requests", "empty list (use 'none')");
    int32_t n = 0;
    /* every comma separates two requests: an empty item (",,", a leading or
     * a trailing comma) is an error, not a request fewer */
    for (char *tok = v; tok;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        char *t = trim(tok);
        tok = comma ? comma + 1 : NULL;
        char shown[48];
        snprintf(shown, sizeof shown, "%s", t);
        if (n >= CASE_MAX_REQS)
            return perr(errbuf, errlen, line, "requests", "more than %d requests",
                        CASE_MAX_REQS);
        if (!*t)
            return perr(errbuf, errlen, line, "requests", "request %d is empty (%s)", (int)n + 1,
                        n == 0 ? "a comma before the first request"
                        : !tok ? "a comma after the last request"
                               : "two commas in a row");
        if (parse_request(t, &c->q_len[n], &c->kv_len[n], &flags[n]))
            return perr(errbuf, errlen, line, "requests",
                        "bad request '%s' (expected QxK, QxKc, QxKn or QxKc<0..255>)", shown);
        n++;
    }
    c->num_reqs = n;
    return 0;
}

/* ---------------------------------------------------------------- layers */

/* Next blank-separated token of *sp; a [...] list keeps its blanks. */
static char *next_token(char **sp) {
    char *s = *sp;
    while (*s && isspace((unsigned char)*s)) s++;
    if (!*s) {
        *sp = s;
        return NULL;
    }
    char *t = s;
    int depth = 0;
    while (*s && (depth || !isspace((unsigned char)*s))) {
        if (*s == '[') depth++;
        else if (*s == ']' && depth) depth--;
        s++;
    }
    if (*s) *s++ = '\0';
    *sp = s;
    return t;
}

/* "[v0,v1,...]" appended to c->list; *off and *n say where.  Returns 0, -1
 * (syntax, *bad names the element) or -2 (CASE_MAX_LIST exceeded). */
static int parse_list(char *v, case_spec *c, uint16_t *off, int32_t *n, const char **bad) {
    size_t len = strlen(v);
    *bad = v;
    if (len < 2 || v[0] != '[' || v[len - 1] != ']') return -1;
    v[len - 1] = '\0';
    char *body = trim(v + 1);
    *off = (uint16_t)c->list_len;
    *n = 0;
    if (!*body) return 0;
    char *save = NULL;
    for (char *e = strtok_r(body, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        e = trim(e);
        *bad = e;
        if (c->list_len >= CASE_MAX_LIST) return -2;
        if (parse_f32(e, &c->list[c->list_len])) return -1;
        c->list_len++;
        (*n)++;
    }
    return 0;
}

enum {
    F_HEADS, F_WINDOW, F_LEFT, F_RIGHT, F_SOFTCAP, F_SCALE, F_KSCALE, F_VSCALE, F_ALIBI,
    F_SINKS, F_COUNT
};
static const char *const layer_fields[F_COUNT] = {
    "heads", "window", "left", "right", "softcap", "scale", "k_scale", "v_scale", "alibi",
    "sinks",
};

/* alibi= / sinks=: a source word or an explicit list (into c->list). */
static int parse_source(char *val, int f, case_spec *c, case_layer *L, int32_t *nlist,
                        char *errbuf, size_t errlen, int line, const char *key) {
    const char *named = f == F_ALIBI ? "standard" : "seeded";
    uint8_t *src = f == F_ALIBI ? &L->alibi : &L->sinks;
    if (!val || strcmp(val, "1") == 0 || strcmp(val, named) == 0) {
        *src = CASE_SRC_STANDARD;
    } else if (strcmp(val, "0") == 0 || strcmp(val, "none") == 0) {
        *src = CASE_SRC_NONE;
    } else {
        const char *bad = val;
        int rc = parse_list(val, c, f == F_ALIBI ? &L->alibi_off : &L->sinks_off, nlist, &bad);
        if (rc == -2)
            return perr(errbuf, errlen, line, key, "%s list: explicit lists of all layers "
                        "exceed %d values (CASE_MAX_LIST)", layer_fields[f], CASE_MAX_LIST);
        if (rc)
            return perr(errbuf, errlen, line, key, "%s: bad value '%s' (expected %s, 0, 1 or "
                        "[v0,v1,...])", layer_fields[f], bad, named);
        *src = CASE_SRC_LIST;
    }
    return 0;
}

/* "heads=H window=W left=L right=R softcap=C scale=S k_scale=K v_scale=V
 *  alibi[=...] sinks[=...]" */
static int parse_layer(char *v, case_spec *c, case_layer *L, char *errbuf, size_t errlen,
                       int line, const char *key) {
    memset(L, 0, sizeof(*L));
    L->window = -1;
    L->window_left = L->window_right = CASE_WINDOW_UNSET;
    L->k_scale = L->v_scale = 1.0f;
    unsigned seen = 0;
    int32_t nlist[2] = {-1, -1};   /* alibi, sinks: explicit list lengths */
    char *s = v;
    for (char *tok = next_token(&s); tok; tok = next_token(&s)) {
        char *eq = strchr(tok, '=');
        char *val = NULL;
        if (eq) {
            *eq = '\0';
            val = eq + 1;
        }
        int f = -1;
        for (int i = 0; i < F_COUNT; i++)
            if (strcmp(tok, layer_fields[i]) == 0) f = i;
        if (f < 0) return perr(errbuf, errlen, line, key, "unknown layer field '%s'", tok);
        if (seen & (1u << f)) return perr(errbuf, errlen, line, key, "duplicate field '%s'", tok);
        seen |= 1u << f;
        if (f < F_ALIBI && !val) return perr(errbuf, errlen, line, key, "'%s' needs a value", tok);
        int bad = 0;
        switch (f) {
        case F_HEADS: bad = parse_i32(val, &L->num_heads); break;
        case F_WINDOW:
            if (strcmp(val, "none") == 0) L->window = -1;
            else bad = parse_i32(val, &L->window);
            break;
        case F_LEFT: case F_RIGHT: {
            int32_t *w = f == F_LEFT ? &L->window_left : &L->window_right;
            if (strcmp(val, "none") == 0) *w = -1;
            else bad = parse_i32(val, w);
            break;
        }
        case F_SOFTCAP: bad = parse_f32(val, &L->softcap); break;
        case F_SCALE: bad = parse_f32(val, &L->scale); break;
        case F_KSCALE: bad = parse_f32(val, &L->k_scale); break;
        case F_VSCALE: bad = parse_f32(val, &L->v_scale); break;
        default:
            if (parse_source(val, f, c, L, &nlist[f - F_ALIBI], errbuf, errlen, line, key))
                return -1;
            break;
        }
        if (bad)
            return perr(errbuf, errlen, line, key, "%s: bad value '%s'%s", tok, val,
                        f >= F_SOFTCAP ? " (a float: finite and within +-3.40282347e+38 and not "
                                         "rounding to 0, or inf, nan, 2^k)"
                        : f == F_HEADS ? " (an integer from -2147483648 to 2147483647)"
                                       : " (an integer from -2147483648 to 2147483647, or none)");
    }
    if (!(seen & (1u << F_HEADS))) return perr(errbuf, errlen, line, key, "missing heads=");
    /* a (left, right) pair overrides `window`: keep the struct canonical */
    if (seen & ((1u << F_LEFT) | (1u << F_RIGHT))) L->window = -1;
    for (int i = 0; i < 2; i++)
        if (nlist[i] >= 0 && nlist[i] != L->num_heads)
            return perr(errbuf, errlen, line, key, "%s list has %d values, heads=%d",
                        layer_fields[F_ALIBI + i], (int)nlist[i], (int)L->num_heads);
    return 0;
}

/* Explicit lists in layer order (alibi, then sinks), whatever the order of
 * the lines: the canonical layout the byte decoder produces too. */
static void relayout_lists(case_spec *c, float *old /* CASE_MAX_LIST */) {
    memcpy(old, c->list, (size_t)c->list_len * sizeof(float));
    int32_t n = 0;
    for (int32_t l = 0; l < c->num_layers; l++) {
        case_layer *L = &c->layers[l];
        if (L->alibi == CASE_SRC_LIST) {
            memcpy(c->list + n, old + L->alibi_off, (size_t)L->num_heads * sizeof(float));
            L->alibi_off = (uint16_t)n;
            n += L->num_heads;
        }
        if (L->sinks == CASE_SRC_LIST) {
            memcpy(c->list + n, old + L->sinks_off, (size_t)L->num_heads * sizeof(float));
            L->sinks_off = (uint16_t)n;
            n += L->num_heads;
        }
    }
    memset(c->list + n, 0, (size_t)(CASE_MAX_LIST - n) * sizeof(float));
    c->list_len = n;
}

/* ------------------------------------------------------------------ parse */

/* The scalar keys are case.h's list (CASE_KEYS); K_* are its values. */
enum {
    K_NAME = CASE_KEY_NAME, K_EXPECT = CASE_KEY_EXPECT, K_MODEL_HEADS = CASE_KEY_MODEL_HEADS,
    K_KV_HEADS = CASE_KEY_KV_HEADS, K_HEAD_DIM = CASE_KEY_HEAD_DIM,
    K_BLOCK_SIZE = CASE_KEY_BLOCK_SIZE, K_Q_DTYPE = CASE_KEY_Q_DTYPE,
    K_KV_DTYPE = CASE_KEY_KV_DTYPE, K_OUT_DTYPE = CASE_KEY_OUT_DTYPE, K_DTYPE = CASE_KEY_DTYPE,
    K_CAUSAL = CASE_KEY_CAUSAL, K_THREADS = CASE_KEY_THREADS, K_SPLIT = CASE_KEY_SPLIT,
    K_SEED = CASE_KEY_SEED, K_BLOCKS = CASE_KEY_BLOCKS, K_LAST_FULL = CASE_KEY_LAST_FULL,
    K_PLACE = CASE_KEY_PLACE, K_Q_VALUES = CASE_KEY_Q_VALUES, K_K_VALUES = CASE_KEY_K_VALUES,
    K_V_VALUES = CASE_KEY_V_VALUES, K_VALUES = CASE_KEY_VALUES, K_OPTIONS = CASE_KEY_OPTIONS,
    K_ISA = CASE_KEY_ISA, K_REQUESTS = CASE_KEY_REQUESTS, K_LAYERS = CASE_KEY_LAYERS,
    K_COUNT = CASE_KEY_LAYER   /* layer.<i> lines are parsed apart */
};

static int parse_split(const char *v, case_spec *c) {
    if (strcmp(v, "auto") == 0) { c->split = AG_SPLIT_AUTO; c->split_count = 0; return 0; }
    if (strcmp(v, "off") == 0) { c->split = AG_SPLIT_OFF; c->split_count = 0; return 0; }
    if (strcmp(v, "on") == 0) { c->split = AG_SPLIT_ON; c->split_count = 0; return 0; }
    if (strncmp(v, "raw:", 4) == 0) {
        char tmp[64];
        if (strlen(v + 4) >= sizeof(tmp)) return -1;
        strcpy(tmp, v + 4);
        char *colon = strchr(tmp, ':');
        if (!colon) return -1;
        *colon = '\0';
        int32_t m, n;
        if (parse_i32(tmp, &m) || parse_i32(colon + 1, &n)) return -1;
        c->split = m;
        c->split_count = n;
        return 0;
    }
    int32_t n;
    if (parse_i32(v, &n)) return -1;
    c->split = AG_SPLIT_FIXED;
    c->split_count = n;
    return 0;
}

/* Keys whose value applies to several fields wait here for the end. */
typedef struct pending {
    ag_dtype dtype_all;
    int32_t causal_all;
    case_values values_all;
} pending;

static int parse_scalar(int k, char *v, case_spec *c, pending *pd) {
    int i = 0;
    int32_t b;
    switch (k) {
    case K_NAME: return parse_word(v, c->name, sizeof(c->name));
    case K_EXPECT: return parse_expect(v, &c->expect);
    case K_MODEL_HEADS: return parse_i32(v, &c->model_num_heads);
    case K_KV_HEADS: return parse_i32(v, &c->num_kv_heads);
    case K_HEAD_DIM: return parse_i32(v, &c->head_dim);
    case K_BLOCK_SIZE: return parse_i32(v, &c->block_size);
    case K_Q_DTYPE: return parse_dtype(v, &c->q_dtype);
    case K_KV_DTYPE: return parse_dtype(v, &c->kv_dtype);
    case K_OUT_DTYPE: return parse_dtype(v, &c->out_dtype);
    case K_DTYPE: return parse_dtype(v, &pd->dtype_all);
    case K_CAUSAL: return parse_causal(v, &pd->causal_all);
    case K_THREADS: return parse_i32(v, &c->threads);
    case K_SPLIT: return parse_split(v, c);
    case K_SEED: return parse_u64(v, &c->seed);
    case K_BLOCKS:
        if (parse_name_of(v, blocks_names, CASE_BLOCKS_COUNT, &i)) return -1;
        c->blocks = (case_blocks)i;
        return 0;
    case K_LAST_FULL:
        if (parse_bool(v, &b)) return -1;
        c->last_block_full = (uint8_t)b;
        return 0;
    case K_PLACE:
        if (parse_name_of(v, place_names, CASE_PLACE_COUNT, &i)) return -1;
        c->place = (uint8_t)i;
        return 0;
    case K_Q_VALUES: case K_K_VALUES: case K_V_VALUES:
        return parse_values(v, &c->values[k - K_Q_VALUES]);
    case K_VALUES: return parse_values(v, &pd->values_all);
    case K_OPTIONS: return parse_options(v, c->options);
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

/* What the parser needs besides the case while it reads the lines. */
typedef struct pstate {
    int seen[K_COUNT];
    int have_layer[CASE_MAX_LAYERS];
    int layer_lines, keys;
    int32_t flags[CASE_MAX_REQS];   /* request suffixes, -1 none */
    float list[CASE_MAX_LIST];      /* scratch for relayout_lists */
} pstate;

/* One `key = value` line (comments and blanks already gone). */
static int parse_line(char *s, case_spec *c, pending *pd, pstate *ps, char *errbuf,
                      size_t errlen, int line) {
    char *eq = strchr(s, '=');
    if (!eq) return perr(errbuf, errlen, line, NULL, "expected 'key = value', got '%.40s'", s);
    *eq = '\0';
    char *key = trim(s);
    char *val = trim(eq + 1);
    ps->keys++;
    if (strncmp(key, "layer.", 6) == 0) {
        int32_t idx;
        if (parse_i32(key + 6, &idx) || idx < 0 || idx >= CASE_MAX_LAYERS)
            return perr(errbuf, errlen, line, key, "layer index must be 0..%d",
                        CASE_MAX_LAYERS - 1);
        if (ps->have_layer[idx]) return perr(errbuf, errlen, line, key, "duplicate layer");
        if (ps->seen[K_LAYERS])
            return perr(errbuf, errlen, line, key, "conflicts with 'layers = none'");
        char lkey[32];
        snprintf(lkey, sizeof(lkey), "layer.%d", (int)idx);
        if (parse_layer(val, c, &c->layers[idx], errbuf, errlen, line, lkey)) return -1;
        ps->have_layer[idx] = 1;
        c->lines.layer[idx] = line;
        ps->layer_lines++;
        return 0;
    }
    int k = -1;
    for (int i = 0; i < K_COUNT; i++)
        if (strcmp(key, case_key_name((case_key)i)) == 0) k = i;
    if (k < 0) return perr(errbuf, errlen, line, key, "unknown key");
    if (ps->seen[k]) return perr(errbuf, errlen, line, key, "duplicate key");
    if ((k == K_ISA && ps->seen[K_OPTIONS]) || (k == K_OPTIONS && ps->seen[K_ISA]))
        return perr(errbuf, errlen, line, key, "conflicts with '%s' on line %d",
                    k == K_ISA ? "options" : "isa", ps->seen[k == K_ISA ? K_OPTIONS : K_ISA]);
    ps->seen[k] = line;
    c->lines.key[k] = line;
    if (k == K_REQUESTS) return parse_requests(val, c, ps->flags, errbuf, errlen, line);
    if (k == K_LAYERS) {
        if (strcmp(val, "none") != 0)
            return perr(errbuf, errlen, line, key, "only 'none' is allowed (use layer.<i>)");
        if (ps->layer_lines)
            return perr(errbuf, errlen, line, key, "conflicts with layer.<i> lines");
        return 0;
    }
    char shown[64];
    snprintf(shown, sizeof shown, "%s", val);   /* the parsers may cut val up */
    if (parse_scalar(k, val, c, pd)) {
        if (k >= K_Q_VALUES && k <= K_VALUES)
            return perr(errbuf, errlen, line, key, "bad value '%s' (expected a distribution "
                        "[uniform normal heavy const_row one_hot denormal extreme] and an "
                        "amplitude > 0)", shown);
        return perr(errbuf, errlen, line, key, "bad value '%s'", shown);
    }
    return 0;
}

/* After the last line: layer count, the keys that set several fields. */
static int finish(case_spec *c, const pending *pd, pstate *ps, char *errbuf,
                  size_t errlen, int line) {
    if (ps->keys == 0) {
        /* no line to name: the whole text is the problem */
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "no keys: the text is empty or only comments (%d lines); "
                     "a case needs at least one key", line);
        return -1;
    }
    if (ps->seen[K_LAYERS]) {
        c->num_layers = 0;
    } else if (ps->layer_lines) {
        for (int i = 0; i < ps->layer_lines; i++)
            if (!ps->have_layer[i])
                return perr(errbuf, errlen, line, "layer", "layer indices must be 0..%d "
                            "without gaps; layer.%d is missing", ps->layer_lines - 1, i);
        for (int i = ps->layer_lines; i < CASE_MAX_LAYERS; i++)
            memset(&c->layers[i], 0, sizeof(c->layers[i]));
        c->num_layers = ps->layer_lines;
    }
    if (c->num_layers == 0) {
        memset(c->layers, 0, sizeof(c->layers));
        c->list_len = 0;
    }
    relayout_lists(c, ps->list);
    if (ps->seen[K_DTYPE]) {
        if (!ps->seen[K_Q_DTYPE]) c->q_dtype = pd->dtype_all;
        if (!ps->seen[K_KV_DTYPE]) c->kv_dtype = pd->dtype_all;
        if (!ps->seen[K_OUT_DTYPE]) c->out_dtype = pd->dtype_all;
    }
    if (ps->seen[K_VALUES])
        for (int t = 0; t < CASE_T_COUNT; t++)
            if (!ps->seen[K_Q_VALUES + t]) c->values[t] = pd->values_all;
    for (int32_t r = 0; r < c->num_reqs; r++)
        c->causal[r] = (uint8_t)(ps->flags[r] >= 0 ? ps->flags[r] : pd->causal_all);
    /* Requests beyond num_reqs are zero so that equality is plain. */
    for (int32_t r = c->num_reqs; r < CASE_MAX_REQS; r++) c->q_len[r] = c->kv_len[r] = c->causal[r] = 0;
    return 0;
}

int case_parse(const char *text, case_spec *out, char *errbuf, size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!text || !out) return perr(errbuf, errlen, 0, NULL, "NULL argument");
    /* ~35 KB: a layer line with two lists of 1024 values fits */
    enum { LINE_MAX_LEN = 1 << 16 };
    case_spec *c = malloc(sizeof *c);
    pstate *ps = calloc(1, sizeof *ps);
    char *buf = malloc(LINE_MAX_LEN);
    int rc = -1, line = 0;
    if (!c || !ps || !buf) {
        perr(errbuf, errlen, 0, NULL, "out of memory");
        goto out;
    }
    case_default(c);
    c->list_len = 0;
    pending pd = {AG_F32, 1, {CASE_DIST_UNIFORM, 1.0f}};
    for (int r = 0; r < CASE_MAX_REQS; r++) ps->flags[r] = -1;
    for (const char *p = text; *p;) {
        line++;
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len >= LINE_MAX_LEN) {
            perr(errbuf, errlen, line, NULL, "line longer than %d bytes", LINE_MAX_LEN - 1);
            goto out;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        p = nl ? nl + 1 : p + len;
        /* A '#' at the start or after whitespace opens a comment. */
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '#' && (i == 0 || isspace((unsigned char)buf[i - 1]))) {
                buf[i] = '\0';
                break;
            }
        char *s = trim(buf);
        if (*s && parse_line(s, c, &pd, ps, errbuf, errlen, line)) goto out;
    }
    if (finish(c, &pd, ps, errbuf, errlen, line)) goto out;
    *out = *c;
    rc = 0;
out:
    free(buf);
    free(ps);
    free(c);
    return rc;
}

int case_load(const char *path, case_spec *out, char *errbuf, size_t errlen) {
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!path || !out) return perr(errbuf, errlen, 0, NULL, "NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* a folder opens but does not read: say so, not "read error" */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s: is a directory, not a case file (give the .case files "
                     "in it)", path);
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
            snprintf(errbuf, errlen, "%s: %s", path,
                     rd_err ? "read error" : "file too large (more than 1 MiB)");
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

static void sb_f32(sbuf *sb, float f) {
    char t[32];
    fmt_f32(t, sizeof t, f);
    sb_printf(sb, "%s", t);
}

static void sb_dtype(sbuf *sb, const char *key, ag_dtype d) {
    const char *name = ag_dtype_name(d);
    if (name) sb_printf(sb, "%s = %s\n", key, name);
    else sb_printf(sb, "%s = %d\n", key, (int)d);
}

static void sb_expect(sbuf *sb, int32_t kind) {
    if (kind == AG_R_NONE) sb_printf(sb, "expect = ok\n");
    else if (kind > AG_R_NONE && kind < AG_R_COUNT)
        sb_printf(sb, "expect = %s\n", ag_refusal_name((ag_refusal)kind));
    else sb_printf(sb, "expect = ok  # the bytes named refusal kind %d, which does not exist\n",
                   (int)kind);
}

static void sb_split(sbuf *sb, const case_spec *c) {
    switch (c->split) {
    case AG_SPLIT_AUTO: sb_printf(sb, "split = auto\n"); break;
    case AG_SPLIT_OFF: sb_printf(sb, "split = off\n"); break;
    case AG_SPLIT_ON: sb_printf(sb, "split = on\n"); break;
    case AG_SPLIT_FIXED: sb_printf(sb, "split = %" PRId32 "\n", c->split_count); break;
    default:
        sb_printf(sb, "split = raw:%d:%" PRId32 "\n", (int)c->split, c->split_count);
        break;
    }
}

/* requests, with `causal = X` when every request shares X, else suffixes */
static void sb_requests(sbuf *sb, const case_spec *c) {
    int32_t nr = c->num_reqs;
    if (nr <= 0 || nr > CASE_MAX_REQS) {
        sb_printf(sb, "causal = 1\nrequests = none\n");
        return;
    }
    int shared = 1;
    for (int32_t r = 1; r < nr; r++) shared &= c->causal[r] == c->causal[0];
    if (shared) sb_printf(sb, "causal = %d\n", (int)c->causal[0]);
    sb_printf(sb, "requests = ");
    for (int32_t r = 0; r < nr; r++) {
        sb_printf(sb, "%s%" PRId32 "x%" PRId32, r ? ", " : "", c->q_len[r], c->kv_len[r]);
        if (shared) continue;
        if (c->causal[r] <= 1) sb_printf(sb, "%c", c->causal[r] ? 'c' : 'n');
        else sb_printf(sb, "c%d", (int)c->causal[r]);
    }
    sb_printf(sb, "\n");
}

static void sb_source(sbuf *sb, const case_spec *c, const case_layer *L, int alibi) {
    const uint8_t src = alibi ? L->alibi : L->sinks;
    const uint16_t off = alibi ? L->alibi_off : L->sinks_off;
    const char *key = alibi ? "alibi" : "sinks";
    if (src == CASE_SRC_NONE) return;
    if (src == CASE_SRC_STANDARD) {
        sb_printf(sb, " %s=%s", key, alibi ? "standard" : "seeded");
        return;
    }
    if (src != CASE_SRC_LIST || L->num_heads <= 0 || (int32_t)off + L->num_heads > c->list_len) {
        sb_printf(sb, " %s=invalid-%d", key, (int)src);   /* does not parse */
        return;
    }
    sb_printf(sb, " %s=[", key);
    for (int32_t h = 0; h < L->num_heads; h++) {
        if (h) sb_printf(sb, ",");
        sb_f32(sb, c->list[off + h]);
    }
    sb_printf(sb, "]");
}

static void sb_layer(sbuf *sb, const case_spec *c, int32_t l) {
    const case_layer *L = &c->layers[l];
    sb_printf(sb, "layer.%" PRId32 " = heads=%" PRId32, l, L->num_heads);
    if (L->window_left != CASE_WINDOW_UNSET || L->window_right != CASE_WINDOW_UNSET) {
        if (L->window_left != CASE_WINDOW_UNSET) sb_printf(sb, " left=%" PRId32, L->window_left);
        if (L->window_right != CASE_WINDOW_UNSET) sb_printf(sb, " right=%" PRId32, L->window_right);
    } else if (L->window == -1) {
        sb_printf(sb, " window=none");
    } else {
        sb_printf(sb, " window=%" PRId32, L->window);
    }
    sb_printf(sb, " softcap=");
    sb_f32(sb, L->softcap);
    sb_printf(sb, " scale=");
    sb_f32(sb, L->scale);
    /* scales mean something for fp8 caches only: shown there, or when set */
    const int fp8 = ag_dtype_is_fp8(c->kv_dtype);
    if (fp8 || memcmp(&L->k_scale, &(float){1.0f}, sizeof(float)) != 0 ||
        memcmp(&L->v_scale, &(float){1.0f}, sizeof(float)) != 0) {
        sb_printf(sb, " k_scale=");
        sb_f32(sb, L->k_scale);
        sb_printf(sb, " v_scale=");
        sb_f32(sb, L->v_scale);
    }
    sb_source(sb, c, L, 1);
    sb_source(sb, c, L, 0);
    sb_printf(sb, "\n");
}

size_t case_format(char *buf, size_t cap, const case_spec *c) {
    sbuf sb = {buf, cap, 0};
    if (buf && cap) buf[0] = '\0';
    if (!c) return 0;
    /* empty strings print as "key =" (no trailing blank) and parse back as "" */
    sb_printf(&sb, "name =%s%s\n", c->name[0] ? " " : "", c->name);
    sb_expect(&sb, c->expect);
    sb_printf(&sb, "model_num_heads = %" PRId32 "\n", c->model_num_heads);
    sb_printf(&sb, "kv_heads = %" PRId32 "\n", c->num_kv_heads);
    sb_printf(&sb, "head_dim = %" PRId32 "\n", c->head_dim);
    sb_printf(&sb, "block_size = %" PRId32 "\n", c->block_size);
    sb_dtype(&sb, "q_dtype", c->q_dtype);
    sb_dtype(&sb, "kv_dtype", c->kv_dtype);
    sb_dtype(&sb, "out_dtype", c->out_dtype);
    sb_printf(&sb, "threads = %" PRId32 "\n", c->threads);
    sb_split(&sb, c);
    sb_printf(&sb, "seed = 0x%016" PRIx64 "\n", c->seed);
    if ((unsigned)c->blocks < CASE_BLOCKS_COUNT)
        sb_printf(&sb, "blocks = %s\n", blocks_names[c->blocks]);
    else
        sb_printf(&sb, "blocks = invalid-%d\n", (int)c->blocks); /* does not parse */
    sb_printf(&sb, "last_block_full = %d\n", (int)c->last_block_full);
    if (c->place < CASE_PLACE_COUNT) sb_printf(&sb, "place = %s\n", place_names[c->place]);
    else sb_printf(&sb, "place = invalid-%d\n", (int)c->place);   /* does not parse */
    for (int t = 0; t < CASE_T_COUNT; t++) {
        const char *d = case_dist_name(c->values[t].dist);
        if (d) sb_printf(&sb, "%s = %s ", tensor_keys[t], d);
        else sb_printf(&sb, "%s = invalid-%d ", tensor_keys[t], (int)c->values[t].dist);
        sb_f32(&sb, c->values[t].amp);
        sb_printf(&sb, "\n");
    }
    sb_printf(&sb, "options =%s%s\n", c->options[0] ? " " : "", c->options);
    sb_requests(&sb, c);
    int32_t nl = c->num_layers;
    if (nl <= 0 || nl > CASE_MAX_LAYERS) sb_printf(&sb, "layers = none\n");
    else
        for (int32_t l = 0; l < nl; l++) sb_layer(&sb, c, l);
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
