/*
 * runcase.h — run one case end to end and judge it: problem, builder, plan,
 * scratchpad, attn_run per layer, reference, comparison.  Shared by the CLI
 * (`attnguard check`), the tests and the fuzz targets so that all of them
 * decide PASS/FAIL the same way.
 *
 * A case whose `expect` is not ATTN_OK passes iff attn_builder_create or
 * attn_builder_build returns exactly that status (nothing is run).  Any
 * other case passes iff every layer runs with ATTN_OK and matches the
 * reference within cmp_tolerance (and the optional scratch check agrees).
 */
#ifndef ATTN_RUNCASE_H
#define ATTN_RUNCASE_H

#include "case.h"
#include "compare.h"

#define RUNCASE_DEFAULT_MAX_BYTES ((size_t)2 << 30)   /* 2 GiB of inputs */

typedef struct runcase_opts {
    size_t max_bytes;        /* input cap for problem_init; 0 = RUNCASE_DEFAULT_MAX_BYTES */
    size_t redzone;          /* attn_plan_opts.redzone (0 = production layout) */
    int keep_outputs;        /* 1: the result keeps each layer's output buffer */
    /* Optional scratchpad hooks (e.g. the guard).  scratch_alloc returns
     * ATTN_ALIGN-aligned memory whose usable size is exactly `bytes`, or
     * NULL; scratch_check runs after every layer's attn_run and returns 0
     * when the scratchpad is intact, else writes a message and returns
     * nonzero; scratch_free releases.  All NULL: aligned_alloc/free, no check. */
    void *(*scratch_alloc)(void *ctx, const attn_plan *plan, size_t bytes);
    int (*scratch_check)(void *ctx, const attn_plan *plan, void *scratch, char *msg,
                         size_t cap);
    void (*scratch_free)(void *ctx, void *scratch);
    void *ctx;
} runcase_opts;

typedef struct runcase_layer {
    attn_status status;      /* attn_run's status (ATTN_OK when it ran) */
    int ran_ref;             /* the reference ran and cmp is meaningful */
    cmp_result cmp;
    cmp_tol tol;
    int scratch_ok;          /* 1 unless scratch_check reported a violation */
    int pass;
    void *out;               /* keep_outputs: the engine's output (out_dtype), else NULL */
    size_t out_elems;
} runcase_layer;

typedef struct runcase_result {
    int pass;                /* the verdict for the whole case */
    int refusal;             /* the case expected a refusal status */
    attn_status status;      /* the engine status that decided the case, ATTN_OK if none */
    const char *stage;       /* where it was decided: "problem", "create", "build",
                                "scratch", "run", "" (all layers ran) */
    char message[512];       /* the engine's message or the harness's reason */
    int32_t num_layers;
    runcase_layer layers[CASE_MAX_LAYERS];
    size_t scratch_bytes;    /* the plan's scratchpad size (0 if no plan) */
} runcase_result;

/* Run case `c` (opts may be NULL: defaults).  Fills *res (always, even on
 * early failure) and returns res->pass.  Never aborts on a bad case; a case
 * that cannot be materialized but expects ATTN_OK fails at stage "problem".
 * Free kept outputs with runcase_result_free. */
int runcase_run(const attn_case *c, const runcase_opts *opts, runcase_result *res);
void runcase_result_free(runcase_result *res);   /* NULL-safe; keeps the verdict */

/* The short expect spelling used in case files: "ok", "mixed_heads", ... */
const char *runcase_status_short(attn_status st, char *buf, size_t cap);

#endif /* ATTN_RUNCASE_H */
