/*
 * test_wide.c — the check that sends rows to the fp64 path when their
 * accumulator left fp32 (attn__any_inf_nan, executor.c needs_wide).
 *
 * One infinity or NaN of either sign and any payload, at every position
 * of arrays of 1 to 70 floats (the 16-float blocks, each of their lanes,
 * and the tail after them), among finite values at the edges of fp32
 * (FLT_MAX, the smallest subnormal, signed zeros): found; the same arrays
 * without it: not.
 *
 * Bugs this catches: a lane or a block left out of the OR, a tail
 * skipped or read past, an exponent test that takes FLT_MAX for an
 * infinity or misses a NaN whose payload is in the low bits.
 */
#include <criterion/criterion.h>

#include "../../src/internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

Test(wide, any_inf_nan_every_position) {
    const float finite[] = {0.0f, -0.0f, 1.0f, -2.5f, FLT_MAX, -FLT_MAX, FLT_MIN,
                            from_bits(1u) /* smallest subnormal */, from_bits(0x807fffffu)};
    const float special[] = {INFINITY, -INFINITY, NAN, from_bits(0x7f800001u),
                             from_bits(0xffc00000u), from_bits(0x7fffffffu)};
    enum { NMAX = 70 };
    float x[NMAX + 1];
    for (int n = 1; n <= NMAX; n++) {
        for (int i = 0; i < n; i++) x[i] = finite[(i * 7 + n) % (int)(sizeof finite / sizeof *finite)];
        x[n] = INFINITY; /* one past the end: must not be read */
        cr_assert_eq(attn__any_inf_nan(x, (size_t)n), 0, "n %d: a finite array reported", n);
        for (int p = 0; p < n; p++)
            for (size_t s = 0; s < sizeof special / sizeof *special; s++) {
                const float keep = x[p];
                x[p] = special[s];
                cr_assert_neq(attn__any_inf_nan(x, (size_t)n), 0,
                              "n %d: special %zu (bits of %a) at %d not found", n, s,
                              (double)special[s], p);
                x[p] = keep;
            }
    }
    cr_assert_eq(attn__any_inf_nan(x, 0), 0, "an empty array reported");
}
