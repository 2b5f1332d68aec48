/*
 * test_case_bytes.c — the fuzz byte form of a case (harness/case_bytes.c).
 *
 * Covers: every shipped case file (corpus/cases, *.case) survives struct -> text ->
 * struct -> bytes -> struct -> text unchanged; 10k random byte strings
 * decode to cases that encode canonically (decode -> encode -> decode is
 * the same struct) and print/parse back; the decoder never crashes on any
 * length 0..2000 of random or escape-heavy data; and the shape distribution
 * random bytes get (share of invalid cases, mixed-head groups, model-wide
 * head count differing from the layers', forced splits, median cost) stays
 * inside bounds that keep the fuzz targets fast and the seed bug reachable.
 *
 * Runs from the repository root (the corpus is globbed at run time).
 */
#include <criterion/criterion.h>

#include "../harness/case.h"
#include "../harness/case_bytes.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t cb_rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void cb_fill(uint8_t *buf, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)cb_rng(s);
}

/* Text form of c into a fresh heap string (caller frees). */
static char *cb_text(const case_spec *c) {
    size_t n = case_format(NULL, 0, c);
    char *t = malloc(n + 1);
    cr_assert_not_null(t);
    case_format(t, n + 1, c);
    return t;
}

/* struct -> text -> struct must give the same case and the same text. */
static void cb_check_text(const case_spec *c, const char *what) {
    char *t1 = cb_text(c);
    case_spec back;
    char err[256];
    cr_assert_eq(case_parse(t1, &back, err, sizeof err), 0, "%s: text does not parse: %s\n%s",
                 what, err, t1);
    cr_assert(case_equal(c, &back), "%s: text round trip changed the case:\n%s", what, t1);
    char *t2 = cb_text(&back);
    cr_assert_str_eq(t1, t2, "%s: text not stable", what);
    free(t1);
    free(t2);
}

/* struct -> bytes -> struct must give the same case. */
static size_t cb_check_bytes(const case_spec *c, const char *what, uint8_t *buf) {
    char err[256];
    size_t n = case_encode(c, buf, CASE_BYTES_MAX, err, sizeof err);
    cr_assert_gt(n, 0, "%s: case_encode refused: %s", what, err);
    cr_assert_leq(n, CASE_BYTES_MAX);
    case_spec back;
    case_decode(buf, n, &back);
    char *t1 = cb_text(c), *t2 = cb_text(&back);
    cr_assert(case_equal(c, &back), "%s: bytes round trip changed the case:\n%s\n-- became --\n%s",
              what, t1, t2);
    cr_assert_str_eq(t1, t2, "%s: text differs after the bytes round trip", what);
    free(t1);
    free(t2);
    return n;
}

Test(case_bytes, corpus_round_trip) {
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = glob("corpus/cases/*.case", 0, NULL, &g);
    cr_assert_eq(rc, 0, "no corpus/cases/*.case found (run from the repository root)");
    cr_assert_gt(g.gl_pathc, 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *path = g.gl_pathv[i];
        case_spec c;
        char err[256];
        cr_assert_eq(case_load(path, &c, err, sizeof err), 0, "%s", err);
        cb_check_text(&c, path);
        uint8_t buf[CASE_BYTES_MAX];
        size_t n = cb_check_bytes(&c, path, buf);
        /* Canonical: the decoded case encodes to the very same bytes. */
        case_spec back;
        case_decode(buf, n, &back);
        uint8_t buf2[CASE_BYTES_MAX];
        size_t n2 = case_encode(&back, buf2, sizeof buf2, err, sizeof err);
        cr_assert_eq(n2, n, "%s: re-encoding is %zu bytes, first was %zu", path, n2, n);
        cr_assert_eq(memcmp(buf, buf2, n), 0, "%s: encoding not canonical", path);
    }
    globfree(&g);
}

