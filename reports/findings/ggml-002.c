/*
 * ggml-002 reproducer: ggml_flash_attn_ext() does not check v's shape
 * against k and q.  (a) v with fewer rows (n_kv) than k: the CPU op reads v
 * rows up to k->ne[1]; (b) v heads not dividing q's heads: rv2 = Hq / Hv
 * rounds down and iv2 = h / rv2 runs past v's last head.  Both read past
 * v's buffer (flush against an inaccessible page here, so they fault).
 * Expected: a GGML_ASSERT in ggml_flash_attn_ext, as for k.
 *   ./ggml-002 a    or    ./ggml-002 b
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
    memset(m + body - bytes, 0, bytes);
    return m + body - bytes;
}

int main(int argc, char **argv) {
    const int b = argc > 1 && argv[1][0] == 'b';
    const int D = 64, T = 2, HQ = 4, HK = 4, NKV = 32;
    const int HV = b ? 3 : HK, NKV_V = b ? NKV : NKV - 1;
    struct ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, T, HQ, 1);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, HK, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV_V, HV, 1);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.125f, 0.0f, 0.0f);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    q->data = guarded(ggml_nbytes(q));
    k->data = guarded(ggml_nbytes(k));
    v->data = guarded(ggml_nbytes(v));
    out->data = guarded(ggml_nbytes(out));
    struct ggml_cplan cp = ggml_graph_plan(gf, 1, NULL);
    cp.work_data = guarded(cp.work_size);
    printf("ggml_flash_attn_ext accepted k [%d rows, %d heads] with v [%d rows, %d heads]; "
           "computing\n", NKV, HK, NKV_V, HV);
    fflush(stdout);
    ggml_graph_compute(gf, &cp);   /* reads v past its buffer */
    printf("no fault\n");
    ggml_free(ctx);
    return 0;
}
