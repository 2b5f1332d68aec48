/*
 * ggml_judge.h — owns fuzz_ggml_contract's verdicts on what ggml did not
 * refuse (the judge room of the target, ggml_judge.c): the output against
 * the harness's fp64 reference within ggml's declared rounding, a compute
 * that fails inside the contract, and the reach rows of ggml's branches
 * each computed op took.
 */
#ifndef ATTNGUARD_GGML_JUDGE_H
#define ATTNGUARD_GGML_JUDGE_H

#include "ggml_run.h"

/* out [n3][T][hq][dv] (f32) of R's op, computed by the `which` run,
 * against the reference; fires the differential oracle (after describing
 * the case) when an element leaves its range.  R->c must be exact
 * (ggc_in_contract). */
void ggc_judge(const ggc_run *R, const float *out, const char *which);

/* A compute that returned st != success on an input inside the contract:
 * fires bad-input (after describing c). */
void ggc_refused_inside(const fcase *c, enum ggml_status st, int inside, const char *which);

/* Adds the branches of c's op computed on `threads` threads to on[GGP_COUNT]
 * (engines/ggml/ggml_branches.h: the adapter's classification, fed this
 * target's own calling form). */
void ggc_op_branches(const fcase *c, int threads, int *on);

/* The finding (reports/findings, "ggml-006") whose wrong result c's op
 * would repeat, when its class is triaged (ggc_triaged); else NULL.  Such
 * an input still runs under the guards; its output is not judged. */
const char *ggc_known_wrong(const fcase *c);

#endif
