/*
 * test_block_types.c — the block (quantized) KV dtypes q8_0, q4_0, q4_1,
 * q5_0, q5_1 and iq4_nl through the harness: the ABI's sizes
 * (ag_dtype_block, ag_dtype_bytes), the reference's dequantization
 * (ag_dtype_decode) of hand-made block bytes against values worked out here from
 * the layouts engine.h states, the value generator's quantizer against the
 * values it quantized (within its rounding), the case text and byte forms
 * of every block dtype, the validity model's head_dim defect for rows
 * that are not whole blocks, and the error model of a q_dot of q8_0: an
 * engine that rounds q to q8_0 (as ggml does) lies inside the intervals
 * of that model and outside those of an fp32 engine.
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/case/case_bytes.h"
#include "../../harness/case/validity.h"
#include "../../harness/case/values.h"
#include "../../harness/judge/compare.h"
#include "../../harness/judge/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ag_dtype k_blocks[] = {AG_Q8_0, AG_Q4_0, AG_Q4_1, AG_Q5_0, AG_Q5_1, AG_IQ4_NL};
static const size_t k_block_bytes[] = {34, 18, 20, 22, 24, 18};
#define NB ((int)(sizeof k_blocks / sizeof k_blocks[0]))

/* ------------------------------------------------------------- the ABI */

Test(block_types, sizes) {
    for (int i = 0; i < NB; i++) {
        const ag_dtype t = k_blocks[i];
        size_t b = 7;
        cr_assert_eq(ag_dtype_block(t), 32, "%s", ag_dtype_name(t));
        cr_assert_eq(ag_dtype_size(t), 0u, "%s has no per-element size", ag_dtype_name(t));
        cr_assert_eq(ag_dtype_bytes(t, 32, &b), 0);
        cr_assert_eq(b, k_block_bytes[i], "%s: %zu bytes a block", ag_dtype_name(t), b);
        cr_assert_eq(ag_dtype_bytes(t, 128, &b), 0);
        cr_assert_eq(b, 4 * k_block_bytes[i]);
        cr_assert_eq(ag_dtype_bytes(t, 80, &b), -1, "%s: 80 elements are 2.5 blocks",
                     ag_dtype_name(t));
        cr_assert_eq(b, 0u);
        /* SIZE_MAX / 32 blocks: only q8_0's 34 bytes a block (more than one a
         * element) overflow size_t */
        cr_assert_eq(ag_dtype_bytes(t, SIZE_MAX / 32 * 32, &b), t == AG_Q8_0 ? -1 : 0,
                     "%s: overflow", ag_dtype_name(t));
    }
    size_t b;
    cr_assert_eq(ag_dtype_block(AG_F16), 1);
    cr_assert_eq(ag_dtype_bytes(AG_F16, 3, &b), 0);
    cr_assert_eq(b, 6u);
    cr_assert_eq(ag_dtype_block(AG_DTYPE_COUNT), 0);
    cr_assert_eq(ag_dtype_bytes(AG_DTYPE_COUNT, 32, &b), -1);
    cr_assert_str_eq(ag_dtype_name(AG_Q8_0), "q8_0");
    cr_assert_str_eq(ag_dtype_name(AG_IQ4_NL), "iq4_nl");
}

/* ------------------------------------------- dequantization, by hand */

/* f16 constants, little-endian: 1.0 = 0x3c00, 0.5 = 0x3800, 0.25 = 0x3400,
 * 2.0 = 0x4000, -1.0 = 0xbc00. */
#define H(x) (uint8_t)((x) & 0xff), (uint8_t)((x) >> 8)

Test(block_types, q8_0_bytes) {
    uint8_t b[68] = {H(0x3800)};   /* block 0: d = 0.5 */
    b[2 + 0] = 1, b[2 + 1] = (uint8_t)-1, b[2 + 2] = 127, b[2 + 3] = (uint8_t)-127;
    b[2 + 31] = 6;
    b[34] = 0x00, b[35] = 0x40;    /* block 1: d = 2 */
    b[36 + 0] = (uint8_t)-3, b[36 + 5] = 100;
    const double want[] = {0.5, -0.5, 63.5, -63.5};
    for (int j = 0; j < 4; j++)
        cr_assert(ag_dtype_decode(b, (size_t)j, AG_Q8_0) == want[j], "q8_0 element %d: %g", j,
                  ag_dtype_decode(b, (size_t)j, AG_Q8_0));
    cr_assert(ag_dtype_decode(b, 4, AG_Q8_0) == 0.0);
    cr_assert(ag_dtype_decode(b, 31, AG_Q8_0) == 3.0);
    cr_assert(ag_dtype_decode(b, 32, AG_Q8_0) == -6.0, "element 32 is block 1's first");
    cr_assert(ag_dtype_decode(b, 37, AG_Q8_0) == 200.0);
}

