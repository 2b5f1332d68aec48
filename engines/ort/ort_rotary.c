/*
 * engines/ort/ort_rotary.c — GroupQueryAttention's rotary step, made exact
 * (ort_group.h, og_rot_caches / og_unrotate).
 *
 * ORT rotates each row of q and of the new K at its position p (GQA makes
 * the positions from seqlens_k: p = total - S + s, the row's position of
 * docs/design.md §2, for decodes, chunks and every prompt row of a request)
 * by the angle cos_cache[p][i], sin_cache[p][i] of each pair i < D/2:
 *   half:        (x[i], x[i + D/2])
 *   interleaved: (x[2i], x[2i + 1])
 *   x' = x cos - y sin,  y' = x sin + y cos.
 * Here every angle is k(p, i) quarter turns, k a hash of both: the
 * multiplications are by -1, 0 or 1 and the sums add a zero, so rotation
 * and un-rotation are exact and the case's values reach ORT's kernels
 * unchanged; a row rotated at another position, or pairs taken the other
 * way, lands on other values with probability 3/4 per pair.
 */
#include "ort_group.h"

/* Quarter turns of pair i at position p: a mix of both, two bits. */
static uint32_t quarter(int32_t p, int32_t i) {
    uint32_t h = (uint32_t)p * 0x9e3779b1u ^ ((uint32_t)i + 0x7f4a7c15u) * 0x85ebca77u;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    return h >> 30;
}

static const int k_cos[4] = {1, 0, -1, 0}, k_sin[4] = {0, 1, 0, -1};

void og_rot_caches(const og_group *g, int32_t rows, void *cos, void *sin) {
    const int32_t half = g->d / 2;
    for (int32_t p = 0; p < rows; p++)
        for (int32_t i = 0; i < half; i++) {
            const uint32_t k = quarter(p, i);
            const float c = (float)k_cos[k], s = (float)k_sin[k];
            const size_t at = (size_t)p * (size_t)half + (size_t)i;
            og_convert((char *)cos + at * ag_dtype_size(g->t_dt), g->t_dt, &c, AG_F32, 1);
            og_convert((char *)sin + at * ag_dtype_size(g->t_dt), g->t_dt, &s, AG_F32, 1);
        }
}

/* Element j of a row in the node's type, as float and back (exact: the
 * values only move between places and change sign). */
static float get(const og_group *g, const char *row, int32_t j) {
    float f;
    og_convert(&f, AG_F32, row + (size_t)j * ag_dtype_size(g->t_dt), g->t_dt, 1);
    return f;
}
static void put(const og_group *g, char *row, int32_t j, float f) {
    og_convert(row + (size_t)j * ag_dtype_size(g->t_dt), g->t_dt, &f, AG_F32, 1);
}

void og_unrotate(const og_group *g, void *rows, int32_t n, int32_t heads, int32_t p0) {
    const int32_t D = g->d, half = D / 2;
    const size_t hb = (size_t)D * ag_dtype_size(g->t_dt);
    for (int32_t r = 0; r < n; r++)
        for (int32_t h = 0; h < heads; h++) {
            char *row = (char *)rows + ((size_t)r * (size_t)heads + (size_t)h) * hb;
            for (int32_t i = 0; i < half; i++) {
                const uint32_t k = quarter(p0 + r, i);
                const int32_t a = g->rotary == OG_ROT_INTERLEAVED ? 2 * i : i;
                const int32_t b = g->rotary == OG_ROT_INTERLEAVED ? 2 * i + 1 : i + half;
                const float x = get(g, row, a), y = get(g, row, b);
                /* the inverse turn: sin negated */
                const float c = (float)k_cos[k], s = (float)-k_sin[k];
                put(g, row, a, c == 0 ? -s * y : c * x);
                put(g, row, b, c == 0 ? s * x : c * y);
            }
        }
}
