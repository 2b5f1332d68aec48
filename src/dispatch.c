/*
 * dispatch.c — choosing the kernel table.
 *
 * Owns: the static list of kernel tables the engine knows ("ref", "avx2",
 * "avx512", "avx512bf16"), which of them are compiled into this build and
 * usable on this CPU, attn__select_kernels() (explicit name, else $ATTN_ISA,
 * else the best usable table), the public attn_isa_available(), and the
 * tuning profile (attn__select_tune: explicit, else $ATTN_TUNE, else the
 * CPU vendor).
 *
 * How an ISA twin registers (src/kernels_avx2.c as the example):
 *   1. the file defines `const attn_kernels *attn__kernels_avx2(void)`
 *      returning its static table (name "avx2"; ref entries for what it does
 *      not override);
 *   2. the build compiles it with its -m flags AND defines
 *      ATTN_HAVE_AVX2=1 for this file (simplest: for every file), e.g. in
 *      the Makefile:
 *          CFLAGS_ALL += $(if $(wildcard src/kernels_avx2.c),-DATTN_HAVE_AVX2=1)
 *      and likewise ATTN_HAVE_AVX512 / ATTN_HAVE_AVX512BF16.  Putting it in
 *      CFLAGS_ALL means the .flags stamp changes and dispatch.o is rebuilt
 *      when an ISA file appears or goes away.
 * Without the macro the entry's getter is NULL and the name is reported as
 * "not compiled into this build".
 *
 * Why macros and not weak symbols: the library is a static archive, and a
 * weak undefined reference does not make the linker pull an archive member
 * in, so a weak attn__kernels_avx2 would silently stay NULL even when
 * kernels_avx2.o sits in libattn.a.  A strong reference under a macro
 * cannot go missing silently: defining the macro without the file is a link
 * error.
 *
 * The CPU predicates check every feature the twin's -m flags allow the
 * compiler to use (see the Makefile's ISA_FLAGS), and only on x86.  GCC's
 * __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512
 * register state (XGETBV), so "supported" means "safe to execute".
 */
#include "internal.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define ATTN_X86 1
#include <cpuid.h>
#endif

#ifdef ATTN_HAVE_AVX2
const attn_kernels *attn__kernels_avx2(void);
#define GET_AVX2 attn__kernels_avx2
#else
#define GET_AVX2 NULL
#endif
#ifdef ATTN_HAVE_AVX512
const attn_kernels *attn__kernels_avx512(void);
#define GET_AVX512 attn__kernels_avx512
#else
#define GET_AVX512 NULL
#endif
#ifdef ATTN_HAVE_AVX512BF16
const attn_kernels *attn__kernels_avx512bf16(void);
#define GET_AVX512BF16 attn__kernels_avx512bf16
#else
#define GET_AVX512BF16 NULL
#endif

/* ---- CPU predicates ---- */

static int cpu_any(void) { return 1; }

#ifdef ATTN_X86
/* clang 14's __builtin_cpu_supports does not know "f16c"; read CPUID leaf 1
 * ECX bit 29 directly (same answer, both compilers). */
