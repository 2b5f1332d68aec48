/*
 * test_case.c — the text form of a case (harness/case/case_text.c) and the
 * struct-level helpers (harness/case/case.c).
 *
 * Covers: every key parses into the field it names and survives parse ->
 * print -> parse; errors name the line, the key and the value; an empty or
 * comment-only text is an error; every shipped corpus/cases/NAME.case parses
 * and round-trips, and the historical spellings (alibi, sinks=1, isa = X,
 * causal = 0) mean what they meant; case_alibi_standard against the ALiBi
 * formula computed here; case_cost.
 *
 * Runs from the repository root (the corpus is globbed at run time).
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ct_text(const case_spec *c) {
    size_t n = case_format(NULL, 0, c);
    char *t = malloc(n + 1);
    cr_assert_not_null(t);
    case_format(t, n + 1, c);
    return t;
}

/* Parses text into *c (must succeed), then checks print -> parse gives an
 * equal case and the same text again. */
static void ct_parse_rt(const char *text, case_spec *c) {
    char err[256];
    cr_assert_eq(case_parse(text, c, err, sizeof err), 0, "does not parse: %s\n%s", err, text);
    char *t1 = ct_text(c);
    case_spec back;
    cr_assert_eq(case_parse(t1, &back, err, sizeof err), 0, "printed text does not parse: %s\n%s",
                 err, t1);
    cr_assert(case_equal(c, &back), "print/parse changed the case:\n%s\n-- from --\n%s", t1, text);
    char *t2 = ct_text(&back);
    cr_assert_str_eq(t1, t2, "printed text not stable");
    free(t1);
    free(t2);
}

static const float *ct_list(const case_spec *c, uint16_t off) { return c->list + off; }

/* ------------------------------------------------------------ every key */

Test(case_text, every_scalar_key) {
    case_spec c;
    ct_parse_rt("name = every-key\n"
                "expect = heads\n"
                "model_num_heads = 24\n"
                "kv_heads = 3\n"
                "head_dim = 80\n"
                "block_size = 48\n"
                "q_dtype = bf16\n"
                "kv_dtype = fp8e4m3\n"
                "out_dtype = f16\n"
                "causal = 0\n"
                "threads = 3\n"
                "split = 5\n"
                "seed = 0xabc\n"
                "blocks = repeated\n"
                "last_block_full = 1\n"
                "place = head\n"
                "q_values = normal 1.0\n"
                "k_values = heavy 1e4\n"
                "v_values = uniform 2^-20\n"
                "options = isa=avx2   tune=amd\n"
                "requests = 1x4097, 8x8\n"
                "layer.0 = heads=24\n",
                &c);
    cr_assert_str_eq(c.name, "every-key");
    cr_assert_eq(c.expect, AG_R_HEADS);
    cr_assert_eq(c.model_num_heads, 24);
    cr_assert_eq(c.num_kv_heads, 3);
    cr_assert_eq(c.head_dim, 80);
    cr_assert_eq(c.block_size, 48);
    cr_assert_eq(c.q_dtype, AG_BF16);
    cr_assert_eq(c.kv_dtype, AG_FP8_E4M3);
    cr_assert_eq(c.out_dtype, AG_F16);
    cr_assert(c.causal[0] == 0 && c.causal[1] == 0);
    cr_assert_eq(c.threads, 3);
    cr_assert(c.split == AG_SPLIT_FIXED && c.split_count == 5);
    cr_assert_eq(c.seed, 0xabc);
    cr_assert_eq(c.blocks, CASE_BLOCKS_REPEATED);
    cr_assert_eq(c.last_block_full, 1);
    cr_assert_eq(c.place, CASE_PLACE_HEAD);
    cr_assert(c.values[CASE_T_Q].dist == CASE_DIST_NORMAL && c.values[CASE_T_Q].amp == 1.0f);
    cr_assert(c.values[CASE_T_K].dist == CASE_DIST_HEAVY && c.values[CASE_T_K].amp == 1e4f);
    cr_assert(c.values[CASE_T_V].dist == CASE_DIST_UNIFORM &&
              c.values[CASE_T_V].amp == 0x1p-20f);
    cr_assert_str_eq(c.options, "isa=avx2 tune=amd", "words stored one blank apart");
    cr_assert(c.num_reqs == 2 && c.q_len[0] == 1 && c.kv_len[0] == 4097 && c.q_len[1] == 8);

    /* the keys that set several fields; specific keys win */
    ct_parse_rt("dtype = fp8e5m2\nq_dtype = f32\nvalues = extreme 7\nk_values = one_hot 2^-24\n"
                "isa = avx512\nrequests = none\nlayers = none\n",
                &c);
    cr_assert(c.q_dtype == AG_F32 && c.kv_dtype == AG_FP8_E5M2 && c.out_dtype == AG_FP8_E5M2);
    cr_assert(c.values[CASE_T_Q].dist == CASE_DIST_EXTREME && c.values[CASE_T_Q].amp == 7.0f);
    cr_assert(c.values[CASE_T_K].dist == CASE_DIST_ONE_HOT && c.values[CASE_T_K].amp == 0x1p-24f);
    cr_assert(c.values[CASE_T_V].dist == CASE_DIST_EXTREME);
    cr_assert_str_eq(c.options, "isa=avx512", "isa = X is options isa=X");
    cr_assert(c.num_reqs == 0 && c.num_layers == 0);
    for (int d = 0; d < CASE_DIST_COUNT; d++) {
        char t[64];
        snprintf(t, sizeof t, "q_values = %s 3\n", case_dist_name(d));
        ct_parse_rt(t, &c);
        cr_assert_eq(c.values[CASE_T_Q].dist, d);
    }
}

