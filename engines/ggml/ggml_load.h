/*
 * engines/ggml/ggml_load.h — ggml, loaded at run time (private to the ggml
 * adapter and its test and fuzz programs).
 *
 * Owns: the tables of ggml functions found with dlsym in libggml-base.so
 * and in each libggml-cpu-<variant>.so, the choice of the CPU variant, the
 * adapter's option words and the catching of GGML_ASSERT during graph
 * construction.  The types come from ggml's own public headers (fetched by
 * `make engines`, or $(GGML_DIR)/include), so a mismatch between a
 * declaration here and ggml's is a compile error, never a silent ABI slip.
 * attnguard binaries have no link-time dependency on ggml.
 */
#ifndef AG_GGML_LOAD_H
#define AG_GGML_LOAD_H

#include <setjmp.h>

#include "attnguard/engine.h"
#include "ggml-cpu.h"
#include "ggml.h"

/* One function pointer of ggml's own type, named as the function. */
#define AGG_FN(f) __typeof__(f) *f

/* libggml-base.so: tensors, graphs, the op itself. */
typedef struct agg_base {
    AGG_FN(ggml_init);
    AGG_FN(ggml_free);
    AGG_FN(ggml_tensor_overhead);
    AGG_FN(ggml_graph_overhead_custom);
    AGG_FN(ggml_new_tensor_1d);
    AGG_FN(ggml_new_tensor_4d);
    AGG_FN(ggml_permute);
    AGG_FN(ggml_flash_attn_ext);
    AGG_FN(ggml_new_graph_custom);
    AGG_FN(ggml_build_forward_expand);
    AGG_FN(ggml_fp32_to_fp16);
    AGG_FN(ggml_set_abort_callback);
    /* optional: NULL when this ggml predates them */
    AGG_FN(ggml_flash_attn_ext_add_sinks);
    AGG_FN(ggml_prec_set_acc);
    AGG_FN(ggml_threadpool_params_default);
} agg_base;

/* libggml-cpu-<variant>.so: planning and computing a graph. */
typedef struct agg_cpu {
    AGG_FN(ggml_cpu_init);
    AGG_FN(ggml_graph_plan);
    AGG_FN(ggml_graph_compute);
    /* optional: without them every compute gets ggml's disposable pool */
    AGG_FN(ggml_threadpool_new);
    AGG_FN(ggml_threadpool_free);
} agg_cpu;

struct agg_pool;   /* a variant's kept threadpool, ggml_load.c */

#define AGG_MAX_VARIANTS 32
#define AGG_PATH_LEN 1024

typedef struct agg_variant {
    char name[32];             /* "zen4", "haswell"; "cpu" for a plain libggml-cpu.so */
    char option[40];           /* "cpu=<name>", for ag_engine.variants */
    char path[AGG_PATH_LEN + 256];
    int score;                 /* ggml_backend_score() of the library; 1 without one */
    void *handle;
    agg_cpu cpu;
    struct agg_pool *pool;     /* NULL when the variant cannot keep one */
} agg_variant;

/* How a batch is mapped onto the op (group option layout=...). */
typedef enum agg_layout {
    AGG_LAYOUT_UNIFIED = 0,    /* one stream: every request's cells in one K/V view, one mask */
    AGG_LAYOUT_STREAMS = 1     /* each request a stream of the op's 4th dimension */
} agg_layout;

typedef struct agg_lib {
    char dir[AGG_PATH_LEN];    /* where the libraries were found */
    void *base_handle;
    agg_base base;
    agg_variant var[AGG_MAX_VARIANTS];   /* runnable here, best score first */
    int nvar;
    char words[2][80];         /* the best variant's words with each layout, for
                                  ag_engine.variants: "cpu=<best> layout=unified", ... */
} agg_lib;

/* Loads ggml from the first of: options "dir=<path>", $GGML_DIR (its lib/,
 * bin/ or itself), the folder `make engines` filled.  Only variants whose
 * ggml_backend_score() is > 0 on this CPU are kept, best first (the order
 * ggml's own loader prefers).  AG_UNSUPPORTED when nothing is there (msg
 * says how to get it). */
ag_status agg_load(const char *options, agg_lib **out, ag_msg *msg);
void agg_unload(agg_lib *lib);

/* A threadpool of n threads of variant v, kept between computes with its
 * workers asleep (poll 0), as llama.cpp attaches one to its CPU backend;
 * NULL (ggml then makes a disposable one per compute) when the variant has
 * no threadpool API or its pool is in use by another compute.  Give it back
 * with agg_pool_put after ggml_graph_compute returns. */
struct ggml_threadpool *agg_pool_get(const agg_variant *v, int n);
void agg_pool_put(const agg_variant *v, struct ggml_threadpool *tp);

/* What a group's options ask for: the CPU variant ("cpu=<name>", else the
 * best one) and the layout ("layout=unified|streams", else unified).
 * AG_REFUSED (AG_R_OPTIONS) for an unknown key, a variant not runnable
 * here or a layout that does not exist. */
ag_status agg_group_options(const agg_lib *lib, const char *options, const agg_variant **v,
                            agg_layout *layout, ag_msg *msg);

/* Writes msg (when not NULL: the refusal kind, ggml's own code, the
 * text) and returns st. */
ag_status agg_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* GGML_ASSERT during graph construction: ggml calls its abort callback
 * before abort(); while a catcher is armed on this thread the callback
 * longjmps back to it with ggml's message.  Arm right after setjmp, disarm
 * when done.  Never armed around ggml_graph_compute (its worker threads). */
typedef struct agg_catch {
    jmp_buf env;
    char text[AG_MSG_TEXT_LEN];
} agg_catch;
void agg_catch_arm(const agg_lib *lib, agg_catch *c);
void agg_catch_disarm(void);

#endif /* AG_GGML_LOAD_H */
