/*
 * ort_contract.c — owns fuzz_ort_contract's reading of the operators'
 * documented contract (ort_case.h): the named conditions of
 * GroupQueryAttention's and Attention's schemas (and the ONNX spec) a
 * call breaks, what of an input inside the contract the reference cannot
 * judge, and the description of a case printed before a finding fires.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ort_case.h"

/* The named conditions of the op's schema (and the ONNX spec) an input
 * breaks, into why; 1 when none.  `judge`: also inside what the reference
 * expresses, and the reason when not (unj). */
int ortc_in_contract(const call *K, char *why, size_t cap, const char **unj) {
    const fcase *c = &K->c;
    why[0] = '\0';
    *unj = NULL;
    int ok = 1;
#define COND(cond, name)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            size_t u_ = strlen(why);                                                         \
            snprintf(why + u_, cap - u_, "%s%s", u_ ? "," : "", (name));                     \
            ok = 0;                                                                          \
        }                                                                                    \
    } while (0)
    if (c->rel != R_NONE && c->rel != R_TOTAL_SHAPE && c->rel != R_ZERO_BIG)
        COND(0, ortc_rel_name[c->rel]);
    /* a [1] total is "scalar or one element": inside */
    if (c->rel == R_TOTAL_SHAPE) COND(K->t[G_TOT].rank == 1 && K->t[G_TOT].dim[0] == 1,
                                      "total-misshapen");
    COND(isnan(c->a_scale) || (isfinite(c->a_scale) && (c->op == OP_GQA || c->a_scale > 0)),
         "scale-not-finite-or-not-positive");
    COND(isnan(c->a_softcap) || (isfinite(c->a_softcap) && c->a_softcap >= 0),
         "softcap-negative");
    COND(c->hkv >= 1 && c->hq % c->hkv == 0, "q-heads-not-multiple-of-kv-heads");
    if (c->op == OP_GQA) {
        COND(c->D % 8 == 0, "head-size-not-multiple-of-8");
        COND(c->a_window == NOATTR || c->a_window == -1 || c->a_window >= 1,
             "local-window-size-below-minus-1-or-0");
        COND(c->a_smooth == NOATTR || c->a_smooth == 0 || c->a_smooth == 1 || c->a_smooth == -1,
             "smooth-softmax-not-0-or-1");
        COND(c->a_rotary != 1 || c->cos, "rotary-without-caches");
        COND(!c->cos || c->a_rotary == 1, "caches-without-rotary");
        COND(!c->cos || c->D % 16 == 0, "rotary-head-size-not-multiple-of-16");
        COND(c->a_qk == NOATTR || c->a_qk == 0 || c->a_qk == 1 || c->a_qk == 2,
             "qk-output-mode");
    } else {
        COND(c->a_causal == NOATTR || c->a_causal == 0 || c->a_causal == 1, "is-causal-not-0-or-1");
        COND(c->rank4 || c->a_hq != NOATTR, "3d-without-head-counts");
        COND(c->a_sprec == NOATTR || c->a_sprec == 1 || c->a_sprec == 10 || c->a_sprec == 16 ||
             c->a_sprec == 11, "softmax-precision");
        COND(!c->past || c->pres_bind == BIND_OURS || c->pres_bind == BIND_ORT ||
             c->pres_bind == BIND_NONE, "past-without-present");
    }
#undef COND
    if (!ok) return 0;
    /* inside: can the reference say what every output is? */
    if (c->op == OP_GQA && c->a_rotary == 1) *unj = "rotary embedding (the reference has none)";
    else if (c->op == OP_ATT && c->Dv != c->D)
        *unj = "V head size differs from Q/K's (the reference has one head_dim)";
    else if (c->op == OP_ATT && (c->a_sprec == 10 || c->a_sprec == 16))
        *unj = "softmax in f16/bf16 (the error model has no reduced-precision softmax)";
    else if (c->op == OP_ATT && c->a_sprec == NOATTR && c->f16)
        *unj = "f16 Attention without softmax_precision: softmax in f16 by the spec (no model)";
    else if (c->op == OP_ATT && c->f16 && !isnan(c->a_softcap) && c->a_softcap > 0)
        *unj = "f16 Attention with a soft cap: ORT caps the f16 logits in f16 arithmetic, "
               "roundings of the order of the cap the error model does not bound";
    else if (c->op == OP_ATT && c->f16 && c->mask == 2)
        *unj = "f16 Attention with an additive mask: the spec adds it to f16 logits, a rounding "
               "of |logit + mask| the error model does not bound";
    else if (c->B == 0 || c->S == 0) *unj = "empty output";
    return 1;
}

/* ---- describing an input (before a finding fires) ---- */
void ortc_describe(const call *K) {
    const fcase *c = &K->c;
    char why[256];
    const char *unj;
    const int inside = ortc_in_contract(K, why, sizeof why, &unj);
    fprintf(stderr, "  contract: %s%s%s%s\n", inside ? "inside" : "outside: ", why,
            unj ? "; not judged: " : "", unj ? unj : "");
    fprintf(stderr,
            "  case: %s %s threads %d %s, B %lld S %lld D %lld (Dv %lld) hq %lld hkv %lld "
            "(attrs %lld/%lld), P %lld T %lld M %lld total %d, lens %d %d %d %d, nonpad %lld %lld "
            "%lld, past %d shared %d packed %d sink %d bias %d cos %d mask %d nonpad %d rank4 "
            "%d, present bind %d qk bind %d, window %lld smooth %lld rotary %lld qk %lld causal "
            "%lld sprec %lld scale %g softcap %g, relation %s (%u)\n",
            c->op == OP_GQA ? "GroupQueryAttention" : "Attention", c->f16 ? "f16" : "f32",
            c->threads, c->front ? "front" : "back", (long long)c->B, (long long)c->S,
            (long long)c->D, (long long)c->Dv, (long long)c->hq, (long long)c->hkv,
            (long long)c->a_hq, (long long)c->a_hkv, (long long)c->P, (long long)c->T,
            (long long)c->M, c->total, c->len[0], c->len[1], c->len[2], c->len[3],
            (long long)c->nonpad_v[0], (long long)c->nonpad_v[1], (long long)c->nonpad_v[2],
            c->past, c->shared, c->packed, c->sink, c->bias, c->cos, c->mask, c->nonpad,
            c->rank4, c->pres_bind, c->qk_bind, (long long)c->a_window, (long long)c->a_smooth,
            (long long)c->a_rotary, (long long)c->a_qk, (long long)c->a_causal,
            (long long)c->a_sprec, (double)c->a_scale, (double)c->a_softcap, ortc_rel_name[c->rel],
            c->relv);
    for (int i = 0; i < SLOTS; i++) {
        const tens *t = &K->t[i];
        if (!t->name) continue;
        fprintf(stderr, "    %s%s [", t->name, i >= K->nin ? " (out)" : "");
        for (int d = 0; d < t->rank; d++) fprintf(stderr, "%s%lld", d ? ", " : "", (long long)t->dim[d]);
        fprintf(stderr, "]\n");
    }
}
