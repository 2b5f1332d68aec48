/*
 * engines/ggml/ggml_paths.c — the ABI's paths for ggml: which branches of
 * its CPU flash attention each op of a plan takes, named for the harness's
 * reach table, and worked out from what the adapter hands ggml (the op's
 * shapes, types, op parameters and thread count), never from ggml's state.
 *
 * Read off ggml-cpu/ops.cpp of the pinned release
 * (ggml_compute_forward_flash_attn_ext_f16 and the functions it calls);
 * `make engines-src` extracts it.  Per op, with q [D, rows, Hq, ns] (the
 * adapter's permuted view: neq1 = rows, neq2 = Hq, neq3 = ns), n_kv cells
 * and nth threads:
 *   split-kv   rows == 1, ns == 1, an f32 q, K and V of one type, f32 or
 *              f16, n_kv >= 512: the cells cut into one chunk per thread,
 *              the partials merged after a barrier;
 *   tiled      an f32 q, K and V of one type, f32 or f16, rows >= 64
 *              (GGML_FA_TILE_Q), D a multiple of the backend's f32 SIMD
 *              width: 64-row by 64-cell tiles (GGML_FA_TILE_KV);
 *   one-chunk  everything else, row by row (bf16 caches always).
 * Inside those:
 *   one-chunk V: accumulated in f16 (V f16), widened per row (bf16), read
 *              as is (f32);  tiled K/V: widened from f16 or read as f32;
 *   tiles cut short by the chunk, the head or the rows (q) and by n_kv
 *              (kv), each a branch of its own;
 *   soft cap and sinks in either routine (split-kv's chunks run the row
 *              routine, and the sink joins only the first chunk's partial);
 *   ALiBi slopes from m0 for heads below the largest power of two <= Hq,
 *              from m1 above it;
 *   K/V heads broadcast over query heads (Hq > Hkv) or not;
 *   the row split: a chunk per thread (one thread, or fewer than nth
 *              chunks of a quarter share), else four chunks per thread
 *              claimed in turn.
 * Branches no call of this adapter can take, and why, are listed in
 * docs/engines.md ("ggml's branches in the reach table").
 */
#include "ggml_group.h"
#include "../path_names.h"

#include <string.h>

#define FA_TILE_Q 64  /* GGML_FA_TILE_Q of the pinned release */
#define FA_TILE_KV 64 /* GGML_FA_TILE_KV */
#define SPLIT_MIN_KV 512

/* One list: the names, in the order paths(NULL) gives them. */
#define GGML_PATHS(X)                                                                       \
    X(P_KV_F32, "kv=f32") X(P_KV_F16, "kv=f16") X(P_KV_BF16, "kv=bf16")                     \
    X(P_UNIFIED, "layout=unified") X(P_STREAMS, "layout=streams")                           \
    X(P_SPLIT, "split-kv") X(P_TILED, "tiled") X(P_ONE, "one-chunk")                        \
    X(P_ONE_V16, "one-chunk/v=f16-acc") X(P_ONE_VCONV, "one-chunk/v=to-float")              \
    X(P_ONE_V32, "one-chunk/v=f32") X(P_TILED_16, "tiled/kv=f16") X(P_TILED_32, "tiled/kv=f32") \
    X(P_TILE_Q_SHORT, "tiled/q-tile-short") X(P_TILE_KV_SHORT, "tiled/kv-tile-short")       \
    X(P_CAP_ONE, "softcap/one-chunk") X(P_CAP_TILED, "softcap/tiled")                       \
    X(P_SINK_ONE, "sinks/one-chunk") X(P_SINK_TILED, "sinks/tiled")                         \
    X(P_SINK_SPLIT, "sinks/split-kv-first-chunk")                                           \
    X(P_ALIBI_M0, "alibi/slope-m0") X(P_ALIBI_M1, "alibi/slope-m1")                         \
    X(P_GQA, "heads/kv-broadcast") X(P_MHA, "heads/kv-per-head")                            \
    X(P_CHUNK_NTH, "rows/chunk-per-thread") X(P_CHUNK_4, "rows/4-chunks-per-thread")

enum { GGML_PATHS(AG_PATH_ENUM) P_COUNT };
static const char *const k_all[P_COUNT] = {GGML_PATHS(AG_PATH_NAME)};

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

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The row split of a non-split op of nr rows on nth threads: the number
 * of chunks (ggml_compute_forward_flash_attn_ext_f16, NUMA off). */
