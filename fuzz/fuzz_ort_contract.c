/*
 * fuzz_ort_contract.c — contract fuzzing of ONNX Runtime's CPU attention
 * itself (not of the adapter): one com.microsoft GroupQueryAttention node
 * or one ONNX Attention node (opset 24), encoded in memory
 * (engines/ort/onnx_proto.c) and run through ORT's C API
 * (engines/ort/ort_load.c, ort_api.h), with inputs inside and just outside
 * what the operators' schemas document: every relation between
 * seqlens_k, total_sequence_length, the past length, the present length,
 * the query length and the cache capacity; masks (boolean and additive, of
 * every broadcast shape), nonpad_kv_seqlen, past and present sharing one
 * buffer or not; the rarely used attributes (local_window_size, softcap,
 * smooth_softmax, head_sink, do_rotary, scale, head-count ratios,
 * is_causal, softmax_precision, the QK outputs); f32 and f16; and shapes
 * whose products (B x N x S x T) reach 2^31 / 2^32 while the memory
 * actually touched stays small (a large cache capacity with short
 * sequences, a zero batch with huge other dims, lengths near INT32_MAX).
 * Built when ORT is (make engines); its limits are
 * fuzz_ort_contract.options.
 *
 * Verdicts.  A failed graph build, session creation or Run is ORT
 * refusing: counted with its message, never reported.  Findings are what
 * ORT does not refuse, judged by the harness's own parts: every buffer
 * handed to ORT is a guarded mapping (judge/guard.c; inputs read-only
 * while ORT runs, unless ORT is told to write them), ORT's own buffers
 * come from the harness's guarded allocator (judge/guard_alloc.c,
 * registered on the environment with session.use_env_allocators, arena
 * off), so an access out of bounds shows on a PROT_NONE page or a canary
 * (input-bounds, scratch-bounds); every output of an input inside the
 * documented contract is compared with the harness's fp64 reference
 * (judge/ref.c, fed the positions, window, soft cap, sinks and an explicit
 * additive mask) within the error model of ORT's declared rounding
 * (judge/compare.c), and present_key / present_value are checked to be
 * the exact copies the schema says (differential).  What cannot be judged
 * is run under guard and counted with its reason (see `unjudged`).  The
 * counts print at exit.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../engines/ort/onnx_proto.h"
#include "../engines/ort/ort_group.h"
#include "../harness/judge/compare.h"
#include "../harness/judge/guard.h"
#include "../harness/judge/guard_alloc.h"
#include "../harness/judge/oracles.h"
#include "../harness/judge/ref.h"

/* ---- limits: what one input may cost ---- */
#define MAXB 4
#define TOUCH_CAP ((size_t)384 << 20)    /* bytes written by us or ORT's contract */
#define VIRT_CAP ((size_t)24 << 30)      /* bytes mapped (untouched pages cost nothing) */
#define REF_CAP ((size_t)1 << 22)        /* reference multiply-adds */
#define SESS_CAP 64                      /* sessions kept (each holds ~MBs of ORT state) */

/* ---- counters, printed at exit ---- */
typedef struct tally {
    char key[24][112];
    unsigned long n[24];
    int used;
} tally;

static struct {
    unsigned long execs, over_cap, refused_build, refused_session, refused_run, refused_inside,
        ran, ran_outside, judged, elems, elems_unjudged, present_checked, unjudged_out,
        sess_made, sess_hits, resource, skipped, big31, big32;
    tally refusals, inside_refusals, unjudged;
} st;

/* Count text under a key with its digits folded, so "got 3" and "got 7"
 * are one line. */
static void tally_add(tally *t, const char *text) {
    char k[112];
    size_t j = 0;
    for (size_t i = 0; text[i] && j + 1 < sizeof k; i++)
        if (!(text[i] >= '0' && text[i] <= '9') || j == 0 || k[j - 1] != '#')
            k[j++] = text[i] >= '0' && text[i] <= '9' ? '#' : text[i] == '\n' ? ' ' : text[i];
    k[j] = '\0';
    for (int i = 0; i < t->used; i++)
        if (!strcmp(t->key[i], k)) {
            t->n[i]++;
            return;
        }
    if (t->used < 24) snprintf(t->key[t->used], sizeof t->key[0], "%s", k), t->n[t->used++] = 1;
}

static void tally_print(const char *title, const tally *t) {
    if (t->used) fprintf(stderr, "  %s:\n", title);
    for (int i = 0; i < t->used; i++) fprintf(stderr, "  %8lu x %s\n", t->n[i], t->key[i]);
}

static void print_stats(void) {
    fprintf(stderr,
            "fuzz_ort_contract: %lu inputs: %lu over the memory cap (not run); refusals: %lu at "
            "graph build, %lu at session creation, %lu at Run (%lu of them inside the contract); "
            "%lu ran (%lu judged against the reference: %lu elements compared, %lu left open "
            "(padding or fully masked rows); %lu present outputs checked as copies; %lu inside "
            "the contract but not judged; %lu outside the contract accepted without a fault); "
            "%lu allocator refusals; %lu skipped (triaged classes); sessions: %lu made, %lu reused\n",
            st.execs, st.over_cap, st.refused_build, st.refused_session, st.refused_run,
            st.refused_inside, st.ran, st.judged, st.elems, st.elems_unjudged, st.present_checked,
            st.unjudged_out, st.ran_outside, st.resource, st.skipped, st.sess_made, st.sess_hits);
    fprintf(stderr, "  ran with B x N x S x T >= 2^31: %lu (>= 2^32: %lu)\n", st.big31, st.big32);
    tally_print("refusals", &st.refusals);
    tally_print("refusals of inputs inside the contract", &st.inside_refusals);
    tally_print("not judged (why)", &st.unjudged);
}

/* ---- ORT, loaded once; its buffers from the harness's allocator ---- */
static orta_lib *lib;
static guard_allocator galloc;
static og_bridge bridge;

/* ---- the input, decoded ---- */
typedef struct rd { const uint8_t *p; size_t n; } rd;
static unsigned u8(rd *r) { return r->n ? (r->n--, *r->p++) : 0; }
#define PICK(r, tab) (tab)[u8(r) % (sizeof(tab) / sizeof((tab)[0]))]

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
static const char *const rel_name[R_COUNT] = {
    "none", "seqlens-beyond-capacity", "seqlens-negative", "seqlens-near-int32-max",
    "seqlens-below-query-length", "seqlens-beyond-total", "total-inconsistent",
    "seqlens-misshapen", "total-misshapen", "key-rows-differ", "kv-hidden-not-heads-x-d",
    "q-hidden-not-heads-x-d", "past-dims-mismatch", "past-key-without-value",
    "past-shorter-than-seqlens", "head-sink-misshapen", "bias-misshapen", "cos-cache-short",
    "present-bound-misshapen", "zero-batch-huge-dims", "mask-last-dim-short-or-long",
    "mask-dim-not-broadcastable", "nonpad-out-of-range", "nonpad-with-past",
    "nonpad-misshapen", "v-rows-differ", "qk-output-misshapen"};

static int32_t max_len(const fcase *c) {
    int32_t m = 0;
    for (int64_t b = 0; b < c->B && b < MAXB; b++) m = c->len[b] > m ? c->len[b] : m;
    return m;
}

/* GQA: a prompt (S == total, per-entry lengths up to S), token generation
 * (S == 1 over a past) or a chunk (B == 1, S > 1 over a past); the cache
 * one buffer of capacity M (past = present) or two (past P, present
 * max(total, P)).  Capacities reach 2^24 with short sequences: the
 * products B x N x S x capacity cross 2^31 with few pages touched. */
