/*
 * ggml_run.h — owns how fuzz_ggml_contract runs a case on ggml (the host
 * room of the target, ggml_run.c): ggml loaded once with the functions
 * the adapter does not load; one input's graph (q, k, v as contiguous
 * tensors or as the permuted, padded views llama.cpp makes, the mask, the
 * sinks, the op); every operand, the output and the work buffers in
 * guarded mappings; the operands' values.
 */
#ifndef ATTNGUARD_GGML_RUN_H
#define ATTNGUARD_GGML_RUN_H

#include "../../harness/judge/guard.h"
#include "ggml_case.h"

/* ggml functions beyond the adapter's table (agg_base). */
typedef struct ggc_fns {
    AGG_FN(ggml_view_4d);
    AGG_FN(ggml_nbytes);
    AGG_FN(ggml_prec_set_acc);   /* may be NULL: older ggml */
    AGG_FN(ggml_fp16_to_fp32);
    AGG_FN(ggml_is_contiguous);
} ggc_fns;

extern ggc_fns ggc_more;

/* Loads ggml into ggc_lib and ggc_more; exits the process with a message
 * when it cannot (the target has nothing to fuzz). */
void ggc_load(void);

/* One input's graph and buffers: the slots of the op's operands, its
 * output and the work buffers of the one-thread and the threaded plan. */
enum { B_Q, B_K, B_V, B_MASK, B_SINKS, B_OUT, B_WORK1, B_WORKN, B_COUNT };
typedef struct ggc_run {
    fcase c;
    struct ggml_context *ctx;
    struct ggml_tensor *t[B_OUT + 1];     /* views handed to the op, and out */
    struct ggml_tensor *base[B_OUT + 1];  /* what the buffers back */
    struct ggml_cgraph *gf;
    guard buf[B_COUNT];
} ggc_run;

/* A guarded buffer of `bytes` for operand `label` (fz_guarded: front, or
 * against the rear page; "work" is scratch, the rest input); aborts when
 * the mapping fails. */
char *ggc_buffer(guard *g, const char *label, size_t bytes, int front, int misalign);

/* Builds R's graph from R->c in a fresh no-alloc context: the operands,
 * ggml_flash_attn_ext, its sinks and precision.  ggml may abort here (a
 * GGML_ASSERT: the caller's abort callback). */
void ggc_build(ggc_run *R);

/* Gives every operand and the output a guarded buffer of exactly its size
 * and fills the operands (values drawn from R->c.seed). */
void ggc_place(ggc_run *R);

/* Unmaps R's buffers, frees its context and zeroes it. */
void ggc_teardown(ggc_run *R);

#endif
