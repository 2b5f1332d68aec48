/*
 * ort-002 reproducer: GroupQueryAttention with batch_size 0 kills the
 * process with SIGFPE (an integer division by zero inside Run) instead of
 * producing an empty output or an error status.  A zero dimension is a
 * valid ONNX shape and the schema constrains none of the batch dims; the
 * CPU kernel's input checks pass and a division by a count derived from
 * the batch follows.
 *
 * Node: com.microsoft GroupQueryAttention, num_heads 2, kv_num_heads 1,
 * head size 8, f32; query (0, 1, 16), key/value (0, 1, 8), past (0, 1, 8,
 * 8), seqlens_k (0), total_sequence_length 4.  The same with no past, or
 * f16, or more heads.
 *
 *     cc -O1 -g ort-002.c -ldl -o ort-002 && ./ort-002 [libonnxruntime.so.1]
 *
 * Exit: killed by SIGFPE when the defect reproduces; 0 when Run returns.
 */
#include "ort-repro.h"

int main(int argc, char **argv) {
    r_load(argc, argv);
    enum { HQ = 2, HKV = 1, D = 8, M = 8 };
    const onnx_value in[7] = {
        {"query", ORTA_T_FLOAT, 3, {{0, "b"}, {0, "s"}, {HQ * D, NULL}}},
        {"key", ORTA_T_FLOAT, 3, {{0, "b"}, {0, "s"}, {HKV * D, NULL}}},
        {"value", ORTA_T_FLOAT, 3, {{0, "b"}, {0, "s"}, {HKV * D, NULL}}},
        {"past_key", ORTA_T_FLOAT, 4, {{0, "b"}, {HKV, NULL}, {0, "m"}, {D, NULL}}},
        {"past_value", ORTA_T_FLOAT, 4, {{0, "b"}, {HKV, NULL}, {0, "m"}, {D, NULL}}},
        {"seqlens_k", ORTA_T_INT32, 1, {{0, "b"}}},
        {"total_sequence_length", ORTA_T_INT32, 0, {{0, NULL}}}};
    const onnx_value out[3] = {
        {"output", ORTA_T_FLOAT, 3, {{0, "b"}, {0, "s"}, {HQ * D, NULL}}},
        {"present_key", ORTA_T_FLOAT, 4, {{0, "b"}, {HKV, NULL}, {0, "t"}, {D, NULL}}},
        {"present_value", ORTA_T_FLOAT, 4, {{0, "b"}, {HKV, NULL}, {0, "t"}, {D, NULL}}}};
    const onnx_attr at[2] = {{"num_heads", ONNX_ATTR_INT, 0, HQ}, {"kv_num_heads", ONNX_ATTR_INT, 0, HKV}};
    const onnx_node_model m = {10, 21, 1, "GroupQueryAttention", "com.microsoft", in, 7, out, 3, at, 2};
    OrtSession *s = r_session(&m, NULL);

    static int32_t total = 4;
    const int64_t sq[3] = {0, 1, HQ * D}, sk[3] = {0, 1, HKV * D}, sp[4] = {0, HKV, M, D}, ss[1] = {0};
    const OrtValue *iv[7] = {r_tensor(NULL, 0, sq, 3, ORTA_T_FLOAT), r_tensor(NULL, 0, sk, 3, ORTA_T_FLOAT),
                             r_tensor(NULL, 0, sk, 3, ORTA_T_FLOAT), r_tensor(NULL, 0, sp, 4, ORTA_T_FLOAT),
                             r_tensor(NULL, 0, sp, 4, ORTA_T_FLOAT), r_tensor(NULL, 0, ss, 1, ORTA_T_INT32),
                             r_tensor(&total, sizeof total, NULL, 0, ORTA_T_INT32)};
    const char *const inn[7] = {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                "total_sequence_length"};
    const char *const outn[1] = {"output"};
    OrtValue *ov[1] = {NULL};
    printf("Run with batch_size 0 ...\n");
    fflush(stdout);
    OrtStatus *st = F.Run(s, NULL, inn, iv, 7, outn, 1, ov);
    printf("Run returned %s: not reproduced\n", st ? F.GetErrorMessage(st) : "OK");
    return 0;
}