static int64_t row_chunks(int64_t nr, int nth) {
    const int64_t chunk = div_up(nr, (int64_t)nth * 4);
    const int64_t n = div_up(nr, chunk);
    return nth == 1 || n < nth ? nth : n;
}

/* Whether the tiled routine cuts a query tile short of FA_TILE_Q rows:
 * each chunk's tiles start at its first row and end after FA_TILE_Q rows,
 * at the chunk's end or at the head's last row (every `rows` rows),
 * whichever comes first.  Walked tile by tile, stopping at the first
 * short one. */
static int q_tile_short(int64_t nr, int64_t rows, int64_t nchunk) {
    const int64_t dr = div_up(nr, nchunk);
    for (int64_t ir0 = 0; ir0 < nr; ir0 += dr) {
        const int64_t ir1 = ir0 + dr < nr ? ir0 + dr : nr;
        for (int64_t ir = ir0; ir < ir1;) {
            int64_t t = FA_TILE_Q;
            if (ir1 - ir < t) t = ir1 - ir;
            if (rows - ir % rows < t) t = rows - ir % rows;
            if (t < FA_TILE_Q) return 1;
            ir += t;
        }
    }
    return 0;
}

int ggp_paths(const gg_plan *P, const char **names, int cap) {
    if (!P) return ag_path_names(k_all, NULL, P_COUNT, names, cap);
    const gg_group *g = P->g;
    const int f32_or_f16 = g->kv == AG_F32 || g->kv == AG_F16;
    int on[P_COUNT] = {0};
    on[g->kv == AG_F32 ? P_KV_F32 : g->kv == AG_F16 ? P_KV_F16 : P_KV_BF16] = 1;
    on[g->layout == AGG_LAYOUT_STREAMS && !P->fell_back ? P_STREAMS : P_UNIFIED] = 1;
    on[g->hq > g->hkv ? P_GQA : P_MHA] = 1;
    /* n_head_log2: the largest power of two <= Hq; heads from there on
     * take m1's slopes */
    uint32_t log2h = 1;
    while (log2h * 2 <= (uint32_t)g->hq) log2h *= 2;
    int any_cap = 0, any_sink = 0, any_alibi = 0;
    for (int l = 0; l < g->nl; l++) {
        any_cap |= g->layers[l].softcap != 0.0f;
        any_sink |= g->layers[l].sinks != NULL;
        any_alibi |= g->layers[l].max_bias > 0.0f;
    }
    if (any_alibi) {
        on[P_ALIBI_M0] = 1;
        if ((uint32_t)g->hq > log2h) on[P_ALIBI_M1] = 1;
    }
    for (int s = 0; s < P->nseg; s++) {
        const gg_seg *S = &P->seg[s];
        const int64_t nr = (int64_t)S->rows * g->hq * S->ns;
        if (S->rows == 1 && S->ns == 1 && f32_or_f16 && S->n_kv >= SPLIT_MIN_KV) {
            on[P_SPLIT] = 1;
            on[g->kv == AG_F16 ? P_ONE_V16 : P_ONE_V32] = 1;
            on[P_CAP_ONE] |= any_cap;
            on[P_SINK_SPLIT] |= any_sink;
            continue;
        }
        const int64_t nchunk = row_chunks(nr, g->threads);
        on[nchunk == g->threads ? P_CHUNK_NTH : P_CHUNK_4] = 1;
        if (f32_or_f16 && S->rows >= FA_TILE_Q && g->d % f32_width(g->v->name) == 0) {
            on[P_TILED] = 1;
            on[g->kv == AG_F16 ? P_TILED_16 : P_TILED_32] = 1;
            on[P_TILE_Q_SHORT] |= q_tile_short(nr, S->rows, nchunk);
            on[P_TILE_KV_SHORT] |= S->n_kv % FA_TILE_KV != 0;
            on[P_CAP_TILED] |= any_cap;
            on[P_SINK_TILED] |= any_sink;
        } else {
            on[P_ONE] = 1;
            on[g->kv == AG_F16 ? P_ONE_V16 : g->kv == AG_BF16 ? P_ONE_VCONV : P_ONE_V32] = 1;
            on[P_CAP_ONE] |= any_cap;
            on[P_SINK_ONE] |= any_sink;
        }
    }
    return ag_path_names(k_all, on, P_COUNT, names, cap);
}
