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
 * The per-op classification (ggp_op_branches) is shared with the contract
 * target, which calls ggml in forms the adapter never uses (no mask,
 * quantized K, K and V of other types); branches neither can take, and
 * why, are listed in docs/engines.md ("The engines' own branches in the
 * reach table").
 */
#include "ggml_group.h"
#include "ggml_branches.h"

#include <string.h>

#define FA_TILE_Q 64  /* GGML_FA_TILE_Q of the pinned release */
#define FA_TILE_KV 64 /* GGML_FA_TILE_KV */
#define SPLIT_MIN_KV 512

const char *const ggp_names[GGP_COUNT] = {GGML_PATHS(AG_PATH_NAME)};

int ggp_simd_width(const char *name) {
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

void ggp_op_branches(const ggp_op *o, int *on) {
    static const int kv_row[] = {P_KV_F32, P_KV_F16, P_KV_BF16, P_K_QUANT};
    on[kv_row[o->k_type]] = 1;
    on[P_KV_MIXED] |= o->k_type != o->v_type;
    on[P_NO_MASK] |= !o->mask;
    on[o->hq > o->hkv ? P_GQA : P_MHA] = 1;
    if (o->max_bias > 0.0f) {
        /* n_head_log2: the largest power of two <= Hq; heads from there on
         * take m1's slopes */
        int64_t log2h = 1;
        while (log2h * 2 <= o->hq) log2h *= 2;
        on[P_ALIBI_M0] = 1;
        on[P_ALIBI_M1] |= o->hq > log2h;
    }
    const int cap = o->softcap != 0.0f;
    /* the fast routines' conditions: an f32 q, K and V of one type, f32 or f16 */
    const int fast = o->q_type == GGP_F32 && o->k_type == o->v_type &&
                     (o->k_type == GGP_F32 || o->k_type == GGP_F16);
    /* the row routine's V: accumulated in f16, widened per row, or read */
    const int v_row = o->v_type == GGP_F16 ? P_ONE_V16 : o->v_type == GGP_F32 ? P_ONE_V32
                                                                             : P_ONE_VCONV;
    if (fast && o->rows == 1 && o->ns == 1 && o->n_kv >= SPLIT_MIN_KV) {
        on[P_SPLIT] = 1;
        on[v_row] = 1;
        on[P_CAP_ONE] |= cap;
        on[P_SINK_SPLIT] |= o->sinks;
        return;
    }
    const int64_t nr = o->rows * o->hq * o->ns;
    if (nr <= 0 || o->threads < 1) return;   /* no row to split (a contract call may have none) */
    const int64_t nchunk = row_chunks(nr, o->threads);
    on[nchunk == o->threads ? P_CHUNK_NTH : P_CHUNK_4] = 1;
    if (fast && o->rows >= FA_TILE_Q && o->simd_width > 0 && o->dv % o->simd_width == 0) {
        on[P_TILED] = 1;
        on[o->k_type == GGP_F16 ? P_TILED_16 : P_TILED_32] = 1;
        on[P_TILE_Q_SHORT] |= q_tile_short(nr, o->rows, nchunk);
        on[P_TILE_KV_SHORT] |= o->n_kv % FA_TILE_KV != 0;
        on[P_CAP_TILED] |= cap;
        on[P_SINK_TILED] |= o->sinks;
    } else {
        on[P_ONE] = 1;
        on[v_row] = 1;
        on[P_CAP_ONE] |= cap;
        on[P_SINK_ONE] |= o->sinks;
    }
}

int ggp_paths(const gg_plan *P, const char **names, int cap) {
    if (!P) return ag_path_names(ggp_names, NULL, GGP_COUNT, names, cap);
    const gg_group *g = P->g;
    static const int type_of[AG_DTYPE_COUNT] = {
        [AG_F32] = GGP_F32,    [AG_F16] = GGP_F16,    [AG_BF16] = GGP_BF16,
        [AG_Q8_0] = GGP_OTHER, [AG_Q4_0] = GGP_OTHER, [AG_Q4_1] = GGP_OTHER,
        [AG_Q5_0] = GGP_OTHER, [AG_Q5_1] = GGP_OTHER, [AG_IQ4_NL] = GGP_OTHER};
    int on[GGP_COUNT] = {0};
    on[g->layout == AGG_LAYOUT_STREAMS && !P->fell_back ? P_STREAMS : P_UNIFIED] = 1;
    /* every op of the plan: one per segment and layer */
    for (int l = 0; l < (g->nl ? g->nl : 1); l++) {
        const gg_layer *L = g->nl ? &g->layers[l] : NULL;
        for (int s = 0; s < P->nseg; s++) {
            const gg_seg *S = &P->seg[s];
            const ggp_op o = {S->rows, g->hq, S->ns, S->n_kv, g->d, g->d, g->hkv,
                              GGP_F32, type_of[g->kv], type_of[g->kv], 1,
                              L && L->sinks != NULL, L ? L->softcap : 0.0f,
                              L ? L->max_bias : 0.0f, g->threads, ggp_simd_width(g->v->name)};
            ggp_op_branches(&o, on);
        }
    }
    return ag_path_names(ggp_names, on, GGP_COUNT, names, cap);
}
