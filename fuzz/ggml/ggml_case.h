/*
 * ggml_case.h — owns fuzz_ggml_contract's case model: one
 * ggml_flash_attn_ext call as the fuzz input decodes it (fcase: the CPU
 * variant and threads, the operands' dims and types, the mask's shape and
 * fill, scale, ALiBi, soft cap, sinks, precision, the layout of q / k / v
 * in memory), the documented contract it is inside or outside of, and its
 * description.  The case room of the target (ggml_case.c); the variants
 * are those of the loaded library (ggml_run.h's ggc_lib).
 */
#ifndef ATTNGUARD_GGML_CASE_H
#define ATTNGUARD_GGML_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "../../engines/ggml/ggml_load.h"
#include "../contract/fz_input.h"

typedef struct fcase {
    int variant, threads, layout, pad, misalign, guard_front, mask_fill, sinks, prec;
    int64_t dk, dv, T, hq, hk, hv, nkv, nkv_v, n3q, n3k, n3v, m0, m1, m2, m3;
    enum ggml_type tq, tk, tv, tm;      /* tm: GGML_TYPE_COUNT = no mask */
    float scale, max_bias, softcap, amp_q, amp_k, amp_v;
    uint64_t seed;
} fcase;

/* ggml, loaded once (ggml_run.c): the case's variants are its CPU
 * backends. */
extern agg_lib *ggc_lib;

/* Decodes the input r into c: every byte string is a case (a short one
 * reads zeros); the tables weight the documented forms above the edges,
 * and one input's arithmetic stays near 2^21 multiply-adds. */
void ggc_decode(fz_rd *r, fcase *c);

/* What the harness's reference expresses (docs/design.md section 2, plus
 * the op's mask): one head size and one head count for K and V; and an
 * output to compare (T >= 1). */
int ggc_judgeable(const fcase *c);

/* The documented contract (ggml.h), one named condition each: 1 when c
 * breaks none; `why` gets the names of those it breaks (comma-separated,
 * cap bytes: every such input is a precondition ggml should refuse).
 * *exact: inside, and the fp64 check applies. */
int ggc_in_contract(const fcase *c, int *exact, char *why, size_t cap);

/* Prints c (its contract verdict and fields) to stderr: what a finding's
 * report shows before it fires. */
void ggc_describe(const fcase *c);

/* Whether c breaks a contract condition already reported
 * (reports/findings/ggml-001..003), so a campaign does not run it;
 * FUZZ_GGML_SKIP=<condition>,... replaces the list (empty: run all). */
int ggc_skipped(const fcase *c);

/* Whether the class `name` is on that list (FUZZ_GGML_SKIP, else the
 * classes written up in reports/findings). */
int ggc_triaged(const char *name);

#endif
