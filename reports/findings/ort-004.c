/*
 * ort-004 reproducer: ONNX Attention (opset 24) with is_causal = 1, a past
 * of P rows and ONE query row over T > 1 new keys attends to every key:
 * the causal band is dropped.  ONNX's reference implementation aligns the
 * band at the past length (query i sees keys j <= P + i), and ORT does so
 * itself as soon as there are two query rows; with one row it shows the
 * query all P + T keys.
 *
 * Here P = 1, T = 2, head size 8, one head, f32, 4-D inputs; q and k are 0
 * (every visible key weighs the same), v of key j is j + 1.  The spec's
 * answer for the one query row is the mean over keys 0..P = 0..1: 1.5.
 * ORT 1.30 answers the mean over all three keys: 2.  The same node with
 * two query rows (rows 0 and 1 over keys 0..1 and 0..2: 1.5 and 2) is
 * printed for comparison; ORT gets that one right.
 *
 *     cc -O1 -g ort-004.c -ldl -o ort-004 && ./ort-004 [libonnxruntime.so.1]
 *
 * Exit: 1 when the defect reproduces (the one-row answer is not 1.5), 0
 * when it does not.
 */
#include "ort-repro.h"

enum { P = 1, T = 2, D = 8 };

/* Runs the node for S query rows; y gets S x D outputs. */
static void run(OrtSession *s, int S, float *y) {
    static float q[2 * D], k[T * D], v[T * D], pk[P * D], pv[P * D], prk[(P + T) * D], prv[(P + T) * D];
    for (int d = 0; d < D; d++) {
        pv[d] = 1.0f;                  /* key 0 (the past): 1 */
        for (int j = 0; j < T; j++) v[j * D + d] = (float)(P + j + 1);   /* keys 1, 2: 2, 3 */
    }
    const int64_t sq[4] = {1, 1, S, D}, sk[4] = {1, 1, T, D}, sp[4] = {1, 1, P, D}, sr[4] = {1, 1, P + T, D};
    const OrtValue *iv[6] = {r_tensor(q, sizeof(float) * (size_t)(S * D), sq, 4, ORTA_T_FLOAT),
                             r_tensor(k, sizeof k, sk, 4, ORTA_T_FLOAT), r_tensor(v, sizeof v, sk, 4, ORTA_T_FLOAT),
                             r_tensor(pk, sizeof pk, sp, 4, ORTA_T_FLOAT), r_tensor(pv, sizeof pv, sp, 4, ORTA_T_FLOAT)};
    const char *const inn[5] = {"Q", "K", "V", "past_key", "past_value"};
    const char *const outn[3] = {"Y", "present_key", "present_value"};
    OrtValue *ov[3] = {r_tensor(y, sizeof(float) * (size_t)(S * D), sq, 4, ORTA_T_FLOAT),
                       r_tensor(prk, sizeof prk, sr, 4, ORTA_T_FLOAT), r_tensor(prv, sizeof prv, sr, 4, ORTA_T_FLOAT)};
    r_check(F.Run(s, NULL, inn, iv, 5, outn, 3, ov), "Run");
}

int main(int argc, char **argv) {
    r_load(argc, argv);
    const onnx_value in[6] = {
        {"Q", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {0, "s"}, {D, NULL}}},
        {"K", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {T, NULL}, {D, NULL}}},
        {"V", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {T, NULL}, {D, NULL}}},
        {"", 0, 0, {{0, NULL}}},
        {"past_key", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {P, NULL}, {D, NULL}}},
        {"past_value", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {P, NULL}, {D, NULL}}}};
    const onnx_value out[3] = {
        {"Y", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {0, "s"}, {D, NULL}}},
        {"present_key", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {P + T, NULL}, {D, NULL}}},
        {"present_value", ORTA_T_FLOAT, 4, {{1, NULL}, {1, NULL}, {P + T, NULL}, {D, NULL}}}};
    const onnx_attr at[1] = {{"is_causal", ONNX_ATTR_INT, 0, 1}};
    const onnx_node_model m = {10, 24, 0, "Attention", "", in, 6, out, 3, at, 1};
    OrtSession *s = r_session(&m, NULL);
    float y1[D], y2[2 * D];
    run(s, 1, y1);
    run(s, 2, y2);
    printf("two query rows: %g %g (spec: 1.5 2)\n", (double)y2[0], (double)y2[D]);
    printf("one query row:  %g (spec: 1.5; every key visible would be 2)\n", (double)y1[0]);
    return y1[0] > 1.49f && y1[0] < 1.51f ? 0 : 1;
}
