/*
 * engines/vllm/vllm_group.h — the vllm adapter's records (private to it):
 * the loaded wheel (one per process), one attention group, one plan; and
 * the functions its files share.  What each file owns:
 *
 *   vllm_load.c     finding the venv, dlopen'ing libtorch and vLLM's _C
 *                   library, the stable-ABI table, open() options, messages
 *   vllm_scratch.c  vLLM's process-wide scratchpad, interposed: the
 *                   scheduler's request recorded, the harness's scratch lent
 *   vllm_model.c    the adapter's own model of vLLM's scratchpad layout
 *                   (extents), from the layout vLLM's source documents
 *   vllm_check.c    what the adapter accepts (groups, batches)
 *   vllm_ops.c      the three ops, called through torch's dispatcher
 *   vllm_paths.c    the reach table's rows
 *   vllm_adapter.c  the ABI table
 *
 * The mapping itself is written down in docs/engines.md ("vLLM").
 */
#ifndef AG_VLLM_GROUP_H
#define AG_VLLM_GROUP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "attnguard/engine.h"
#include "vllm_torch.h"

#define VG_PATH_LEN 1024

/* vLLM's attention implementations (its `isa` hint), in the order of its
 * cpu_attention::ISA enum as 0.32.0 writes it into the scheduler's
 * metadata.  vLLM's CPU builds also carry NEON, VXE, RVV and VSX, which an
 * x86 CPU never runs. */
typedef enum vg_isa { VG_ISA_AMX = 0, VG_ISA_VEC = 1, VG_ISA_VEC16 = 2, VG_ISA_COUNT } vg_isa;

/* The head count the builder hands vLLM's scheduler (open option heads=):
 * the group's layers' own (vLLM since PR 51852) or the model-wide one (the
 * builder before it: the bug this project exists for). */
typedef enum vg_heads { VG_HEADS_GROUP = 0, VG_HEADS_MODEL = 1 } vg_heads;

/* vLLM's three x86 builds of _C, one per process (open option build=). */
typedef enum vg_build {
    VG_BUILD_AVX512BF16 = 0,   /* vllm/_C.abi3.so: AVX-512 with BF16 (and AMX when present) */
    VG_BUILD_AVX512,           /* vllm/_C_AVX512.abi3.so */
    VG_BUILD_AVX2,             /* vllm/_C_AVX2.abi3.so */
    VG_BUILD_COUNT
} vg_build;

typedef struct vg_lib {
    char site[VG_PATH_LEN];    /* the venv's site-packages folder */
    void *c10, *torch_cpu, *torch, *vllm;   /* dlopen handles */
    vt_api t;
    vg_build build;
    vg_heads heads;
    int judge_known;           /* open option known=judge: inputs that meet a written-up
                                  finding (reports/findings/vllm-*) run and are judged;
                                  known=skip (default): they are declined, named, counted */
    int has_amx, has_avx512, has_avx512bf16;   /* what vLLM's own choice reads */
    pthread_mutex_t mu;        /* one scratchpad per process: plans and runs take turns */
    /* the largest |V| written into each of the last V caches (vllm-006's
     * decline): a harness writes a cache through one group and may run
     * others over it, so the figure belongs to the cache, not the group */
    struct { const void *v_cache; double v_abs_max; } written[8];
    unsigned next_written;
} vg_lib;

typedef struct vg_layer {
    int32_t hq;
    int32_t window;            /* vLLM's sliding_window: keys p-(W-1) .. p(+W-1); -1 none */
    float scale, softcap, k_scale, v_scale;
    float *alibi, *sinks;      /* private copies [hq] or NULL */
} vg_layer;

typedef struct vg_group {
    vg_lib *lib;
    int32_t hkv, d, bs, threads, nl;
    int32_t plan_heads;        /* what the scheduler is told (per vg_heads) */
    int32_t window;            /* the window every layer shares, else -1 (vLLM's builder) */
    ag_dtype dt;               /* q, out and (unless fp8) the cache: vLLM's scalar_t */
    ag_dtype kv_dt;
    const void *writing;       /* the V cache this group last wrote (vg_lib.written) */
    vg_isa isa;
    int isa_forced;            /* 1: group option isa=; 0: vLLM's own choice */
    vg_layer *layers;          /* [nl] */
} vg_group;

/* The implementation a group actually runs: VEC16 for the head dims vLLM
 * builds only there (not multiples of 32), else the one chosen or forced. */
static inline vg_isa vg_effective_isa(const vg_group *g) {
    return g->d % 32 != 0 ? VG_ISA_VEC16 : g->isa;
}

