/*
 * rng.c — splitmix64 (see rng.h).
 */
#include "rng.h"

uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rng_unit(uint64_t *state) {
    /* 53 random bits -> [0, 1) exactly, then -> [-1, 1). */
    const double u = (double)(rng_next(state) >> 11) * 0x1.0p-53;
    return 2.0 * u - 1.0;
}

uint64_t rng_below(uint64_t *state, uint64_t n) { return rng_next(state) % n; }
