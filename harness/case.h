/*
 * case.h — the harness's test case: one struct holding everything a run
 * needs (group, batch, dtypes, threads, split policy, value seed, expected
 * status), and its readable text form (*.case, one `key = value` per line).
 *
 * A case may be deliberately invalid (zero heads, seq_len < q_len, ...):
 * the struct stores raw values and the engine is expected to refuse them
 * with `expect`.  Parsing validates syntax and harness limits only.
 */
#ifndef ATTN_CASE_H
#define ATTN_CASE_H

#include "../src/attn.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CASE_MAX_LAYERS 8
#define CASE_MAX_REQS   64
#define CASE_NAME_LEN   64
#define CASE_ISA_LEN    16

typedef enum case_blocks {
    CASE_BLOCKS_CONTIGUOUS = 0, /* request r's blocks follow each other */
    CASE_BLOCKS_SHUFFLED,       /* physical ids permuted by the seed */
    CASE_BLOCKS_REPEATED,       /* shuffled, and requests share some physical
                                   blocks read-only (prefix-cache style) */
    CASE_BLOCKS_COUNT
} case_blocks;

typedef struct case_layer {
    int32_t num_heads;
    int32_t window;     /* -1 = none */
    float softcap;      /* 0 = off */
    float scale;        /* 0 = 1/sqrt(head_dim) */
    uint8_t alibi;      /* 1: ALiBi slopes 2^(-8(h+1)/Hq) */
    uint8_t sinks;      /* 1: one sink logit per head, drawn from the seed */
} case_layer;

typedef struct attn_case {
    char name[CASE_NAME_LEN];
    int32_t num_layers;                 /* 0..CASE_MAX_LAYERS */
    case_layer layers[CASE_MAX_LAYERS];
    int32_t model_num_heads;            /* builder fallback (and the seed bug's source) */
    int32_t num_kv_heads, head_dim, block_size;
    attn_dtype q_dtype, kv_dtype, out_dtype;
    int32_t causal;                     /* 1 decoder, 0 encoder */
    int32_t num_reqs;                   /* 0..CASE_MAX_REQS */
    int32_t q_len[CASE_MAX_REQS];
    int32_t kv_len[CASE_MAX_REQS];      /* seq_len: keys incl. the new tokens */
    case_blocks blocks;
    int32_t threads;
    attn_split_mode split;
    int32_t split_count;                /* ATTN_SPLIT_FIXED */
    uint64_t seed;                      /* values of q, K, V, sinks, block shuffle */
    attn_status expect;                 /* ATTN_OK, or the status the engine must return */
    char isa[CASE_ISA_LEN];             /* "" = engine default */
} attn_case;

/* A valid small default (1 layer of 8 heads, 2 KV heads, D 64, one decode
 * request); parsers start from it so every key is optional. */
void case_default(attn_case *c);

/* Parse the text form.  Returns 0, or -1 with a message naming the line and
 * the key in errbuf.  Unknown keys, duplicate scalar keys, malformed values
 * and values outside the harness limits (CASE_MAX_*) are errors. */
int case_parse(const char *text, attn_case *out, char *errbuf, size_t errlen);
int case_load(const char *path, attn_case *out, char *errbuf, size_t errlen);

/* Print the text form (parses back to an identical struct). */
void case_print(FILE *f, const attn_case *c);
/* Same into a buffer; returns the length that would have been written. */
size_t case_format(char *buf, size_t cap, const attn_case *c);

/* Struct equality on every field that matters (name included). */
int case_equal(const attn_case *a, const attn_case *b);

#endif /* ATTN_CASE_H */