Test(block_types, q4_q5_iq4_bytes) {
    /* q4_0: d = 1; qs[0] = 0x9f: element 0 = 15 - 8, element 16 = 9 - 8;
     * qs[1] = 0x08: element 1 = 0, element 17 = -8 */
    uint8_t q40[18] = {H(0x3c00), 0x9f, 0x08};
    cr_assert(ag_dtype_decode(q40, 0, AG_Q4_0) == 7.0);
    cr_assert(ag_dtype_decode(q40, 16, AG_Q4_0) == 1.0);
    cr_assert(ag_dtype_decode(q40, 1, AG_Q4_0) == 0.0);
    cr_assert(ag_dtype_decode(q40, 17, AG_Q4_0) == -8.0);
    cr_assert(ag_dtype_decode(q40, 2, AG_Q4_0) == -8.0, "a zero nibble is the level -8");

    /* q4_1: d = 0.5, m = -1; qs[0] = 0x3a: 0.5 * 10 - 1, 0.5 * 3 - 1 */
    uint8_t q41[20] = {H(0x3800), H(0xbc00), 0x3a};
    cr_assert(ag_dtype_decode(q41, 0, AG_Q4_1) == 4.0);
    cr_assert(ag_dtype_decode(q41, 16, AG_Q4_1) == 0.5);
    cr_assert(ag_dtype_decode(q41, 5, AG_Q4_1) == -1.0, "a zero nibble is the offset");

    /* q5_0: d = 1; qh bits 0 and 16; qs[0] = 0x21: (1 | 16) - 16, (2 | 16) - 16;
     * element 1: 0 - 16 */
    uint8_t q50[22] = {H(0x3c00), 0x01, 0x00, 0x01, 0x00, 0x21};
    cr_assert(ag_dtype_decode(q50, 0, AG_Q5_0) == 1.0);
    cr_assert(ag_dtype_decode(q50, 16, AG_Q5_0) == 2.0);
    cr_assert(ag_dtype_decode(q50, 1, AG_Q5_0) == -16.0);

    /* q5_1: d = 0.25, m = 2; qh bit 31; qs[15] = 0xf0: element 15 = 0 + 2,
     * element 31 = (15 | 16) 0.25 + 2 */
    uint8_t q51[24] = {H(0x3400), H(0x4000), 0x00, 0x00, 0x00, 0x80};
    q51[8 + 15] = 0xf0;
    cr_assert(ag_dtype_decode(q51, 15, AG_Q5_1) == 2.0);
    cr_assert(ag_dtype_decode(q51, 31, AG_Q5_1) == 9.75);

    /* iq4_nl: d = 0.5; qs[0] = 0xf0: levels[0] = -127 and levels[15] = 113 */
    uint8_t nl[18] = {H(0x3800), 0xf0, 0x78};
    cr_assert(ag_dtype_decode(nl, 0, AG_IQ4_NL) == -63.5);
    cr_assert(ag_dtype_decode(nl, 16, AG_IQ4_NL) == 56.5);
    cr_assert(ag_dtype_decode(nl, 1, AG_IQ4_NL) == 0.5, "qs[1] low nibble 8: level 1");
    cr_assert(ag_dtype_decode(nl, 17, AG_IQ4_NL) == -5.0, "qs[1] high nibble 7: level -10");
}

/* An f16 scale of inf or NaN makes the block's values non-finite. */
Test(block_types, nonfinite_scale) {
    uint8_t b[34] = {H(0x7c00), 1};
    cr_assert(isinf(ag_dtype_decode(b, 0, AG_Q8_0)));
    cr_assert(isnan(ag_dtype_decode(b, 1, AG_Q8_0)), "inf x 0");
}

/* ------------------------------------------------- the generator */

/* Values drawn for a block dtype are the ones drawn for f32 (the same
 * stream), each moved by at most half a step span / half_levels, plus the
 * f16 rounding of d times the largest level: q4_0 and q5_0 map the largest
 * magnitude to the lowest level, so the other sign's end stops one level
 * short (a step of two levels there); iq4_nl's widest gap between levels
 * is 24 of its 254, and its top level stops 14 short of 127. */
