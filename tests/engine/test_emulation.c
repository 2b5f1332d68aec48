/*
 * test_emulation.c — where an emulated table (avx512@emu, avx512bf16@emu:
 * mk/isa.mk, src/kernels/avx512_emu.h) could differ from the hardware in a
 * way the judges would see, held to the hardware's definition:
 *
 *   - masked loads and stores touch only the lanes their mask selects: every
 *     table's conversion paths (the kernels' own inline code, kernels.h's
 *     test hook) run on buffers that end flush against an inaccessible
 *     page, at every length up to a few vectors.  An emulation that loaded
 *     the whole vector and blended would fault here, as it would in the
 *     guarded runs of the harness (a false alarm, or a cover for a real
 *     over-read).
 *   - VDPBF16PS: every lane against the instruction's definition written
 *     here (bf16 inputs and the accumulator with subnormals read as zero,
 *     the odd pair fused in first, then the even one, round to nearest
 *     even, subnormal results flushed), on special values and random bits.
 *     The native table is held to the same model where the CPU has it, so
 *     on such a CPU the model itself is checked against the silicon.
 *
 *   - TDPBF16PS (amx, amx@sim): see its test below.
 *
 * The conversions (VCVTNE2PS2BF16, VCVTPH2PS, ...) are test_convert.c's:
 * it sweeps every table's paths, the emulated ones included, bit for bit.
 */
#include <criterion/criterion.h>

#include "../../src/attn.h"
#include "../../src/kernels/kernels_decl.h"
#include "../tutil.h"
#include "cvt_tables.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------- masked tails at a guard page */

/* k_tabs, N_TABS: cvt_tables.h */

/* Two pages, the second inaccessible: a buffer of `bytes` placed so that
 * its last byte is the last accessible one. */
