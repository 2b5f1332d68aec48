/*
 * ort_session.c — owns fuzz_ort_contract's sessions (ort_run.h): ORT
 * loaded once with the harness's guarded allocator registered, the
 * one-node model of a call (in memory: engines/ort/onnx_proto.c), the
 * session for it (kept across inputs, least recently used out), ORT's
 * refusals counted, and the OrtValues of a Run.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engines/ort/onnx_proto.h"
#include "../contract/fz_tally.h"
#include "ort_run.h"
#include "ort_stats.h"

#define SESS_CAP 64                      /* sessions kept (each holds ~MBs of ORT state) */

orta_lib *ortc_lib;
guard_allocator ortc_galloc;
og_bridge ortc_bridge;

void ortc_load(void) {
    ag_msg msg;
    if (orta_load(NULL, &ortc_lib, &msg) != AG_OK) {
        fprintf(stderr, "fuzz_ort_contract: %s\n", msg.text);
        exit(1);
    }
    if (guard_alloc_init(&ortc_galloc) != 0) exit(1);
    og_bridge_init(&ortc_bridge, &ortc_galloc.abi, ortc_lib->cpu);
}

/* ---- sessions, kept by model bytes and threads ---- */
typedef struct sess_slot {
    uint8_t *model;
    size_t len;
    int threads;
    OrtSession *s;
    unsigned long used;
} sess_slot;
static sess_slot cache[SESS_CAP];
static unsigned long clock_;

/* The one-node model of K: symbolic dims throughout (one name per tensor
 * dim), so one session serves every shape of the same node. */
static int model_of(const call *K, uint8_t **out, size_t *len) {
    const fcase *c = &K->c;
    static char dimname[SLOTS][4][8];
    onnx_value io[SLOTS];
    int nin = 0, nout = 0;
    memset(io, 0, sizeof io);
    for (int i = 0; i < SLOTS; i++) {
        const tens *t = &K->t[i];
        const int is_out = i >= K->nin;
        onnx_value *v = &io[i];
        v->name = t->name && !(is_out && t->bind == BIND_UNDECLARED) ? t->name : "";
        if (!v->name[0]) continue;
        if (!is_out) nin = i + 1;
        else nout = i - K->nin + 1;
        v->elem_type = t->et, v->rank = t->rank;
        for (int d = 0; d < t->rank; d++) {
            snprintf(dimname[i][d], sizeof dimname[i][d], "s%dd%d", i, d);
            v->dims[d].param = dimname[i][d];
        }
        /* The hidden sizes (last dim of the 3-D tensors) and the QK
         * outputs' key axis fixed: with them symbolic, ORT 1.30's shape
         * inference gives the outputs a last dim of 0 (Attention's Y and
         * qk_matmul_output, packed-QKV GroupQueryAttention's output) and
         * Run refuses every output of the right shape (MAPPING.md,
         * Contract fuzzing).  FUZZ_ORT_SYMBOLIC_HIDDEN=1 keeps them
         * symbolic, to show it. */
        if ((t->rank == 3 || (is_out && i - K->nin == O_QK)) && !getenv("FUZZ_ORT_SYMBOLIC_HIDDEN"))
            v->dims[t->rank - 1] = (onnx_dim){t->dim[t->rank - 1], NULL};
    }
    onnx_attr at[12];
    int na = 0;
#define IATTR(n, x) if ((x) != NOATTR) at[na++] = (onnx_attr){(n), ONNX_ATTR_INT, 0.0f, (x)}
#define FATTR(n, x) if (!isnan(x)) at[na++] = (onnx_attr){(n), ONNX_ATTR_FLOAT, (x), 0}
    if (c->op == OP_GQA) {
        IATTR("num_heads", c->a_hq);
        IATTR("kv_num_heads", c->a_hkv);
        IATTR("local_window_size", c->a_window);
        IATTR("smooth_softmax", c->a_smooth);
        IATTR("do_rotary", c->a_rotary);
        IATTR("qk_output", c->a_qk);
    } else {
        IATTR("q_num_heads", c->a_hq);
        IATTR("kv_num_heads", c->a_hkv);
        IATTR("is_causal", c->a_causal);
        IATTR("softmax_precision", c->a_sprec);
        IATTR("qk_matmul_output_mode", c->a_qk);
    }
    FATTR("scale", c->a_scale);
    FATTR("softcap", c->a_softcap);
#undef IATTR
#undef FATTR
    const onnx_node_model m = {
        .ir_version = 10, .opset_onnx = c->op == OP_GQA ? 21 : 24, .opset_ms = c->op == OP_GQA,
        .op_type = c->op == OP_GQA ? "GroupQueryAttention" : "Attention",
        .domain = c->op == OP_GQA ? "com.microsoft" : "",
        .in = io, .n_in = nin, .out = io + K->nin, .n_out = nout, .attr = at, .n_attr = na,
    };
    return onnx_encode_model(&m, out, len);
}

