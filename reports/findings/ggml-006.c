/*
 * ggml-006 reproducer: with a logit soft cap, the tiled CPU path of
 * ggml_flash_attn_ext gives weight to keys that do not exist.  When the
 * key count is not a multiple of the KV tile (64), the last tile's unused
 * columns are set to -inf before the soft cap is applied, and
 * softcap * tanh(-inf) = -softcap: a finite logit, so each missing key
 * enters the softmax with weight exp(-softcap - max) and a zero V row
 * (ops.cpp, ggml_compute_forward_flash_attn_ext_tiled: the -inf padding,
 * then ggml_vec_tanh_f32 and ggml_vec_scale_f32 by logit_softcap).
 *
 * Here: 64 query rows (the tiled path needs at least one Q tile), 3 keys,
 * D 64, q = k = 1, scale 1e-6 (every logit about 0, so the cap changes
 * nothing), soft cap 1, v_k = k + 1.  The exact output is the mean of v,
 * 2.0; ggml divides by 3 + 61/e instead of 3: about 0.236.
 * argv[1]: the soft cap (0 turns it off and the result is right).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-cpu.h"
#include "ggml.h"

int main(int argc, char **argv) {
    const int D = 64, T = 64, H = 1, NKV = 3;
    const float SOFTCAP = argc > 1 ? (float)atof(argv[1]) : 1.0f;
    struct ggml_init_params ip = {16 * 1024 * 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, T, H, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    for (int i = 0; i < D * T * H; i++) ((float *)q->data)[i] = 1.0f;
    for (int j = 0; j < NKV; j++)
        for (int d = 0; d < D; d++) {
            ((ggml_fp16_t *)k->data)[j * D + d] = ggml_fp32_to_fp16(1.0f);
            ((ggml_fp16_t *)v->data)[j * D + d] = ggml_fp32_to_fp16((float)(j + 1));
        }
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, NULL, 1e-6f, 0.0f, SOFTCAP);
    ggml_prec_set_acc(out, GGML_PREC_F32);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_graph_compute_with_ctx(ctx, gf, 1);
    /* every row and dim has the same exact answer */
    float worst = 0.0f;
    for (int i = 0; i < D * T * H; i++) {
        const float e = fabsf(((float *)out->data)[i] - 2.0f);
        if (!(e <= worst)) worst = e;
    }
    printf("soft cap %g, 3 keys: ggml out[0] = %g, exact 2.0 (largest error %g)\n",
           (double)SOFTCAP, (double)((float *)out->data)[0], (double)worst);
    ggml_free(ctx);
    return worst <= 1e-2f ? 0 : 1;
}
