/*
 * ort-003 reproducer: GroupQueryAttention whose node leaves out the
 * optional present_key / present_value outputs, run with a past, reads
 * past the end of one of its own buffers.  The kernel transposes the new
 * keys (S rows) into a temporary of B x kv_num_heads x S x head_size
 * elements and, with no present buffer to gather past and new keys into,
 * reads the whole sequence (past + new rows) from that temporary.
 *
 * The schema marks both present outputs optional.  ORT's kernel buffers
 * come from a registered allocator whose blocks end flush against a
 * PROT_NONE page (ort-repro.h), so the over-read faults at the first byte
 * past the 64-byte transpose of K instead of reading heap garbage.
 *
 * Node: com.microsoft GroupQueryAttention, num_heads 2, kv_num_heads 1,
 * head size 16, f32, B 1, S 1, a past of 8 rows (seqlens_k 8,
 * total_sequence_length 9); outputs: `output` only.
 *
 *     cc -O1 -g ort-003.c -ldl -o ort-003 && ./ort-003 [libonnxruntime.so.1]
 *
 * Exit: killed by SIGSEGV when the defect reproduces; 0 when Run returns.
 */
#include "ort-repro.h"

int main(int argc, char **argv) {
    r_load(argc, argv);
    enum { HQ = 2, HKV = 1, D = 16, PAST = 8, TOT = PAST + 1 };
    const onnx_value in[7] = {
        {"query", ORTA_T_FLOAT, 3, {{1, NULL}, {1, NULL}, {HQ * D, NULL}}},
        {"key", ORTA_T_FLOAT, 3, {{1, NULL}, {1, NULL}, {HKV * D, NULL}}},
        {"value", ORTA_T_FLOAT, 3, {{1, NULL}, {1, NULL}, {HKV * D, NULL}}},
        {"past_key", ORTA_T_FLOAT, 4, {{1, NULL}, {HKV, NULL}, {PAST, NULL}, {D, NULL}}},
        {"past_value", ORTA_T_FLOAT, 4, {{1, NULL}, {HKV, NULL}, {PAST, NULL}, {D, NULL}}},
        {"seqlens_k", ORTA_T_INT32, 1, {{1, NULL}}},
        {"total_sequence_length", ORTA_T_INT32, 0, {{0, NULL}}}};
    const onnx_value out[1] = {{"output", ORTA_T_FLOAT, 3, {{1, NULL}, {1, NULL}, {HQ * D, NULL}}}};
    const onnx_attr at[2] = {{"num_heads", ONNX_ATTR_INT, 0, HQ}, {"kv_num_heads", ONNX_ATTR_INT, 0, HKV}};
    const onnx_node_model m = {10, 21, 1, "GroupQueryAttention", "com.microsoft", in, 7, out, 1, at, 2};
    OrtSession *s = r_session(&m, &R_guarded);

    static float q[HQ * D], k[HKV * D], v[HKV * D], pk[HKV * PAST * D], pv[HKV * PAST * D], y[HQ * D];
    static int32_t seqlens[1] = {TOT - 1}, total = TOT;
    for (int i = 0; i < HQ * D; i++) q[i] = 0.1f * (float)(i % 5);
    const int64_t sq[3] = {1, 1, HQ * D}, sk[3] = {1, 1, HKV * D}, sp[4] = {1, HKV, PAST, D}, ss[1] = {1};
    const OrtValue *iv[7] = {r_tensor(q, sizeof q, sq, 3, ORTA_T_FLOAT), r_tensor(k, sizeof k, sk, 3, ORTA_T_FLOAT),
                             r_tensor(v, sizeof v, sk, 3, ORTA_T_FLOAT), r_tensor(pk, sizeof pk, sp, 4, ORTA_T_FLOAT),
                             r_tensor(pv, sizeof pv, sp, 4, ORTA_T_FLOAT),
                             r_tensor(seqlens, sizeof seqlens, ss, 1, ORTA_T_INT32),
                             r_tensor(&total, sizeof total, NULL, 0, ORTA_T_INT32)};
    const char *const inn[7] = {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                "total_sequence_length"};
    const char *const outn[1] = {"output"};
    OrtValue *ov[1] = {r_tensor(y, sizeof y, sq, 3, ORTA_T_FLOAT)};
    printf("Run without present outputs, past of %d rows ...\n", PAST);
    fflush(stdout);
    OrtStatus *st = F.Run(s, NULL, inn, iv, 7, outn, 1, ov);
    printf("Run returned %s: not reproduced\n", st ? F.GetErrorMessage(st) : "OK");
    return 0;
}
