/*
 * cvt_tables.h — every kernel table this build compiled ("ref", then
 * kernels_decl.h's ATTN__SIMD_TABLES, the emulated ones included) with its
 * conversion paths (kernels.h's test hook) and its CPU check: the list the
 * conversion sweeps (test_convert.c) and the guard-page tails
 * (test_emulation.c) walk.  Include once per test file.
 */
#ifndef TESTS_ENGINE_CVT_TABLES_H
#define TESTS_ENGINE_CVT_TABLES_H

#include "../../src/kernels/kernels_decl.h"

typedef struct tab {
    const char *name;
    const attn__cvt_path *(*paths)(int *);
    int (*cpu)(void);
} tab;

static int cpu_any(void) { return 1; }
#define TAB(t) {#t, attn__cvt_##t, attn__cpu_##t},
static const tab k_tabs[] = {{"ref", attn__cvt_ref, cpu_any}, ATTN__SIMD_TABLES(TAB)};
#define N_TABS ((int)(sizeof k_tabs / sizeof k_tabs[0]))

#endif