static void decode_gqa(rd *r, fcase *c) {
    static const int64_t Bs[] = {1, 1, 1, 2, 2, 3, 4, 1};
    static const int64_t Ds[] = {8, 8, 16, 32, 64, 128, 16, 12};
    static const int64_t HKV[] = {1, 1, 2, 2, 4, 1, 3, 8};
    static const int64_t RATIO[] = {1, 2, 4, 1, 2, 8, 3, 1, 2, 16, 1, 64};
    static const int64_t SP[] = {1, 2, 3, 4, 5, 8, 16, 31};
    static const int64_t SC[] = {2, 3, 4, 7, 8, 5};
    static const int32_t PAST[] = {0, 1, 2, 5, 16, 63, 100, 300};
    static const int64_t EXTRA[] = {0, 0, 0, 1, 3, 17, 1 << 16, 1 << 20, 1 << 22, 1 << 24};
    static const int64_t WIN[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, -1, 1, 2, 3, 8, 0, -2,
                                  INT32_MAX, 5};
    static const float SCALE[] = {NAN, NAN, NAN, NAN, NAN, 0.125f, 0.5f, 0, -0.25f, 2.0f, 1e30f,
                                  INFINITY};
    static const float CAP[] = {NAN, NAN, NAN, NAN, NAN, NAN, 0, 5, 30, 1, -1, NAN};
    static const int64_t SMOOTH[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 1, 1, -1, 2};
    static const int64_t ROT[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 0, 1, 1};
    static const int64_t QK[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 1, 2, 0};
    const int mode = (int)(u8(r) % 8);   /* 0..2 prompt, 3..5 generation, 6..7 chunk */
    c->B = mode >= 6 ? 1 : PICK(r, Bs);
    c->D = PICK(r, Ds);
    c->hkv = PICK(r, HKV);
    c->hq = c->hkv * PICK(r, RATIO);
    if (c->hq > 64) c->hq = 64;
    c->a_hq = c->hq, c->a_hkv = c->hkv;
    c->S = mode < 3 ? PICK(r, SP) : mode < 6 ? 1 : PICK(r, SC);
    c->P = 0;
    for (int64_t b = 0; b < c->B; b++) {
        const int32_t past = mode < 3 ? 0 : PICK(r, PAST) + (mode >= 6);
        c->len[b] = mode < 3 ? (b == 0 ? (int32_t)c->S : (int32_t)c->S - (int32_t)(u8(r) % c->S))
                             : past + (int32_t)c->S;
        if (past > c->P) c->P = past;
    }
    c->total = max_len(c);
    c->past = mode < 3 ? u8(r) % 4 == 3 : 1;   /* a prompt may carry an empty past */
    c->shared = c->past && u8(r) % 2;
    const int64_t extra = PICK(r, EXTRA);
    /* shared: capacity >= total; separate: past buffer holds the longest
     * past, present max(total, P) */
    c->M = c->shared ? c->total + extra : c->total > c->P ? c->total : c->P;
    if (!c->shared && c->past) c->P += extra > 64 ? 0 : extra;
    if (!c->past) c->P = 0;
    static const int BIND[] = {BIND_OURS, BIND_OURS, BIND_ORT, BIND_NONE, BIND_OURS,
                               BIND_UNDECLARED};
    c->pres_bind = c->shared ? BIND_OURS : PICK(r, BIND);
    c->packed = u8(r) % 8 == 7;
    c->sink = u8(r) % 4 == 3;
    c->bias = u8(r) % 6 == 5;
    c->a_window = PICK(r, WIN);
    c->a_scale = PICK(r, SCALE);
    c->a_softcap = PICK(r, CAP);
    c->a_smooth = PICK(r, SMOOTH);
    c->a_rotary = PICK(r, ROT);
    c->a_qk = PICK(r, QK);
    c->qk_bind = u8(r) % 3 ? BIND_OURS : BIND_ORT;
    c->cos = c->a_rotary == 1 ? u8(r) % 8 != 7 : u8(r) % 16 == 15;
    /* one input in eight: token generation of 4 entries, 64 query heads
     * over one KV head, short sequences in a shared cache of 2^22..2^24
     * rows: B x N x S x capacity is 2^30..2^32 (those whose touched
     * memory, over_cap, would pass the cap run) */
    const unsigned big = u8(r);
    if (big % 8 == 7) {
        /* f32: ORT's f16 path touches memory in proportion to the
         * capacity (2.4 GB here), its f32 path to the sequences (77 MB) */
        c->f16 = 0;
        c->B = 4, c->hkv = c->a_hkv = 1, c->hq = c->a_hq = 64, c->D = 8, c->S = 1;
        c->past = c->shared = 1, c->pres_bind = BIND_OURS, c->cos = 0, c->a_rotary = NOATTR;
        for (int64_t b = 0; b < c->B; b++) c->len[b] = 1 + (int32_t)((big >> 3) * (b + 1) % 40);
        c->total = max_len(c);
        c->M = c->total + ((int64_t)1 << (22 + (big >> 3) % 3));
    }
    /* an additive bias (B or 1, N or 1, S, total) */
    c->mrank = 4;
    c->mdim[0] = u8(r) % 2 ? c->B : 1;
    c->mdim[1] = u8(r) % 2 ? c->hq : 1;
    c->mdim[2] = c->S;
    c->mdim[3] = c->total;
}

/* Attention (opset 24): K/V of T new keys over an optional past of P,
 * 3-D (B, S, N*D) or 4-D (B, N, S, D); a boolean or additive mask of any
 * broadcastable shape; nonpad_kv_seqlen (external cache, no past). */
static void decode_att(rd *r, fcase *c) {
    static const int64_t Bs[] = {1, 1, 1, 2, 2, 3};
    static const int64_t Ss[] = {1, 1, 2, 3, 4, 8, 16, 5};
    static const int64_t Ts[] = {1, 2, 3, 4, 8, 16, 33, 1};
    static const int64_t Ps[] = {0, 0, 0, 0, 1, 2, 5, 16};
    static const int64_t Ds[] = {8, 16, 32, 64, 5, 3, 128, 24};
    static const int64_t HKV[] = {1, 1, 2, 2, 4, 1, 3, 8};
    static const int64_t RATIO[] = {1, 2, 4, 1, 2, 8, 3, 1};
    static const int64_t CAUSAL[] = {NOATTR, NOATTR, 0, 1, 1, 1, 2, 0};
    static const float SCALE[] = {NAN, NAN, NAN, NAN, 0.125f, 0.5f, 2.0f, -0.5f, 0, 1e30f};
    static const float CAP[] = {NAN, NAN, NAN, NAN, NAN, 0, 5, 30, 1, -1};
    static const int64_t SPREC[] = {NOATTR, NOATTR, NOATTR, 1, 1, 10, 16, 11};
    static const int64_t QK[] = {NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, NOATTR, 0, 1, 2, 3};
    c->B = PICK(r, Bs);
    c->S = PICK(r, Ss);
    c->T = PICK(r, Ts);
    c->P = PICK(r, Ps);
    c->past = c->P > 0;
    c->D = PICK(r, Ds);
    c->Dv = u8(r) % 8 == 7 ? PICK(r, Ds) : c->D;
    c->hkv = PICK(r, HKV);
    c->hq = c->hkv * PICK(r, RATIO);
    c->rank4 = u8(r) % 3 == 2;
    /* 3-D needs the head counts; 4-D may leave them out */
    c->a_hq = c->rank4 && u8(r) % 2 ? NOATTR : c->hq;
    c->a_hkv = c->a_hq == NOATTR ? NOATTR : c->hkv;
    c->a_causal = PICK(r, CAUSAL);
    c->a_scale = PICK(r, SCALE);
    c->a_softcap = PICK(r, CAP);
    c->a_sprec = PICK(r, SPREC);
    c->a_qk = PICK(r, QK);
    c->qk_bind = u8(r) % 3 ? BIND_OURS : BIND_ORT;
    c->mask = (int)(u8(r) % 3);          /* none, bool, additive */
    c->nonpad = !c->past && u8(r) % 3 == 2;
    for (int64_t b = 0; b < c->B; b++)
        c->nonpad_v[b] = c->T - (int64_t)(u8(r) % (unsigned)c->T);
    static const int BIND[] = {BIND_OURS, BIND_OURS, BIND_ORT, BIND_NONE, BIND_UNDECLARED};
    c->pres_bind = PICK(r, BIND);
    /* mask rank 2..4, each leading dim full or 1 (numpy broadcasting) */
    c->mrank = 2 + (int)(u8(r) % 3);
    const unsigned bc = u8(r);
    c->mdim[0] = bc & 1 ? c->B : 1;
    c->mdim[1] = bc & 2 ? c->hq : 1;
    c->mdim[2] = bc & 4 ? c->S : (bc & 8 ? 1 : c->S);
    c->mdim[3] = c->P + c->T;
}

/* Triage: FUZZ_ORT_SET="field=value,..." overrides decoded fields (the
 * ones a bisection of a finding varies); unknown fields are ignored. */
static void overrides(fcase *c) {
    const char *e = getenv("FUZZ_ORT_SET");
    char buf[256], *save = NULL;
    if (!e) return;
    snprintf(buf, sizeof buf, "%s", e);
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(w, '=');
        if (!eq) continue;
        *eq = '\0';
        const double v = atof(eq + 1);
        const struct { const char *n; int64_t *p; } I[] = {
            {"B", &c->B}, {"S", &c->S}, {"D", &c->D}, {"Dv", &c->Dv}, {"hq", &c->hq},
            {"hkv", &c->hkv}, {"P", &c->P}, {"T", &c->T}, {"M", &c->M}, {"a_hq", &c->a_hq},
            {"a_hkv", &c->a_hkv}, {"window", &c->a_window}, {"smooth", &c->a_smooth},
            {"rotary", &c->a_rotary}, {"qk", &c->a_qk}, {"causal", &c->a_causal},
            {"sprec", &c->a_sprec}};
        const struct { const char *n; int *p; } N[] = {
            {"f16", &c->f16}, {"threads", &c->threads}, {"packed", &c->packed}, {"past", &c->past},
            {"sink", &c->sink}, {"bias", &c->bias}, {"cos", &c->cos}, {"mask", &c->mask},
            {"nonpad", &c->nonpad}, {"rank4", &c->rank4}, {"pres", &c->pres_bind},
            {"shared", &c->shared}, {"rel", &c->rel}};
        for (size_t i = 0; i < sizeof I / sizeof I[0]; i++)
            if (!strcmp(w, I[i].n)) *I[i].p = (int64_t)v;
        for (size_t i = 0; i < sizeof N / sizeof N[0]; i++)
            if (!strcmp(w, N[i].n)) *N[i].p = (int)v;
        if (!strcmp(w, "scale")) c->a_scale = (float)v;
        if (!strcmp(w, "softcap")) c->a_softcap = (float)v;
        if (!strcmp(w, "amp")) c->amp_q = c->amp_k = c->amp_v = (float)v;
        if (!strcmp(w, "noscale")) c->a_scale = NAN;
        if (!strcmp(w, "nocap")) c->a_softcap = NAN;
        if (!strcmp(w, "len0")) c->len[0] = (int32_t)v;
        if (!strcmp(w, "total")) c->total = (int32_t)v;
    }
}

