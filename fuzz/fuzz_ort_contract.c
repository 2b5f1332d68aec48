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
 *
 * This file is the target's entry points and the order of one input's
 * steps; the rooms are under fuzz/ort/ (the case: ort_case.h; running it
 * on ORT: ort_run.h; the verdicts: ort_judge.h) and what it shares with
 * fuzz_ggml_contract under fuzz/contract/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "contract/fz_judge.h"
#include "contract/fz_tally.h"
#include "ort/ort_case.h"
#include "ort/ort_judge.h"
#include "ort/ort_run.h"
#include "ort/ort_stats.h"

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
    if (c->op == OP_GQA && c->bias && ortc_max_len(c) > c->total)
        return "gqa-bias-seqlens-beyond-total";                                /* ort-005 */
    return NULL;
}

static const char *const k_triaged = "gqa-zero-batch,gqa-present-omitted,att-causal-past-one-row,"
                                     "gqa-bias-seqlens-beyond-total";

static int skipped(const call *K) {
    const char *cls = triaged_class(K);
    if (!cls || !fz_triaged("FUZZ_ORT_SKIP", k_triaged, cls)) return 0;
    char line[64];
    snprintf(line, sizeof line, "skipped, triaged: %s", cls);
    fz_tally_folded(&ortc_st.unjudged, line);
    return 1;
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
    ortc_load();
    guard_install_fault_handler();
    atexit(ortc_print_stats);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_rd r = {data, size};
    static call K;
    memset(&K, 0, sizeof K);
    ortc_decode(&r, &K.c);
    K.nin = K.c.op == OP_GQA ? G_NIN : A_NIN;
    ortc_st.execs++;
    ortc_layout(&K);
    if (getenv("FUZZ_ORT_VERBOSE")) ortc_describe(&K);
    if (skipped(&K)) {
        ortc_st.skipped++;
        return 0;
    }
    if (ortc_over_cap(&K)) {
        ortc_st.over_cap++;
        return 0;
    }
    char why[256];
    const char *unj;
    const int inside = ortc_in_contract(&K, why, sizeof why, &unj);
    OrtSession *sess = ortc_session_for(&K);
    if (!sess) return 0;
    if (ortc_place(&K) != 0) {
        ortc_st.resource++;
        ortc_teardown(&K);
        return 0;
    }
    ortc_fill(&K);
    const char *in_names[G_NIN], *out_names[O_N];
    const OrtValue *in[G_NIN];
    OrtValue *out[O_N];
    size_t nin, nout;
    OrtStatus *s = ortc_values(&K, in_names, in, &nin, out_names, out, &nout);
    if (s) {
        /* our own tensor descriptions: a harness bug */
        fprintf(stderr, "fuzz_ort_contract: CreateTensorWithDataAsOrtValue: %s\n",
                ortc_lib->f.GetErrorMessage(s));
        ortc_describe(&K);
        abort();
    }
    for (int i = 0; i < K.nin; i++)
        if (K.t[i].ro && K.t[i].g.map) guard_set_readonly(&K.t[i].g, 1);
    og_bridge_take(&ortc_bridge);
    guard_alloc_mark(&ortc_galloc);
    s = ortc_lib->f.Run(sess, NULL, in_names, in, nin, out_names, nout, out);
    for (int i = 0; i < K.nin; i++)
        if (K.t[i].ro && K.t[i].g.map) guard_set_readonly(&K.t[i].g, 0);
    if (og_bridge_take(&ortc_bridge)) ortc_st.resource++;
    ortc_check_canaries(&K);
    if (s) {
        if (getenv("FUZZ_ORT_VERBOSE"))
            fprintf(stderr, "  run: %s\n", ortc_lib->f.GetErrorMessage(s));
        if (inside) {
            char line[160];
            snprintf(line, sizeof line, "%s", ortc_lib->f.GetErrorMessage(s));
            fz_tally_folded(&ortc_st.inside_refusals, line);
            ortc_st.refused_inside++;
        }
        ortc_refusal("run", s, &ortc_st.refused_run);
    } else {
        ortc_st.ran++;
        ortc_st.big31 += K.product >= 0x1p31, ortc_st.big32 += K.product >= 0x1p32;
        /* ORT's own output values: take them over */
        for (size_t i = 0, j = 0; i < (size_t)O_N; i++) {
            tens *t = &K.t[K.nin + (int)i];
            if (!t->name || t->bind == BIND_NONE || t->bind == BIND_UNDECLARED) continue;
            if (t->bind == BIND_ORT) t->v = out[j];
            j++;
        }
        if (!inside) ortc_st.ran_outside++;
        else if (unj) {
            ortc_st.unjudged_out++;
            fz_tally_folded(&ortc_st.unjudged, unj);
        } else ortc_judge(&K);
    }
    /* an input whose memory the estimate missed: say which (once per
     * new peak over 512 MB more), so over_cap can learn its class */
    static long peak_kb;
    struct rusage ru;
    if (!getrusage(RUSAGE_SELF, &ru) && ru.ru_maxrss > peak_kb + (512L << 10)) {
        if (peak_kb) {
            fprintf(stderr, "fuzz_ort_contract: this input raised the peak RSS to %ld MB:\n",
                    ru.ru_maxrss >> 10);
            ortc_describe(&K);
        }
        peak_kb = ru.ru_maxrss;
    }
    ortc_teardown(&K);
    return 0;
}
