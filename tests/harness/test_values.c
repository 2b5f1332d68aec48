/*
 * test_values.c — the harness's value generator (harness/case/values.c): its
 * rounding into each dtype is exact on representable values and rounds
 * halfway cases to even, checked against the reference's own decoder
 * (ag_dtype_decode, include/attnguard/dtype.h) over every code of the narrow types; and each
 * distribution draws what it says.
 */
#include <criterion/criterion.h>

#include "../../harness/judge/ref.h"
#include "../../harness/case/values.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static unsigned code_of(ag_dtype dt, double x) {
    uint16_t b16 = 0;
    uint8_t b8 = 0;
    if (dt == AG_BF16 || dt == AG_F16) {
        values_store(&b16, 0, dt, x);
        return b16;
    }
    values_store(&b8, 0, dt, x);
    return b8;
}

static double value_of(ag_dtype dt, unsigned code) {
    if (dt == AG_BF16 || dt == AG_F16) {
        const uint16_t b = (uint16_t)code;
        return ag_dtype_decode(&b, 0, dt);
    }
    const uint8_t b = (uint8_t)code;
    return ag_dtype_decode(&b, 0, dt);
}

/* Every finite code stores back to itself, and the midpoint between two
 * neighbours of the same sign goes to the one whose last bit is 0. */
static void every_code(ag_dtype dt, unsigned ncodes) {
    for (unsigned c = 0; c < ncodes; c++) {
        const double v = value_of(dt, c);
        if (!isfinite(v)) continue;
        cr_assert_eq(code_of(dt, v), c, "%s code 0x%x (%.9g) stores as 0x%x", ag_dtype_name(dt), c,
                     v, code_of(dt, v));
        const double w = value_of(dt, c + 1);
        if (c + 1 >= ncodes || !isfinite(w) || signbit(w) != signbit(v) || w == v) continue;
        const double mid = 0.5 * (v + w);
        if ((double)(float)mid != mid) continue;   /* stored through fp32: exact midpoints only */
        const unsigned want = (c & 1u) ? c + 1 : c;
        cr_assert_eq(code_of(dt, mid), want, "%s: midpoint %.17g of 0x%x and 0x%x -> 0x%x",
                     ag_dtype_name(dt), mid, c, c + 1, code_of(dt, mid));
    }
}

Test(values, bf16_every_code) { every_code(AG_BF16, 1u << 16); }
Test(values, f16_every_code) { every_code(AG_F16, 1u << 16); }
Test(values, fp8_e4m3_every_code) { every_code(AG_FP8_E4M3, 1u << 8); }
Test(values, fp8_e5m2_every_code) { every_code(AG_FP8_E5M2, 1u << 8); }

/* Past the largest finite value: infinity where the type has one, else
 * (e4m3fn) the largest value. */
Test(values, overflow) {
    cr_assert(isinf(value_of(AG_F16, code_of(AG_F16, 65520.0))));
    cr_assert_eq(value_of(AG_F16, code_of(AG_F16, 65519.0)), 65504.0);
    cr_assert_eq(value_of(AG_FP8_E4M3, code_of(AG_FP8_E4M3, 1e6)), 448.0);
    cr_assert(isinf(value_of(AG_FP8_E5M2, code_of(AG_FP8_E5M2, 1e6))));
}

/* The distributions: amplitude, one-hot rows, constant rows, subnormals,
 * extremes; all finite. */
Test(values, distributions) {
    enum { N = 4096, ROW = 64 };
    static float f[N];
    static uint16_t h[N];
    case_values v = {CASE_DIST_UNIFORM, 8.0f};
    values_fill(f, N, ROW, AG_F32, &v, 1);
    for (int i = 0; i < N; i++) cr_assert(fabsf(f[i]) <= 8.0f);
    v.dist = CASE_DIST_ONE_HOT;
    values_fill(f, N, ROW, AG_F32, &v, 2);
    for (int r = 0; r < N / ROW; r++) {
        int nz = 0;
        for (int j = 0; j < ROW; j++) nz += f[r * ROW + j] != 0;
        cr_assert_eq(nz, 1, "row %d has %d non-zeros", r, nz);
    }
    v.dist = CASE_DIST_CONST_ROW;
    values_fill(f, N, ROW, AG_F32, &v, 3);
    for (int r = 0; r < N / ROW; r++)
        for (int j = 1; j < ROW; j++) cr_assert_eq(f[r * ROW + j], f[r * ROW]);
    v.dist = CASE_DIST_DENORMAL;
    values_fill(h, N, ROW, AG_F16, &v, 4);
    for (int i = 0; i < N; i++) {
        const double x = fabs(ag_dtype_decode(h, (size_t)i, AG_F16));
        cr_assert(x > 0 && x < 0x1p-14, "f16 %.9g is not subnormal", x);
    }
    v.dist = CASE_DIST_EXTREME;
    values_fill(h, N, ROW, AG_F16, &v, 5);
    int at_max = 0;
    for (int i = 0; i < N; i++) {
        const double x = ag_dtype_decode(h, (size_t)i, AG_F16);
        cr_assert(isfinite(x));
        at_max += fabs(x) == 65504.0;
    }
    cr_assert(at_max > N / 8, "only %d of %d at +-65504", at_max, N);
}