static int cpu_f16c(void) {
    /* CPUID is serialising and traps to the hypervisor in a VM (microseconds):
     * read it once.  Racing first callers compute and store the same value. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned a, b, c, d;
        v = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

static int cpu_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_f16c();
}

static int cpu_avx512(void) {
    __builtin_cpu_init();
    return cpu_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
}

static int cpu_avx512bf16(void) {
    return cpu_avx512() && __builtin_cpu_supports("avx512bf16");
}
#else
static int cpu_avx2(void) { return 0; }
static int cpu_avx512(void) { return 0; }
static int cpu_avx512bf16(void) { return 0; }
#endif

/* ---- the tuning profile (kernels.h) ---- */

const char *attn__tune_name(int32_t tune) { return tune == ATTN__TUNE_AMD ? "amd" : "intel"; }

attn_status attn__select_tune(const char *name, int32_t *out, attn_error *err) {
    if (!out) return attn__fail(err, ATTN_E_NULL_ARG, "attn__select_tune: out is NULL");
    const char *source = "tune";
    if (!name || !name[0]) { /* as for the ISA: empty means "not set" */
        name = getenv("ATTN_TUNE");
        source = "ATTN_TUNE";
        if (name && !name[0]) name = NULL;
    }
    if (!name) {
#ifdef ATTN_X86
        __builtin_cpu_init();
        *out = __builtin_cpu_is("amd") ? ATTN__TUNE_AMD : ATTN__TUNE_INTEL;
#else
        *out = ATTN__TUNE_INTEL;
#endif
        attn__ok(err);
        return ATTN_OK;
    }
    if (strcmp(name, "intel") == 0) *out = ATTN__TUNE_INTEL;
    else if (strcmp(name, "amd") == 0) *out = ATTN__TUNE_AMD;
    else
        return attn__fail(err, ATTN_E_BAD_ISA, "%s = \"%.40s\" is not a tuning profile (intel, amd)",
                          source, name);
    attn__ok(err);
    return ATTN_OK;
}

/* ---- the list, worst first: "best" = the last usable entry ---- */

typedef struct isa_entry {
    const char *name;
    const attn_kernels *(*get)(void); /* NULL: not compiled into this build */
    int (*cpu)(void);                 /* 1: this CPU (and OS) can run it */
} isa_entry;

static const isa_entry isa_list[] = {
    {"ref", attn__kernels_ref, cpu_any},
    {"avx2", GET_AVX2, cpu_avx2},
    {"avx512", GET_AVX512, cpu_avx512},
    {"avx512bf16", GET_AVX512BF16, cpu_avx512bf16},
};
#define ISA_COUNT ((int)(sizeof isa_list / sizeof isa_list[0]))

static int isa_usable(const isa_entry *e) { return e->get != NULL && e->cpu(); }

/* "ref, avx2, ..." of entries that are usable (usable_only) or all. */
static void list_names(char *buf, size_t cap, int usable_only) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ISA_COUNT; i++) {
        if (usable_only && !isa_usable(&isa_list[i])) continue;
        size_t n = strlen(isa_list[i].name);
        const char *sep = used ? ", " : "";
        if (used + strlen(sep) + n + 1 > cap) break;
        strcpy(buf + used, sep);
        used += strlen(sep);
        strcpy(buf + used, isa_list[i].name);
        used += n;
    }
}

int attn_isa_available(const char **names, int cap) {
    int count = 0;
    for (int i = 0; i < ISA_COUNT; i++) {
        if (!isa_usable(&isa_list[i])) continue;
        if (names && count < cap) names[count] = isa_list[i].name;
        count++;
    }
    return count;
}

attn_status attn__select_kernels(const char *isa, const attn_kernels **out, attn_error *err) {
    if (!out) return attn__fail(err, ATTN_E_NULL_ARG, "attn__select_kernels: out is NULL");

    /* An empty string means "not set", for the argument and the variable
     * alike (ATTN_ISA= in a shell should not be an error). */
    const char *source = "requested ISA";
    if (!isa || !isa[0]) {
        isa = getenv("ATTN_ISA");
        source = "ATTN_ISA";
        if (isa && !isa[0]) isa = NULL;
    }

    if (!isa) {
        /* Best usable: the list is ordered worst first and "ref" is always
         * usable, so this cannot fail. */
        for (int i = ISA_COUNT - 1; i >= 0; i--) {
            if (!isa_usable(&isa_list[i])) continue;
            const attn_kernels *k = isa_list[i].get();
            ATTN_ASSERT(k != NULL && strcmp(k->name, isa_list[i].name) == 0);
            if (!k) continue;
            *out = k;
            attn__ok(err);
            return ATTN_OK;
        }
        return attn__fail(err, ATTN_E_INTERNAL, "no kernel table is usable (not even ref)");
    }

    char valid[96];
    for (int i = 0; i < ISA_COUNT; i++) {
        const isa_entry *e = &isa_list[i];
        if (strcmp(isa, e->name) != 0) continue;
        if (!e->get) {
            list_names(valid, sizeof valid, 1);
            return attn__fail(err, ATTN_E_BAD_ISA,
                              "%s '%s' is not compiled into this build; usable here: %s",
                              source, e->name, valid);
        }
        if (!e->cpu()) {
            list_names(valid, sizeof valid, 1);
            return attn__fail(err, ATTN_E_BAD_ISA,
                              "%s '%s' is not supported on this CPU; usable here: %s",
                              source, e->name, valid);
        }
        const attn_kernels *k = e->get();
        ATTN_ASSERT(k != NULL && strcmp(k->name, e->name) == 0);
        if (!k)
            return attn__fail(err, ATTN_E_INTERNAL, "kernel table '%s' is NULL", e->name);
        *out = k;
        attn__ok(err);
        return ATTN_OK;
    }
    list_names(valid, sizeof valid, 0);
    /* %.64s: the value may come from the environment, keep the message
     * bounded and still show what was asked for. */
    return attn__fail(err, ATTN_E_BAD_ISA, "unknown %s '%.64s'; valid names: %s", source, isa,
                      valid);
}