Test(case_text, requests_and_causality) {
    case_spec c;
    ct_parse_rt("requests = 1x4097, 8x8n, 3x9c, 2x2\ncausal = 0\n", &c);
    cr_assert_eq(c.num_reqs, 4);
    cr_assert(c.causal[0] == 0 && c.causal[1] == 0 && c.causal[2] == 1 && c.causal[3] == 0,
              "suffixes win, the rest take causal =");
    char *t = ct_text(&c);
    cr_assert(strstr(t, "requests = 1x4097n, 8x8n, 3x9c, 2x2n\n") != NULL, "%s", t);
    cr_assert(strstr(t, "causal =") == NULL, "mixed: suffixes, no causal line\n%s", t);
    free(t);
    ct_parse_rt("requests = 1x5n, 2x7n\n", &c);
    t = ct_text(&c);
    cr_assert(strstr(t, "causal = 0\nrequests = 1x5, 2x7\n") != NULL, "shared flag:\n%s", t);
    free(t);
    /* raw invalid flags: cN and causal = N */
    ct_parse_rt("requests = 1x5, 2x7c7\n", &c);
    cr_assert(c.causal[0] == 1 && c.causal[1] == 7);
    ct_parse_rt("causal = 2\nrequests = 1x5\n", &c);
    cr_assert_eq(c.causal[0], 2);
    /* 256 requests fit (the line is long) */
    char *big = malloc(16 * CASE_MAX_REQS + 32);
    cr_assert_not_null(big);
    size_t n = (size_t)sprintf(big, "requests = ");
    for (int r = 0; r < CASE_MAX_REQS; r++)
        n += (size_t)sprintf(big + n, "%s%dx%d%s", r ? ", " : "", 1 + r % 3, 40 + r,
                             r % 5 ? "" : "n");
    strcpy(big + n, "\n");
    ct_parse_rt(big, &c);
    cr_assert(c.num_reqs == CASE_MAX_REQS && c.kv_len[255] == 295 && c.causal[255] == 0 &&
              c.causal[254] == 1);
    free(big);
}