/* Whether relation rel changes anything for case c (else the case keeps
 * every relation): a perturbation of an input or output the case does not
 * have, or of an output ORT allocates (its shape is ORT's to choose), is
 * none. */
static int rel_applies(const fcase *c, int rel) {
    const int gqa = c->op == OP_GQA;
    switch (rel) {
    case R_SEQ_OVER_CAP: case R_SEQ_NEG: case R_SEQ_HUGE: case R_SEQ_OVER_TOTAL: case R_TOTAL_OFF:
    case R_SEQ_SHAPE: case R_TOTAL_SHAPE: case R_SINK_LEN: case R_BIAS_SHAPE: case R_COS_ROWS:
        return gqa && (rel != R_SINK_LEN || c->sink) && (rel != R_BIAS_SHAPE || c->bias) &&
               (rel != R_COS_ROWS || c->cos);
    case R_SEQ_BELOW_S: return gqa && c->S > 1;
    case R_KEY_ROWS: return gqa && !c->packed;
    case R_KV_HIDDEN: case R_Q_HIDDEN: return gqa ? !c->packed || rel == R_Q_HIDDEN : !c->rank4;
    case R_PAST_DIMS: case R_PAST_ONE: return c->past;
    case R_PAST_SHORT: return gqa && c->past && !c->shared && c->P > 0;
    case R_PRES_LEN: return c->pres_bind == BIND_OURS && !c->shared && (gqa || c->past);
    case R_QK_LEN: return c->a_qk != NOATTR && (!gqa || c->a_qk != 0) && c->qk_bind == BIND_OURS;
    case R_ZERO_BIG: return 1;
    case R_MASK_LAST: case R_MASK_DIM: return !gqa && c->mask;
    case R_NONPAD_BAD: case R_NONPAD_LEN: return !gqa && c->nonpad;
    case R_NONPAD_PAST: return !gqa && c->past;
    case R_V_ROWS: return !gqa;
    default: return 0;
    }
}

static void decode(rd *r, fcase *c) {
    static const float AMP[] = {1, 1, 4, 30}, AMPV[] = {1, 1, 16, 1000};
    static const int THR[] = {1, 1, 1, 2};
    memset(c, 0, sizeof *c);
    c->op = (int)(u8(r) % 2);
    c->f16 = u8(r) % 3 == 2;
    c->threads = PICK(r, THR);
    c->front = (int)(u8(r) % 2);
    c->a_smooth = c->a_rotary = c->a_window = c->a_causal = c->a_sprec = c->a_qk = NOATTR;
    c->a_scale = c->a_softcap = NAN;
    if (c->op == OP_GQA) decode_gqa(r, c);
    else decode_att(r, c);
    c->amp_q = PICK(r, AMP), c->amp_k = PICK(r, AMP), c->amp_v = PICK(r, AMPV);
    /* half the inputs keep every relation, the rest break one */
    const unsigned rel = u8(r);
    c->relv = u8(r);
    c->rel = rel < 128 ? R_NONE : 1 + (int)(rel % (R_COUNT - 1));
    if (!rel_applies(c, c->rel)) c->rel = R_NONE;
    overrides(c);
    /* rotate and xor: no arithmetic overflow (OSS-Fuzz's UBSan build
     * traps unsigned overflow too) */
    c->seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 8; i++) c->seed = (c->seed << 9 | c->seed >> 55) ^ u8(r);
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

static size_t et_size(int et) {
    return et == ORTA_T_FLOAT || et == ORTA_T_INT32 ? 4 : et == ORTA_T_INT64 ? 8
         : et == ORTA_T_BOOL ? 1 : 2;
}

/* Elements of t, or SIZE_MAX when the product overflows or a dim is negative. */
static size_t elems(const tens *t) {
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dim[i] < 0 || __builtin_mul_overflow(n, (size_t)t->dim[i], &n)) return SIZE_MAX;
    return n;
}

static void set(tens *t, const char *name, int et, int rank, int64_t d0, int64_t d1, int64_t d2,
                int64_t d3) {
    t->name = name, t->et = et, t->rank = rank;
    t->dim[0] = d0, t->dim[1] = d1, t->dim[2] = d2, t->dim[3] = d3;
}

/* The GQA tensors of case c, with relation c->rel applied to them. */
static void layout_gqa(call *K) {
    fcase *c = &K->c;
    tens *t = K->t;
    const int et = c->f16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const unsigned v = c->relv;
    int64_t qh = c->hq * c->D, kh = c->hkv * c->D, krows = c->S;
    if (c->rel == R_Q_HIDDEN) qh += v % 2 ? 8 : -8;
    if (c->rel == R_KV_HIDDEN) kh = v % 3 == 0 ? kh - 8 : v % 3 == 1 ? kh + c->D : kh + 8;
    if (c->rel == R_KEY_ROWS) krows += v % 2 ? 1 : -1;
    if (c->rel == R_ZERO_BIG) {
        /* nothing to touch, products beyond 2^32 */
        c->B = 0, c->S = v % 2 ? 65536 : 1, c->M = (int64_t)1 << (20 + v % 11), c->total =
            (int32_t)(c->M > INT32_MAX ? INT32_MAX : c->M);
        c->shared = c->past = 1, c->pres_bind = BIND_OURS, krows = c->S;
    }
    if (c->packed) set(&t[G_Q], "query", et, 3, c->B, c->S, qh + 2 * kh, 0);
    else {
        set(&t[G_Q], "query", et, 3, c->B, c->S, qh, 0);
        set(&t[G_K], "key", et, 3, c->B, krows, kh, 0);
        set(&t[G_V], "value", et, 3, c->B, krows, kh, 0);
    }
    const int64_t plen = c->shared ? c->M : c->P;
    if (c->past) {
        set(&t[G_PK], "past_key", et, 4, c->B, c->hkv, plen, c->D);
        set(&t[G_PV], "past_value", et, 4, c->B, c->hkv, plen, c->D);
        if (c->rel == R_PAST_DIMS) {
            const int w = (int)(v % 4);
            if (w == 0) t[G_PV].dim[2] = plen + 1;
            else if (w == 1) t[G_PK].dim[1] = c->hkv + 1;
            else if (w == 2) t[G_PK].dim[3] = c->D + 8;
            else t[G_PV].dim[0] = c->B + 1;
        }
        if (c->rel == R_PAST_ONE) t[G_PV].name = NULL;
        if (c->rel == R_PAST_SHORT && !c->shared && plen > 0)
            t[G_PK].dim[2] = t[G_PV].dim[2] = plen - 1 - (int64_t)(v % (unsigned)plen);
    }
    int64_t seqn = c->B;
    int srank = 1;
    if (c->rel == R_SEQ_SHAPE) {
        srank = v % 4 == 3 ? 0 : 1;
        seqn = v % 4 == 0 ? c->B - 1 : v % 4 == 1 ? c->B + 1 : c->B;
        if (v % 4 == 2) srank = 2;
    }
    set(&t[G_SEQ], "seqlens_k", ORTA_T_INT32, srank, seqn, 1, 0, 0);
    int trank = 0;
    int64_t tn = 1;
    if (c->rel == R_TOTAL_SHAPE) trank = 1 + (int)(v % 2), tn = v % 4 < 2 ? 1 : 2;
    set(&t[G_TOT], "total_sequence_length", ORTA_T_INT32, trank, tn, 1, 0, 0);
    if (c->cos) {
        /* rows: every position used (ORT checks them against
         * total_sequence_length), not the capacity: filling 2^24 rows
         * costs seconds */
        int64_t rows = c->total > max_len(c) ? c->total : max_len(c), cols = c->D / 2;
        if (c->rel == R_COS_ROWS) {
            if (v % 2) rows = max_len(c) > 1 ? max_len(c) - 1 : 0;
            else cols = c->D / 2 + 8;
        }
        set(&t[G_COS], "cos_cache", et, 2, rows, cols, 0, 0);
        set(&t[G_SIN], "sin_cache", et, 2, rows, cols, 0, 0);
    }
    if (c->bias) {
        int64_t *m = c->mdim;
        if (c->rel == R_BIAS_SHAPE) {
            const int w = (int)(v % 4);
            if (w == 0) m[3] = m[3] > 1 ? m[3] - 1 : 2;
            else if (w == 1) m[3] += 1;
            else if (w == 2) m[2] += 1;
            else m[0] = c->B + 1;
        }
        set(&t[G_BIAS], "attention_bias", et, 4, m[0], m[1], m[2], m[3]);
    }
    if (c->sink) {
        int64_t n = c->hq;
        if (c->rel == R_SINK_LEN) n += v % 2 ? 1 : -1;
        set(&t[G_SINK], "head_sink", et, 1, n, 0, 0, 0);
    }
    /* outputs */
    tens *o = t + G_NIN;
    set(&o[O_Y], "output", et, 3, c->B, c->S, c->hq * c->D, 0);
    if (c->pres_bind != BIND_UNDECLARED) {
        int64_t plen_out = c->shared ? c->M : (c->total > plen ? c->total : plen);
        if (c->rel == R_PRES_LEN && !c->shared) plen_out += v % 2 ? 1 : -1;
        set(&o[O_PK], "present_key", et, 4, c->B, c->hkv, plen_out, c->D);
        set(&o[O_PV], "present_value", et, 4, c->B, c->hkv, plen_out, c->D);
        o[O_PK].bind = o[O_PV].bind = c->pres_bind;
    }
    K->pk_alias = c->shared && c->past;
    if (c->a_qk != NOATTR && c->a_qk != 0) {
        int64_t tl = c->total;   /* (B, N, S, total_sequence_length), the schema's */
        if (c->rel == R_QK_LEN) tl += v % 2 ? 1 : -1;
        set(&o[O_QK], "output_qk", et, 4, c->B, c->hq, c->S, tl);
        o[O_QK].bind = c->qk_bind;
    }
    /* relations on the values */
    const int32_t cap = (int32_t)(c->shared ? (c->M > INT32_MAX ? INT32_MAX : c->M)
                                            : o[O_PK].name ? o[O_PK].dim[2] : c->total);
    const int64_t b = c->B > 0 ? (int64_t)(v / 4 % (unsigned)c->B) : 0;
    if (c->rel == R_SEQ_OVER_CAP && c->B > 0) {
        const int64_t over = (int64_t)cap + 1 + (int64_t)(v % 3) * 7;
        c->len[b] = over > INT32_MAX ? INT32_MAX : (int32_t)over;
    }
    if (c->rel == R_SEQ_NEG && c->B > 0) c->len[b] = v % 3 == 0 ? 0 : v % 3 == 1 ? -1 : INT32_MIN + 1;
    if (c->rel == R_SEQ_HUGE && c->B > 0) c->len[b] = v % 2 ? INT32_MAX : (1 << 30) + 1;
    if (c->rel == R_SEQ_BELOW_S && c->B > 0) c->len[b] = (int32_t)c->S - 1 - (int32_t)(v % 2);
    if (c->rel == R_SEQ_OVER_TOTAL && c->B > 0) c->len[b] = c->total + 1;
    if (c->rel == R_TOTAL_OFF) {
        static const int32_t d[] = {1, -1, 0, -1000, INT32_MAX};
        const int32_t w = d[v % 5];
        c->total = w == 0 ? 0 : w == INT32_MAX ? INT32_MAX : w == -1000 ? -1 : c->total + w;
    }
}