Test(case_bytes, random_round_trip) {
    uint64_t s = 0xca5eb17e5ull;
    uint8_t in[600], buf[CASE_BYTES_MAX];
    for (int i = 0; i < 10000; i++) {
        size_t len = (size_t)(cb_rng(&s) % sizeof in);
        cb_fill(in, len, &s);
        /* Bias a third of the inputs towards the escape bytes. */
        if (i % 3 == 0)
            for (size_t k = 0; k < len; k++)
                if (cb_rng(&s) % 4 == 0) in[k] = (uint8_t)(0xFD + cb_rng(&s) % 3);
        case_spec c;
        case_decode(in, len, &c);
        char what[64];
        snprintf(what, sizeof what, "random input %d (%zu bytes)", i, len);
        size_t n = cb_check_bytes(&c, what, buf);
        case_spec again;
        case_decode(buf, n, &again);
        cr_assert_eq(memcmp(&c, &again, sizeof c) == 0 || case_equal(&c, &again), 1);
        if (i % 10 == 0) cb_check_text(&c, what);
    }
}

Test(case_bytes, decode_never_crashes) {
    uint64_t s = 42;
    uint8_t *in = malloc(2001);
    cr_assert_not_null(in);
    for (size_t len = 0; len <= 2000; len++) {
        case_spec c;
        cb_fill(in, len, &s);
        case_decode(in, len, &c);
        memset(in, 0xFF, len);
        case_decode(in, len, &c);
        memset(in, 0xFD, len);
        case_decode(in, len, &c);
        memset(in, 0xFE, len);
        case_decode(in, len, &c);
        cr_assert_geq(c.num_layers, 0);
        cr_assert_leq(c.num_layers, CASE_MAX_LAYERS);
        cr_assert_geq(c.num_reqs, 0);
        cr_assert_leq(c.num_reqs, CASE_MAX_REQS);
    }
    case_decode(NULL, 0, &(case_spec){0});
    free(in);
}