typedef struct fenced {
    unsigned char *map;
    size_t page;
} fenced;
static void *fence(fenced *f, size_t bytes) {
    f->page = (size_t)sysconf(_SC_PAGESIZE);
    f->map = mmap(NULL, 2 * f->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(f->map != MAP_FAILED);
    cr_assert_eq(mprotect(f->map + f->page, f->page, PROT_NONE), 0);
    cr_assert(bytes <= f->page);
    return f->map + f->page - bytes;
}
static void unfence(fenced *f) { munmap(f->map, 2 * f->page); }

static size_t elem_size(attn_dtype d) {
    return d == ATTN_DTYPE_F32 ? 4 : d == ATTN_DTYPE_BF16 || d == ATTN_DTYPE_F16 ? 2 : 1;
}

Test(emulation, masked_tails_stop_at_the_mask) {
    int ran = 0, emulated = 0;
    for (int t = 0; t < N_TABS; t++) {
        if (!k_tabs[t].cpu()) continue;
        int np = 0;
        const attn__cvt_path *p = k_tabs[t].paths(&np);
        emulated += strstr(k_tabs[t].name, "_emu") != NULL;
        for (int i = 0; i < np; i++) {
            const size_t nes = elem_size(p[i].narrow);
            const size_t ses = p[i].to_f32 ? nes : 4;
            const size_t des = p[i].to_f32 || (p[i].flags & ATTN__CVT_AS_F32) ? 4 : nes;
            for (size_t n = 1; n <= 100; n++) {
                fenced fs, fd;
                unsigned char *src = fence(&fs, n * ses), *dst = fence(&fd, n * des);
                /* small finite values in every format: 0x3c (bf16/f16/fp8
                 * high bytes of ones and halves) */
                memset(src, 0x3c, n * ses);
                p[i].run(src, dst, n); /* a fault here fails the test */
                unfence(&fs);
                unfence(&fd);
                ran++;
            }
        }
    }
    cr_assert_gt(ran, 0);
    cr_log_info("%d path-length pairs at a guard page, %d emulated tables among them", ran,
                emulated);
}

/* ------------------------------------------------------ VDPBF16PS model */

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* a subnormal as a zero of its sign */
static float daz(float f) { return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f; }
static float bf16(uint16_t h) { return daz(of_bits((uint32_t)h << 16)); }

/* The instruction's lane: SDM, VDPBF16PS (DAZ, FTZ, RNE, no exceptions). */
static float model_lane(float acc, uint16_t ae, uint16_t ao, uint16_t be, uint16_t bo) {
    const float t = daz(fmaf(bf16(ao), bf16(bo), daz(acc)));
    return daz(fmaf(bf16(ae), bf16(be), t));
}

typedef void (*dp_fn)(float *acc, const uint16_t *a, const uint16_t *b);
typedef struct dp_impl {
    const char *name;
    dp_fn run;
    int (*cpu)(void);
} dp_impl;
static const dp_impl k_dp[] = {
#ifdef ATTN_HAVE_AVX512BF16
    {"avx512bf16", attn__dpbf16__avx512bf16, attn__cpu_avx512bf16},
#endif
#ifdef ATTN_HAVE_AVX512BF16_EMU
    {"avx512bf16@emu", attn__dpbf16__avx512bf16_emu, attn__cpu_avx512bf16_emu},
#endif
    {NULL, NULL, NULL},
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
/* bf16 bits: specials, subnormals, values whose products overflow,
 * underflow or cancel, and plain random patterns */
static uint16_t pick16(void) {
    static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x8080, 0x3f80,
                                       0xbf80, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1,
                                       0x7f81, 0x1f80, 0x2000, 0x5f80, 0x6000, 0x3f81};
    const uint32_t r = next32();
    if (r % 4 == 0) return special[(r >> 8) % (sizeof special / sizeof special[0])];
    if (r % 4 == 1) return (uint16_t)((r >> 8) & 0x80ffu) | 0x3f00u; /* near one: cancellation */
    return (uint16_t)(r >> 8);
}
static float pick_acc(void) {
    const uint32_t r = next32();
    switch (r % 6) {
    case 0: return 0.0f;
    case 1: return of_bits(r >> 3 & 0x807fffffu); /* subnormal */
    case 2: return of_bits(0x7f800000u | (r & 0x80000000u)); /* inf */
    case 3: return of_bits(0x7fc00000u | (r >> 10)); /* NaN */
    default: return of_bits(next32());
    }
}

Test(emulation, vdpbf16ps_as_the_sdm_defines_it) {
    int ran = 0;
    for (const dp_impl *d = k_dp; d->name; d++) {
        if (!d->cpu()) {
            cr_log_info("%s: this CPU cannot run it", d->name);
            continue;
        }
        ran++;
        size_t bad = 0;
        for (int rep = 0; rep < 20000; rep++) {
            float acc[16], acc0[16], want[16];
            uint16_t a[32], b[32];
            for (int i = 0; i < 32; i++) {
                a[i] = pick16();
                b[i] = pick16();
            }
            for (int i = 0; i < 16; i++) {
                acc[i] = pick_acc();
                acc0[i] = acc[i];
                want[i] = model_lane(acc[i], a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1]);
            }
            d->run(acc, a, b);
            for (int i = 0; i < 16; i++) {
                /* NaN as a class: its payload is not part of the definition */
                const int same = isnan(want[i]) ? isnan(acc[i]) != 0 : bits(acc[i]) == bits(want[i]);
                if (!same && bad++ < 4)
                    cr_log_error("%s lane %d: acc 0x%08x, a %04x %04x, b %04x %04x: got %a "
                                 "(0x%08x), the definition gives %a (0x%08x)",
                                 d->name, i, bits(acc0[i]), a[2 * i], a[2 * i + 1], b[2 * i],
                                 b[2 * i + 1],
                                 (double)acc[i], bits(acc[i]), (double)want[i], bits(want[i]));
            }
        }
        cr_assert_eq(bad, 0, "%s: %zu of 320000 lanes differ from VDPBF16PS's definition", d->name,
                     bad);
    }
    if (!ran) TU_SKIP("no avx512bf16 table, native or emulated, runs here");
}

/* TDPBF16PS (the amx table's tile product) against a model written here:
 * per element, each pair's two products (bf16 inputs with subnormals read
 * as zero, subnormal products flushed) summed and rounded, then added to the accumulator (its
 * subnormals read as zero) and rounded to nearest even, subnormal results
 * flushed.  With one pair per element that is every bit of the silicon's
 * answer on the Xeon the table was written on; with more, its order of
 * sums is its own (amx_tiles.h), so full tiles are held to the error
 * bound of any order of fp32 sums: 32 roundings of at most 2^-24 of the
 * sum of the magnitudes.  The native table where the CPU has AMX, the
 * simulated one (amx@sim) everywhere it is built. */