static void quantizer_close(ag_dtype t, double half_levels, case_values v) {
    enum { N = 32 * 64 };
    float *f = malloc(N * sizeof *f);
    uint8_t *q = malloc(N * 2);
    values_fill(f, N, 64, AG_F32, &v, 42);
    values_fill(q, N, 64, t, &v, 42);
    for (int b = 0; b < N / 32; b++) {
        double lo = f[b * 32], hi = f[b * 32];
        for (int j = 0; j < 32; j++) {
            lo = fmin(lo, f[b * 32 + j]);
            hi = fmax(hi, f[b * 32 + j]);
        }
        const double span = (t == AG_Q4_1 || t == AG_Q5_1) ? hi - lo : 2 * fmax(fabs(lo), fabs(hi));
        const double step = span / half_levels;
        for (int j = 0; j < 32; j++) {
            const double x = f[b * 32 + j], y = ag_dtype_decode(q, (size_t)(b * 32 + j), t);
            cr_assert(fabs(x - y) <= step * 0.5 * 1.01 + span * 0x1.0p-10 + 1e-30,
                      "%s block %d element %d: %.9g quantized to %.9g (step %g)",
                      ag_dtype_name(t), b, j, x, y, step);
        }
    }
    free(f);
    free(q);
}

Test(block_types, quantizer) {
    const case_values u = {CASE_DIST_UNIFORM, 3.0f}, n = {CASE_DIST_NORMAL, 1.0f};
    quantizer_close(AG_Q8_0, 254, u);
    quantizer_close(AG_Q8_0, 254, n);
    quantizer_close(AG_Q4_0, 8, u);
    quantizer_close(AG_Q5_0, 16, n);
    quantizer_close(AG_Q4_1, 15, u);
    quantizer_close(AG_Q5_1, 31, n);
    quantizer_close(AG_IQ4_NL, 254.0 / 28.0, u);   /* the top level, 113, is 14 short of 127 */
}

/* A partial last block is not written (the generator never overruns). */
Test(block_types, fill_stays_in_whole_blocks) {
    uint8_t q[34 * 2 + 8];
    memset(q, 0xa5, sizeof q);
    const case_values v = {CASE_DIST_UNIFORM, 1.0f};
    values_fill(q, 70, 70, AG_Q8_0, &v, 1);
    for (size_t i = 68; i < sizeof q; i++) cr_assert_eq(q[i], 0xa5, "byte %zu written", i);
}

/* ------------------------------------------------- the case forms */

Test(block_types, text_and_bytes_round_trip) {
    for (int i = 0; i < NB; i++) {
        char text[256], err[256];
        snprintf(text, sizeof text,
                 "name = blk\nkv_dtype = %s\nhead_dim = 96\nrequests = 3x40\nlayer.0 = heads=8\n",
                 ag_dtype_name(k_blocks[i]));
        case_spec c, back;
        cr_assert_eq(case_parse(text, &c, err, sizeof err), 0, "%s: %s", text, err);
        cr_assert_eq(c.kv_dtype, k_blocks[i], "%s parsed as %d", ag_dtype_name(k_blocks[i]),
                     (int)c.kv_dtype);
        char printed[4096];
        case_format(printed, sizeof printed, &c);
        cr_assert(strstr(printed, text + strlen("name = blk\n")) == NULL ||
                  strstr(printed, ag_dtype_name(k_blocks[i])) != NULL);
        cr_assert_eq(case_parse(printed, &back, err, sizeof err), 0, "%s", err);
        cr_assert(case_equal(&c, &back), "text round trip of %s", ag_dtype_name(k_blocks[i]));

        /* bytes, with f32 q and out (the extension's kv byte) and with bf16 ones
         * (the raw dtypes form) */
        for (int q = 0; q < 2; q++) {
            c.q_dtype = c.out_dtype = q ? AG_BF16 : AG_F32;
            uint8_t buf[CASE_BYTES_MAX];
            size_t n = case_encode(&c, buf, sizeof buf, err, sizeof err);
            cr_assert_gt(n, 0u, "%s: %s", ag_dtype_name(k_blocks[i]), err);
            memset(&back, 0, sizeof back);
            case_decode(buf, n, &back);
            cr_assert(case_equal(&c, &back), "bytes round trip of %s (q %s)",
                      ag_dtype_name(k_blocks[i]), ag_dtype_name(c.q_dtype));
        }
    }
}

/* head_dim not a whole number of blocks: a head_dim defect naming the
 * value and the type; whole blocks: valid. */
Test(block_types, head_dim_defect) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_parse("kv_dtype = q4_0\nhead_dim = 80\n", &c, err, sizeof err), 0);
    case_defects d;
    validity_defects(&c, NULL, &d);
    cr_assert(validity_allows(&d, DEFECT_CREATE, AG_R_HEAD_DIM), "head_dim 80 on q4_0");
    char buf[512];
    validity_format(&d, DEFECT_CREATE, buf, sizeof buf);
    cr_assert(strstr(buf, "head_dim = 80") && strstr(buf, "q4_0"), "%s", buf);
    c.head_dim = 96;
    validity_defects(&c, NULL, &d);
    cr_assert_eq(d.n, 0, "head_dim 96 is three blocks");
    c.kv_dtype = AG_F16;
    c.head_dim = 80;
    validity_defects(&c, NULL, &d);
    cr_assert_eq(d.n, 0, "f16 rows of 80 are fine");
}

