/*
 * ggml-004 reproducer: with an f16 V and fewer than 64 query rows (every
 * decode step), the CPU flash attention accumulates sum_k exp(s_k - M) v_k
 * in f16 (ggml_vec_mad_f16 into VKQ16), even when the op asks for f32
 * accumulation (ggml_prec_set_acc(out, GGML_PREC_F32), as llama.cpp does).
 * The unnormalised sum overflows f16's 65504 once the softmax weights are
 * spread over enough keys, and the output is inf / NaN although the exact
 * result, a weighted mean of the v rows, is an ordinary number.
 *
 * Here: one query row, 4096 keys, q = 0 (every key weighs the same), every
 * v element 16.  Exact output: 16.  Expected from ggml: 16 (within f16
 * rounding).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char **argv) {
    const int D = 128, T = 1, H = 1, NKV = argc > 1 ? atoi(argv[1]) : 4096;
    const float VAL = argc > 2 ? (float)atof(argv[2]) : 16.0f;
    struct ggml_init_params ip = {64 * 1024 * 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, T, H, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, NKV, T, 1, 1);
    for (int i = 0; i < D * T * H; i++) ((float *)q->data)[i] = 0.0f;
    for (int i = 0; i < D * NKV * H; i++) {
        ((ggml_fp16_t *)k->data)[i] = ggml_fp32_to_fp16(0.5f);
        ((ggml_fp16_t *)v->data)[i] = ggml_fp32_to_fp16(VAL);
    }
    for (int i = 0; i < NKV * T; i++) ((ggml_fp16_t *)m->data)[i] = ggml_fp32_to_fp16(0.0f);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, m, 1.0f / sqrtf((float)D), 0.0f, 0.0f);
    ggml_prec_set_acc(out, GGML_PREC_F32);   /* as llama.cpp's build_attn_mha */
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_graph_compute_with_ctx(ctx, gf, 1);
    const float got = ((float *)out->data)[0];
    printf("n_kv %d, every v = %g: ggml out[0] = %g, exact %g\n", NKV, (double)VAL, (double)got,
           (double)VAL);
    ggml_free(ctx);
    return isfinite(got) && fabsf(got - VAL) <= 0.01f * VAL ? 0 : 1;
}