Test(case_text, layer_fields) {
    case_spec c;
    ct_parse_rt("kv_heads = 2\nkv_dtype = fp8e4m3\n"
                "layer.1 = heads=4 left=3 k_scale=2^-4 v_scale=0.37 "
                "alibi=[0.5, 0.25,-1,1e-45] sinks=seeded\n"
                "layer.0 = heads=4 window=8 right=0 softcap=50 scale=0.125 "
                "sinks=[nan,-inf,2^-149,3.5] alibi\n"
                "layer.2 = heads=4 window=none sinks alibi=standard\n"
                "layer.3 = heads=4 window=100 sinks=0 alibi=0\n",
                &c);
    cr_assert_eq(c.num_layers, 4);
    const case_layer *L0 = &c.layers[0], *L1 = &c.layers[1];
    cr_assert(L0->window_left == CASE_WINDOW_UNSET && L0->window_right == 0 && L0->window == -1,
              "a pair overrides window");
    cr_assert(L0->softcap == 50.0f && L0->scale == 0.125f);
    cr_assert(L0->alibi == CASE_SRC_STANDARD && L0->sinks == CASE_SRC_LIST);
    const float *s0 = ct_list(&c, L0->sinks_off);
    cr_assert(isnan(s0[0]) && isinf(s0[1]) && s0[1] < 0 && s0[2] == 0x1p-149f && s0[3] == 3.5f);
    cr_assert(L1->window_left == 3 && L1->window_right == CASE_WINDOW_UNSET);
    cr_assert(L1->k_scale == 0.0625f && L1->v_scale == 0.37f);
    cr_assert(L1->alibi == CASE_SRC_LIST && L1->sinks == CASE_SRC_STANDARD);
    const float *a1 = ct_list(&c, L1->alibi_off);
    cr_assert(a1[0] == 0.5f && a1[1] == 0.25f && a1[2] == -1.0f && a1[3] == 0x1p-149f);
    cr_assert_eq(L0->sinks_off, 0, "lists laid out in layer order, whatever the line order");
    cr_assert_eq(L1->alibi_off, 4);
    cr_assert_eq(c.list_len, 8);
    cr_assert(c.layers[2].alibi == CASE_SRC_STANDARD && c.layers[2].sinks == CASE_SRC_STANDARD);
    cr_assert(c.layers[3].window == 100 && c.layers[3].alibi == CASE_SRC_NONE &&
              c.layers[3].sinks == CASE_SRC_NONE);
    int32_t lw, rw;
    case_layer_window(L0, &lw, &rw);
    cr_assert(lw == -1 && rw == 0, "unset side is unbounded");
    case_layer_window(&c.layers[3], &lw, &rw);
    cr_assert(lw == 99 && rw == 99, "window W is (W-1, W-1)");
    /* 64 layers, each with an explicit list */
    char *big = malloc(64 * 160 + 64);
    cr_assert_not_null(big);
    size_t n = (size_t)sprintf(big, "kv_heads = 1\n");
    for (int l = 0; l < CASE_MAX_LAYERS; l++)
        n += (size_t)sprintf(big + n, "layer.%d = heads=2 alibi=[%d,0.5] sinks=[2^%d,-1]\n", l, l,
                             -l);
    ct_parse_rt(big, &c);
    cr_assert(c.num_layers == CASE_MAX_LAYERS && c.list_len == 4 * CASE_MAX_LAYERS);
    cr_assert(ct_list(&c, c.layers[63].alibi_off)[0] == 63.0f &&
              ct_list(&c, c.layers[63].sinks_off)[0] == 0x1p-63f);
    free(big);
}

/* ----------------------------------------------------------------- errors */

typedef struct bad_text {
    const char *text;
    const char *want[3];   /* substrings of the message */
} bad_text;

