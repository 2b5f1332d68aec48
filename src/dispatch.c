/*
 * dispatch.c — choosing the kernel table.
 *
 * Owns: the list of kernel tables this build has ("ref", then the SIMD
 * tables mk/isa.mk compiled, worst first, then the emulated ones), which
 * of them are usable on this CPU, attn__select_kernels() (explicit name,
 * else $ATTN_ISA, else the best usable native table: an emulated table,
 * "avx512@emu", runs only when named), the public attn_isa_available(),
 * and the tuning
 * profile (attn__select_tune: explicit, else $ATTN_TUNE, else the CPU
 * vendor).
 *
 * The list comes from src/kernels/kernels_decl.h (ATTN__SIMD_TABLES): a
 * table T has a getter attn__kernels_T() and a CPU check attn__cpu_T() in
 * its table file, and is listed when mk/isa.mk compiled it (ATTN_HAVE_<T>).
 * Nothing here changes when a table is added (docs/adding-an-isa.md).
 *
 * Why macros and not weak symbols: the library is a static archive, and a
 * weak undefined reference does not make the linker pull an archive member
 * in, so a weak attn__kernels_avx2 would silently stay NULL even when its
 * object sits in libattn.a.  A strong reference under a macro cannot go
 * missing silently: defining the macro without the file is a link error.
 */
#include "internal.h"
#include "kernels/kernels_decl.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define ATTN_X86 1
#endif

static int cpu_any(void) { return 1; }

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

/* ---- the list, native worst first, then the emulated tables: "best" =
 * the last usable native entry ---- */

typedef struct isa_entry {
    const attn_kernels *(*get)(void); /* its name is the table's own (k->name) */
    int (*cpu)(void);                 /* 1: this CPU (and OS) can run it */
} isa_entry;

#define ISA_ENTRY(t) {attn__kernels_##t, attn__cpu_##t},
static const isa_entry isa_list[] = {
    {attn__kernels_ref, cpu_any},
    ATTN__SIMD_TABLES(ISA_ENTRY)
};
#define ISA_COUNT ((int)(sizeof isa_list / sizeof isa_list[0]))
#ifdef ATTN_HAVE_TABLES /* mk/isa.mk: how many SIMD tables it compiled */
_Static_assert(ISA_COUNT == 1 + ATTN_HAVE_TABLES,
               "mk/isa.mk compiled a table that src/kernels/kernels_decl.h does not list");
#endif

static int isa_usable(const isa_entry *e) { return e->cpu(); }
static const char *isa_name(const isa_entry *e) { return e->get()->name; }
static int isa_emulated(const isa_entry *e) { return e->get()->emulates != NULL; }

/* "ref, avx2, ..." of entries that are usable (usable_only) or all. */
static void list_names(char *buf, size_t cap, int usable_only) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ISA_COUNT; i++) {
        if (usable_only && !isa_usable(&isa_list[i])) continue;
        const char *name = isa_name(&isa_list[i]);
        size_t n = strlen(name);
        const char *sep = used ? ", " : "";
        if (used + strlen(sep) + n + 1 > cap) break;
        strcpy(buf + used, sep);
        used += strlen(sep);
        strcpy(buf + used, name);
        used += n;
    }
}

int attn_isa_available(const char **names, int cap) {
    int count = 0;
    for (int i = 0; i < ISA_COUNT; i++) {
        if (!isa_usable(&isa_list[i])) continue;
        if (names && count < cap) names[count] = isa_name(&isa_list[i]);
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
        /* Best usable native table: the list is ordered worst first and
         * "ref" is always usable, so this cannot fail.  An emulated table
         * is as correct as its native twin but many times slower. */
        for (int i = ISA_COUNT - 1; i >= 0; i--) {
            if (!isa_usable(&isa_list[i]) || isa_emulated(&isa_list[i])) continue;
            const attn_kernels *k = isa_list[i].get();
            if (!k) continue;
            *out = k;
            attn__ok(err);
            return ATTN_OK;
        }
        return attn__fail(err, ATTN_E_INTERNAL, "no kernel table is usable (not even ref)");
    }

    char valid[160];
    for (int i = 0; i < ISA_COUNT; i++) {
        const isa_entry *e = &isa_list[i];
        const attn_kernels *k = e->get();
        ATTN_ASSERT(k != NULL);
        if (!k || strcmp(isa, k->name) != 0) continue;
        if (!e->cpu()) {
            list_names(valid, sizeof valid, 1);
            return attn__fail(err, ATTN_E_BAD_ISA,
                              "%s '%s' is not supported on this CPU; usable here: %s",
                              source, k->name, valid);
        }
        *out = k;
        attn__ok(err);
        return ATTN_OK;
    }
    list_names(valid, sizeof valid, 0);
    /* %.64s: the value may come from the environment, keep the message
     * bounded and still show what was asked for. */
    return attn__fail(err, ATTN_E_BAD_ISA,
                      "unknown %s '%.64s' (or not compiled into this build); valid names: %s",
                      source, isa, valid);
}