typedef void (*tdp_fn)(float *c, const uint16_t *a, const uint16_t *b);
static const dp_impl k_tdp[] = {
#ifdef ATTN_HAVE_AMX
    {"amx", (dp_fn)attn__tdpbf16__amx, attn__cpu_amx},
#endif
#ifdef ATTN_HAVE_AMX_EMU
    {"amx@sim", (dp_fn)attn__tdpbf16__amx_emu, attn__cpu_amx_emu},
#endif
    {NULL, NULL, NULL},
};

static float model_pair(float acc, uint16_t ae, uint16_t ao, uint16_t be, uint16_t bo) {
    volatile float pe = bf16(ae) * bf16(be), po = bf16(ao) * bf16(bo);
    volatile float s = daz(daz(pe) + daz(po));
    return daz(daz(acc) + s);
}

Test(emulation, tdpbf16ps_one_pair_as_modelled_and_tiles_within_bound) {
    int ran = 0;
    for (const dp_impl *d = k_tdp; d->name; d++) {
        if (!d->cpu()) {
            cr_log_info("%s: this CPU cannot run it", d->name);
            continue;
        }
        ran++;
        size_t bad = 0, far = 0;
        for (int rep = 0; rep < 400; rep++) {
            float c[256], c0[256];
            uint16_t a[512], b[512];
            const int full = rep % 2;
            const int pk = (int)(next32() % 16); /* the one pair, unless full; zeros elsewhere */
            for (int i = 0; i < 512; i++)
                b[i] = full ? (uint16_t)((next32() & 0x80ffu) | 0x3c00u) : i / 32 == pk ? pick16() : 0;
            for (int m = 0; m < 16; m++) {
                const int k = pk;
                for (int i = 0; i < 32; i++)
                    a[32 * m + i] = full ? (uint16_t)((next32() & 0x80ffu) | 0x3c00u)
                                         : (i / 2 == k ? pick16() : 0);
                for (int n = 0; n < 16; n++)
                    c[16 * m + n] = c0[16 * m + n] = full ? of_bits((next32() & 0x807fffffu) | 0x3f000000u)
                                                          : pick_acc();
            }
            ((tdp_fn)d->run)(c, a, b);
            for (int m = 0; m < 16; m++)
                for (int n = 0; n < 16; n++) {
                    const float got = c[16 * m + n], acc = c0[16 * m + n];
                    if (full) {
                        double ex = acc, mag = fabs((double)acc);
                        for (int k = 0; k < 32; k++) {
                            const double t = (double)bf16(a[32 * m + k]) * bf16(b[32 * (k / 2) + 2 * n + k % 2]);
                            ex += t, mag += fabs(t);
                        }
                        if (fabs((double)got - ex) > 32 * 0x1p-24 * mag && far++ < 4)
                            cr_log_error("%s (%d, %d): got %a, exact %a, bound %a", d->name, m, n,
                                         (double)got, ex, 32 * 0x1p-24 * mag);
                        continue;
                    }
                    const int k = pk;
                    const float want = model_pair(acc, a[32 * m + 2 * k], a[32 * m + 2 * k + 1],
                                                  b[32 * k + 2 * n], b[32 * k + 2 * n + 1]);
                    const int same = isnan(want) ? isnan(got) != 0 : bits(got) == bits(want);
                    if (!same && bad++ < 4)
                        cr_log_error("%s (%d, %d): acc 0x%08x, a %04x %04x, b %04x %04x: got %a "
                                     "(0x%08x), the model gives %a (0x%08x)", d->name, m, n,
                                     bits(acc), a[32 * m + 2 * k], a[32 * m + 2 * k + 1],
                                     b[32 * k + 2 * n], b[32 * k + 2 * n + 1], (double)got, bits(got),
                                     (double)want, bits(want));
                }
        }
        cr_assert_eq(bad, 0, "%s: %zu of 51200 one-pair elements differ from the model", d->name, bad);
        cr_assert_eq(far, 0, "%s: %zu of 51200 tile elements outside the bound", d->name, far);
    }
    if (!ran) TU_SKIP("no amx table, native or simulated, runs here");
}

