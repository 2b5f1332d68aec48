/*
 * mutate.h — structure-aware mutation of a case, what libFuzzer's custom
 * mutator and cross-over hooks work with (fuzz/fuzz_mutator.c): a byte
 * mutation of a case mostly decodes to the same or a refused shape, so
 * the fuzzer edits the fields themselves — head counts per layer, KV
 * heads, windows, dtypes, causal flags, lengths, block layout, split,
 * threads, sinks, slopes, soft cap, scale, value classes, engine words,
 * and value classes that send rows to attnguard's fp64 path while they
 * stay judged, with the features that path applies again — and
 * re-encodes.  Each edit asks for an invalid value one time in eight
 * (the engine must refuse it); about one mutated case in five ends up
 * invalid, the rest valid.
 *
 * Owns: the distribution of edits (what values they draw: the edges of
 * tiles, blocks and windows, Laguna's head counts, the engine's declared
 * limits and words).  Does not own the byte form (case_bytes.c) or what
 * is valid (validity.c).
 */
#ifndef AG_MUTATE_H
#define AG_MUTATE_H

#include "case.h"

/* What the mutator may draw from the engine under test (all optional). */
typedef struct mutate_ctx {
    const ag_caps *caps;          /* its limits: limit and limit + 1 are drawn */
    const ag_variant *variants;   /* its option words */
    int n_variants;
    uint64_t budget;              /* multiply-adds (case_cost) a case should stay under; the
                                     mutator shortens requests to meet it (0: 2^18), and lets
                                     one case in 16 go to 16x that */
} mutate_ctx;

/* Applies 1 to 4 edits to c, drawing from *rng (splitmix64 state). */
void case_mutate(case_spec *c, uint64_t *rng, const mutate_ctx *m);

/* out = a with some of b: b's requests, or b's layers (those with b's
 * head counts, rescaled to a's KV heads when they divide), or b's
 * dtypes and values.  out may alias neither a nor b. */
void case_cross(const case_spec *a, const case_spec *b, case_spec *out, uint64_t *rng,
                const mutate_ctx *m);

/* The byte-level hooks of a structure-aware libFuzzer target: decode
 * data (size bytes, room for max), mutate or cross it as above, and
 * encode it back canonically; returns the new size.  One call in five,
 * and every one whose encoding would not fit, goes to `bytes_mutate`
 * instead (libFuzzer's own LLVMFuzzerMutate), so byte-level mutations keep
 * their share. */
typedef size_t (*mutate_bytes_fn)(uint8_t *data, size_t size, size_t max);
size_t case_mutate_bytes(uint8_t *data, size_t size, size_t max, unsigned seed,
                         const mutate_ctx *m, mutate_bytes_fn bytes_mutate);
size_t case_cross_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out,
                        size_t max, unsigned seed, const mutate_ctx *m);

#endif /* AG_MUTATE_H */