/* The options of every session: `threads` intra-op threads, no graph
 * optimisation (the node runs as written), no arena or memory pattern (each
 * buffer its own allocation, so the guarded allocator sees it), quiet
 * logs.  Returns ORT's status (NULL: *out made). */
static OrtStatus *session_options(int threads, OrtSessionOptions **out) {
    const orta_fns *f = &ortc_lib->f;
    OrtStatus *s = f->CreateSessionOptions(out);
    OrtSessionOptions *o = *out;
    if (!s) s = f->SetIntraOpNumThreads(o, threads);
    if (!s) s = f->SetInterOpNumThreads(o, 1);
    if (!s) s = f->SetSessionGraphOptimizationLevel(o, ORTA_OPT_DISABLE_ALL);
    if (!s) s = f->SetSessionLogSeverityLevel(o, ORTA_LOG_FATAL);
    if (!s) s = f->DisableCpuMemArena(o);
    if (!s) s = f->DisableMemPattern(o);
    if (!s) s = f->AddSessionConfigEntry(o, "session.intra_op.allow_spinning", "0");
    /* every buffer the session allocates comes from the registered allocator */
    if (!s) s = f->AddSessionConfigEntry(o, "session.use_env_allocators", "1");
    return s;
}

void ortc_refusal(const char *stage, OrtStatus *s, unsigned long *counter) {
    char line[160];
    snprintf(line, sizeof line, "%s: %s", stage, ortc_lib->f.GetErrorMessage(s));
    fz_tally_folded(&ortc_st.refusals, line);
    ortc_lib->f.ReleaseStatus(s);
    (*counter)++;
}

/* The session for K's node, from the cache or made now; NULL when ORT
 * refused the model (counted). */
OrtSession *ortc_session_for(const call *K) {
    uint8_t *model;
    size_t len;
    if (model_of(K, &model, &len) != 0) abort();
    sess_slot *lru = &cache[0];
    for (int i = 0; i < SESS_CAP; i++) {
        sess_slot *e = &cache[i];
        if (e->s && e->len == len && e->threads == K->c.threads && !memcmp(e->model, model, len)) {
            free(model);
            e->used = ++clock_;
            ortc_st.sess_hits++;
            return e->s;
        }
        if (!e->s || e->used < lru->used) lru = e;
        if (!e->s) break;
    }
    if (lru->s) ortc_lib->f.ReleaseSession(lru->s), free(lru->model);
    memset(lru, 0, sizeof *lru);
    OrtSessionOptions *o = NULL;
    OrtStatus *s = session_options(K->c.threads, &o);
    OrtSession *out = NULL;
    if (!s) {
        pthread_mutex_lock(&ortc_lib->env_mu);
        s = ortc_lib->f.RegisterAllocator(ortc_lib->env, &ortc_bridge.ort);
        if (!s) {
            s = ortc_lib->f.CreateSessionFromArray(ortc_lib->env, model, len, o, &out);
            OrtStatus *u = ortc_lib->f.UnregisterAllocator(ortc_lib->env, ortc_lib->cpu);
            if (u) ortc_lib->f.ReleaseStatus(u);
        }
        pthread_mutex_unlock(&ortc_lib->env_mu);
    }
    if (o) ortc_lib->f.ReleaseSessionOptions(o);
    if (s) {
        const char *m = ortc_lib->f.GetErrorMessage(s);
        /* a schema / type / shape-inference failure is the graph build's */
        const int build = strstr(m, "Load model") || strstr(m, "schema") ||
                          strstr(m, "inference") || strstr(m, "Type Error");
        ortc_refusal(build ? "graph" : "session", s,
                     build ? &ortc_st.refused_build : &ortc_st.refused_session);
        free(model);
        return NULL;
    }
    ortc_st.sess_made++;
    lru->model = model, lru->len = len, lru->threads = K->c.threads, lru->s = out;
    lru->used = ++clock_;
    return out;
}

OrtStatus *ortc_values(call *K, const char **in_names, const OrtValue **in, size_t *nin,
                       const char **out_names, OrtValue **out, size_t *nout) {
    OrtStatus *s = NULL;
    static int64_t dummy;
    *nin = *nout = 0;
    for (int i = 0; i < SLOTS && !s; i++) {
        tens *t = &K->t[i];
        const int o = i >= K->nin;
        if (!t->name || (o && (t->bind == BIND_NONE || t->bind == BIND_UNDECLARED))) continue;
        if (o && t->bind == BIND_ORT) {
            out_names[*nout] = t->name;
            out[(*nout)++] = NULL;
            continue;
        }
        s = ortc_lib->f.CreateTensorWithDataAsOrtValue(ortc_lib->cpu, t->p ? t->p : &dummy, t->bytes,
                                                  t->dim, (size_t)t->rank, t->et, &t->v);
        if (s) break;
        if (o) out_names[*nout] = t->name, out[(*nout)++] = t->v;
        else in_names[*nin] = t->name, in[(*nin)++] = t->v;
    }
    return s;
}

