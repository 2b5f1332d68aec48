/*
 * engines/ggml/ggml_paths.c — the ABI's paths for ggml: which of its
 * flash-attention code paths each op of a plan takes, named for the
 * harness's reach table.
 *
 * ggml_compute_forward_flash_attn_ext (ggml-cpu/ops.cpp of the pinned
 * release) picks per op, from its shapes alone:
 *   split-kv   one query row in one stream (q [D, 1, Hq, 1]), an f32 q, K
 *              and V of one type, f32 or f16, and at least 512 cells: the
 *              cells are cut into one chunk per thread and the partial
 *              results merged;
 *   tiled      an f32 q, K and V of one type, f32 or f16, at least 64
 *              query rows per stream (GGML_FA_TILE_Q) and a V head size
 *              that is a multiple of the backend's f32 SIMD width;
 *   one-chunk  everything else, row by row (bf16 caches always).
 * The SIMD width is the backend's: 16 floats for the AVX-512 builds, 8 for
 * AVX and AVX2, 4 for sse42; x64 has none and skips that condition.
 * The adapter always hands ggml an f32 q and K and V of the cache's type.
 */
#include "ggml_group.h"

#include <string.h>

static const char *const k_all[] = {
    "kv=f32", "kv=f16", "kv=bf16", "layout=unified", "layout=streams",
    "split-kv", "tiled", "one-chunk",
};
enum { P_KV_F32, P_KV_F16, P_KV_BF16, P_UNIFIED, P_STREAMS, P_SPLIT, P_TILED, P_ONE };

/* Floats per f32 SIMD vector in backend `name` (1: no SIMD condition). */
static int f32_width(const char *name) {
    static const char *const w16[] = {"zen4",        "skylakex",       "cannonlake",
                                      "cascadelake", "cooperlake",     "icelake",
                                      "sapphirerapids"};
    for (size_t i = 0; i < sizeof w16 / sizeof w16[0]; i++)
        if (!strcmp(name, w16[i])) return 16;
    if (!strcmp(name, "sse42")) return 4;
    if (!strcmp(name, "x64")) return 1;
    return 8;   /* the AVX and AVX2 builds: haswell, alderlake, piledriver, ivybridge, ... */
}

int ggp_paths(const gg_plan *P, const char **names, int cap) {
    if (!P) {
        const int n = (int)(sizeof k_all / sizeof k_all[0]);
        for (int i = 0; names && i < n && i < cap; i++) names[i] = k_all[i];
        return n;
    }
    const gg_group *g = P->g;
    const int f32_or_f16 = g->kv == AG_F32 || g->kv == AG_F16;
    int on[sizeof k_all / sizeof k_all[0]] = {0};
    on[g->kv == AG_F32 ? P_KV_F32 : g->kv == AG_F16 ? P_KV_F16 : P_KV_BF16] = 1;
    on[g->layout == AGG_LAYOUT_STREAMS && !P->fell_back ? P_STREAMS : P_UNIFIED] = 1;
    for (int s = 0; s < P->nseg; s++) {
        const gg_seg *S = &P->seg[s];
        if (S->rows == 1 && S->ns == 1 && f32_or_f16 && S->n_kv >= 512)
            on[P_SPLIT] = 1;
        else if (f32_or_f16 && S->rows >= 64 && g->d % f32_width(g->v->name) == 0)
            on[P_TILED] = 1;
        else
            on[P_ONE] = 1;
    }
    int n = 0;
    for (size_t i = 0; i < sizeof k_all / sizeof k_all[0]; i++)
        if (on[i]) {
            if (names && n < cap) names[n] = k_all[i];
            n++;
        }
    return n;
}
