/*
 * ggml-001 reproducer: the CPU backend's flash attention reads an f16 (or
 * bf16) q as f32.  ggml_flash_attn_ext() accepts any q type and the CPU
 * device's supports_op() says yes; ops.cpp then reads 4*D bytes of each
 * 2*D-byte q row, past the end of q's buffer for the last row.
 *
 * q's buffer ends flush against an inaccessible page, so the over-read
 * faults here; with an AddressSanitizer build of ggml it is reported as a
 * heap-buffer-overflow.  Expected: a GGML_ASSERT (or a converted q).
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

int main(void) {
    const int D = 64, T = 1, H = 1, NKV = 16;
    struct ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, T, H, 1);   /* f16 q */
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, NKV, H, 1);
    struct ggml_tensor *out = ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.125f, 0.0f, 0.0f);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    q->data = guarded(ggml_nbytes(q));
    k->data = guarded(ggml_nbytes(k));
    v->data = guarded(ggml_nbytes(v));
    out->data = guarded(ggml_nbytes(out));
    struct ggml_cplan cp = ggml_graph_plan(gf, 1, NULL);
    cp.work_data = guarded(cp.work_size);
    printf("ggml_flash_attn_ext accepted q of type f16 (%zu bytes); computing\n", ggml_nbytes(q));
    fflush(stdout);
    ggml_graph_compute(gf, &cp);   /* reads 2 * ggml_nbytes(q) bytes of q */
    printf("no fault\n");
    ggml_free(ctx);
    return 0;
}
