/*
 * engines/ort/ort_group.h — the ort adapter's records of one attention
 * group, its ORT sessions and one plan, shared by the files that check
 * (ort_check.c), keep the cache (ort_cache.c), build sessions
 * (ort_session.c), lend ORT an allocator (ort_alloc.c), plan (ort_plan.c),
 * run (ort_run.c) and predict ORT's buffers (ort_needs.c).  The mapping
 * itself is written down in engines/ort/MAPPING.md.
 */
#ifndef AG_ORT_GROUP_H
#define AG_ORT_GROUP_H

#include "ort_load.h"

/* The two ops a group may be mapped onto (group option op=). */
typedef enum og_op { OG_GQA = 0, OG_ATTENTION = 1 } og_op;

/* GQA's rotary step (group option rotary=): none, or do_rotary with the
 * rotated pairs (i, i + D/2) or (2i, 2i + 1) (rotary_interleaved). */
typedef enum og_rotary { OG_ROT_NONE = 0, OG_ROT_HALF, OG_ROT_INTERLEAVED } og_rotary;

/* How a layer's sinks reach ORT. */
typedef enum og_sink { OG_SINK_NONE = 0, OG_SINK_SMOOTH, OG_SINK_HEAD } og_sink;

/* What one session's node is: the layer's attributes (sessions are shared
 * by the layers that agree on all of them). */
typedef struct og_key {
    int32_t hq;
    int32_t window;            /* keys seen counting the current one (ORT's
                                  local_window_size): p - window + 1 .. p; -1 none */
    float scale;               /* resolved: never 0 */
    float softcap;             /* 0: off */
    int32_t sink;              /* og_sink */
} og_key;

/* The graph input/output sets a session is built for.  GQA: past and
 * present in one buffer, or in two, or in one with the new rows' q, K and
 * V packed into the query input (key and value absent: the form of
 * onnxruntime-genai's fused QKV projections).  Attention: lower-right
 * causal through is_causal and nonpad_kv_seqlen, or a boolean mask. */
enum { OG_IO_GQA_SHARED = 0, OG_IO_GQA_SEPARATE = 1, OG_IO_GQA_PACKED = 2, OG_IO_ATT_CAUSAL = 0,
       OG_IO_ATT_MASK = 1, OG_IO_KINDS = 3 };

typedef struct og_sess {
    og_key key;
    OrtSession *s[OG_IO_KINDS];   /* created by the first run that needs one */
} og_sess;

typedef struct og_layer {
    og_key key;
    float *sinks;              /* [hq] private copy (OG_SINK_HEAD), in f32 */
    uint16_t *sinks_h;         /* the same in f16 for an f16 node, or NULL */
    int32_t sess;              /* index into the group's sessions */
} og_layer;

/* The allocator handed to ORT (ort_alloc.c): the OrtAllocator record
 * first, so ORT's pointer to it is a pointer to the bridge. */
typedef struct og_bridge {
    OrtaAllocator ort;
    const ag_allocator *h;     /* the harness's allocator */
    const OrtMemoryInfo *info;
    size_t refused;            /* first request h answered NULL since the last
                                  og_bridge_take (atomic) */
    pthread_mutex_t mu;        /* the fallback list */
    void **fallback;           /* blocks served by malloc after a NULL (see ort_alloc.c) */
    size_t nfallback, cap;
} og_bridge;

/* The element type of ORT's node (T): f16 only when q, K/V and out are
 * f16; anything else is widened to f32 without rounding (ort_cache.c). */
typedef struct og_group {
    orta_lib *lib;
    og_op op;
    int32_t io;                /* OG_IO_GQA_* for GQA groups */
    int32_t rotary;            /* og_rotary (ort_rotary.c) */
    int32_t hkv, d, bs, threads, nl, hq_max, nsess;
    ag_dtype q_dt, kv_dt, out_dt;
    ag_dtype t_dt;             /* ORT's T: AG_F32 or AG_F16 */
    og_layer *layers;          /* [nl] */
    og_sess *sess;             /* [nsess] */
    const ag_allocator *alloc; /* the harness's, or NULL */
    og_bridge bridge;          /* what ORT calls: forwards to alloc (ort_alloc.c) */
    pthread_mutex_t mu;        /* session creation */
} og_group;

/* A shape class of a batch: requests ORT runs in one call.  DECODE: every
 * q_len is 1; PROMPT: no request has a past (seq_len == q_len), queries
 * right-padded to S; CHUNK: one request with a past and q_len > 1 (ORT's
 * GQA takes those one at a time). */
typedef enum og_cls_kind { OG_DECODE = 0, OG_PROMPT, OG_CHUNK } og_cls_kind;

/* Offsets into the scratch of one class's regions (SIZE_MAX: absent). */
enum { OG_R_Q, OG_R_K, OG_R_V, OG_R_PAST_K, OG_R_PAST_V, OG_R_PRES_K, OG_R_PRES_V, OG_R_OUT,
       OG_R_MASK, OG_R_LENS, OG_R_QKV, OG_R_COS, OG_R_SIN, OG_R_COUNT };

typedef struct og_class {
    int32_t kind;              /* og_cls_kind */
    int32_t nreq;              /* B */
    int32_t first;             /* index into og_plan.req of the first member */
    int32_t S;                 /* query rows per request (max q_len) */
    int32_t T;                 /* keys per request (max seq_len) */
    int32_t P;                 /* past rows the separate past buffer holds */
    int32_t M;                 /* rows of the dense K/V buffer (past+present or present) */
    int direct;                /* q and out read/written in place (no staging) */
    size_t off[OG_R_COUNT];
    size_t size[OG_R_COUNT];
} og_class;