/* The Attention tensors of case c, with relation c->rel applied. */
static void layout_att(call *K) {
    fcase *c = &K->c;
    tens *t = K->t;
    const int et = c->f16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const unsigned v = c->relv;
    int64_t krows = c->T, vrows = c->T, kh = c->hkv * c->D, qh = c->hq * c->D;
    if (c->rel == R_V_ROWS) vrows += v % 2 ? 1 : -1;
    if (c->rel == R_KV_HIDDEN && !c->rank4) kh += v % 2 ? 1 : -1;
    if (c->rel == R_Q_HIDDEN && !c->rank4) qh += v % 2 ? 1 : c->D;
    if (c->rel == R_ZERO_BIG) c->B = 0, c->S = 65536, krows = vrows = c->T = 65536, c->mask = 0;
    if (c->rank4) {
        set(&t[A_Q], "Q", et, 4, c->B, c->hq, c->S, c->D);
        set(&t[A_K], "K", et, 4, c->B, c->hkv, krows, c->D);
        set(&t[A_V], "V", et, 4, c->B, c->hkv, vrows, c->Dv);
    } else {
        set(&t[A_Q], "Q", et, 3, c->B, c->S, qh, 0);
        set(&t[A_K], "K", et, 3, c->B, krows, kh, 0);
        set(&t[A_V], "V", et, 3, c->B, vrows, c->hkv * c->Dv, 0);
    }
    if (c->past) {
        set(&t[A_PK], "past_key", et, 4, c->B, c->hkv, c->P, c->D);
        set(&t[A_PV], "past_value", et, 4, c->B, c->hkv, c->P, c->Dv);
        if (c->rel == R_PAST_DIMS) {
            if (v % 3 == 0) t[A_PV].dim[2] = c->P + 1;
            else if (v % 3 == 1) t[A_PK].dim[1] = c->hkv + 1;
            else t[A_PK].dim[3] = c->D + 1;
        }
        if (c->rel == R_PAST_ONE) t[A_PV].name = NULL;
    }
    if (c->mask) {
        int64_t *m = c->mdim;
        if (c->rel == R_MASK_LAST) m[3] += v % 2 ? 1 : -1;
        if (c->rel == R_MASK_DIM) m[4 - c->mrank + (int)(v % (unsigned)c->mrank)] += 1 + (int64_t)(v % 2);
        set(&t[A_MASK], "attn_mask", c->mask == 1 ? ORTA_T_BOOL : et, c->mrank,
            m[4 - c->mrank], m[5 - c->mrank], c->mrank > 2 ? m[6 - c->mrank] : 0,
            c->mrank > 3 ? m[3] : 0);
    }
    if (c->rel == R_NONPAD_PAST && c->past) c->nonpad = 1;
    if (c->nonpad) {
        int64_t n = c->B;
        if (c->rel == R_NONPAD_LEN) n += v % 2 ? 1 : -1;
        set(&t[A_NONPAD], "nonpad_kv_seqlen", ORTA_T_INT64, 1, n, 0, 0, 0);
        if (c->rel == R_NONPAD_BAD && c->B > 0) {
            static const int64_t bad[] = {-1, 0, (int64_t)1 << 31, ((int64_t)1 << 32) + 1,
                                          INT64_MAX, INT64_MIN};
            const int64_t w = bad[v % 6];
            c->nonpad_v[v / 8 % (unsigned)c->B] = w == 0 ? c->T + 1 : w;
        }
    }
    tens *o = t + A_NIN;
    if (c->rank4) set(&o[O_Y], "Y", et, 4, c->B, c->hq, c->S, c->Dv);
    else set(&o[O_Y], "Y", et, 3, c->B, c->S, c->hq * c->Dv, 0);
    const int64_t tot = c->P + c->T;
    if (c->pres_bind != BIND_UNDECLARED && (c->past || c->pres_bind != BIND_NONE)) {
        const int64_t pl = tot + (c->rel == R_PRES_LEN ? (v % 2 ? 1 : -1) : 0);
        set(&o[O_PK], "present_key", et, 4, c->B, c->hkv, pl, c->D);
        set(&o[O_PV], "present_value", et, 4, c->B, c->hkv, pl, c->Dv);
        o[O_PK].bind = o[O_PV].bind = c->pres_bind;
    }
    if (c->a_qk != NOATTR) {
        const int64_t tl = tot + (c->rel == R_QK_LEN ? (v % 2 ? 1 : -1) : 0);
        set(&o[O_QK], "qk_matmul_output", et, 4, c->B, c->hq, c->S, tl);
        o[O_QK].bind = c->qk_bind;
    }
}

/* ---- the documented contract ---- */

/* The named conditions of the op's schema (and the ONNX spec) an input
 * breaks, into why; 1 when none.  `judge`: also inside what the reference
 * expresses, and the reason when not (unj). */
