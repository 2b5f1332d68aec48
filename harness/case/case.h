/*
 * case.h — the harness's test case: one struct holding everything a run
 * needs (group, batch, dtypes, value distributions, threads, split policy,
 * memory placement, seed, expected status), and its readable text form
 * (*.case, one `key = value` per line; docs/case-format.md lists every key).
 *
 * A case may be deliberately invalid (zero heads, seq_len < q_len, ...):
 * the struct stores raw values and the engine is expected to refuse them
 * with `expect`.  Parsing validates syntax and harness limits only; what
 * is valid is validity.h's one model.
 *
 * Everything engine-facing is in the adapter ABI's terms
 * (include/attnguard/engine.h): dtypes, the split policy, and the expected
 * refusal (an ag_refusal kind).  Engine options are the engine's own words
 * (its ag_variant list says which exist).
 */
#ifndef AG_CASE_H
#define AG_CASE_H

#include "../../include/attnguard/engine.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CASE_MAX_LAYERS 64
#define CASE_MAX_REQS   256
#define CASE_MAX_LIST   4096   /* explicit ALiBi slopes and sinks, all layers together */
#define CASE_MAX_HEADS  4096   /* the most heads of a layer the harness forms slopes and
                                  sinks for (more is a value the engine must refuse) */
#define CASE_NAME_LEN   64
#define CASE_OPTIONS_LEN 64
#define CASE_WINDOW_UNSET (-2) /* window_left/right not given: `window` decides */

/* The keys of the text form, in their canonical print order: the one list
 * the parser, the printer and the messages that name a line read. */
#define CASE_KEYS(X)                                                                          \
    X(NAME, "name") X(EXPECT, "expect") X(MODEL_HEADS, "model_num_heads")                     \
    X(KV_HEADS, "kv_heads") X(HEAD_DIM, "head_dim") X(BLOCK_SIZE, "block_size")               \
    X(Q_DTYPE, "q_dtype") X(KV_DTYPE, "kv_dtype") X(OUT_DTYPE, "out_dtype") X(DTYPE, "dtype") \
    X(CAUSAL, "causal") X(THREADS, "threads") X(SPLIT, "split") X(SEED, "seed")               \
    X(BLOCKS, "blocks") X(LAST_FULL, "last_block_full") X(PLACE, "place")                     \
    X(Q_VALUES, "q_values") X(K_VALUES, "k_values") X(V_VALUES, "v_values")                   \
    X(VALUES, "values") X(OPTIONS, "options") X(ISA, "isa") X(REQUESTS, "requests")           \
    X(LAYERS, "layers") X(LAYER, "layer")
#define CASE_KEY_ENUM(id, name) CASE_KEY_##id,
typedef enum case_key { CASE_KEYS(CASE_KEY_ENUM) CASE_KEY_COUNT } case_key;
#undef CASE_KEY_ENUM

/* Where the text form set each field: 1-based line numbers, 0 when the
 * case did not come from a text or the key was absent.  Not part of what
 * the case is (case_equal ignores it); messages about a field name it. */
typedef struct case_lines {
    int32_t key[CASE_KEY_COUNT];   /* CASE_KEY_LAYER: unused (per layer below) */
    int32_t layer[CASE_MAX_LAYERS]; /* the layer.<i> lines */
} case_lines;

typedef enum case_blocks {
    CASE_BLOCKS_CONTIGUOUS = 0, /* request r's blocks follow each other */
    CASE_BLOCKS_SHUFFLED,       /* physical ids permuted by the seed */
    CASE_BLOCKS_REPEATED,       /* shuffled, and requests share some physical
                                   blocks read-only (prefix caching) */
    CASE_BLOCKS_OUTSIDE,        /* contiguous, but the last block the first request
                                   uses is the id just past the cache: a block id the
                                   engine must refuse */
    CASE_BLOCKS_COUNT
} case_blocks;

/* Where ALiBi slopes and sink logits come from. */
typedef enum case_source {
    CASE_SRC_NONE = 0,
    CASE_SRC_STANDARD,          /* alibi: the slope set real models use (closest power of
                                   two interleave); sinks: drawn from the seed */
    CASE_SRC_LIST,              /* explicit values in case.list[off .. off + num_heads) */
    CASE_SRC_COUNT
} case_source;

typedef struct case_layer {
    int32_t num_heads;
    int32_t window;             /* -1 none; W >= 1 is shorthand for (W-1, W-1), causal
                                   rows seeing only k <= p anyway */
    int32_t window_left;        /* CASE_WINDOW_UNSET, -1 unbounded, or >= 0 */
    int32_t window_right;
    float softcap;              /* 0 = off */
    float scale;                /* 0 = 1/sqrt(head_dim) */
    float k_scale, v_scale;     /* fp8 KV: value = decode(code) * scale; 1 otherwise */
    uint8_t alibi;              /* case_source */
    uint8_t sinks;              /* case_source */
    uint16_t alibi_off, sinks_off; /* CASE_SRC_LIST: offsets into case.list */
} case_layer;

/* How the values of one tensor are drawn (each element, before it is
 * rounded to the tensor's dtype). */
