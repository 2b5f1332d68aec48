/*
 * fz_judge.h — owns what the contract targets' judges share: the
 * harness's fp64 reference (harness/judge/ref.c) fed an engine op's
 * operands, widened to f32 and laid out as the reference reads them, and
 * the range each output element may take under the engine's declared
 * rounding; the guarded buffers every operand lives in; the lists of
 * already reported classes a campaign skips.  Shared by
 * fuzz_ggml_contract and fuzz_ort_contract; each target fills the arrays
 * from its own op (fuzz/<engine>/, its judge file).
 */
#ifndef ATTNGUARD_FZ_JUDGE_H
#define ATTNGUARD_FZ_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "../../harness/judge/guard.h"
#include "../../harness/judge/oracles.h"
#include "../../harness/judge/ref.h"

/* The reference's input for one op and the arrays it points into.  Each
 * batch entry of the op is one request r: its keys are block r of `blk`
 * rows (block table: r), its queries tokens qsl[r] .. qsl[r + 1].
 * q [ntok][hq][D], k and v [nreq * blk][hkv][D], mask (or NULL) a dense
 * additive [ntok][hq][blk]; slopes and sinks [hq] or NULL; tok_of maps
 * an op output row to its token (-1: not judged), where the op needs it. */
typedef struct fz_judged {
    ref_input in;
    float *q, *k, *v, *mask, *slopes, *sinks;
    int32_t *qsl, *seq, *bt, *tok_of;
    uint8_t *causal;
    int32_t blk, ntok;
} fz_judged;

/* Allocates J's arrays for nreq requests of `rows` query rows in all
 * (J->blk set first): q, k, v, qsl, seq, bt, tok_of and causal (zero, so
 * non-causal), and the mask when `masked`.  Returns 0, or -1 when one
 * allocation failed (fz_judged_free still frees the rest). */
int fz_judged_alloc(fz_judged *J, int64_t nreq, int64_t rows, int64_t hq, int64_t hkv, int64_t D,
                    int masked);

/* Frees every array of J (those not allocated are NULL). */
void fz_judged_free(fz_judged *J);

/* Points J->in at J's arrays and sets what every contract op shares: nreq
 * requests of hq query heads over hkv KV heads of size D, block size
 * J->blk, no window, f32 q / K / V (scales 1), the mask strided as
 * fz_judged says, the soft cap and scale given (0: off / 1/sqrt(D)).
 * ALiBi, sinks and the mask's slope rule stay the target's to set. */
void fz_judged_ref(fz_judged *J, int64_t nreq, int64_t hq, int64_t hkv, int64_t D, double softcap,
                   double scale);

/* The reference's value of each of n output elements and the interval
 * [lo, hi] an engine rounding as md says may produce. */
typedef struct fz_range {
    double *val, *lo, *hi;
    size_t n;
} fz_range;

/* Computes R for in under md (aborts when out of memory), and adds the
 * elements it leaves open to the target's unjudged share (reach_judged).
 * Returns 0, or -1 when the reference refused the input; f then holds the
 * bad-input finding that says so (the target's judge called the input
 * judgeable: a harness bug), for the caller to fire after describing the
 * case. */
int fz_range_of(fz_range *R, const ref_input *in, ref_model md, size_t n, finding *f);

void fz_range_free(fz_range *R);

/* A guarded buffer of `bytes` for the operand `label` (judge/guard.c):
 * its first byte after a PROT_NONE page moved on by `misalign` bytes
 * (front), or its last byte against one; an access outside fires oracle
 * `o`.  Returns the buffer, or NULL when the mapping failed. */
void *fz_guarded(guard *g, const char *label, size_t bytes, int front, int misalign, oracle_id o);

/* Whether `name` (a class or contract condition) is in the skip list:
 * the environment variable `env` when set (empty: skip nothing), else
 * `dflt`, the classes already reported (reports/findings/). */
int fz_triaged(const char *env, const char *dflt, const char *name);

#endif