static int in_contract(const call *K, char *why, size_t cap, const char **unj) {
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
        COND(0, rel_name[c->rel]);
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

/* ---- guarded buffers and values ---- */
static uint64_t rs;
static float frand(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (float)((double)(rs >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void put_t(int et, void *p, size_t i, float f) {
    if (et == ORTA_T_FLOAT) ((float *)p)[i] = f;
    else ((uint16_t *)p)[i] = og_f32_to_f16(f);
}

static double get_t(int et, const void *p, size_t i) {
    return ref_load(p, i, et == ORTA_T_FLOAT ? AG_F32 : AG_F16);
}

/* Bytes of every buffer we map and of what is written (by us, or by ORT
 * as the contract says), and ORT's own largest buffers (probabilities,
 * transposes, presents it allocates): an input over the caps is not run. */
static int over_cap(call *K) {
    const fcase *c = &K->c;
    size_t virt = 0;
    for (int i = 0; i < SLOTS; i++) {
        const tens *t = &K->t[i];
        if (!t->name || (K->pk_alias && (i == K->nin + O_PK || i == K->nin + O_PV)))
            continue;   /* a present sharing the past's buffer maps nothing more */
        const size_t n = elems(t);
        if (n == SIZE_MAX || n > VIRT_CAP) return 1;
        virt += n * et_size(t->et);
    }
    const double e = c->f16 ? 2 : 4, B = (double)c->B, S = (double)c->S, hq = (double)c->hq;
    const double hkv = (double)c->hkv, D = (double)c->D;
    double live = 0, tl = 0;
    if (c->op == OP_GQA) {
        tl = (double)(c->total > 0 ? c->total : 0);
        const double plen = (double)(c->shared ? c->M : c->P);
        tl = tl > plen ? tl : plen;
        live = (double)max_len(c);
        live = live < tl ? live : tl;
        if (live < 0) live = 0;
    } else {
        tl = live = (double)(c->P + c->T);
    }
    const double probs = B * hq * S * tl * 4, used = B * hq * S * live * 4;
    K->product = B * hq * S * tl;
    const double kvio = B * S * (hq + 2 * hkv) * D * e * 2;
    const double pres = c->shared ? 0 : 2 * B * hkv * tl * D * e;
    /* the logits (GQA's f16, soft-cap and sink paths; Attention always;
     * written row by row up to each entry's length, never cleared whole),
     * the transposes, the presents ORT clears when not shared, the f32 output */
    const double ort_virt = probs + kvio + pres + B * S * hq * D * 4;
    /* GQA touches memory in proportion to the capacity, not to the
     * sequences (measured with 4 x 64 heads over 2^24 rows): the f32
     * flash path 614 MB (1/27 of the logits' bytes), the soft-cap, sink
     * and f16 paths 2.4-2.7 GB (1/6); taken as 1/24 and 1/4 */
    const int qk = c->op == OP_GQA && c->a_qk != NOATTR && c->a_qk != 0;
    const int flash = c->op == OP_GQA && !c->f16 && !(c->a_softcap > 0) && !c->sink &&
                      c->a_smooth != 1 && !qk;
    /* with qk_output every logit, in full (seen: +0.6 GB for 16 heads x 3
     * rows over 2^22 rows, the peak-RSS report below) */
    const double gqa_touch = qk ? probs : flash ? probs / 24 : probs / 4;
    const double ort_touch = (c->op == OP_GQA ? gqa_touch + 2 * used : 2 * used) + kvio + pres +
                             B * S * hq * D * 4;
    /* what we fill: every input but the caches' unused capacity */
    double ours = 0;
    for (int i = 0; i < K->nin; i++) {
        const tens *t = &K->t[i];
        if (!t->name) continue;
        const double n = (double)elems(t) * (double)et_size(t->et);
        ours += (i == G_PK || i == G_PV) && c->op == OP_GQA ? B * hkv * live * D * e : n;
    }
    for (int i = K->nin; i < SLOTS; i++)
        if (K->t[i].name && !(K->pk_alias && (i == K->nin + O_PK || i == K->nin + O_PV)))
            ours += (double)elems(&K->t[i]) * (double)et_size(K->t[i].et);
    return (double)virt + ort_virt > (double)VIRT_CAP ||
           ours + ort_touch > (double)TOUCH_CAP ||
           B * hq * S * (live > 0 ? live : 1) * D > (double)REF_CAP;
}

/* Map every buffer we hand ORT (exactly its size, against a PROT_NONE
 * page at its end or, with front, its start) and fill the inputs. */
static int place(call *K) {
    const fcase *c = &K->c;
    static const char *const outl[O_N] = {"output", "present_key", "present_value", "output_qk"};
    for (int i = 0; i < SLOTS; i++) {
        tens *t = &K->t[i];
        if (!t->name) continue;
        const int out = i >= K->nin;
        if (out && t->bind != BIND_OURS) continue;
        if (out && K->pk_alias && (i - K->nin == O_PK || i - K->nin == O_PV)) {
            const tens *in = &K->t[i - K->nin == O_PK ? G_PK : G_PV];
            t->p = in->p, t->bytes = in->bytes;
            continue;
        }
        t->bytes = elems(t) * et_size(t->et);
        if (guard_init_placed(&t->g, out ? outl[i - K->nin] : t->name, t->bytes, c->front) != 0)
            return -1;
        t->g.oracle = oracle_name(out ? ORACLE_SCRATCH_BOUNDS : ORACLE_INPUT_BOUNDS);
        guard_arm(&t->g);   /* canaries around it */
        t->p = t->g.buf;
        /* outputs: NaN everywhere, so an element ORT never writes is wrong */
        if (out) memset(t->p, 0xFF, t->bytes);
        t->ro = !out && !(K->pk_alias && (i == G_PK || i == G_PV));
    }
    return 0;
}

/* Values: q, k, v (and caches) uniform times their amplitude; lengths as
 * decoded; masks mostly open.  The caches get their live rows only (their
 * unused capacity stays untouched zero pages). */
static void fill(call *K) {
    const fcase *c = &K->c;
    tens *t = K->t;
    for (int i = 0; i < K->nin; i++) {
        tens *x = &t[i];
        if (!x->name || !x->p) continue;
        const size_t n = elems(x);
        if (x->et == ORTA_T_INT32) {
            for (size_t j = 0; j < n; j++)
                ((int32_t *)x->p)[j] = i == G_TOT ? c->total : c->len[j % MAXB] - 1;
        } else if (x->et == ORTA_T_INT64) {
            for (size_t j = 0; j < n; j++) ((int64_t *)x->p)[j] = c->nonpad_v[j % MAXB];
        } else if (x->et == ORTA_T_BOOL) {
            for (size_t j = 0; j < n; j++) {
                frand();
                ((uint8_t *)x->p)[j] = (rs >> 7 & 3) != 0;
            }
        } else if (c->op == OP_GQA && (i == G_PK || i == G_PV)) {
            /* BNSH: rows below each entry's past length */
            for (int64_t b = 0; b < x->dim[0]; b++)
                for (int64_t h = 0; h < x->dim[1]; h++) {
                    int64_t live = b < MAXB ? c->len[b] - c->S : 0;
                    if (live > x->dim[2]) live = x->dim[2];
                    for (int64_t r = 0; r < live; r++)
                        for (int64_t d = 0; d < x->dim[3]; d++)
                            put_t(x->et, x->p,
                                  (size_t)(((b * x->dim[1] + h) * x->dim[2] + r) * x->dim[3] + d),
                                  frand() * (i == G_PK ? c->amp_k : c->amp_v));
                }
        } else {
            const int is_mask = (c->op == OP_GQA && i == G_BIAS) || (c->op == OP_ATT && i == A_MASK);
            const float amp = i == 0 ? c->amp_q
                            : (c->op == OP_GQA ? i == G_V || i == G_PV : i == A_V || i == A_PV)
                                ? c->amp_v : c->amp_k;
            for (size_t j = 0; j < n; j++) {
                float f = frand() * amp;
                if (is_mask) {
                    const unsigned w = (unsigned)(rs >> 20) % 8;
                    f = w < 4 ? 0.0f : w == 4 ? -INFINITY : w == 5 ? -3.0f : w == 6 ? 2.0f * f / amp
                                                                                : -1e4f;
                }
                if (c->op == OP_GQA && i == G_SINK) f = frand() * 3.0f;
                put_t(x->et, x->p, j, f);
            }
        }
    }
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

static OrtStatus *session_options(int threads, OrtSessionOptions **out) {
    const orta_fns *f = &lib->f;
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

static void refusal(const char *stage, OrtStatus *s, unsigned long *counter) {
    char line[160];
    snprintf(line, sizeof line, "%s: %s", stage, lib->f.GetErrorMessage(s));
    tally_add(&st.refusals, line);
    lib->f.ReleaseStatus(s);
    (*counter)++;
}

/* The session for K's node, from the cache or made now; NULL when ORT
 * refused the model (counted). */
static OrtSession *session_for(const call *K) {
    uint8_t *model;
    size_t len;
    if (model_of(K, &model, &len) != 0) abort();
    sess_slot *lru = &cache[0];
    for (int i = 0; i < SESS_CAP; i++) {
        sess_slot *e = &cache[i];
        if (e->s && e->len == len && e->threads == K->c.threads && !memcmp(e->model, model, len)) {
            free(model);
            e->used = ++clock_;
            st.sess_hits++;
            return e->s;
        }
        if (!e->s || e->used < lru->used) lru = e;
        if (!e->s) break;
    }
    if (lru->s) lib->f.ReleaseSession(lru->s), free(lru->model);
    memset(lru, 0, sizeof *lru);
    OrtSessionOptions *o = NULL;
    OrtStatus *s = session_options(K->c.threads, &o);
    OrtSession *out = NULL;
    if (!s) {
        pthread_mutex_lock(&lib->env_mu);
        s = lib->f.RegisterAllocator(lib->env, &bridge.ort);
        if (!s) {
            s = lib->f.CreateSessionFromArray(lib->env, model, len, o, &out);
            OrtStatus *u = lib->f.UnregisterAllocator(lib->env, lib->cpu);
            if (u) lib->f.ReleaseStatus(u);
        }
        pthread_mutex_unlock(&lib->env_mu);
    }
    if (o) lib->f.ReleaseSessionOptions(o);
    if (s) {
        const char *m = lib->f.GetErrorMessage(s);
        /* a schema / type / shape-inference failure is the graph build's */
        const int build = strstr(m, "Load model") || strstr(m, "schema") ||
                          strstr(m, "inference") || strstr(m, "Type Error");
        refusal(build ? "graph" : "session", s, build ? &st.refused_build : &st.refused_session);
        free(model);
        return NULL;
    }
    st.sess_made++;
    lru->model = model, lru->len = len, lru->threads = K->c.threads, lru->s = out;
    lru->used = ++clock_;
    return out;
}

/* ---- describing an input (before a finding fires) ---- */
static void describe(const call *K) {
    const fcase *c = &K->c;
    char why[256];
    const char *unj;
    const int inside = in_contract(K, why, sizeof why, &unj);
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
            (long long)c->a_sprec, (double)c->a_scale, (double)c->a_softcap, rel_name[c->rel],
            c->relv);
    for (int i = 0; i < SLOTS; i++) {
        const tens *t = &K->t[i];
        if (!t->name) continue;
        fprintf(stderr, "    %s%s [", t->name, i >= K->nin ? " (out)" : "");
        for (int d = 0; d < t->rank; d++) fprintf(stderr, "%s%lld", d ? ", " : "", (long long)t->dim[d]);
        fprintf(stderr, "]\n");
    }
}

/* ---- the judge ---- */

/* Data of output slot o (ours, or the value ORT allocated, whose shape
 * must be the documented one: else a finding). */
static const void *out_data(const call *K, int o) {
    const tens *t = &K->t[K->nin + o];
    if (t->bind == BIND_OURS) return t->p;
    if (t->bind != BIND_ORT || !t->v) return NULL;
    void *p = NULL;
    OrtTensorTypeAndShapeInfo *ti = NULL;
    size_t rank = 0;
    int64_t dims[4] = {0, 0, 0, 0};
    if (lib->f.GetTensorMutableData(t->v, &p) || lib->f.GetTensorTypeAndShape(t->v, &ti) ||
        lib->f.GetDimensionsCount(ti, &rank) || rank != (size_t)t->rank ||
        lib->f.GetDimensions(ti, dims, rank) || memcmp(dims, t->dim, rank * sizeof dims[0])) {
        if (ti) lib->f.ReleaseTensorTypeAndShapeInfo(ti);
        finding f;
        oracle_found(&f, ORACLE_DIFFERENTIAL, "ORT's %s has rank %zu, dims [%lld %lld %lld %lld]; "
                     "the schema says rank %d [%lld %lld %lld %lld]", t->name, rank,
                     (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3],
                     t->rank, (long long)t->dim[0], (long long)t->dim[1], (long long)t->dim[2],
                     (long long)t->dim[3]);
        describe(K);
        oracle_fire(&f);
    }
    lib->f.ReleaseTensorTypeAndShapeInfo(ti);
    return p;
}

/* What the reference is fed: one request per batch entry (block b of
 * `blk` rows holds entry b's keys), q rows of the judged queries, a
 * dense additive mask [token][head][key] when the op has one, and which
 * output rows (b, s) are judged (tok_of[b][s] = token or -1). */
typedef struct judged {
    ref_input in;
    float *q, *k, *v, *mask, *sinks;
    int32_t *qsl, *seq, *bt, *tok_of;
    uint8_t *causal;
    int32_t blk, ntok;
} judged;

static void judged_free(judged *J) {
    free(J->q), free(J->k), free(J->v), free(J->mask), free(J->sinks);
    free(J->qsl), free(J->seq), free(J->bt), free(J->tok_of), free(J->causal);
}

static int judged_alloc(judged *J, int64_t B, int64_t S, int64_t hq, int64_t hkv, int64_t D,
                        int masked) {
    const size_t nt = (size_t)(B * S), kv = (size_t)(B * J->blk * hkv * D) + 1;
    J->q = malloc(nt * (size_t)(hq * D) * sizeof(float) + 4);
    J->k = malloc(kv * sizeof(float));
    J->v = malloc(kv * sizeof(float));
    J->mask = masked ? malloc(nt * (size_t)(hq * J->blk) * sizeof(float) + 4) : NULL;
    J->qsl = malloc((size_t)(B + 1) * sizeof(int32_t));
    J->seq = malloc((size_t)B * sizeof(int32_t));
    J->bt = malloc((size_t)B * sizeof(int32_t));
    J->tok_of = malloc(nt * sizeof(int32_t) + 4);
    J->causal = calloc((size_t)B, 1);
    return J->q && J->k && J->v && (!masked || J->mask) && J->qsl && J->seq && J->bt &&
           J->tok_of && J->causal ? 0 : -1;
}

static void ref_common(judged *J, const fcase *c, int64_t D) {
    ref_input *in = &J->in;
    in->num_reqs = (int32_t)c->B;
    in->query_start_loc = J->qsl;
    in->seq_lens = J->seq;
    in->causal = J->causal;
    in->block_table = J->bt;
    in->block_table_stride = 1;
    in->num_blocks = (int32_t)c->B;
    in->num_heads = (int32_t)c->hq;
    in->num_kv_heads = (int32_t)c->hkv;
    in->head_dim = (int32_t)D;
    in->block_size = J->blk;
    in->window_left = in->window_right = -1;
    in->softcap = !isnan(c->a_softcap) && c->a_softcap > 0 ? c->a_softcap : 0;
    in->scale = !isnan(c->a_scale) && c->a_scale != 0 ? fabs((double)c->a_scale) : 0;
    in->q = J->q, in->q_dtype = AG_F32;
    in->k_rows = J->k, in->v_rows = J->v, in->kv_dtype = AG_F32;
    in->k_scale = in->v_scale = 1.0;
    in->mask = J->mask;
    in->mask_tstride = c->hq * J->blk;
    in->mask_hstride = J->blk;
}

/* GQA: entry b has total length len[b]; its past is len[b] - S rows (none
 * in a first prompt, where rows s >= len[b] are right padding, not
 * judged); keys below the past come from past_key (BNSH), the rest from
 * key (BSNH) or the packed query; query s sits at position past + s. */
static int build_gqa(const call *K, judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const int et = t[G_Q].et;
    const int64_t B = c->B, S = c->S, hq = c->hq, hkv = c->hkv, D = c->D;
    const int first = S == c->total;
    J->blk = max_len(c);
    if (judged_alloc(J, B, S, hq, hkv, D, c->bias) != 0) return -1;
    const double sign = !isnan(c->a_scale) && c->a_scale < 0 ? -1.0 : 1.0;
    const int64_t qrow = t[G_Q].dim[2], qoff_k = hq * D, qoff_v = (hq + hkv) * D;
    int32_t tok = 0;
    for (int64_t b = 0; b < B; b++) {
        const int32_t tot = c->len[b], past = first ? 0 : tot - (int32_t)S;
        const int32_t ql = first ? tot : (int32_t)S;
        J->qsl[b] = tok, J->seq[b] = tot, J->bt[b] = (int32_t)b, J->causal[b] = 1;
        for (int64_t s = 0; s < S; s++) {
            J->tok_of[b * S + s] = s < ql ? tok + (int32_t)s : -1;
            if (s >= ql) continue;
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((tok + s) * hq + h) * D + d] =
                        (float)(sign * get_t(et, t[G_Q].p, (size_t)((b * S + s) * qrow + h * D + d)));
        }
        for (int32_t j = 0; j < tot; j++)
            for (int64_t h = 0; h < hkv; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((b * J->blk + j) * hkv + h) * D + d);
                    if (j < past) {
                        const size_t pi = (size_t)(((b * hkv + h) * t[G_PK].dim[2] + j) * D + d);
                        J->k[at] = (float)get_t(et, t[G_PK].p, pi);
                        J->v[at] = (float)get_t(et, t[G_PV].p, pi);
                    } else if (c->packed) {
                        const size_t row = (size_t)((b * S + (j - past)) * qrow);
                        J->k[at] = (float)get_t(et, t[G_Q].p, row + (size_t)(qoff_k + h * D + d));
                        J->v[at] = (float)get_t(et, t[G_Q].p, row + (size_t)(qoff_v + h * D + d));
                    } else {
                        const size_t ki = (size_t)((b * S + (j - past)) * hkv * D + h * D + d);
                        J->k[at] = (float)get_t(et, t[G_K].p, ki);
                        J->v[at] = (float)get_t(et, t[G_V].p, ki);
                    }
                }
        /* attention_bias (B or 1, N or 1, S, total): row s of the entry */
        for (int64_t s = 0; c->bias && s < ql; s++)
            for (int64_t h = 0; h < hq; h++)
                for (int32_t j = 0; j < J->blk; j++) {
                    const tens *m = &t[G_BIAS];
                    const int64_t mb = m->dim[0] == 1 ? 0 : b, mh = m->dim[1] == 1 ? 0 : h;
                    J->mask[((tok + s) * hq + h) * J->blk + j] =
                        j < tot ? (float)get_t(et, m->p, (size_t)(((mb * m->dim[1] + mh) * S + s) *
                                                                      m->dim[3] + j))
                                : -INFINITY;
                }
        tok += ql;
    }
    J->qsl[B] = J->ntok = tok;
    ref_common(J, c, D);
    if (c->a_window != NOATTR && c->a_window >= 1) J->in.window_left = (int32_t)(c->a_window - 1);
    if (c->sink || c->a_smooth == 1) {
        J->sinks = calloc((size_t)hq, sizeof(float));
        if (!J->sinks) return -1;
        for (int64_t h = 0; c->sink && h < hq; h++) J->sinks[h] = (float)get_t(et, t[G_SINK].p, (size_t)h);
        J->in.sinks = J->sinks;
    }
    return 0;
}

/* Attention: entry b is one non-causal request over all P + T keys (past
 * first), the spec's bias made dense: the mask (bool: false hides; float:
 * added) broadcast from the right, is_causal (offset P with a past,
 * nonpad - S with nonpad_kv_seqlen, else 0) and nonpad_kv_seqlen hiding
 * keys at and beyond it. */
static int build_att(const call *K, judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const int et = t[A_Q].et;
    const int64_t B = c->B, S = c->S, hq = c->hq, hkv = c->hkv, D = c->D, P = c->P;
    const int64_t tot = c->P + c->T;
    J->blk = (int32_t)tot;
    if (judged_alloc(J, B, S, hq, hkv, D, 1) != 0) return -1;
    const int r4 = c->rank4;
    for (int64_t b = 0; b < B; b++) {
        J->qsl[b] = (int32_t)(b * S), J->seq[b] = (int32_t)tot, J->bt[b] = (int32_t)b;
        for (int64_t s = 0; s < S; s++) {
            J->tok_of[b * S + s] = (int32_t)(b * S + s);
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((b * S + s) * hq + h) * D + d] = (float)get_t(
                        et, t[A_Q].p, (size_t)(r4 ? ((b * hq + h) * S + s) * D + d
                                                  : (b * S + s) * hq * D + h * D + d));
        }
        for (int64_t j = 0; j < tot; j++)
            for (int64_t h = 0; h < hkv; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((b * tot + j) * hkv + h) * D + d);
                    size_t ki;
                    const void *ks, *vs;
                    if (j < P) {
                        ki = (size_t)(((b * hkv + h) * P + j) * D + d);
                        ks = t[A_PK].p, vs = t[A_PV].p;
                    } else {
                        const int64_t jj = j - P;
                        ki = (size_t)(r4 ? ((b * hkv + h) * c->T + jj) * D + d
                                         : (b * c->T + jj) * hkv * D + h * D + d);
                        ks = t[A_K].p, vs = t[A_V].p;
                    }
                    J->k[at] = (float)get_t(et, ks, ki);
                    J->v[at] = (float)get_t(et, vs, ki);
                }
        const int causal = c->a_causal == 1;
        const int64_t off = c->past ? P : c->nonpad ? c->nonpad_v[b] - S : 0;
        const tens *m = &t[A_MASK];
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t j = 0; j < tot; j++) {
                    double w = 0;
                    if (c->mask) {
                        /* right-aligned broadcast onto (B, hq, S, tot) */
                        const int64_t full[4] = {b, h, s, j};
                        size_t idx = 0;
                        for (int d = 0; d < m->rank; d++) {
                            const int64_t ax = full[4 - m->rank + d];
                            idx = idx * (size_t)m->dim[d] + (size_t)(m->dim[d] == 1 ? 0 : ax);
                        }
                        if (c->mask == 1) w = ((const uint8_t *)m->p)[idx] ? 0 : -INFINITY;
                        else w = get_t(et, m->p, idx);
                    }
                    if (causal && j > s + off) w = -INFINITY;
                    if (c->nonpad && j >= c->nonpad_v[b]) w = -INFINITY;
                    J->mask[((b * S + s) * hq + h) * tot + j] = (float)w;
                }
    }
    J->qsl[B] = J->ntok = (int32_t)(B * S);
    ref_common(J, c, D);
    return 0;
}

