/*
 * test_convert.c — every element conversion of every kernel table, bit for
 * bit against a model written here: round to nearest, ties to even, done
 * in double arithmetic on the value (not on the bits, as the engine does).
 *
 * The paths are each table's own (attn__cvt_<isa>, kernels.h): the
 * portable gather/store/KV-writer conversions, AVX2's load8/store8,
 * AVX-512's load16/store16 and the decode tile's bf16 widening, and the
 * avx512bf16 table's VCVTNE2PS2BF16 and weight rounding.  One Criterion
 * test per path (they run in parallel); a path of a table this CPU cannot
 * run skips, saying so.
 *
 * Inputs: every code of a narrow type (2^16 or 2^8) for widenings; for
 * narrowings from fp32, per sign and biased exponent (all 512, subnormals,
 * infinities and every NaN exponent included) 2^19 mantissas whose low 19
 * bits run through every pattern (so every tie and near-tie of bf16, f16
 * and fp8 rounding, with either parity of the kept bit) and whose top 4
 * are drawn from a seeded generator, plus mantissas built to sit exactly
 * on, one below and one above the rounding point of every bit position
 * under all-zero, all-one and alternating upper bits (ties that decide
 * subnormal outputs, carries into the exponent): 2^28 and a little more.
 * Every path also runs on lengths 1..47, which exercises its masked tails.
 *
 * Conventions the model encodes (dtype.h states them): NaN stays NaN with
 * its sign; narrowing sets the quiet bit and keeps the top payload bits
 * (e4m3fn has one NaN: 0x7f); widening f16/fp8 sets the quiet bit, bf16
 * widens bit for bit; e4m3fn saturates (|x| beyond 448 and +-inf give
 * +-448); bf16, f16, e5m2 overflow to infinity.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "../../src/attn.h"
#include "../../src/kernels/kernels_decl.h"
#include "../tutil.h"
#include "cvt_tables.h"

#include <criterion/logging.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the model */

typedef struct fmt {
    int ebits, mbits, bias;
    int ieee;        /* all-ones exponent: infinity and NaN (else only S.1111.111 is NaN) */
    int saturate;    /* overflow (and infinity) to the largest finite value */
} fmt;

