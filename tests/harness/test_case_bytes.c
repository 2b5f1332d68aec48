/*
 * test_case_bytes.c — the fuzz byte form of a case (harness/case/case_bytes.c).
 *
 * Covers: every shipped case file (corpus/cases, *.case) survives struct -> text ->
 * struct -> bytes -> struct -> text unchanged; 10k random byte strings
 * decode to cases that encode canonically (decode -> encode -> decode is
 * the same struct) and print/parse back; the decoder never crashes on any
 * length 0..2000 of random or escape-heavy data; every field of case_spec
 * is reachable; the budget byte caps the cost; and the distribution random
 * bytes get (invalid cases, mixed-head groups, tail shapes, the new fields,
 * median cost) stays inside bounds that keep the fuzz targets fast, the
 * seed bug reachable and every field in play.
 *
 * Runs from the repository root (the corpus is globbed at run time).
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/case/case_bytes.h"
#include "../../harness/case/validity.h"

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
        /* canonical: the case decoded from the encoding encodes the same */
        uint8_t buf2[CASE_BYTES_MAX];
        char err[256];
        size_t n2 = case_encode(&again, buf2, sizeof buf2, err, sizeof err);
        cr_assert(n2 == n && memcmp(buf, buf2, n) == 0, "%s: encoding not canonical", what);
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
    snprintf(c.options, sizeof c.options, "isa=avx9000 tune=x");   /* any words encode */
    cr_assert_gt(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
    snprintf(c.options, sizeof c.options, "isa=a\tb");   /* but only the parser's form */
    cr_assert_eq(case_encode(&c, buf, sizeof buf, err, sizeof err), 0);
    cr_assert(strstr(err, "options") != NULL, "message names the field: %s", err);
    case_default(&c);
    c.num_kv_heads = INT32_MIN + 1;   /* int32's ends encode (int32_extremes), not this */
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

/* Every field case_spec gained round-trips through the bytes: the mutator
 * can reach it (a canonical encoding exists) and the decoder gives it back. */
Test(case_bytes, new_fields_reachable) {
    uint8_t buf[CASE_BYTES_MAX];
    const int32_t heads[4] = {12, 40, 71, 8};
    for (int i = 0; i < 4; i++) {
        case_spec c;
        case_default(&c);
        c.num_kv_heads = heads[i] == 71 ? 1 : 4;
        c.layers[0].num_heads = c.model_num_heads = heads[i];
        c.layers[0].alibi = CASE_SRC_STANDARD;
        cb_check_bytes(&c, "alibi=standard", buf);
    }
    case_spec c;
    case_default(&c);
    c.kv_dtype = AG_FP8_E4M3;
    c.num_layers = 3;
    c.layers[1] = c.layers[2] = c.layers[0];
    c.layers[0].k_scale = 0x1p-4f;
    c.layers[0].v_scale = 0.37f;            /* no table entry: raw float */
    c.layers[1].window_left = 15;
    c.layers[1].window_right = 0;
    c.layers[2].window_left = -1;           /* right not given */
    c.layers[2].k_scale = -1.0f;            /* invalid on an fp8 cache */
    const float slopes[8] = {0.0f, -0.5f, 1e30f, 0x1p-149f, 0.5f, 0.5f, 0.5f, NAN};
    const float sinks[8] = {2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
    memcpy(c.list, slopes, sizeof slopes);
    memcpy(c.list + 8, sinks, sizeof sinks);
    c.list_len = 16;
    c.layers[1].alibi = c.layers[1].sinks = CASE_SRC_LIST;
    c.layers[1].alibi_off = 0;
    c.layers[1].sinks_off = 8;
    c.layers[2].sinks = CASE_SRC_STANDARD;
    cb_check_bytes(&c, "fp8 scales, windows, lists", buf);
    c.kv_dtype = AG_FP8_E5M2;
    c.num_reqs = CASE_MAX_REQS;
    for (int32_t r = 0; r < c.num_reqs; r++) {
        c.q_len[r] = r % 3 ? 1 : 4;
        c.kv_len[r] = 4 + r % 5;
        c.causal[r] = (uint8_t)(r % 7 == 0 ? 0 : 1);
    }
    c.values[CASE_T_Q] = (case_values){CASE_DIST_NORMAL, 0x1p-24f};
    c.values[CASE_T_K] = (case_values){CASE_DIST_HEAVY, 57344.0f};
    c.values[CASE_T_V] = (case_values){CASE_DIST_ONE_HOT, 12345.678f};
    c.last_block_full = 1;
    c.place = CASE_PLACE_HEAD;
    snprintf(c.options, sizeof c.options, "isa=avx2 tune=amd");
    cb_check_bytes(&c, "256 requests, mixed causal, values, placement, options", buf);
    c.causal[5] = 2;                        /* invalid flag: the raw form */
    cb_check_bytes(&c, "raw causal flag", buf);
    snprintf(c.options, sizeof c.options, "tune=intel");
    cb_check_bytes(&c, "tune alone", buf);
    case_default(&c);
    c.num_layers = CASE_MAX_LAYERS;
    for (int32_t l = 0; l < c.num_layers; l++) c.layers[l] = c.layers[0];
    c.layers[63].window_right = 5;
    cb_check_bytes(&c, "64 layers", buf);
}

/* Every integer field the harness hands an engine raw reaches int32's two
 * ends from bytes (issue 61: a window of INT32_MIN overflowed the harness,
 * and no byte string could draw it): both round-trip through the bytes
 * and the text, alone and all at once. */
Test(case_bytes, int32_extremes) {
    uint8_t buf[CASE_BYTES_MAX];
    static const int32_t ends[2] = {INT32_MIN, INT32_MAX};
    for (int e = 0; e < 2; e++) {
        const int32_t v = ends[e];
        case_spec all;
        case_default(&all);
        int32_t *const fields[] = {
            &all.num_kv_heads, &all.layers[0].num_heads, &all.layers[0].window,
            &all.model_num_heads, &all.head_dim, &all.block_size, &all.threads,
            &all.kv_len[0], &all.q_len[0],
        };
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            case_spec one;
            case_default(&one);
            *(int32_t *)((char *)&one + ((char *)fields[i] - (char *)&all)) = v;
            cb_check_bytes(&one, "one field at an end", buf);
            cb_check_text(&one, "one field at an end");
            *fields[i] = v;
        }
        cb_check_bytes(&all, "every field at an end", buf);
        case_spec w;
        case_default(&w);
        w.layers[0].window_left = v;
        w.layers[0].window_right = ends[1 - e];
        w.layers[0].window = -1;
        cb_check_bytes(&w, "(left, right) at the ends", buf);
        w.q_dtype = (ag_dtype)v;
        w.kv_dtype = (ag_dtype)ends[1 - e];
        cb_check_bytes(&w, "dtypes at the ends", buf);
        for (int m = 0; m < 2; m++) {
            case_spec sp;
            case_default(&sp);
            sp.split = m ? AG_SPLIT_FIXED : v;
            sp.split_count = m ? v : 0;
            cb_check_bytes(&sp, "split mode or count at an end", buf);
            cb_check_text(&sp, "split mode or count at an end");
        }
    }
}

/* A budget byte caps the cost: prefill rows first, decode rows kept when
 * that suffices, invalid requests untouched, q_len never above kv_len. */
Test(case_bytes, budget_caps_cost) {
    case_spec c;
    case_default(&c);
    c.layers[0].num_heads = c.model_num_heads = 32;
    c.num_kv_heads = 8;
    c.head_dim = 128;
    c.num_reqs = 4;
    const int32_t q[4] = {1, 500, 20, 9}, kv[4] = {600, 500, 900, 4};   /* 9x4: invalid */
    for (int r = 0; r < 4; r++) {
        c.q_len[r] = q[r];
        c.kv_len[r] = kv[r];
        c.causal[r] = 1;
    }
    uint8_t buf[CASE_BYTES_MAX + 2];
    char err[256];
    size_t n = case_encode(&c, buf, CASE_BYTES_MAX, err, sizeof err);
    cr_assert_gt(n, 0, "%s", err);
    case_spec floor_c = c;   /* the least the cap can reach: valid rows at 1x1 */
    for (int r = 0; r < 3; r++) floor_c.q_len[r] = floor_c.kv_len[r] = 1;
    const uint64_t floor = case_cost(&floor_c);
    floor_c.kv_len[0] = kv[0];   /* ... and with the decode row as drawn */
    const uint64_t decode_floor = case_cost(&floor_c);
    int kept = 0;
    for (unsigned b = 1; b < 0xF8; b += 5) {   /* 5: every b % 7 */
        buf[n] = (uint8_t)b;   /* budget 2^(16 + b % 7) */
        buf[n + 1] = 0;        /* no extension fields */
        case_spec d;
        case_decode(buf, n + 2, &d);
        const uint64_t budget = (uint64_t)1 << (16 + b % 7);
        cr_assert_leq(case_cost(&d), budget > floor ? budget : floor, "budget %llu: cost %llu",
                      (unsigned long long)budget, (unsigned long long)case_cost(&d));
        if (budget < floor) cr_assert_eq(case_cost(&d), floor, "not capped to the floor");
        cr_assert(d.q_len[3] == 9 && d.kv_len[3] == 4, "an invalid request was changed");
        cr_assert_eq(d.q_len[1], d.kv_len[1], "a prefill stays a prefill");
        for (int r = 0; r < 3; r++)
            cr_assert(d.q_len[r] >= 1 && d.q_len[r] <= d.kv_len[r] && d.kv_len[r] <= kv[r]);
        if (decode_floor <= budget) {
            cr_assert_eq(d.kv_len[0], kv[0], "decode row shortened (budget %llu)",
                         (unsigned long long)budget);
            kept++;
        }
    }
    cr_assert_gt(kept, 0, "no budget left the decode row alone: the test tests nothing");
    buf[n] = 0xF8;             /* a deliberate fraction keeps the drawn shape */
    case_spec d;
    case_decode(buf, n + 2, &d);
    cr_assert(case_equal(&c, &d));
}

/* ------------------------------------------------------- distribution */

/* What an engine with typical limits must refuse, by the harness's one
 * validity model (case/validity.c): a decode is invalid when it carries a
 * defect other than the layers' disagreement (counted apart, cb_mixed). */
static const ag_caps cb_caps = {.max_heads = 1024, .max_head_dim = 1024, .max_block_size = 4096,
                                .max_threads = 256, .max_seq_len = 1 << 28, .max_splits = 64};

static int cb_invalid(const case_spec *c) {
    const validity_engine e = {&cb_caps, NULL, 0};
    case_defects d;
    validity_defects(c, &e, &d);
    for (int i = 0; i < d.n; i++)
        if (d.d[i].kind != AG_R_MIXED_HEADS) return 1;
    return d.unexpressible;
}

static int cb_mixed(const case_spec *c) {
    for (int32_t l = 1; l < c->num_layers; l++)
        if (c->layers[l].num_heads != c->layers[0].num_heads) return 1;
    return 0;
}

/* Shapes at the edges of SIMD tiles and blocks: head_dim or a KV head's
 * query rows (g * head_dim) off the 16/32-lane grid, fewer keys than 16,
 * a request with exactly one key. */
static int cb_tail(const case_spec *c) {
    if (c->head_dim % 16) return 1;
    if (c->num_layers > 0 && c->num_kv_heads > 0) {
        int64_t g = c->layers[0].num_heads / c->num_kv_heads;
        if ((g * c->head_dim) % 32) return 1;
    }
    for (int32_t r = 0; r < c->num_reqs; r++)
        if (c->kv_len[r] < 16) return 1;
    return 0;
}

static int cb_mixed_causal(const case_spec *c) {
    for (int32_t r = 1; r < c->num_reqs; r++)
        if (c->causal[r] != c->causal[0]) return 1;
    return 0;
}

static int cb_values(const case_spec *c) {
    for (int t = 0; t < CASE_T_COUNT; t++)
        if (c->values[t].dist != CASE_DIST_UNIFORM || c->values[t].amp != 1.0f) return 1;
    return 0;
}

static int cb_layer_any(const case_spec *c, int what) {
    for (int32_t l = 0; l < c->num_layers; l++) {
        const case_layer *L = &c->layers[l];
        int32_t H = L->num_heads;
        switch (what) {
        case 0: if (L->window_left != CASE_WINDOW_UNSET || L->window_right != CASE_WINDOW_UNSET) return 1; break;
        case 1: if (L->alibi == CASE_SRC_LIST || L->sinks == CASE_SRC_LIST) return 1; break;
        case 2: if (L->alibi == CASE_SRC_STANDARD && H > 0 && (H & (H - 1))) return 1; break;
        default: if (L->k_scale != 1.0f || L->v_scale != 1.0f) return 1; break;
        }
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Shares in percent, printed; the bounds keep the fuzz targets fast, the
 * seed bug reachable and every new field in play. */
Test(case_bytes, distribution) {
    enum { N = 10000, MAXLEN = 512 };
    uint64_t s = 0xd157;
    uint8_t in[MAXLEN + 1];
    int invalid = 0, mixed = 0, model_diff = 0, forced = 0, multi = 0, windowed = 0, expect = 0;
    int nvalid = 0, tail = 0, values = 0, mcausal = 0, fp8 = 0, pairs = 0, lists = 0;
    int std_odd = 0, scales = 0, last_full = 0, head = 0, opts = 0, big = 0;
    uint64_t *costs = malloc(N * sizeof *costs);
    cr_assert_not_null(costs);
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(cb_rng(&s) % (MAXLEN + 1));
        cb_fill(in, len, &s);
        case_spec c;
        case_decode(in, len, &c);
        int bad = cb_invalid(&c);
        invalid += bad;
        if (c.num_layers > 1) multi++;
        mixed += cb_mixed(&c);
        if (c.num_layers > 0 && c.model_num_heads != c.layers[0].num_heads) model_diff++;
        if (c.split == AG_SPLIT_ON || c.split == AG_SPLIT_FIXED) forced++;
        if (c.num_layers > 0 && c.layers[0].window > 0) windowed++;
        if (c.expect != AG_R_NONE) expect++;
        last_full += c.last_block_full;
        head += c.place == CASE_PLACE_HEAD;
        opts += c.options[0] != '\0';
        if (bad || cb_mixed(&c)) continue;
        costs[nvalid++] = case_cost(&c);
        big += case_cost(&c) > ((uint64_t)1 << 22);
        tail += cb_tail(&c);
        values += cb_values(&c);
        mcausal += cb_mixed_causal(&c);
        fp8 += c.kv_dtype == AG_FP8_E4M3 || c.kv_dtype == AG_FP8_E5M2;
        pairs += cb_layer_any(&c, 0);
        lists += cb_layer_any(&c, 1);
        std_odd += cb_layer_any(&c, 2);
        scales += cb_layer_any(&c, 3);
    }
    qsort(costs, (size_t)nvalid, sizeof *costs, cmp_u64);
    double median = nvalid ? (double)costs[nvalid / 2] : 0;
    double p90 = nvalid ? (double)costs[nvalid * 9 / 10] : 0;
    free(costs);
    const double v = nvalid ? 100.0 / nvalid : 0;
    fprintf(stderr,
            "case_bytes distribution over %d random inputs (0..%d bytes):\n"
            "  invalid %.1f%%, multi-layer %.1f%%, mixed-head groups %.1f%%,\n"
            "  model_num_heads != layer heads %.1f%%, splits forced %.1f%%,\n"
            "  layer 0 windowed %.1f%%, expect != ok %.2f%%,\n"
            "  last_block_full %.1f%%, place head %.1f%%, engine options %.1f%%;\n"
            "  of the %d valid single-head-count cases: tail shapes %.1f%%,\n"
            "  non-default values %.1f%%, mixed causal %.1f%%, fp8 kv %.1f%%,\n"
            "  (left, right) windows %.1f%%, explicit lists %.1f%%,\n"
            "  standard ALiBi on non-power-of-two heads %.1f%%, k/v scales %.1f%%,\n"
            "  cost (case_cost) median %.3g, p90 %.3g, above 2^22 %.1f%%\n",
            N, MAXLEN, 100.0 * invalid / N, 100.0 * multi / N, 100.0 * mixed / N,
            100.0 * model_diff / N, 100.0 * forced / N, 100.0 * windowed / N,
            100.0 * expect / N, 100.0 * last_full / N, 100.0 * head / N, 100.0 * opts / N,
            nvalid, v * tail, v * values, v * mcausal, v * fp8, v * pairs, v * lists,
            v * std_odd, v * scales, median, p90, v * big);
    cr_assert(invalid > N / 5 && invalid < N * 30 / 100, "invalid share %d/%d", invalid, N);
    cr_assert(mixed > N / 50 && mixed < N * 35 / 100, "mixed share %d/%d", mixed, N);
    cr_assert(model_diff > N / 5 && model_diff < N * 8 / 10, "model diff share %d/%d",
              model_diff, N);
    cr_assert(forced > N / 10 && forced < N * 7 / 10, "forced split share %d/%d", forced, N);
    cr_assert(expect < N / 100, "expect != ok share %d/%d", expect, N);
    cr_assert(last_full > N / 4 && head > N / 4, "last_block_full %d, place head %d of %d",
              last_full, head, N);
    cr_assert(tail * 5 >= nvalid, "tail shapes %d of %d valid", tail, nvalid);
    cr_assert(values * 3 >= nvalid, "non-default values %d of %d valid", values, nvalid);
    cr_assert(mcausal * 10 >= nvalid, "mixed causal %d of %d valid", mcausal, nvalid);
    cr_assert(fp8 * 20 >= nvalid && pairs * 10 >= nvalid && lists * 20 >= nvalid &&
              std_odd * 50 >= nvalid && scales * 20 >= nvalid,
              "new fields rare: fp8 %d, pairs %d, lists %d, std odd %d, scales %d of %d", fp8,
              pairs, lists, std_odd, scales, nvalid);
    cr_assert(median > 0 && median < 4e5, "median cost %g", median);
}