/* ------------------------------------------------- the q8_0 q_dot model */

/* q rounded to q8_0 as an engine does it, per block of 32: d = amax / 127
 * as f16 (the harness's f16 rounding, read back by the reference), n =
 * round(x / d). */
static void q8_round(const float *q, float *out, int n) {
    for (int b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(q[b * 32 + j]));
        uint16_t h;
        values_store(&h, 0, AG_F16, amax / 127.0);
        const double d = ag_dtype_decode(&h, 0, AG_F16);
        for (int j = 0; j < 32; j++)
            out[b * 32 + j] = d > 0 ? (float)(d * nearbyint(q[b * 32 + j] * 127.0 / amax)) : 0.0f;
    }
}

Test(block_types, q8_0_q_dot_model) {
    enum { D = 64, SEQ = 40, BS = 8, NBLK = 5, H = 2 };
    const case_values u = {CASE_DIST_UNIFORM, 2.0f};
    float q[H * D], qq[H * D];
    values_fill(q, H * D, D, AG_F32, &u, 7);
    q8_round(q, qq, H * D);
    size_t kb;
    cr_assert_eq(ag_dtype_bytes(AG_Q8_0, (size_t)NBLK * BS * D, &kb), 0);
    uint8_t *k = malloc(kb), *v = malloc(kb);
    values_fill(k, (size_t)NBLK * BS * D, D, AG_Q8_0, &u, 8);
    values_fill(v, (size_t)NBLK * BS * D, D, AG_Q8_0, &u, 9);
    int32_t qsl[2] = {0, 1}, seq[1] = {SEQ}, bt[NBLK] = {4, 0, 3, 1, 2};
    uint8_t causal[1] = {1};
    ref_input in;
    memset(&in, 0, sizeof in);
    in.num_reqs = 1, in.query_start_loc = qsl, in.seq_lens = seq, in.causal = causal;
    in.block_table = bt, in.block_table_stride = NBLK, in.num_blocks = NBLK;
    in.num_heads = H, in.num_kv_heads = 1, in.head_dim = D, in.block_size = BS;
    in.window_left = in.window_right = -1;
    in.q = q, in.q_dtype = AG_F32, in.k_rows = k, in.v_rows = v, in.kv_dtype = AG_Q8_0;
    in.k_scale = in.v_scale = 1;
    /* the "engine": exact attention over the q it rounded */
    double got[H * D], out[H * D], lo[H * D], hi[H * D];
    ref_input eng = in;
    eng.q = qq;
    cr_assert_eq(ref_attention(&eng, got), 0);
    const ag_precision q8 = {AG_Q8_0, AG_F32, AG_F32, 1}, f32 = {AG_F32, AG_F32, AG_F32, 1};
    cr_assert_eq(ref_attention_range(&in, cmp_error_model(q8, AG_F32, AG_Q8_0, D), out, lo, hi), 0);
    int moved = 0;
    for (int i = 0; i < H * D; i++) {
        cr_assert(got[i] >= lo[i] && got[i] <= hi[i],
                  "element %d: %.9g outside the q8_0 model's [%.9g, %.9g]", i, got[i], lo[i],
                  hi[i]);
        moved |= got[i] != out[i];
    }
    cr_assert(moved, "rounding q to q8_0 changed nothing: the test would prove nothing");
    cr_assert_eq(ref_attention_range(&in, cmp_error_model(f32, AG_F32, AG_Q8_0, D), out, lo, hi),
                 0);
    int outside = 0;
    for (int i = 0; i < H * D; i++) outside += got[i] < lo[i] || got[i] > hi[i];
    cr_assert_gt(outside, H * D / 4, "an fp32 engine's bound holds q8_0's rounding too (%d)",
                 outside);
    /* the declared range: d overflows f16 past 65504 * 127 */
    const ref_model m = cmp_error_model(q8, AG_F32, AG_Q8_0, D);
    cr_assert(m.qmax == 65504.0 * 127.0 && m.q_unscaled && m.qblock > 1.0 / 254.0);
    const ref_model m1 = cmp_error_model(q8, AG_F32, AG_Q4_1, D);
    cr_assert(m1.rel > m.rel && m1.qmax < m.qmax, "an _1 cache's block-sum term");
    free(k);
    free(v);
}