/* Rows the op leaves without any visible key (every key masked): the
 * spec's softmax is 0/0 there, the reference's row 0; not judged. */
static int row_open(const judged *J, int32_t tok, int64_t h, const fcase *c) {
    if (!J->mask) return 0;
    const float *m = J->mask + ((int64_t)tok * c->hq + h) * J->blk;
    int32_t r = 0;
    while (r < c->B - 1 && J->qsl[r + 1] <= tok) r++;
    const int64_t seq = J->seq[r], p = J->causal[r] ? seq - (J->qsl[r + 1] - J->qsl[r]) +
                                                          (tok - J->qsl[r]) : 0;
    const int64_t wl = J->in.window_left;
    for (int64_t j = J->causal[r] && wl >= 0 && p - wl > 0 ? p - wl : 0;
         j < (J->causal[r] ? p + 1 : seq); j++)
        if (m[j] != -INFINITY) return 0;
    return 1;
}

static void fire_diff(const call *K, const char *fmt_what, size_t bad, size_t n, size_t w,
                      double got, double want, double lo, double hi) {
    finding f;
    oracle_found(&f, ORACLE_DIFFERENTIAL, "%s: %zu of %zu elements outside the reference's "
                 "range; worst at element %zu: got %.9g want %.9g (ORT's rounding allows [%.9g, "
                 "%.9g])", fmt_what, bad, n, w, got, want, lo, hi);
    describe(K);
    oracle_fire(&f);
}

