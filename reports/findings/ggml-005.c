/*
 * ggml-005 reproducer: a finite scale whose product with a dot product
 * exceeds FLT_MAX turns every output of ggml_flash_attn_ext into NaN,
 * although the softmax is well defined (it depends only on differences of
 * the logits) and an fp32 implementation can keep it finite.  The CPU op
 * multiplies each dot product by the scale in float (ops.cpp, the one-chunk
 * and tiled paths alike), so s becomes +-inf and exp(inf - inf) = NaN.
 *
 * Here: one query row, 4 keys, D 64, q = k = 1 everywhere (dot 64), scale
 * 1e37 (dot x scale = 6.4e38 > FLT_MAX), v_k = k + 1.  Every logit is the
 * same, so the exact output is the mean of v: 2.5.  ggml: NaN.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char **argv) {
    const int D = 64, T = 1, H = 1, NKV = 4;
    const float SCALE = argc > 1 ? (float)atof(argv[1]) : 1e37f;
    struct ggml_init_params ip = {16 * 1024 * 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, T, H, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, NKV, T, 1, 1);
    for (int i = 0; i < D * T * H; i++) ((float *)q->data)[i] = 1.0f;
    for (int j = 0; j < NKV; j++)
        for (int d = 0; d < D; d++) {
            ((ggml_fp16_t *)k->data)[j * D + d] = ggml_fp32_to_fp16(1.0f);
            ((ggml_fp16_t *)v->data)[j * D + d] = ggml_fp32_to_fp16((float)(j + 1));
        }
    for (int i = 0; i < (int)ggml_nelements(m); i++) ((ggml_fp16_t *)m->data)[i] = ggml_fp32_to_fp16(0.0f);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, m, SCALE, 0.0f, 0.0f);
    ggml_prec_set_acc(out, GGML_PREC_F32);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_graph_compute_with_ctx(ctx, gf, 1);
    const float got = ((float *)out->data)[0];
    printf("scale %g, dot 64: ggml out[0] = %g, exact 2.5\n", (double)SCALE, (double)got);
    ggml_free(ctx);
    return isfinite(got) && fabsf(got - 2.5f) <= 1e-2f ? 0 : 1;
}
