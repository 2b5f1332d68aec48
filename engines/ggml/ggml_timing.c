/*
 * engines/ggml/ggml_timing.c — one indicative timing of ggml through the
 * adapter ABI (`make engines-time`): decode of B requests with kv keys each,
 * Hq/Hkv heads, head dim D, f16 caches, the given thread count.  Prints the
 * plan time (mask fill, graphs) and the median and min of `run` over the
 * repeats.  An indication only: the harness's benchmark times engines.
 *   ggml_timing [B kv Hq Hkv D threads repeats [cpu=<variant>]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml_engine.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int32_t B = 8, kv = 4096, hq = 32, hkv = 8, d = 128, thr = 1, reps = 20, bs = 16;
    if (argc >= 8)
        B = atoi(argv[1]), kv = atoi(argv[2]), hq = atoi(argv[3]), hkv = atoi(argv[4]),
        d = atoi(argv[5]), thr = atoi(argv[6]), reps = atoi(argv[7]);
    const char *opt = argc >= 9 ? argv[8] : NULL;
    if (B < 1 || kv < 1 || hq < 1 || hkv < 1 || d < 1 || thr < 1 || reps < 1) return 2;
    const ag_engine *e = ag_engine_ggml();
    void *ctx = NULL, *grp = NULL, *plan = NULL;
    ag_msg msg = {{0}, {0}};
    if (e->open(NULL, &ctx, &msg) != AG_OK) return fprintf(stderr, "%s\n", msg.text), 1;
    ag_layer L = {NULL, hq, -1, -1, 0, 0, NULL, NULL, 1, 1};
    ag_group g = {&L, 1, hkv, d, bs, AG_F32, AG_F16, AG_F32, hq, thr, opt};
    if (e->create(ctx, &g, &grp, &msg) != AG_OK) return fprintf(stderr, "%s\n", msg.text), 1;
    const int32_t nblk = (kv + bs - 1) / bs, num_blocks = B * nblk;
    const size_t cells = (size_t)num_blocks * bs, row = (size_t)hkv * d;
    size_t bytes;
    e->kv_cache_bytes(grp, num_blocks, &bytes, &msg);
    uint16_t *rows = malloc(cells * row * 2);
    int64_t *slot = malloc(cells * sizeof *slot);
    for (size_t i = 0; i < cells * row; i++) rows[i] = (uint16_t)(0x3000 + (rand() & 0x7ff)) ^ (uint16_t)((rand() & 1) << 15);
    for (size_t i = 0; i < cells; i++) slot[i] = (int64_t)i;
    void *kc = malloc(bytes), *vc = malloc(bytes);
    e->write_kv(grp, kc, vc, num_blocks, rows, rows, (int32_t)cells, slot, &msg);
    int32_t *qsl = malloc((size_t)(B + 1) * sizeof *qsl), *seq = malloc((size_t)B * sizeof *seq);
    int32_t *bt = malloc((size_t)num_blocks * sizeof *bt);
    for (int32_t r = 0; r <= B; r++) qsl[r] = r;
    for (int32_t r = 0; r < B; r++) seq[r] = kv;
    for (int32_t i = 0; i < num_blocks; i++) bt[i] = i;
    ag_batch b = {B, qsl, seq, NULL, bt, nblk, num_blocks};
    ag_plan_info info;
    ag_plan_opts po = {0};
    double t0 = now_ms();
    if (e->plan(grp, &b, &po, &plan, &info, &msg) != AG_OK) return fprintf(stderr, "%s\n", msg.text), 1;
    const double t_plan = now_ms() - t0;
    float *q = malloc((size_t)B * hq * d * sizeof(float)), *out = malloc((size_t)B * hq * d * sizeof(float));
    for (size_t i = 0; i < (size_t)B * hq * d; i++) q[i] = (float)rand() / RAND_MAX - 0.5f;
    void *scratch = aligned_alloc(64, (info.scratch_bytes + 63) / 64 * 64 + 64);
    ag_run_args a = {q, kc, vc, &b, B, scratch, info.scratch_bytes, out};
    double *ms = malloc((size_t)reps * sizeof *ms);
    e->run(plan, 0, &a, &msg);   /* warm-up */
    for (int i = 0; i < reps; i++) {
        t0 = now_ms();
        if (e->run(plan, 0, &a, &msg) != AG_OK) return fprintf(stderr, "%s\n", msg.text), 1;
        ms[i] = now_ms() - t0;
    }
    qsort(ms, (size_t)reps, sizeof *ms, by_value);
    ag_group_info gi;
    e->group_info(grp, &gi);
    printf("ggml %s: decode B=%d kv=%d Hq=%d Hkv=%d D=%d f16 KV, %d thread(s): plan %.2f ms, "
           "run median %.3f ms, min %.3f ms over %d runs (scratch %zu bytes)\n",
           gi.kernels, B, kv, hq, hkv, d, thr, t_plan, ms[reps / 2], ms[0], reps,
           info.scratch_bytes);
    e->plan_destroy(plan), e->destroy(grp), e->close(ctx);
    free(rows), free(slot), free(kc), free(vc), free(qsl), free(seq), free(bt), free(q), free(out);
    free(scratch), free(ms);
    return 0;
}
