/*
 * cpu.h — what the SIMD tables' CPU checks (attn__cpu_<isa> in each
 * table_<isa>.c) ask of the CPU: one feature each, on x86 only, read the
 * same way by gcc and clang.  Included only by table files, which are
 * portable C (no -m flags), so a check runs safely on any CPU.
 *
 * A table's check must test every feature its -m flags (mk/isa.mk) allow
 * the compiler to use.  GCC's __builtin_cpu_supports also checks that the
 * OS saves the AVX / AVX-512 register state (XGETBV), so "supported" means
 * "safe to execute".
 */
#ifndef ATTN_KERNELS_CPU_H
#define ATTN_KERNELS_CPU_H

#if defined(__x86_64__) || defined(__i386__)
#define ATTN__X86 1
#include <cpuid.h>

/* clang 14's __builtin_cpu_supports does not know "f16c"; read CPUID leaf 1
 * ECX bit 29 directly (same answer, both compilers).  CPUID is serialising
 * and traps to the hypervisor in a VM (microseconds): read it once per
 * file; racing first callers compute and store the same value. */
static inline int attn__cpu_f16c(void) {
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned a, b, c, d;
        v = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* AVX2 + FMA + F16C: the features of the avx2 flags, and the base of the
 * avx512 ones. */
static inline int attn__cpu_x86_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && attn__cpu_f16c();
}

/* The above plus AVX-512 F, BW, VL, DQ. */
static inline int attn__cpu_x86_avx512(void) {
    return attn__cpu_x86_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
}
#endif

#endif /* ATTN_KERNELS_CPU_H */