/* The op's output against the reference, element by element, in the
 * reference's [token][head][dim] order. */
static void judge_output(const call *K, judged *J) {
    const fcase *c = &K->c;
    const int64_t hq = c->hq, D = c->D, S = c->S;
    const ag_dtype dt = c->f16 ? AG_F16 : AG_F32;
    const size_t es = c->f16 ? 2 : 4, n = (size_t)J->ntok * (size_t)(hq * D);
    const uint8_t *y = out_data(K, O_Y);
    if (!y || n == 0) return;
    double *val = malloc(n * sizeof(double) + 8), *lo = malloc(n * sizeof(double) + 8),
           *hi = malloc(n * sizeof(double) + 8);
    uint8_t *got = malloc(n * es + 8);
    if (!val || !lo || !hi || !got) abort();
    /* GQA: f32 logits and weights whatever T (MAPPING.md, Precision).
     * Attention with T = f16: the spec's Q.K MatMul is in T, and 1.30
     * rounds the logits to f16 on some paths (seen: D 24, 16 heads over 8,
     * |logit| ~ 1e3), which q_dot = f16 bounds (its relative term covers a
     * relative rounding of each logit); weights rounded to f16 before P.V. */
    const int att16 = c->op == OP_ATT && c->f16;
    const ag_precision prec = {att16 ? AG_F16 : AG_F32, att16 ? AG_F16 : AG_F32, AG_F32, 0};
    const ref_model md = cmp_error_model(prec, dt, dt, (int32_t)D);
    if (ref_attention_range(&J->in, md, val, lo, hi) != 0) {
        finding f;
        oracle_found(&f, ORACLE_BAD_INPUT, "the reference refused an input the contract fuzzer "
                     "calls judgeable (harness bug)");
        describe(K);
        oracle_fire(&f);
    }
    const int r4 = c->op == OP_ATT && c->rank4;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t s = 0; s < S; s++) {
            const int32_t tok = J->tok_of[b * S + s];
            if (tok < 0) continue;
            for (int64_t h = 0; h < hq; h++) {
                const size_t src = (size_t)(r4 ? ((b * hq + h) * S + s) * D : (b * S + s) * hq * D + h * D);
                const size_t dst = (size_t)((tok * hq + h) * D);
                memcpy(got + dst * es, y + src * es, (size_t)D * es);
                if (row_open(J, tok, h, c)) {
                    for (int64_t d = 0; d < D; d++) lo[dst + d] = -INFINITY, hi[dst + d] = INFINITY;
                    st.elems_unjudged += (unsigned long)D;
                }
            }
        }
    cmp_result res;
    if (!cmp_compare(val, lo, hi, got, dt, n, cmp_tolerance(dt), &res))
        fire_diff(K, c->op == OP_GQA ? "GroupQueryAttention output" : "Attention output Y",
                  res.bad, n, res.worst, cmp_elem_get(got, res.worst, dt), val[res.worst],
                  lo[res.worst], hi[res.worst]);
    st.elems += n;
    free(val), free(lo), free(hi), free(got);
}

/* present_key / present_value: the schema's copies.  Row j of entry b,
 * head h is the past's row j below the past length and the new key's row
 * j - past from there up to the entry's total length (rows beyond it are
 * unspecified); compared bit for bit. */
static void judge_present(const call *K, const judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const size_t es = c->f16 ? 2 : 4;
    for (int w = 0; w < 2; w++) {
        const tens *pt = &t[K->nin + (w ? O_PV : O_PK)];
        if (!pt->name || pt->bind == BIND_NONE || pt->bind == BIND_UNDECLARED) continue;
        const uint8_t *pr = out_data(K, w ? O_PV : O_PK);
        const int64_t L = pt->dim[2], Dd = pt->dim[3];
        for (int64_t b = 0; b < c->B; b++) {
            const int first = c->op == OP_GQA && c->S == c->total;
            const int64_t tot = c->op == OP_GQA ? c->len[b] : c->P + c->T;
            const int64_t past = c->op == OP_GQA ? (first ? 0 : tot - c->S) : c->P;
            for (int64_t h = 0; h < c->hkv; h++)
                for (int64_t j = 0; j < tot && j < L; j++) {
                    const uint8_t *want;
                    if (j < past) {
                        const tens *src = &t[c->op == OP_GQA ? (w ? G_PV : G_PK) : (w ? A_PV : A_PK)];
                        want = (const uint8_t *)src->p +
                               (size_t)(((b * c->hkv + h) * src->dim[2] + j) * Dd) * es;
                    } else if (c->op == OP_GQA && c->packed) {
                        want = (const uint8_t *)t[G_Q].p +
                               (size_t)((b * c->S + j - past) * t[G_Q].dim[2] +
                                        (c->hq + (w ? c->hkv : 0)) * c->D + h * c->D) * es;
                    } else if (c->op == OP_GQA) {
                        want = (const uint8_t *)t[w ? G_V : G_K].p +
                               (size_t)((b * c->S + j - past) * c->hkv * c->D + h * c->D) * es;
                    } else {
                        const int64_t jj = j - past, T = c->T;
                        want = (const uint8_t *)t[w ? A_V : A_K].p +
                               (size_t)(c->rank4 ? ((b * c->hkv + h) * T + jj) * Dd
                                                 : (b * T + jj) * c->hkv * Dd + h * Dd) * es;
                    }
                    const uint8_t *got = pr + (size_t)(((b * c->hkv + h) * L + j) * Dd) * es;
                    if (memcmp(got, want, (size_t)Dd * es)) {
                        finding f;
                        oracle_found(&f, ORACLE_DIFFERENTIAL, "%s: entry %lld, kv head %lld, row "
                                     "%lld is not the %s row it must copy (past length %lld)",
                                     pt->name, (long long)b, (long long)h, (long long)j,
                                     j < past ? "past" : "new", (long long)past);
                        describe(K);
                        oracle_fire(&f);
                    }
                }
        }
        st.present_checked++;
    }
    (void)J;
}