typedef enum case_dist {
    CASE_DIST_UNIFORM = 0,      /* uniform in [-amp, amp) */
    CASE_DIST_NORMAL,           /* normal, sigma amp (vLLM's randn at amp 1) */
    CASE_DIST_HEAVY,            /* uniform, with rare outliers of 2^12 amp */
    CASE_DIST_CONST_ROW,        /* every element of a row the same value in [-amp, amp) */
    CASE_DIST_ONE_HOT,          /* one element per row +-amp, the rest 0 */
    CASE_DIST_DENORMAL,         /* the dtype's subnormals, signs mixed, amp ignored */
    CASE_DIST_EXTREME,          /* +-the dtype's largest finite value, amp ignored */
    CASE_DIST_SPIKE,            /* one element per row +-amp, the rest uniform in [-1, 1) */
    CASE_DIST_COUNT
} case_dist;

typedef struct case_values {
    uint8_t dist;               /* case_dist */
    float amp;                  /* > 0; 1 is the historical [-1, 1) */
} case_values;

enum { CASE_T_Q = 0, CASE_T_K, CASE_T_V, CASE_T_COUNT };

/* Where guarded runs place each buffer the engine reads or writes. */
typedef enum case_place {
    CASE_PLACE_TAIL = 0,        /* its last byte abuts an inaccessible page */
    CASE_PLACE_HEAD,            /* its first byte abuts an inaccessible page */
    CASE_PLACE_COUNT
} case_place;

typedef struct case_spec {
    char name[CASE_NAME_LEN];
    int32_t num_layers;                 /* 0..CASE_MAX_LAYERS */
    case_layer layers[CASE_MAX_LAYERS];
    int32_t model_num_heads;            /* builder fallback (and the seed bug's source) */
    int32_t num_kv_heads, head_dim, block_size;
    ag_dtype q_dtype, kv_dtype, out_dtype;
    int32_t num_reqs;                   /* 0..CASE_MAX_REQS */
    int32_t q_len[CASE_MAX_REQS];
    int32_t kv_len[CASE_MAX_REQS];      /* seq_len: keys incl. the new tokens */
    uint8_t causal[CASE_MAX_REQS];      /* 1 causal (decoder), 0 non-causal; raw values
                                           other than 0/1 are deliberately invalid */
    case_blocks blocks;
    uint8_t last_block_full;            /* 1: the highest physical block is used, and full */
    uint8_t place;                      /* case_place */
    case_values values[CASE_T_COUNT];   /* q, k, v */
    int32_t threads;
    int32_t split;                      /* ag_split; raw values outside it are invalid */
    int32_t split_count;                /* AG_SPLIT_FIXED */
    uint64_t seed;                      /* values, sinks, block shuffle */
    int32_t expect;                     /* 0 (AG_R_NONE): every stage succeeds; else the
                                           ag_refusal kind the engine must answer with */
    char options[CASE_OPTIONS_LEN];     /* engine words ("isa=avx2 tune=amd"); "" = default */
    case_lines lines;                   /* where the text set each field */
    int32_t list_len;                   /* used entries of list */
    float list[CASE_MAX_LIST];          /* explicit slopes and sinks */
} case_spec;

/* A valid small default (1 layer of 8 heads, 2 KV heads, D 64, one causal
 * decode request, uniform [-1, 1) values); parsers start from it so every
 * key is optional. */
void case_default(case_spec *c);

/* Parse the text form.  Returns 0, or -1 with a message naming the line and
 * the key in errbuf.  Unknown keys, duplicate scalar keys, malformed values,
 * values outside the harness limits (CASE_MAX_*) and a text with no key at
 * all (empty or only comments) are errors. */
int case_parse(const char *text, case_spec *out, char *errbuf, size_t errlen);
int case_load(const char *path, case_spec *out, char *errbuf, size_t errlen);

/* Print the text form (parses back to an identical struct). */
void case_print(FILE *f, const case_spec *c);
/* Same into a buffer; returns the length that would have been written. */
size_t case_format(char *buf, size_t cap, const case_spec *c);

/* Struct equality on every field that matters (name included; the line
 * numbers are not part of a case). */
int case_equal(const case_spec *a, const case_spec *b);

/* The text key of k ("kv_heads", ...; "layer" for layer.<i>). */
const char *case_key_name(case_key k);
/* The line of the case's text that set key k (layer: layer.<index>), or
 * the line of the shorthand that set it (`dtype` for q_dtype, `values`
 * for k_values, `causal` for a request's flag, ...); 0 when none did. */
int32_t case_line(const case_spec *c, case_key k, int32_t index);

/* Resolved window of layer l for the engine: (left, right), -1 unbounded.
 * window_left/right when set, else `window` W as (W-1, W-1), else (-1, -1).
 * Raw invalid values pass through unchanged. */
void case_layer_window(const case_layer *L, int32_t *left, int32_t *right);

/* The standard ALiBi slopes for n heads (the ALiBi paper's closest power of
 * two interleave, as vLLM and Hugging Face compute them): out[n]. */
void case_alibi_standard(int32_t n, float *out);

/* Cost of running the case once: query rows x keys x query heads x head_dim,
 * summed over requests and layers (model_num_heads when there are no
 * layers); counts below 1 (invalid) count as 1; saturates at UINT64_MAX. */
uint64_t case_cost(const case_spec *c);

/* The value of a dist name ("uniform", ...) or -1; and the name of a dist. */
int case_dist_parse(const char *s);
const char *case_dist_name(int dist);

#endif /* AG_CASE_H */