typedef struct vg_plan {
    vg_group *g;
    int32_t R, T, stride, nblocks;
    int32_t *qsl, *seq, *bt;   /* the batch's arrays, copied: [R+1], [R], [R][stride] */
    int32_t *dyn;              /* [R] per-request causality (vLLM's dynamic_causal) or NULL */
    int causal;                /* the op's causal flag (0 when dyn is set) */
    int split;                 /* enable_kv_split as the scheduler got it */
    vt_tensor meta;            /* the scheduler's metadata blob (owned) */
    const unsigned char *meta_bytes;
    int64_t meta_len;
    size_t requested;          /* what the scheduler asked its scratchpad manager for */
    /* schedule facts read from the metadata (vllm_model.c) */
    int32_t m_isa, m_items, m_reductions, m_splits, m_threads, m_threshold;
} vg_plan;

/* ---- vllm_load.c ---- */
/* Loads torch and vLLM from the first of: options "venv=<folder>",
 * $VLLM_VENV, the venv `make engines ENGINE=vllm` fills
 * (AG_VLLM_DEFAULT_VENV).  Options: build=avx512bf16|avx512|avx2 (default:
 * vLLM's own choice for this CPU), heads=group|model, known=skip|judge.
 * AG_UNSUPPORTED when
 * vLLM is not installed (msg says how) or the CPU lacks the build;
 * AG_REFUSED for an option this adapter does not know. */
ag_status vg_load(const char *options, vg_lib **out, ag_msg *msg);
void vg_unload(vg_lib *lib);
/* The library the last successful vg_load opened (the process holds one
 * vLLM build), or NULL: paths(NULL) names its rows. */
const vg_lib *vg_current_lib(void);
ag_status vg_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
ag_status vg_ok(ag_msg *msg);
/* The value of `key` among space-separated "key=value" words: 1 found,
 * 2 found twice, 0 absent. */
int vg_option(const char *options, const char *key, char *val, size_t cap);
const char *vg_isa_name(vg_isa isa);   /* vLLM's hint: "amx", "vec", "vec16" */
const char *vg_build_name(vg_build b);

/* ---- vllm_scratch.c ---- */
/* Start recording what vLLM's scheduler asks its scratchpad manager for;
 * the request since the last begin (0: none), and how many calls. */
void vg_scratch_begin(void);
size_t vg_scratch_requested(unsigned *calls);
/* Hand vLLM's kernels `bytes` of scratch at p until vg_scratch_reclaim. */
void vg_scratch_lend(void *p, size_t bytes);
void vg_scratch_reclaim(void);
/* 1 when vLLM's calls reach the adapter's manager (checked at open). */
int vg_scratch_interposed(void);

/* ---- vllm_model.c ---- */
/* Reads the schedule facts out of P's metadata; AG_INTERNAL when they are
 * not what the plan asked for (another metadata layout than 0.32.0's). */
ag_status vg_model_read(vg_plan *P, ag_msg *msg);
/* The scratch bytes a run of `layer` (its own head count) needs under
 * P's schedule, by the layout vLLM's source documents (per-thread tiles,
 * then one reduction slot per KV head, or per query head when the GQA
 * path does not apply); -1 on overflow. */
int vg_model_need(const vg_plan *P, int32_t layer, size_t *bytes);
/* Whether the GQA path takes a layer of hq heads (else one head per slot). */
int vg_model_gqa(const vg_group *g, int32_t hq);
/* vLLM's KV-length alignment for the group's implementation (its
 * BlockSizeAlignment): block_size must be a multiple. */
int32_t vg_model_block_align(const vg_group *g);

/* ---- vllm_check.c ---- */
ag_status vg_check_group(const ag_group *in, vg_group *g, ag_msg *msg);
void vg_group_free(vg_group *g);
ag_status vg_check_batch(const vg_group *g, const ag_batch *b, ag_msg *msg);

/* ---- vllm_ops.c ---- */
/* vLLM's get_scheduler_metadata for P (P's arrays set): P->meta and
 * P->requested. */
ag_status vg_op_schedule(vg_plan *P, ag_msg *msg);
/* vLLM's cpu_attn_reshape_and_cache in implementation isa's layout: rows in
 * the cache dtype (fp8: codes). */
ag_status vg_op_write(const vg_group *g, vg_isa isa, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slots, ag_msg *msg);
/* vLLM's cpu_attention_with_kv_cache for one layer. */
ag_status vg_op_attend(const vg_plan *P, int32_t layer, const ag_run_args *a, ag_msg *msg);

/* ---- vllm_paths.c ---- */
int vg_paths(void *plan, const char **names, int cap);

#endif /* AG_VLLM_GROUP_H */
