/*
 * engines/ggml/ggml_group.h — the ggml adapter's records of one attention
 * group and one plan, shared by the mapping (ggml_adapter.c), the layouts
 * (ggml_streams.c), the cache and masks (ggml_cache.c) and the checks that
 * turn the harness's descriptions into them (ggml_check.c).
 */
#ifndef AG_GGML_GROUP_H
#define AG_GGML_GROUP_H

#include "ggml_load.h"

typedef struct gg_layer {
    int32_t wl, wr;            /* window: keys p - wl .. p + wr (-1: unbounded) */
    float scale, softcap;
    float max_bias;            /* > 0: ALiBi, the layer's slopes are ggml's set for it */
    float *sinks;              /* private copy [hq], or NULL */
    int mask;                  /* index of this layer's mask class */
} gg_layer;

/* Layers that see the same keys share one mask (as llama.cpp shares its
 * full and sliding-window masks among layers). */
typedef struct gg_mask_class {
    int32_t wl, wr;
    int alibi;                 /* visible cells hold k - p instead of 0 */
} gg_mask_class;

typedef struct gg_group {
    const agg_lib *lib;
    const agg_variant *v;
    agg_layout layout;         /* group option layout=... */
    long plans, unified;       /* layout=streams: plans made, and those that fell back to
                                  the unified layout (group_info's detail shows both) */
    int32_t hq, hkv, d, bs, threads, nl, nmask;
    ag_dtype kv;
    gg_layer *layers;          /* [nl] */
    gg_mask_class *cls;        /* [nmask] */
} gg_group;

/* One op of a plan: requests r0 .. r0 + nreq - 1, each with `rows` query
 * rows, as `ns` streams of the op's fourth dimension.  Streams layout: one
 * stream per request (ns = nreq), so its q rows, K/V window and mask are
 * its own; unified layout: one segment, one stream holding every request
 * (ns = 1, rows = every query token).  Stream s sees the `n_kv` cache
 * cells from c0 + s * stride: its keys' cells all lie in that window (the
 * others are masked), which never leaves the cells 0 .. n_kv of the
 * unified layout. */
typedef struct gg_seg {
    int32_t r0, nreq, ns;
    int32_t t0, rows;          /* first query token; query rows per stream */
    int32_t rows_pad;          /* mask rows per stream */
    int64_t c0, stride;        /* cells: stream s's window starts at c0 + s * stride */
    int32_t n_kv;              /* cells in each stream's window */
    size_t mask_off;           /* where its masks start in each class's masks */
} gg_seg;

/* One op's graph: q, k, v, out get the harness's buffers in run(). */
typedef struct gg_node {
    struct ggml_cgraph *gf;
    struct ggml_tensor *q, *k, *v, *qp, *kp, *vp, *out;
    struct ggml_tensor *mask;  /* gets its class's mask in run() */
    struct ggml_cplan cp;
} gg_node;

typedef struct gg_plan {
    gg_group *g;
    int32_t T, n_kv;           /* query rows; cells the unified layout covers */
    int nseg;
    gg_seg *seg;               /* [nseg] */
    int fell_back;             /* layout=streams, but this batch is unified */
    struct ggml_context *ctx;
    size_t mask_cells;         /* f16 cells of one class's masks, every segment */
    ggml_fp16_t *masks;        /* nmask x mask_cells, the adapter's own memory;
                                  allocated and filled by the first run that
                                  needs each class (NULL until then) */
    unsigned char *built;      /* [nmask]: class filled */
    ag_batch b;                /* the validated batch the masks are built from */
    void *b_mem;               /* its arrays, copied by plan_make */
    size_t work;               /* the largest cplan.work_size of the nodes */
    int nnode;                 /* ops per segment: one per layer (one for an empty group) */
    gg_node *node;             /* [nseg][nnode] */
} gg_plan;

/* Validates `in` and fills `g` (private copies of sinks; ALiBi matched to
 * ggml's slope set; mask classes).  AG_REFUSED / AG_UNSUPPORTED with a
 * message naming the field. */
ag_status ggc_group(const ag_group *in, gg_group *g, ag_msg *msg);
void ggc_group_free(gg_group *g);

/* Validates a batch for group g: request lengths, block tables within
 * num_blocks and stride, no block twice in one request, ALiBi distances
 * that f16 holds exactly.  Writes the number of query rows and the cells
 * the K/V views must cover. */
ag_status ggc_batch(const gg_group *g, const ag_batch *b, int32_t *T, int32_t *n_kv,
                    ag_msg *msg);

/* ggml_streams.c: the segments of plan P (P->b, P->T and P->n_kv set) for
 * the group's layout: fills P->seg, P->nseg, P->fell_back and each
 * segment's mask_off, and P->mask_cells.  AG_INTERNAL on out of memory. */
ag_status ggs_segments(gg_plan *P, ag_msg *msg);

/* ggml_cache.c: the cache layout (kv_cache_bytes, write_kv of the ABI) and
 * mask class c of plan P over batch b, every segment's [ns][rows_pad][n_kv]
 * (P->mask_cells in all): 0 (or k - p for ALiBi) where a stream's row may
 * see the window cell holding key k of its request, -inf elsewhere. */
ag_status ggc_kv_cache_bytes(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg);
ag_status ggc_write_kv(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                       const void *k_rows, const void *v_rows, int32_t num_tokens,
                       const int64_t *slot_mapping, ag_msg *msg);
void ggc_fill_mask(const gg_plan *P, const ag_batch *b, int c, ggml_fp16_t *m);

/* Bytes of one cache cell ([Hkv][D] of the KV dtype). */
size_t ggc_row_bytes(const gg_group *g);

/* ggml_paths.c: the ABI's paths of plan P (NULL: every path this adapter
 * can name): the cache type, the layout, and which of ggml's flash
 * attention paths (split-kv, tiled, one-chunk) its ops take. */
int ggp_paths(const gg_plan *P, const char **names, int cap);

#endif /* AG_GGML_GROUP_H */
