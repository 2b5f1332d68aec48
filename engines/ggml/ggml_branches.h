/*
 * engines/ggml/ggml_branches.h — the branches of ggml's CPU flash attention
 * that depend on the call, as one list of reach-table names, and the
 * classification of one ggml_flash_attn_ext op into them (ggml_paths.c).
 * The adapter names them for its plans (paths()); the contract target
 * (fuzz/fuzz_ggml_contract.c), which calls ggml in forms the adapter never
 * uses (no mask, q not f32, K and V of other types), names them for its
 * own ops.  Read off ggml-cpu/ops.cpp of the pinned release.
 */
#ifndef AG_GGML_BRANCHES_H
#define AG_GGML_BRANCHES_H

#include "../path_names.h"

#include <stdint.h>

#define GGML_PATHS(X)                                                                       \
    X(P_KV_F32, "kv=f32") X(P_KV_F16, "kv=f16") X(P_KV_BF16, "kv=bf16")                     \
    X(P_K_QUANT, "kv/k-quantized") X(P_KV_MIXED, "kv/k-v-types-differ")                     \
    X(P_NO_MASK, "mask/absent")                                                             \
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

enum { GGML_PATHS(AG_PATH_ENUM) GGP_COUNT };
extern const char *const ggp_names[GGP_COUNT];

/* Element types as the branches see them. */
enum { GGP_F32 = 0, GGP_F16, GGP_BF16, GGP_OTHER /* quantized */ };

/* One op as ggml sees it: q [d, rows, hq, ns], K [d, n_kv, hkv, ns],
 * V [dv, n_kv, hkv, ns]; the rest its sources and parameters. */
typedef struct ggp_op {
    int64_t rows, hq, ns, n_kv, d, dv, hkv;
    int q_type, k_type, v_type;   /* GGP_* (q other than f32: the fast routines are off) */
    int mask, sinks;              /* the sources are there */
    float softcap, max_bias;
    int threads;
    int simd_width;               /* floats per f32 vector of the backend: ggp_simd_width */
} ggp_op;

/* Floats per f32 SIMD vector of the CPU backend variant `name` ("zen4",
 * "haswell", "x64", ...): 1 where the tiled path has no width condition. */
int ggp_simd_width(const char *name);

/* Sets on[P_*] for every branch op takes (on has GGP_COUNT entries; the
 * layout rows are the adapter's). */
void ggp_op_branches(const ggp_op *op, int *on);

#endif /* AG_GGML_BRANCHES_H */