Test(case_text, errors_name_line_key_value) {
    static const bad_text cases[] = {
        {"kv_heads = 4\n\n# note\n\nhead_dim = 64\nlayer.0 = heads=8\n"
         "layer.1 = heads=4 alibi=[0.5,0.25,0.125]\n",
         {"line 7", "layer.1", "alibi list has 3 values, heads=4"}},
        {"layer.0 = heads=2 sinks=[1,2,3]\n", {"line 1", "layer.0", "sinks list has 3 values"}},
        {"name = x\nkv_heads = four\n", {"line 2", "kv_heads", "'four'"}},
        {"requests = 1x4, 8x8q\n", {"line 1", "requests", "'8x8q'"}},
        {"requests = 1x4, 8x8c300\n", {"line 1", "requests", "'8x8c300'"}},
        {"q_values = gaussian 1\n", {"line 1", "q_values", "'gaussian 1'"}},
        {"k_values = normal 0\n", {"line 1", "k_values", "'normal 0'"}},
        {"v_values = normal nan\n", {"line 1", "v_values", "'normal nan'"}},
        {"kv_dtype = fp9\n", {"line 1", "kv_dtype", "'fp9'"}},
        {"place = middle\n", {"line 1", "place", "'middle'"}},
        {"last_block_full = 2\n", {"line 1", "last_block_full", "'2'"}},
        {"causal = 256\n", {"line 1", "causal", "'256'"}},
        {"layer.0 = heads=8 left=x\n", {"line 1", "layer.0", "left: bad value 'x'"}},
        {"layer.0 = heads=8 k_scale=\n", {"line 1", "layer.0", "k_scale"}},
        {"layer.0 = heads=8 alibi=maybe\n", {"line 1", "layer.0", "'maybe'"}},
        {"layer.0 = heads=8 sinks=[1,x,2]\n", {"line 1", "layer.0", "'x'"}},
        {"layer.0 = heads=8 scale=2^200\n", {"line 1", "layer.0", "'2^200'"}},
        {"layer.0 = heads=8 colour=red\n", {"line 1", "layer.0", "'colour'"}},
        {"layer.0 = heads=8 left=1 left=2\n", {"line 1", "layer.0", "duplicate field 'left'"}},
        {"layer.1 = heads=8\n", {"layer.0 is missing", "", ""}},
        {"isa = avx2\noptions = tune=amd\n", {"line 2", "options", "conflicts with 'isa'"}},
        {"seed = 1\nseed = 2\n", {"line 2", "seed", "duplicate"}},
        {"colour = red\n", {"line 1", "colour", "unknown key"}},
        {"just words\n", {"line 1", "key = value", "just words"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        case_spec c;
        char err[256] = "";
        cr_assert_neq(case_parse(cases[i].text, &c, err, sizeof err), 0, "parsed: %s",
                      cases[i].text);
        for (int k = 0; k < 3; k++)
            cr_assert(strstr(err, cases[i].want[k]) != NULL, "'%s' lacks '%s' (text: %s)", err,
                      cases[i].want[k], cases[i].text);
    }
}

Test(case_text, explicit_lists_bounded) {
    /* 5 layers x 2 lists x 1024 heads = 10240 values > CASE_MAX_LIST */
    size_t cap = 5 * 2 * 1024 * 4 + 256;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    size_t n = (size_t)sprintf(t, "kv_heads = 1\n");
    for (int l = 0; l < 5; l++) {
        n += (size_t)sprintf(t + n, "layer.%d = heads=1024 alibi=[", l);
        for (int h = 0; h < 1024; h++) n += (size_t)sprintf(t + n, "%s1", h ? "," : "");
        n += (size_t)sprintf(t + n, "] sinks=[");
        for (int h = 0; h < 1024; h++) n += (size_t)sprintf(t + n, "%s2", h ? "," : "");
        n += (size_t)sprintf(t + n, "]\n");
    }
    case_spec c;
    char err[256];
    cr_assert_neq(case_parse(t, &c, err, sizeof err), 0);
    /* layers 0 and 1 fill the 4096 exactly: layer.2 (line 4) overflows */
    cr_assert(strstr(err, "line 4") && strstr(err, "layer.2") && strstr(err, "CASE_MAX_LIST"),
              "%s", err);
    free(t);
}

Test(case_text, empty_text_is_an_error) {
    static const char *const texts[] = {"", "\n\n", "# only a comment\n", "   \n\t# x\n"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        case_spec c;
        char err[256] = "";
        cr_assert_neq(case_parse(texts[i], &c, err, sizeof err), 0, "'%s' parsed", texts[i]);
        cr_assert(strstr(err, "no keys") != NULL, "%s", err);
    }
    case_spec c;
    char err[512] = "";
    cr_assert_neq(case_load("/dev/null", &c, err, sizeof err), 0);
    cr_assert(strstr(err, "/dev/null") && strstr(err, "no keys"), "%s", err);
}

/* ------------------------------------------------------- compatibility */

/* Whether layer l's line uses the historical bare `alibi` (or alibi=1). */
static int ct_old_alibi(const char *text, int32_t l) {
    char key[32], line[4096];
    snprintf(key, sizeof key, "layer.%d ", (int)l);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n < sizeof line && strncmp(p, key, strlen(key)) == 0) {
            memcpy(line, p, n);
            line[n] = '\0';
            char *save = NULL;
            for (char *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
                if (strcmp(t, "alibi") == 0 || strcmp(t, "alibi=1") == 0) return 1;
        }
        p = nl ? nl + 1 : p + n;
    }
    return 0;
}

Test(case_text, shipped_cases_round_trip) {
    glob_t g;
    memset(&g, 0, sizeof g);
    cr_assert_eq(glob("corpus/cases/*.case", 0, NULL, &g), 0,
                 "no corpus/cases/*.case found (run from the repository root)");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        FILE *f = fopen(g.gl_pathv[i], "rb");
        cr_assert_not_null(f);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        case_spec c;
        ct_parse_rt(text, &c);
        /* The historical `alibi` flag meant 2^(-8(h+1)/H); it now means the
         * standard set, which is the same (up to float rounding) only for a
         * power-of-two H: every case written with the old spelling has one. */
        for (int32_t l = 0; l < c.num_layers; l++) {
            int32_t H = c.layers[l].num_heads;
            if (ct_old_alibi(text, l))
                cr_assert(H > 0 && (H & (H - 1)) == 0, "%s: layer %d has alibi with %d heads",
                          g.gl_pathv[i], (int)l, (int)H);
        }
    }
    globfree(&g);
}

