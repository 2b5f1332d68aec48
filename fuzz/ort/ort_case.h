/*
 * ort_case.h — owns fuzz_ort_contract's case model: one
 * GroupQueryAttention or Attention call as the fuzz input decodes it
 * (fcase: the op, its attributes, which optional inputs and how outputs
 * are bound, dims, lengths and the one relation perturbed), and the
 * tensors that call hands ORT (call: the slots, their shapes and
 * buffers).  The case room of the target: decoding (ort_decode.c), the
 * tensors' shapes (ort_layout.c), the documented contract and the case's
 * description (ort_contract.c).
 */
#ifndef ATTNGUARD_ORT_CASE_H
#define ATTNGUARD_ORT_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "../../engines/ort/ort_group.h"
#include "../../harness/judge/guard.h"
#include "../contract/fz_input.h"

#define MAXB 4                           /* batch entries with their own lengths */

enum { OP_GQA = 0, OP_ATT = 1 };
enum { NOATTR = INT32_MIN };             /* an int attribute left out */

/* Tensor slots: GQA's 12 inputs and 4 outputs, Attention's 7 and 4, in
 * schema order. */
enum { G_Q, G_K, G_V, G_PK, G_PV, G_SEQ, G_TOT, G_COS, G_SIN, G_POS, G_BIAS, G_SINK, G_NIN };
enum { A_Q, A_K, A_V, A_MASK, A_PK, A_PV, A_NONPAD, A_NIN };
enum { O_Y, O_PK, O_PV, O_QK, O_N };
#define SLOTS (G_NIN + O_N)

/* How an output reaches us: our guarded buffer, ORT's allocation handed
 * back, computed but not asked for, or left out of the node. */
enum { BIND_OURS = 0, BIND_ORT, BIND_NONE, BIND_UNDECLARED };

typedef struct fcase {
    int op, f16, threads, front;
    /* node attributes (NOATTR / NAN: left out) */
    int64_t a_hq, a_hkv, a_window, a_smooth, a_rotary, a_qk, a_causal, a_sprec;
    float a_scale, a_softcap;
    /* which optional inputs, how outputs are bound */
    int packed, past, sink, bias, cos, mask, nonpad, rank4, pres_bind, qk_bind, shared;
    /* dims */
    int64_t B, S, D, Dv, hq, hkv, P, T, M;
    int32_t len[MAXB];       /* GQA: per-entry total length (seqlens_k + 1) */
    int64_t nonpad_v[MAXB];  /* Attention */
    int32_t total;
    int rel;                 /* the relation perturbed (0: none) */
    unsigned relv;           /* its magnitude byte */
    int64_t mdim[4];         /* mask / bias dims (right-aligned rank mrank) */
    int mrank;
    float amp_q, amp_k, amp_v;
    uint64_t seed;
} fcase;

/* Relations a case may break, one at a time (0: none).  The names are
 * what the contract check and `describe` print. */
enum {
    R_NONE, R_SEQ_OVER_CAP, R_SEQ_NEG, R_SEQ_HUGE, R_SEQ_BELOW_S, R_SEQ_OVER_TOTAL, R_TOTAL_OFF,
    R_SEQ_SHAPE, R_TOTAL_SHAPE, R_KEY_ROWS, R_KV_HIDDEN, R_Q_HIDDEN, R_PAST_DIMS, R_PAST_ONE,
    R_PAST_SHORT, R_SINK_LEN, R_BIAS_SHAPE, R_COS_ROWS, R_PRES_LEN, R_ZERO_BIG, R_MASK_LAST,
    R_MASK_DIM, R_NONPAD_BAD, R_NONPAD_PAST, R_NONPAD_LEN, R_V_ROWS, R_QK_LEN, R_COUNT
};
/* The names of the relations (ortc_rel_name[R_...]). */
extern const char *const ortc_rel_name[R_COUNT];

/* The longest per-entry total length of a GQA case. */
static inline int32_t ortc_max_len(const fcase *c) {
    int32_t m = 0;
    for (int64_t b = 0; b < c->B && b < MAXB; b++) m = c->len[b] > m ? c->len[b] : m;
    return m;
}

/* ---- the tensors of one call ---- */
typedef struct tens {
    const char *name;   /* NULL: the slot is left out */
    int et, rank;
    int64_t dim[4];
    int bind;           /* outputs: BIND_* */
    int ro;             /* inputs: read-only while ORT runs */
    guard g;
    void *p;            /* data (ours or ORT's) */
    size_t bytes;
    OrtValue *v;
} tens;

typedef struct call {
    fcase c;
    tens t[SLOTS];
    int nin;            /* input slots of the op; outputs follow */
    int pk_alias;       /* GQA shared: present_key is past_key's buffer */
    double product;     /* B x N x S x T (T: the present / total length) */
} call;

/* Decodes the input r into c (ort_decode.c): the op, then its case
 * (decode_gqa / decode_att), the amplitudes, the relation perturbed, the
 * triage overrides of FUZZ_ORT_SET, the values' seed.  Every input
 * decodes (a short one reads zeros). */
void ortc_decode(fz_rd *r, fcase *c);

/* Sets K's tensors (names, types, shapes, output bindings) from K->c,
 * with its relation applied to them; K->nin set first (ort_layout.c).
 * May change K->c where a relation says (lengths, totals, the zero-batch
 * case's dims). */
void ortc_layout(call *K);

/* Bytes of an element of ORT type et. */
size_t ortc_et_size(int et);

/* Elements of t, or SIZE_MAX when the product overflows or a dim is
 * negative. */
size_t ortc_elems(const tens *t);

/* The named conditions of the op's schema (and the ONNX spec) K breaks,
 * into why (comma-separated, cap bytes); 1 when none.  *unj: NULL, or
 * why an input inside the contract is not judged (what the reference or
 * the error model cannot express) (ort_contract.c). */
int ortc_in_contract(const call *K, char *why, size_t cap, const char **unj);

/* Prints K (its contract verdict, fields and tensors) to stderr: what a
 * finding's report shows before it fires (ort_contract.c). */
void ortc_describe(const call *K);

#endif