static void judge(const call *K) {
    judged J;
    memset(&J, 0, sizeof J);
    const int e = K->c.op == OP_GQA ? build_gqa(K, &J) : build_att(K, &J);
    if (e != 0) abort();
    judge_output(K, &J);
    judge_present(K, &J);
    if (K->t[K->nin + O_QK].name) tally_add(&st.unjudged, "the QK output (the reference computes "
                                            "outputs, not logits or weights)");
    st.judged++;
    judged_free(&J);
}

/* ---- triaged classes ---- */

/* The class of an already reported defect this input belongs to, or NULL
 * (reports/findings/ort-NNN.md): such inputs are not run, so a campaign
 * finds what is new; FUZZ_ORT_SKIP=<class>,... replaces the list (empty:
 * run all). */
static const char *triaged_class(const call *K) {
    const fcase *c = &K->c;
    if (c->op == OP_GQA && c->B == 0) return "gqa-zero-batch";                 /* ort-002 */
    if (c->op == OP_GQA && c->pres_bind == BIND_UNDECLARED && c->past)
        return "gqa-present-omitted";                                          /* ort-003 */
    if (c->op == OP_ATT && c->a_causal == 1 && c->past && c->S == 1 && c->T > 1)
        return "att-causal-past-one-row";                                      /* ort-004 */
    if (c->op == OP_GQA && c->bias && max_len(c) > c->total)
        return "gqa-bias-seqlens-beyond-total";                                /* ort-005 */
    return NULL;
}

static const char *const k_triaged = "gqa-zero-batch,gqa-present-omitted,att-causal-past-one-row,"
                                     "gqa-bias-seqlens-beyond-total";

static int skipped(const call *K) {
    const char *cls = triaged_class(K), *skip = getenv("FUZZ_ORT_SKIP");
    if (!skip) skip = k_triaged;
    if (!cls || !strstr(skip, cls)) return 0;
    char line[64];
    snprintf(line, sizeof line, "skipped, triaged: %s", cls);
    tally_add(&st.unjudged, line);
    return 1;
}

/* ---- one input ---- */
static void teardown(call *K) {
    for (int i = 0; i < SLOTS; i++) {
        if (K->t[i].v) lib->f.ReleaseValue(K->t[i].v);
        guard_free(&K->t[i].g);
    }
}

static OrtStatus *make_values(call *K, const char **in_names, const OrtValue **in, size_t *nin,
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
        s = lib->f.CreateTensorWithDataAsOrtValue(lib->cpu, t->p ? t->p : &dummy, t->bytes,
                                                  t->dim, (size_t)t->rank, t->et, &t->v);
        if (s) break;
        if (o) out_names[*nout] = t->name, out[(*nout)++] = t->v;
        else in_names[*nin] = t->name, in[(*nin)++] = t->v;
    }
    return s;
}

/* After Run: every canary of ours and of ORT's blocks intact. */
static void check_canaries(call *K) {
    char msg[400];
    finding f;
    for (int i = 0; i < SLOTS; i++) {
        guard_violation gv;
        if (!K->t[i].g.map || !guard_check(&K->t[i].g, &gv)) continue;
        char d[300];
        guard_format_violation(&gv, d, sizeof d);
        oracle_found(&f, i >= K->nin ? ORACLE_SCRATCH_BOUNDS : ORACLE_INPUT_BOUNDS,
                     "ORT wrote outside a buffer it was handed: %s", d);
        describe(K);
        oracle_fire(&f);
    }
    if (guard_alloc_check(&galloc, msg, sizeof msg)) {
        oracle_found(&f, ORACLE_SCRATCH_BOUNDS, "ORT wrote outside a buffer it allocated: %s", msg);
        describe(K);
        oracle_fire(&f);
    }
}

/* ORT keeps a few small allocations of its own until exit (its logging
 * and environment bookkeeping): the fuzzer counts ORT's verdicts, not
 * those leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libonnxruntime\n"; }

/* Sessions come and go (64 kept), and ORT mallocs a few MB for each:
 * ASan's allocator would keep what they free (its quarantine, then its
 * free lists) and the RSS creeps to the limit over a 10-minute run.  Hand
 * freed memory back to the system; ASAN_OPTIONS still overrides. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allocator_release_to_os_interval_ms=500:quarantine_size_mb=64";
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ag_msg msg;
    if (orta_load(NULL, &lib, &msg) != AG_OK) {
        fprintf(stderr, "fuzz_ort_contract: %s\n", msg.text);
        exit(1);
    }
    if (guard_alloc_init(&galloc) != 0) exit(1);
    og_bridge_init(&bridge, &galloc.abi, lib->cpu);
    guard_install_fault_handler();
    atexit(print_stats);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size};
    static call K;
    memset(&K, 0, sizeof K);
    decode(&r, &K.c);
    K.nin = K.c.op == OP_GQA ? G_NIN : A_NIN;
    rs = K.c.seed | 1;
    st.execs++;
    if (K.c.op == OP_GQA) layout_gqa(&K);
    else layout_att(&K);
    if (getenv("FUZZ_ORT_VERBOSE")) describe(&K);
    if (skipped(&K)) {
        st.skipped++;
        return 0;
    }
    if (over_cap(&K)) {
        st.over_cap++;
        return 0;
    }
    char why[256];
    const char *unj;
    const int inside = in_contract(&K, why, sizeof why, &unj);
    OrtSession *sess = session_for(&K);
    if (!sess) return 0;
    if (place(&K) != 0) {
        st.resource++;
        teardown(&K);
        return 0;
    }
    fill(&K);
    const char *in_names[G_NIN], *out_names[O_N];
    const OrtValue *in[G_NIN];
    OrtValue *out[O_N];
    size_t nin, nout;
    OrtStatus *s = make_values(&K, in_names, in, &nin, out_names, out, &nout);
    if (s) {
        /* our own tensor descriptions: a harness bug */
        fprintf(stderr, "fuzz_ort_contract: CreateTensorWithDataAsOrtValue: %s\n",
                lib->f.GetErrorMessage(s));
        describe(&K);
        abort();
    }
    for (int i = 0; i < K.nin; i++)
        if (K.t[i].ro && K.t[i].g.map) guard_set_readonly(&K.t[i].g, 1);
    og_bridge_take(&bridge);
    guard_alloc_mark(&galloc);
    s = lib->f.Run(sess, NULL, in_names, in, nin, out_names, nout, out);
    for (int i = 0; i < K.nin; i++)
        if (K.t[i].ro && K.t[i].g.map) guard_set_readonly(&K.t[i].g, 0);
    if (og_bridge_take(&bridge)) st.resource++;
    check_canaries(&K);
    if (s) {
        if (getenv("FUZZ_ORT_VERBOSE")) fprintf(stderr, "  run: %s\n", lib->f.GetErrorMessage(s));
        if (inside) {
            char line[160];
            snprintf(line, sizeof line, "%s", lib->f.GetErrorMessage(s));
            tally_add(&st.inside_refusals, line);
            st.refused_inside++;
        }
        refusal("run", s, &st.refused_run);
    } else {
        st.ran++;
        st.big31 += K.product >= 0x1p31, st.big32 += K.product >= 0x1p32;
        /* ORT's own output values: take them over */
        for (size_t i = 0, j = 0; i < (size_t)O_N; i++) {
            tens *t = &K.t[K.nin + (int)i];
            if (!t->name || t->bind == BIND_NONE || t->bind == BIND_UNDECLARED) continue;
            if (t->bind == BIND_ORT) t->v = out[j];
            j++;
        }
        if (!inside) st.ran_outside++;
        else if (unj) {
            st.unjudged_out++;
            tally_add(&st.unjudged, unj);
        } else judge(&K);
    }
    /* an input whose memory the estimate missed: say which (once per
     * new peak over 512 MB more), so over_cap can learn its class */
    static long peak_kb;
    struct rusage ru;
    if (!getrusage(RUSAGE_SELF, &ru) && ru.ru_maxrss > peak_kb + (512L << 10)) {
        if (peak_kb) {
            fprintf(stderr, "fuzz_ort_contract: this input raised the peak RSS to %ld MB:\n",
                    ru.ru_maxrss >> 10);
            describe(&K);
        }
        peak_kb = ru.ru_maxrss;
    }
    teardown(&K);
    return 0;
}
