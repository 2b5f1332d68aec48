/*
 * ort-006 reproducer: ONNX Attention (opset 24) in float16 with a boolean
 * attn_mask gives the weight to a masked key when that key's logit exceeds
 * the visible keys' by more than about 65504.  The spec masks a False
 * entry with -inf (ONNX's reference implementation turns the boolean mask
 * into 0 / -inf), so a masked key never weighs anything; ORT adds a finite
 * stand-in, float16's lowest value -65504, which a large enough logit
 * outweighs.
 *
 * One head, head size 8, one query row over two keys, scale 1, 4-D
 * inputs, softmax_precision 1 (an f32 softmax, as attnguard's adapter
 * asks).  q = e0; key 0 is masked (False) with logit +30000, key 1 is
 * visible (True) with logit -40000, both exact float16 values; v of key j
 * is e_j.  The spec's output is v1 = (0, 1, 0...): the one visible key.
 * ORT 1.30 answers (1, 0, 0...): all the weight on the masked key (30000 -
 * 65504 = -35504 beats -40000).  The same node with logits a tenth of
 * that, and the float32 node with the large ones, answer (0, 1).
 *
 *     cc -O1 -g ort-006.c -ldl -o ort-006 && ./ort-006 [libonnxruntime.so.1]
 *
 * Exit: 1 when the defect reproduces (the large-logit f16 output is not
 * (0, 1)), 0 when it does not.
 */
#include "ort-repro.h"

enum { D = 8, T = 2 };

/* float16 bit patterns of the values used (all exact) */
#define H_ONE 0x3c00u
#define H_30000 0x7753u
#define H_M40000 0xf8e2u
#define H_3000 0x69dcu
#define H_M4000 0xebd0u

static OrtSession *session(int et) {
    const onnx_value in[4] = {
        {"Q", et, 4, {{1, NULL}, {1, NULL}, {1, NULL}, {D, NULL}}},
        {"K", et, 4, {{1, NULL}, {1, NULL}, {T, NULL}, {D, NULL}}},
        {"V", et, 4, {{1, NULL}, {1, NULL}, {T, NULL}, {D, NULL}}},
        {"attn_mask", ORTA_T_BOOL, 4, {{1, NULL}, {1, NULL}, {1, NULL}, {T, NULL}}}};
    const onnx_value out[1] = {{"Y", et, 4, {{1, NULL}, {1, NULL}, {1, NULL}, {D, NULL}}}};
    const onnx_attr at[2] = {{"scale", ONNX_ATTR_FLOAT, 1.0f, 0},
                             {"softmax_precision", ONNX_ATTR_INT, 0, 1}};
    const onnx_node_model m = {10, 24, 0, "Attention", "", in, 4, out, 1, at, 2};
    return r_session(&m, NULL);
}

static void run(OrtSession *s, int et, void *q, void *k, void *v, void *y, size_t es) {
    static unsigned char mask[T] = {0, 1};   /* key 0 masked, key 1 visible */
    const int64_t sq[4] = {1, 1, 1, D}, sk[4] = {1, 1, T, D}, sm[4] = {1, 1, 1, T};
    const OrtValue *iv[4] = {r_tensor(q, es * D, sq, 4, et), r_tensor(k, es * T * D, sk, 4, et),
                             r_tensor(v, es * T * D, sk, 4, et),
                             r_tensor(mask, sizeof mask, sm, 4, ORTA_T_BOOL)};
    const char *const inn[4] = {"Q", "K", "V", "attn_mask"};
    const char *const outn[1] = {"Y"};
    OrtValue *ov[1] = {r_tensor(y, es * D, sq, 4, et)};
    r_check(F.Run(s, NULL, inn, iv, 4, outn, 1, ov), "Run");
}

/* A float16 value as a float (normal numbers and zero: all the outputs
 * here are weights times 0 or 1). */
static float h2f(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const float v = e == 0 ? 0.0f : (1.0f + (float)m / 1024.0f) * (float)(1 << e) / 32768.0f;
    return h & 0x8000u ? -v : v;
}

/* The f16 node with key logits k0 (masked) and k1 (visible): y0, y1. */
static void run16(OrtSession *s, uint16_t k0, uint16_t k1, float *y0, float *y1) {
    uint16_t q[D] = {H_ONE}, k[T * D] = {0}, v[T * D] = {0}, y[D];
    k[0] = k0, k[D] = k1;
    v[0] = H_ONE, v[D + 1] = H_ONE;
    run(s, ORTA_T_FLOAT16, q, k, v, y, 2);
    *y0 = h2f(y[0]), *y1 = h2f(y[1]);
}

int main(int argc, char **argv) {
    r_load(argc, argv);
    OrtSession *s16 = session(ORTA_T_FLOAT16), *s32 = session(ORTA_T_FLOAT);
    float a0, a1, b0, b1;
    run16(s16, H_3000, H_M4000, &a0, &a1);
    float q[D] = {1}, k[T * D] = {0}, v[T * D] = {0}, y[D];
    k[0] = 30000.0f, k[D] = -40000.0f, v[0] = 1.0f, v[D + 1] = 1.0f;
    run(s32, ORTA_T_FLOAT, q, k, v, y, 4);
    printf("f32, logits +30000 (masked) / -40000 (visible): %g %g (spec: 0 1)\n", (double)y[0],
           (double)y[1]);
    printf("f16, logits  +3000 (masked) /  -4000 (visible): %g %g (spec: 0 1)\n", (double)a0,
           (double)a1);
    run16(s16, H_30000, H_M40000, &b0, &b1);
    printf("f16, logits +30000 (masked) / -40000 (visible): %g %g (spec: 0 1; 1 0 = the masked "
           "key's value)\n", (double)b0, (double)b1);
    return b0 == 0.0f && b1 == 1.0f ? 0 : 1;
}