typedef struct og_plan {
    og_group *g;
    ag_batch b;                /* the validated batch, arrays copied */
    void *b_mem;
    int32_t T;                 /* query tokens */
    int32_t *req;              /* [num_reqs] request indices, grouped by class */
    og_class *cls;
    int32_t ncls;
    ag_region *regions;
    size_t nregions, scratch;
} og_plan;

/* ort_check.c: validates the group description and fills g (sinks copied,
 * layers sorted into sessions); validates a batch for g.  AG_REFUSED /
 * AG_UNSUPPORTED with the field named in msg. */
ag_status og_check_group(const ag_group *in, og_group *g, ag_msg *msg);
void og_group_free(og_group *g);
ag_status og_check_batch(const og_group *g, const ag_batch *b, ag_msg *msg);
/* The words of group.options: op=gqa|attention, kv=shared|separate,
 * qkv=separate|packed (packed: GQA with kv=shared only),
 * rotary=none|half|interleaved (GQA only). */
ag_status og_parse_options(const char *options, og_op *op, int32_t *io, int32_t *rotary,
                           ag_msg *msg);

/* ort_cache.c: the cache layout [cells][Hkv][D] in kv dtype, and the
 * element conversions the gathers and copies need. */
ag_status og_kv_cache_bytes(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg);
ag_status og_write_kv(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slot_mapping, ag_msg *msg);
/* n elements of type `from` at src to type `to` at dst (f32, f16, bf16;
 * widening is exact, narrowing rounds to nearest even). */
void og_convert(void *dst, ag_dtype to, const void *src, ag_dtype from, size_t n);
/* ag_dtype_name, "?" outside the enumeration (sizes and the f16 encoding
 * are the ABI's header-only ag_dtype_size and ag_encode_f16). */
const char *og_dtype_name(ag_dtype d);

/* ort_session.c: the session of layer l for io kind `io`, created on first
 * use with the group's allocator registered; ORT errors as AG_INTERNAL. */
ag_status og_session(og_group *g, int32_t l, int io, OrtSession **out, ag_msg *msg);
void og_sessions_free(og_group *g);

/* ort_alloc.c: the bridge forwarding ORT's requests to h (NULL: none). */
void og_bridge_init(og_bridge *b, const ag_allocator *h, const OrtMemoryInfo *info);
void og_bridge_free(og_bridge *b);
/* The first size h refused since the last call (0: none), and reset. */
size_t og_bridge_take(og_bridge *b);
/* After an ORT call: AG_INTERNAL with AG_R_RESOURCE when h refused a
 * request during it (whatever ORT said), else st unchanged. */
ag_status og_bridge_verdict(og_bridge *b, ag_status st, ag_msg *msg, const char *what);

/* ort_plan.c: whether the Attention op runs class c of plan P for `layer`
 * (-1: for any layer) with a boolean mask rather than is_causal. */
int og_masked(const og_plan *P, const og_class *c, int32_t layer);

/* ort_needs.c: which of GQA's CPU routines ORT runs class c of plan P
 * through for a layer of key k (MAPPING.md, "ORT's internal buffers"):
 * the decode kernel row by row or with its keys split (flash decoding),
 * the tiled prompt kernel, every logit in f32 (soft cap, sinks, a lone
 * first token), or the f16 path. */
typedef enum og_route {
    OG_ROUTE_DECODE_ROW = 0, OG_ROUTE_DECODE_SPLIT, OG_ROUTE_FLASH, OG_ROUTE_LOGITS, OG_ROUTE_F16
} og_route;
og_route og_gqa_route(const og_plan *P, const og_class *c, const og_key *k);

/* ort_rotary.c: GQA's rotary step made exact.  The case's q and K are
 * the rotated values the reference sees; the adapter hands ORT the
 * un-rotated ones and cos/sin caches whose every angle is a multiple of a
 * quarter turn (cos, sin in {-1, 0, 1}), so ORT's rotation gives back the
 * case's values bit for bit in any float type, while the angle still
 * depends on the position and the pair, so a wrong position or pairing
 * moves the result.  og_rot_caches fills rows 0 .. rows - 1 of cos and
 * sin ([rows][D/2], dtype t); og_unrotate turns n rows of `heads` heads
 * ([n][heads][D], dtype t) at positions p0 .. p0 + n - 1 back by their
 * angle. */
void og_rot_caches(const og_group *g, int32_t rows, void *cos, void *sin);
void og_unrotate(const og_group *g, void *rows, int32_t n, int32_t heads, int32_t p0);

/* ort_paths.c: the ABI's paths (NULL plan: every name it can give). */
int og_paths(void *plan, const char **names, int cap);

/* ort_plan.c, ort_needs.c, ort_run.c: the ABI's plan, extents,
 * internal_needs and run. */
ag_status og_plan_make(void *grp, const ag_batch *batch, const ag_plan_opts *opts, void **plan,
                       ag_plan_info *info, ag_msg *msg);
void og_plan_destroy(void *plan);
ag_status og_extents(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *msg);
ag_status og_internal_needs(void *plan, int32_t layer, size_t *sizes, size_t cap,
                            size_t *count, ag_msg *msg);
ag_status og_run(void *plan, int32_t layer, const ag_run_args *args, ag_msg *msg);

#endif /* AG_ORT_GROUP_H */
