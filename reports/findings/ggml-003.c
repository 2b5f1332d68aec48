/*
 * ggml-003 reproducer: ggml_flash_attn_ext() does not check the mask's
 * shape against k and q.  (a) mask rows shorter than n_kv (mask->ne[0] <
 * k->ne[1]); (b) fewer mask rows than query rows (mask->ne[1] < q->ne[1]).
 * The CPU op reads mask entries up to n_kv in every query row, past the
 * mask's buffer (flush against an inaccessible page here, so it faults).
 * Expected: a GGML_ASSERT, as older versions had for the row padding.
 *   ./ggml-003 a    or    ./ggml-003 b
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ggml-cpu.h"
#include "ggml.h"

static void *guarded(size_t bytes) {   /* ends flush against a PROT_NONE page */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + pg - 1) / pg * pg;
    char *m = mmap(NULL, body + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m + body, pg, PROT_NONE);
    memset(m + body - bytes, 0, bytes);   /* f16 zeros: every key visible */
    return m + body - bytes;
}

int main(int argc, char **argv) {
    const int b = argc > 1 && argv[1][0] == 'b';
    const int D = 64, T = 4, H = 2, NKV = 32;
    struct ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, T, H, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, b ? NKV : NKV - 1, b ? T - 1 : T, 1, 1);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, m, 0.125f, 0.0f, 0.0f);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    q->data = guarded(ggml_nbytes(q));
    k->data = guarded(ggml_nbytes(k));
    v->data = guarded(ggml_nbytes(v));
    m->data = guarded(ggml_nbytes(m));
    out->data = guarded(ggml_nbytes(out));
    struct ggml_cplan cp = ggml_graph_plan(gf, 1, NULL);
    cp.work_data = guarded(cp.work_size);
    printf("ggml_flash_attn_ext accepted a mask [%lld, %lld] for n_kv %d, %d query rows; computing\n",
           (long long)m->ne[0], (long long)m->ne[1], NKV, T);
    fflush(stdout);
    ggml_graph_compute(gf, &cp);   /* reads the mask past its buffer */
    printf("no fault\n");
    ggml_free(ctx);
    return 0;
}
