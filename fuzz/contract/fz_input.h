/*
 * fz_input.h — owns how a contract fuzz target reads its input: the bytes
 * libFuzzer hands over, taken one at a time, and the xorshift stream the
 * operands' values are drawn from (seeded by bytes of the same input).
 * Shared by fuzz_ggml_contract and fuzz_ort_contract.  The generator is
 * static inline (it runs once per element filled: a call across files
 * would cost more than the work); the byte reader is fz_input.c's.
 */
#ifndef ATTNGUARD_FZ_INPUT_H
#define ATTNGUARD_FZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* The input not yet read. */
typedef struct fz_rd {
    const uint8_t *p;
    size_t n;
} fz_rd;

/* The next byte; 0 once the input is used up (a short input is the same
 * as one padded with zeros, so every prefix decodes to a whole case).
 * Out of line (fz_input.c), as the targets' own readers were: inlined,
 * its "input used up?" branch becomes one coverage edge per field read,
 * and libFuzzer keeps an input for every length that ends at a new field
 * (a third more corpus, no new behaviour of the engine). */
unsigned fz_u8(fz_rd *r);

/* An entry of the static table tab, chosen by the next byte. */
#define FZ_PICK(r, tab) (tab)[fz_u8(r) % (sizeof(tab) / sizeof((tab)[0]))]

/* The values' generator: xorshift64.  Its state is visible (s) because the
 * fillers draw secondary choices (mask classes, booleans) from its bits
 * right after a draw. */
typedef struct fz_rng {
    uint64_t s;
} fz_rng;

/* Seeds g (odd: xorshift's state must not be 0). */
static inline void fz_rng_seed(fz_rng *g, uint64_t seed) { g->s = seed | 1; }

/* A uniform float in [-1, 1), from the top 53 bits of the next state. */
static inline float fz_frand(fz_rng *g) {
    g->s ^= g->s << 13, g->s ^= g->s >> 7, g->s ^= g->s << 17;
    return (float)((double)(g->s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

#endif