static fmt fmt_of(attn_dtype dt) {
    switch (dt) {
    case ATTN_DTYPE_BF16: return (fmt){8, 7, 127, 1, 0};
    case ATTN_DTYPE_F16: return (fmt){5, 10, 15, 1, 0};
    case ATTN_DTYPE_FP8_E4M3: return (fmt){4, 3, 7, 0, 1};
    default: return (fmt){5, 2, 15, 1, 0};
    }
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* 2^e as a double, built directly (-1022 <= e <= 1023). */
static double pow2(int e) {
    const uint64_t b = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* The largest finite value of f. */
static double max_finite(fmt f) {
    const int emax = (f.ieee ? (1 << f.ebits) - 2 : (1 << f.ebits) - 1) - f.bias;
    const double top = f.ieee ? 2.0 - pow2(-f.mbits) : 2.0 - pow2(1 - f.mbits);
    return top * pow2(emax); /* e4m3fn: its top mantissa in the top binade is NaN */
}

/* fp32 bits u -> the code of f: the value rounded to the nearest
 * representable one, ties to the even code, worked out in double: the
 * spacing q of f's values at x (2^(E - mbits) for x in binade E, the
 * subnormal spacing below f's smallest normal), x / q (below 2^12)
 * rounded to an integer half to even by adding and taking away 2^52 (the
 * double sum rounds there: the classic trick, and libm's rint is a call
 * without SSE4.1), times q; then the code of that value. */
static uint32_t model_narrow(uint32_t u, fmt f) {
    const uint32_t sign = u >> 31, top = sign << (f.ebits + f.mbits);
    const uint32_t all_e = ((1u << f.ebits) - 1u) << f.mbits;
    const double x = fabs((double)float_of(u));
    if (isnan(x)) {
        if (!f.ieee) return top | all_e | ((1u << f.mbits) - 1u);
        const uint32_t payload = (u & 0x7fffffu) >> (23 - f.mbits);
        return top | all_e | (1u << (f.mbits - 1)) | payload;
    }
    const double maxf = max_finite(f);
    const int emin = 1 - f.bias;
    if (isinf(x)) return f.saturate ? top | model_narrow(bits_of((float)maxf), f) : top | all_e;
    const int ex = (int)((u >> 23) & 0xffu) - 127; /* x's binade (fp32 subnormals: below all) */
    const int E = ex < emin ? emin : ex;
    const volatile double big = 0x1p52; /* volatile: no folding of (y + big) - big */
    const double y = x * pow2(f.mbits - E);
    const double r = ((y + big) - big) * pow2(E - f.mbits);
    if (r > maxf) return f.saturate ? top | model_narrow(bits_of((float)maxf), f) : top | all_e;
    if (r == 0.0) return top;
    uint64_t rb;
    memcpy(&rb, &r, 8);
    const int er = (int)(rb >> 52) - 1023;
    if (er < emin) /* subnormal: r counts the subnormal spacing */
        return top | (uint32_t)(r * pow2(f.mbits - emin));
    const uint32_t mf = (uint32_t)((rb >> (52 - f.mbits)) & ((1u << f.mbits) - 1u));
    return top | ((uint32_t)(er + f.bias) << f.mbits) | mf;
}

/* The code c of f -> fp32 bits. */
static uint32_t model_widen(uint32_t c, attn_dtype dt) {
    if (dt == ATTN_DTYPE_BF16) return c << 16; /* bf16 is fp32's top half, NaN too */
    const fmt f = fmt_of(dt);
    const uint32_t sign = (c >> (f.ebits + f.mbits)) & 1u, e = (c >> f.mbits) & ((1u << f.ebits) - 1u),
                   m = c & ((1u << f.mbits) - 1u);
    const uint32_t emax = (1u << f.ebits) - 1u;
    const int nan = f.ieee ? e == emax && m : e == emax && m == (1u << f.mbits) - 1u;
    if (nan) return sign << 31 | 0x7fc00000u | m << (23 - f.mbits);
    if (f.ieee && e == emax) return sign << 31 | 0x7f800000u;
    const double v = e ? (1.0 + (double)m * pow2(-f.mbits)) * pow2((int)e - f.bias)
                       : (double)m * pow2(1 - f.bias - f.mbits);
    return sign << 31 | bits_of((float)v);
}

/* ------------------------------------------------------- the paths */

/* k_tabs, N_TABS: cvt_tables.h */
#define MAX_PATHS 64

/* Widening tests: one per path (parameter table * 16 + path). */
static int g_widen[MAX_PATHS];

ParameterizedTestParameters(convert, widen) {
    size_t n = 0;
    for (int t = 0; t < N_TABS; t++) {
        int np = 0;
        const attn__cvt_path *p = k_tabs[t].paths(&np);
        for (int i = 0; i < np && n < MAX_PATHS; i++)
            if (p[i].to_f32) g_widen[n++] = t * 16 + i;
    }
    return cr_make_param_array(int, g_widen, n);
}

static size_t es_of(attn_dtype dt) { return dt == ATTN_DTYPE_BF16 || dt == ATTN_DTYPE_F16 ? 2 : 1; }

static uint32_t narrow_at(const void *buf, size_t i, size_t es) {
    return es == 2 ? ((const uint16_t *)buf)[i] : ((const uint8_t *)buf)[i];
}

/* Widening: every code, then every length 1..47 from a few offsets. */
static void check_widen(const tab *t, const attn__cvt_path *p) {
    const size_t es = es_of(p->narrow), n = (size_t)1 << (8 * es);
    unsigned char *src = malloc(n * es);
    uint32_t *dst = malloc(n * 4);
    cr_assert(src && dst);
    for (size_t i = 0; i < n; i++) {
        if (es == 2) ((uint16_t *)(void *)src)[i] = (uint16_t)i;
        else src[i] = (uint8_t)i;
    }
    p->run(src, dst, n);
    for (size_t i = 0; i < n; i++) {
        const uint32_t want = model_widen((uint32_t)i, p->narrow);
        if (dst[i] != want)
            cr_assert_fail("%s %s: code %#zx -> %08x, want %08x", t->name, p->name, i, dst[i],
                           want);
    }
    for (size_t len = 1; len < 48; len++)
        for (size_t off = 0; off + len <= n; off += n / 5 + 7) {
            uint32_t out[48];
            memset(out, 0xa5, sizeof out);
            p->run(src + off * es, out, len);
            for (size_t i = 0; i < len; i++)
                cr_assert_eq(out[i], model_widen((uint32_t)(off + i), p->narrow),
                             "%s %s: length %zu, element %zu", t->name, p->name, len, i);
            cr_assert_eq(out[len], 0xa5a5a5a5u, "%s %s: length %zu wrote past its end", t->name,
                         p->name, len);
        }
    free(src);
    free(dst);
}

ParameterizedTest(int *param, convert, widen, .timeout = 60) {
    const tab *t = &k_tabs[*param / 16];
    int np = 0;
    const attn__cvt_path *p = &t->paths(&np)[*param % 16];
    if (!t->cpu()) TU_SKIP("%s %s: this CPU cannot execute the table's instructions", t->name, p->name);
    check_widen(t, p);
}

/* The value path p should give fp32 input bits u, as dst holds it. */
static uint32_t want_narrow(const attn__cvt_path *p, uint32_t u) {
    if ((p->flags & ATTN__CVT_DAZ) && (u & 0x7f800000u) == 0) u &= 0x80000000u;
    const uint32_t c = model_narrow(u, fmt_of(p->narrow));
    return (p->flags & ATTN__CVT_AS_F32) ? model_widen(c, p->narrow) : c;
}

static uint32_t got_at(const attn__cvt_path *p, const void *dst, size_t i) {
    return (p->flags & ATTN__CVT_AS_F32) ? ((const uint32_t *)dst)[i]
                                         : narrow_at(dst, i, es_of(p->narrow));
}

static int skip_input(const attn__cvt_path *p, uint32_t u) {
    return (p->flags & ATTN__CVT_FINITE) && (u & 0x7f800000u) == 0x7f800000u;
}

#define PER_EXP ((size_t)1 << 19)
#define STRUCT_MAX 512

/* fp32 inputs of one sign and biased exponent (see the top comment). */
static size_t inputs_for(uint32_t sign, uint32_t exp, uint32_t *in) {
    size_t n = 0;
    uint64_t s = 0x5eedull * (sign * 256 + exp + 1);
    for (size_t i = 0; i < PER_EXP; i++) {
        const uint32_t upper = (uint32_t)(tu_rng(&s) >> 60) << 19;
        in[n++] = sign << 31 | exp << 23 | upper | (uint32_t)i;
    }
    static const uint32_t bases[] = {0u, 0x7fffffu, 0x2aaaaau, 0x555555u};
    for (uint32_t k = 0; k < 23; k++)
        for (int b = 0; b < 4; b++) {
            const uint32_t m = (bases[b] & ~((2u << k) - 1u) & 0x7fffffu) | (1u << k);
            const uint32_t ms[3] = {m, (m - 1u) & 0x7fffffu, (m + 1u) & 0x7fffffu};
            for (int d = 0; d < 3; d++) in[n++] = sign << 31 | exp << 23 | ms[d];
        }
    return n;
}

/* Narrowing tests: per narrow type, in SHARDS slices of the 512 (sign,
 * exponent) classes, every path to that type of every table this CPU runs
 * against one evaluation of the model per input. */
#define SHARDS 4
static const attn_dtype k_narrow[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_F16, ATTN_DTYPE_FP8_E4M3,
                                      ATTN_DTYPE_FP8_E5M2};
static int g_narrow[4 * SHARDS];

ParameterizedTestParameters(convert, narrow) {
    for (int i = 0; i < 4 * SHARDS; i++) g_narrow[i] = i;
    return cr_make_param_array(int, g_narrow, 4 * SHARDS);
}

/* One path's output against the model's codes for inputs in[0 .. n). */
static void compare_narrow(const tab *t, const attn__cvt_path *p, const uint32_t *in,
                           const uint32_t *model, size_t n, const void *out) {
    const uint32_t sbit = 1u << (fmt_of(p->narrow).ebits + fmt_of(p->narrow).mbits);
    for (size_t i = 0; i < n; i++) {
        if (skip_input(p, in[i])) continue;
        uint32_t want = model[i];
        if ((p->flags & ATTN__CVT_DAZ) && (in[i] & 0x7f800000u) == 0) want = in[i] >> 31 ? sbit : 0;
        if (p->flags & ATTN__CVT_AS_F32) want = model_widen(want, p->narrow);
        const uint32_t got = got_at(p, out, i);
        if (got != want) /* (one assertion per element would dominate the time) */
            cr_assert_fail("%s %s: fp32 %08x (%.9g) -> %#x, want %#x", t->name, p->name, in[i],
                           (double)float_of(in[i]), got, want);
    }
}

/* lengths 1..47: the masked tails, and nothing written past the end */
static void check_tails(const tab *t, const attn__cvt_path *p) {
    const size_t es = (p->flags & ATTN__CVT_AS_F32) ? 4 : es_of(p->narrow);
    for (size_t len = 1; len < 48; len++) {
        uint32_t src[48];
        unsigned char dst[48 * 4 + 4];
        uint64_t s = 99 + len;
        for (size_t i = 0; i < len; i++) src[i] = (uint32_t)tu_rng(&s) & 0xbfffffffu;
        memset(dst, 0xa5, sizeof dst);
        p->run(src, dst, len);
        for (size_t i = 0; i < len; i++)
            if (!skip_input(p, src[i]))
                cr_assert_eq(got_at(p, dst, i), want_narrow(p, src[i]), "%s %s: length %zu, %zu",
                             t->name, p->name, len, i);
        for (size_t b = len * es; b < len * es + 4; b++)
            cr_assert_eq(dst[b], 0xa5, "%s %s: length %zu wrote past its end", t->name, p->name,
                         len);
    }
}

ParameterizedTest(int *param, convert, narrow, .timeout = 120) {
    const attn_dtype dt = k_narrow[*param / SHARDS];
    const int shard = *param % SHARDS;
    const fmt f = fmt_of(dt);
    /* the paths to dt of the tables this CPU runs (the others said aloud) */
    const tab *pt[MAX_PATHS];
    const attn__cvt_path *pp[MAX_PATHS];
    int np = 0;
    for (int t = 0; t < N_TABS; t++) {
        int n = 0;
        const attn__cvt_path *p = k_tabs[t].paths(&n);
        for (int i = 0; i < n; i++) {
            if (p[i].to_f32 || p[i].narrow != dt) continue;
            if (!k_tabs[t].cpu()) {
                cr_log_info("SKIP %s %s: this CPU cannot execute the table's instructions",
                            k_tabs[t].name, p[i].name);
                continue;
            }
            pt[np] = &k_tabs[t], pp[np++] = &p[i];
        }
    }
    cr_assert(np > 0, "no path narrows to %s", attn_dtype_name(dt));
    uint32_t *in = malloc((PER_EXP + STRUCT_MAX) * 4), *model = malloc((PER_EXP + STRUCT_MAX) * 4);
    unsigned char *out = malloc((PER_EXP + STRUCT_MAX) * 4);
    cr_assert(in && model && out);
    size_t total = 0;
    for (uint32_t c = (uint32_t)shard; c < 512; c += SHARDS) {
        const size_t n = inputs_for(c / 256, c % 256, in);
        for (size_t i = 0; i < n; i++) model[i] = model_narrow(in[i], f);
        for (int k = 0; k < np; k++) {
            pp[k]->run(in, out, n);
            compare_narrow(pt[k], pp[k], in, model, n, out);
        }
        total += n;
    }
    cr_assert_geq(total * SHARDS, (size_t)1 << 28);
    if (shard == 0)
        for (int k = 0; k < np; k++) check_tails(pt[k], pp[k]);
    free(in), free(model), free(out);
}

/* The model itself, on values worked out by hand (a model that is wrong
 * in the same way as the engine would pass everything above). */
Test(convert, model_by_hand) {
    const fmt bf = fmt_of(ATTN_DTYPE_BF16), h = fmt_of(ATTN_DTYPE_F16);
    const fmt e4 = fmt_of(ATTN_DTYPE_FP8_E4M3), e5 = fmt_of(ATTN_DTYPE_FP8_E5M2);
    cr_assert_eq(model_narrow(bits_of(1.0f), bf), 0x3f80u);
    cr_assert_eq(model_narrow(0x3f808000u, bf), 0x3f80u);  /* tie, even stays */
    cr_assert_eq(model_narrow(0x3f818000u, bf), 0x3f82u);  /* tie, odd rounds up */
    cr_assert_eq(model_narrow(0x3f808001u, bf), 0x3f81u);
    cr_assert_eq(model_narrow(0x7f7fffffu, bf), 0x7f80u);  /* FLT_MAX -> inf */
    cr_assert_eq(model_narrow(0x00000001u, bf), 0x0000u);  /* smallest subnormal -> 0 */
    cr_assert_eq(model_narrow(0x00400000u, bf), 0x0040u);  /* subnormal kept */
    cr_assert_eq(model_narrow(0xff800001u, bf), 0xffc0u);  /* sNaN quieted, sign kept */
    cr_assert_eq(model_narrow(bits_of(65504.0f), h), 0x7bffu);
    cr_assert_eq(model_narrow(bits_of(65520.0f), h), 0x7c00u); /* tie to even: inf */
    cr_assert_eq(model_narrow(bits_of(0x1p-24f), h), 0x0001u);
    cr_assert_eq(model_narrow(bits_of(0x1p-25f), h), 0x0000u);  /* tie to even: 0 */
    cr_assert_eq(model_narrow(bits_of(0x1.8p-25f), h), 0x0001u);
    cr_assert_eq(model_narrow(bits_of(448.0f), e4), 0x7eu);
    cr_assert_eq(model_narrow(bits_of(470.0f), e4), 0x7eu);    /* would round to 480: saturates */
    cr_assert_eq(model_narrow(bits_of(-INFINITY), e4), 0xfeu);
    cr_assert_eq(model_narrow(bits_of(NAN), e4), 0x7fu);
    cr_assert_eq(model_narrow(bits_of(0x1p-9f), e4), 0x01u);
    cr_assert_eq(model_narrow(bits_of(0x1p-10f), e4), 0x00u);  /* tie to even: 0 */
    cr_assert_eq(model_narrow(bits_of(0x1.8p-9f), e4), 0x02u); /* tie 1.5 -> 2 */
    cr_assert_eq(model_narrow(bits_of(57344.0f), e5), 0x7bu);
    cr_assert_eq(model_narrow(bits_of(61440.0f), e5), 0x7cu);  /* tie to even: inf */
    cr_assert_eq(model_narrow(bits_of(INFINITY), e5), 0x7cu);
    cr_assert_eq(model_widen(0x7fu, ATTN_DTYPE_FP8_E4M3), 0x7ff00000u);
    cr_assert_eq(model_widen(0x7eu, ATTN_DTYPE_FP8_E4M3), bits_of(448.0f));
    cr_assert_eq(model_widen(0x81u, ATTN_DTYPE_FP8_E4M3), bits_of(-0x1p-9f));
    cr_assert_eq(model_widen(0x7du, ATTN_DTYPE_FP8_E5M2), 0x7fe00000u);
    cr_assert_eq(model_widen(0xfcu, ATTN_DTYPE_FP8_E5M2), bits_of(-INFINITY));
    cr_assert_eq(model_widen(0x0001u, ATTN_DTYPE_F16), bits_of(0x1p-24f));
    cr_assert_eq(model_widen(0x7c01u, ATTN_DTYPE_F16), 0x7fc02000u);
    cr_assert_eq(model_widen(0xff81u, ATTN_DTYPE_BF16), 0xff810000u);
}
