/*
 * engines/ort/ort_paths.c — the ABI's paths for ONNX Runtime: which of its
 * CPU attention routines and input forms each plan's calls take, named for
 * the harness's reach table and worked out from what the adapter hands ORT
 * (the op, its attributes, the classes' shapes and the thread count).
 *
 * GroupQueryAttention's routines are og_gqa_route's (ort_needs.c, the
 * same decision that predicts ORT's buffers): the decode kernel row by row
 * or split over key blocks, the tiled prompt kernel, every logit in f32,
 * the f16 path.  Beside them the inputs that select branches of the op:
 * past and present shared or separate, the local window, the soft cap,
 * the two sink forms, K/V heads broadcast or not, and the batch's shape
 * classes (decodes; prompts, right-padded when their lengths differ; a
 * chunk over a past).  Attention: is_causal with nonpad_kv_seqlen or a
 * boolean mask, f32 or f16.  Forms this adapter never passes are listed
 * in docs/engines.md ("ORT's branches in the reach table").
 */
#include "ort_group.h"
#include "../path_names.h"

#define ORT_PATHS(X)                                                                         \
    X(P_GQA_ROW, "gqa/decode-row") X(P_GQA_SPLIT, "gqa/decode-split")                        \
    X(P_GQA_FLASH, "gqa/flash-tiled") X(P_GQA_LOGITS, "gqa/logits-f32")                      \
    X(P_GQA_F16, "gqa/f16") X(P_GQA_SHARED, "gqa/kv=shared") X(P_GQA_SEPARATE, "gqa/kv=separate") \
    X(P_GQA_PACKED, "gqa/qkv=packed") X(P_GQA_ROT_HALF, "gqa/rotary=half") \
    X(P_GQA_ROT_INTER, "gqa/rotary=interleaved") \
    X(P_GQA_WINDOW, "gqa/local-window") X(P_GQA_CAP, "gqa/softcap")                          \
    X(P_GQA_SMOOTH, "gqa/sink=smooth-softmax") X(P_GQA_HEAD, "gqa/sink=head-sink")           \
    X(P_GQA_BCAST, "gqa/kv-broadcast") X(P_GQA_MHA, "gqa/kv-per-head")                      \
    X(P_GQA_DECODE, "gqa/batch=decode") X(P_GQA_PROMPT, "gqa/batch=prompt")                 \
    X(P_GQA_PADDED, "gqa/prompt-right-padded") X(P_GQA_CHUNK, "gqa/batch=chunk")            \
    X(P_ATT_CAUSAL, "attention/is-causal") X(P_ATT_MASK, "attention/bool-mask")              \
    X(P_ATT_F32, "attention/t=f32") X(P_ATT_F16, "attention/t=f16")

enum { ORT_PATHS(AG_PATH_ENUM) P_COUNT };
static const char *const k_all[P_COUNT] = {ORT_PATHS(AG_PATH_NAME)};

/* Whether a prompt class's requests have different lengths (ORT sees them
 * right-padded to the longest). */
static int padded(const og_plan *P, const og_class *c) {
    for (int32_t i = 1; i < c->nreq; i++)
        if (P->b.seq_lens[P->req[c->first + i]] != P->b.seq_lens[P->req[c->first]]) return 1;
    return 0;
}

static void gqa_rows(const og_plan *P, int *on) {
    const og_group *g = P->g;
    on[g->io == OG_IO_GQA_SEPARATE ? P_GQA_SEPARATE : P_GQA_SHARED] = 1;
    on[P_GQA_PACKED] = g->io == OG_IO_GQA_PACKED;
    on[P_GQA_ROT_HALF] = g->rotary == OG_ROT_HALF;
    on[P_GQA_ROT_INTER] = g->rotary == OG_ROT_INTERLEAVED;
    for (int32_t l = 0; l < g->nl; l++) {
        const og_key *k = &g->layers[l].key;
        on[k->hq > g->hkv ? P_GQA_BCAST : P_GQA_MHA] = 1;
        on[P_GQA_WINDOW] |= k->window >= 0;
        on[P_GQA_CAP] |= k->softcap != 0.0f;
        on[P_GQA_SMOOTH] |= k->sink == OG_SINK_SMOOTH;
        on[P_GQA_HEAD] |= k->sink == OG_SINK_HEAD;
        for (int32_t i = 0; i < P->ncls; i++) {
            static const int route_row[] = {[OG_ROUTE_DECODE_ROW] = P_GQA_ROW,
                                            [OG_ROUTE_DECODE_SPLIT] = P_GQA_SPLIT,
                                            [OG_ROUTE_FLASH] = P_GQA_FLASH,
                                            [OG_ROUTE_LOGITS] = P_GQA_LOGITS,
                                            [OG_ROUTE_F16] = P_GQA_F16};
            on[route_row[og_gqa_route(P, &P->cls[i], k)]] = 1;
        }
    }
    for (int32_t i = 0; i < P->ncls; i++) {
        const og_class *c = &P->cls[i];
        on[c->kind == OG_DECODE ? P_GQA_DECODE : c->kind == OG_PROMPT ? P_GQA_PROMPT : P_GQA_CHUNK] = 1;
        on[P_GQA_PADDED] |= c->kind == OG_PROMPT && padded(P, c);
    }
}

static void attention_rows(const og_plan *P, int *on) {
    on[P->g->t_dt == AG_F16 ? P_ATT_F16 : P_ATT_F32] = 1;
    for (int32_t l = 0; l < P->g->nl; l++)
        for (int32_t i = 0; i < P->ncls; i++)
            on[og_masked(P, &P->cls[i], l) ? P_ATT_MASK : P_ATT_CAUSAL] = 1;
}

int og_paths(void *plan, const char **names, int cap) {
    const og_plan *P = plan;
    if (!P) return ag_path_names(k_all, NULL, P_COUNT, names, cap);
    int on[P_COUNT] = {0};
    if (P->g->op == OG_GQA) gqa_rows(P, on);
    else attention_rows(P, on);
    return ag_path_names(k_all, on, P_COUNT, names, cap);
}