/* VSCALEFPS's definition (SDM), MXCSR at its default (RNE, no DAZ or FTZ):
 * a * 2^floor(b) rounded once, with the table's special cases.  On a CPU
 * with AVX-512 the test holds the silicon to this model too. */
static float model_scalef(float a, float b) {
    /* the table's row for a quiet NaN a: 2^+inf gives +inf, 2^-inf +0 */
    if (isnan(a) && (bits(a) & 0x00400000u) && isinf(b)) return b > 0 ? INFINITY : 0.0f;
    if (isnan(a) || isnan(b)) return NAN;
    if (isinf(b)) {
        if (b > 0) return a == 0.0f ? NAN : copysignf(INFINITY, a);
        return isinf(a) ? NAN : copysignf(0.0f, a);
    }
    if (a == 0.0f || isinf(a)) return a;
    /* in double: exact for every floor(b) that leaves a finite nonzero
     * float, then one rounding to float */
    const double n = floor((double)b);
    if (n > 300) return copysignf(INFINITY, a);
    if (n < -300) return copysignf(0.0f, a);
    return (float)ldexp((double)a, (int)n);
}

typedef void (*sc_fn)(float *dst, const float *a, const float *b);
typedef struct sc_impl {
    const char *name;
    sc_fn run;
    int (*cpu)(void);
} sc_impl;
static const sc_impl k_sc[] = {
#ifdef ATTN_HAVE_AVX512
    {"avx512", attn__scalef__avx512, attn__cpu_avx512},
#endif
#ifdef ATTN_HAVE_AVX512_EMU
    {"avx512@emu", attn__scalef__avx512_emu, attn__cpu_avx512_emu},
#endif
    {NULL, NULL, NULL},
};

/* a: every class (subnormals, normals across the range, specials); b:
 * integers and fractions from -400 to 400, where 2^floor(b) alone leaves
 * the float range while a * 2^floor(b) may not, and specials */
static float pick_scale_a(void) {
    const uint32_t r = next32();
    switch (r % 5) {
    case 0: return of_bits((r >> 3 & 0x807fffffu) | 1u); /* subnormal */
    case 1: return of_bits(0x7f800000u | (r & 0x80000000u));
    case 2: return of_bits(0x7fc00000u | (r >> 10));
    case 3: return (r & 8) ? 0.0f : -0.0f;
    default: return of_bits(next32() & 0xff7fffffu); /* finite */
    }
}
static float pick_scale_b(void) {
    const uint32_t r = next32();
    switch (r % 6) {
    case 0: return (float)((int32_t)(r >> 8) % 401);
    case 1: return (float)((int32_t)(r >> 8) % 401) + 0.5f * (float)((r >> 4) & 1) - 0.25f;
    case 2: return of_bits(0x7f800000u | (r & 0x80000000u));
    case 3: return of_bits(0x7fc00000u | (r >> 10));
    case 4: return of_bits(r >> 3 & 0x807fffffu); /* subnormal: floor 0 or -1 */
    default: return of_bits(next32());
    }
}

Test(emulation, vscalefps_as_the_sdm_defines_it) {
    int ran = 0;
    for (const sc_impl *d = k_sc; d->name; d++) {
        if (!d->cpu()) {
            cr_log_info("%s: this CPU cannot run it", d->name);
            continue;
        }
        ran++;
        size_t bad = 0;
        for (int rep = 0; rep < 20000; rep++) {
            float a[16], b[16], got[16];
            for (int i = 0; i < 16; i++) {
                a[i] = pick_scale_a();
                b[i] = pick_scale_b();
            }
            d->run(got, a, b);
            for (int i = 0; i < 16; i++) {
                const float want = model_scalef(a[i], b[i]);
                const int same = isnan(want) ? isnan(got[i]) != 0 : bits(got[i]) == bits(want);
                if (!same && bad++ < 4)
                    cr_log_error("%s: scalef(%a, %a) gave %a (0x%08x), the definition gives %a",
                                 d->name, (double)a[i], (double)b[i], (double)got[i],
                                 bits(got[i]), (double)want);
            }
        }
        cr_assert_eq(bad, 0, "%s: %zu of 320000 lanes differ from VSCALEFPS's definition",
                     d->name, bad);
    }
    if (!ran) TU_SKIP("no avx512 table, native or emulated, runs here");
}