Test(case_text, historical_spellings) {
    case_spec c;
    ct_parse_rt("isa = avx2\ncausal = 0\nrequests = 3x9\n"
                "layer.0 = heads=8 alibi sinks=1 window=64\nlayer.1 = heads=8 alibi=0 sinks\n",
                &c);
    cr_assert_str_eq(c.options, "isa=avx2");
    cr_assert_eq(c.causal[0], 0);
    cr_assert(c.layers[0].alibi == CASE_SRC_STANDARD && c.layers[0].sinks == CASE_SRC_STANDARD);
    cr_assert(c.layers[0].window == 64 && c.layers[0].window_left == CASE_WINDOW_UNSET &&
              c.layers[0].window_right == CASE_WINDOW_UNSET);
    cr_assert(c.layers[1].alibi == CASE_SRC_NONE && c.layers[1].sinks == CASE_SRC_STANDARD);
    cr_assert(c.layers[0].k_scale == 1.0f && c.layers[0].v_scale == 1.0f);
    cr_assert(c.last_block_full == 0 && c.place == CASE_PLACE_TAIL);
    for (int t = 0; t < CASE_T_COUNT; t++)
        cr_assert(c.values[t].dist == CASE_DIST_UNIFORM && c.values[t].amp == 1.0f);
}

/* -------------------------------------------------------- derived values */

/* n heads: P = the largest power of two <= n; 2^(-8(h+1)/P) for h < P, then
 * the odd powers 2^(-4(2j+1)/P) for the remaining heads.  *e = the integer
 * power the float computation raises its base to (h+1 or 2j+1). */
static double ct_slope(int n, int h, int *e) {
    int P = 1;
    while (P * 2 <= n) P *= 2;
    if (h < P) {
        *e = h + 1;
        return pow(2.0, -8.0 * (h + 1) / P);
    }
    int j = h - P;
    *e = 2 * j + 1;
    return pow(2.0, -4.0 * (2 * j + 1) / P);
}

/* case_alibi_standard computes in float as models do (a rounded base raised
 * to the e-th power): within (e + 2) float roundings of the exact slope, far
 * tighter than any wrong base, power or interleave would land. */
static void ct_check_slopes(int n) {
    float got[1024];
    case_alibi_standard(n, got);
    for (int h = 0; h < n; h++) {
        int e;
        const double want = ct_slope(n, h, &e), tol = want * (e + 2) * 0x1p-23;
        cr_assert(fabs(got[h] - want) <= tol, "n %d head %d: %.9g vs %.9g (tolerance %.3g)", n,
                  h, (double)got[h], want, tol);
    }
}

Test(case_derived, alibi_standard_slopes) {
    static const int ns[] = {12, 40, 71, 8, 16, 1, 1024};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) ct_check_slopes(ns[i]);
    /* spot values: 12 heads are 8 of 2^-(h+1) (exact in float), then the odd
     * powers of 2^-0.5 */
    float s12[12];
    case_alibi_standard(12, s12);
    cr_assert(s12[0] == 0.5f && s12[7] == 0x1p-8f);
    cr_assert(fabs(s12[8] - M_SQRT1_2) < 1e-7 && fabs(s12[11] - pow(2.0, -3.5)) < 1e-7);
    /* the interleave: head 8 of 12 lies between heads 0 and 1 */
    cr_assert(s12[8] > s12[0] && s12[9] < s12[0] && s12[9] > s12[1]);
}

Test(case_derived, cost) {
    case_spec c;
    case_default(&c);   /* 1 layer of 8 heads, D 64, one request 1x37 */
    cr_assert_eq(case_cost(&c), 37u * 8u * 64u);
    c.num_layers = 2;
    c.layers[1] = c.layers[0];
    c.layers[1].num_heads = 4;
    c.num_reqs = 2;
    c.q_len[1] = 10;
    c.kv_len[1] = 20;
    cr_assert_eq(case_cost(&c), (37u + 200u) * 12u * 64u);
    c.q_len[1] = -5;   /* invalid counts count as 1 */
    cr_assert_eq(case_cost(&c), (37u + 20u) * 12u * 64u);
    c.num_layers = 0;
    c.model_num_heads = 3;
    cr_assert_eq(case_cost(&c), (37u + 20u) * 3u * 64u);
    c.num_reqs = CASE_MAX_REQS;
    for (int r = 0; r < CASE_MAX_REQS; r++) c.q_len[r] = c.kv_len[r] = 1 << 28;
    c.model_num_heads = 1 << 20;
    cr_assert_eq(case_cost(&c), UINT64_MAX, "saturates");
}