Test(case_bytes, encode_refuses_outside_domain) {
    case_spec c;
    case_default(&c);
    uint8_t buf[CASE_BYTES_MAX];
    char err[256];
    snprintf(c.options, sizeof c.options, "isa=avx9000");
    cr_assert_eq(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
    cr_assert(strstr(err, "options") != NULL, "message names the field: %s", err);
    case_default(&c);
    c.num_kv_heads = INT32_MIN;
    cr_assert_eq(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
    cr_assert(strstr(err, "kv_heads") != NULL, "message names the field: %s", err);
    case_default(&c);
    snprintf(c.name, sizeof c.name, "has space");
    cr_assert_eq(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
    cr_assert(strstr(err, "name") != NULL, "message names the field: %s", err);
    case_default(&c);
    cr_assert_eq(case_encode(&c, buf, 3, err, sizeof err), 0, "cap too small");
    cr_assert_gt(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
}

/* ------------------------------------------------------- distribution */

/* What the engine must refuse (mirrors DESIGN §2/§3, not the engine). */
static int cb_invalid(const case_spec *c) {
    int32_t hkv = c->num_kv_heads;
    if (hkv <= 0 || hkv > ATTN_MAX_HEADS) return 1;
    if (c->num_layers == 0 && (c->model_num_heads <= 0 || c->model_num_heads > ATTN_MAX_HEADS ||
                               c->model_num_heads % hkv))
        return 1;
    for (int32_t l = 0; l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        if (L->num_heads <= 0 || L->num_heads > ATTN_MAX_HEADS || L->num_heads % hkv) return 1;
        if (L->window < -1 || L->window == 0 || L->window > (1 << 28)) return 1;
        if (!isfinite(L->softcap) || L->softcap < 0 || !isfinite(L->scale) || L->scale < 0)
            return 1;
    }
    if (c->head_dim <= 0 || c->head_dim > ATTN_MAX_HEAD_DIM) return 1;
    if (c->block_size <= 0 || c->block_size > ATTN_MAX_BLOCK_SIZE) return 1;
    if ((unsigned)c->q_dtype >= AG_DTYPE_COUNT || (unsigned)c->kv_dtype >= AG_DTYPE_COUNT ||
        (unsigned)c->out_dtype >= AG_DTYPE_COUNT)
        return 1;
    if (c->threads < 1 || c->threads > ATTN_MAX_THREADS) return 1;
    if ((unsigned)c->split > ATTN_SPLIT_FIXED) return 1;
    if (c->split == ATTN_SPLIT_FIXED && (c->split_count < 1 || c->split_count > ATTN_MAX_SPLITS))
        return 1;
    if (c->num_reqs < 1) return 1;
    for (int32_t r = 0; r < c->num_reqs; r++)
        if (c->q_len[r] < 1 || c->kv_len[r] < c->q_len[r] || c->kv_len[r] > (1 << 28)) return 1;
    if (strcmp(c->options, "isa=sse9") == 0) return 1;
    return 0;
}

static int cb_mixed(const case_spec *c) {
    for (int32_t l = 1; l < c->num_layers; l++)
        if (c->layers[l].num_heads != c->layers[0].num_heads) return 1;
    return 0;
}

/* tokens x keys x heads x D, summed over requests and layers. */
static double cb_cost(const case_spec *c) {
    double cost = 0;
    for (int32_t r = 0; r < c->num_reqs; r++)
        for (int32_t l = 0; l < c->num_layers; l++)
            cost += (double)c->q_len[r] * c->kv_len[r] * c->layers[l].num_heads * c->head_dim;
    return cost;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(case_bytes, distribution) {
    enum { N = 10000 };
    uint64_t s = 0xd157;
    uint8_t in[256];
    int invalid = 0, mixed = 0, model_diff = 0, forced = 0, multi = 0, windowed = 0, expect = 0;
    double *costs = malloc(N * sizeof *costs);
    cr_assert_not_null(costs);
    int nvalid = 0;
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(cb_rng(&s) % sizeof in);
        cb_fill(in, len, &s);
        case_spec c;
        case_decode(in, len, &c);
        int bad = cb_invalid(&c);
        invalid += bad;
        if (c.num_layers > 1) multi++;
        mixed += cb_mixed(&c);
        if (c.num_layers > 0 && c.model_num_heads != c.layers[0].num_heads) model_diff++;
        if (c.split == ATTN_SPLIT_ON || c.split == ATTN_SPLIT_FIXED) forced++;
        if (c.num_layers > 0 && c.layers[0].window > 0) windowed++;
        if (c.expect != ATTN_OK) expect++;
        if (!bad && !cb_mixed(&c)) costs[nvalid++] = cb_cost(&c);
    }
    qsort(costs, (size_t)nvalid, sizeof *costs, cmp_double);
    double median = nvalid ? costs[nvalid / 2] : 0, p90 = nvalid ? costs[nvalid * 9 / 10] : 0;
    free(costs);
    fprintf(stderr,
            "case_bytes distribution over %d random inputs (0..255 bytes):\n"
            "  invalid %.1f%%, multi-layer %.1f%%, mixed-head groups %.1f%%,\n"
            "  model_num_heads != layer heads %.1f%%, splits forced %.1f%%,\n"
            "  layer 0 windowed %.1f%%, expect != ok %.2f%%,\n"
            "  cost (q*kv*heads*D summed) median %.3g, p90 %.3g\n",
            N, 100.0 * invalid / N, 100.0 * multi / N, 100.0 * mixed / N,
            100.0 * model_diff / N, 100.0 * forced / N, 100.0 * windowed / N,
            100.0 * expect / N, median, p90);
    cr_assert(invalid > N / 50 && invalid < N * 35 / 100, "invalid share %d/%d", invalid, N);
    cr_assert(mixed > N / 50 && mixed < N * 35 / 100, "mixed share %d/%d", mixed, N);
    cr_assert(model_diff > N / 5 && model_diff < N * 8 / 10, "model diff share %d/%d",
              model_diff, N);
    cr_assert(forced > N / 10 && forced < N * 7 / 10, "forced split share %d/%d", forced, N);
    cr_assert(expect < N / 100, "expect != ok share %d/%d", expect, N);
    cr_assert(median > 0 && median < 2e7, "median cost %g", median);
}
