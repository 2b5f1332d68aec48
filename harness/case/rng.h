/*
 * rng.h — the harness's one deterministic random stream (splitmix64):
 * every generated value, block shuffle and seeded choice draws from it, so
 * a case and its seed give the same inputs on every machine.  Inline: the
 * value generator draws once per element of every query and KV row.
 */
#ifndef AG_RNG_H
#define AG_RNG_H

#include <stdint.h>

/* The next 64 bits of the stream whose state is *state. */
static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), from 53 bits of the stream. */
static inline double rng_unit(uint64_t *state) {
    /* 53 random bits -> [0, 1) exactly, then -> [-1, 1) */
    const double u = (double)(rng_next(state) >> 11) * 0x1.0p-53;
    return 2.0 * u - 1.0;
}

/* Uniform integer in [0, n), n >= 1 (the modulo bias is below what any
 * user of it can see). */
static inline uint64_t rng_below(uint64_t *state, uint64_t n) { return rng_next(state) % n; }

#endif /* AG_RNG_H */
