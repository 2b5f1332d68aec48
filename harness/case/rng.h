/*
 * rng.h — the harness's one deterministic random stream (splitmix64):
 * every generated value, block shuffle and seeded choice draws from it, so
 * a case and its seed give the same inputs on every machine.
 */
#ifndef AG_RNG_H
#define AG_RNG_H

#include <stdint.h>

/* The next 64 bits of the stream whose state is *state. */
uint64_t rng_next(uint64_t *state);
/* Uniform in [-1, 1), from 53 bits of the stream. */
double rng_unit(uint64_t *state);
/* Uniform integer in [0, n), n >= 1 (the modulo bias is below what any
 * user of it can see). */
uint64_t rng_below(uint64_t *state, uint64_t n);

#endif /* AG_RNG_H */
