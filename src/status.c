/*
 * status.c — status names and messages (a static table), the per-call error
 * detail helpers, dtype names/sizes, and the debug assertion hook.  Owns no
 * global state: every message goes into the caller's attn_error.
 */
#include "internal.h"
#include "kernels/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct status_entry {
    const char *name;
    const char *text;
} status_entry;

/* Indexed by attn_status; the static assert below keeps it complete. */
static const status_entry k_status[] = {
    [ATTN_OK] = {"ATTN_OK", "success"},
    [ATTN_E_NULL_ARG] = {"ATTN_E_NULL_ARG", "a required pointer argument is NULL"},
    [ATTN_E_NO_MEMORY] = {"ATTN_E_NO_MEMORY", "out of memory"},
    [ATTN_E_OVERFLOW] = {"ATTN_E_OVERFLOW", "a size computation overflows"},
    [ATTN_E_MIXED_HEADS] = {"ATTN_E_MIXED_HEADS",
                            "layers of one attention group disagree on num_heads"},
    [ATTN_E_BAD_HEADS] = {"ATTN_E_BAD_HEADS", "invalid head count"},
    [ATTN_E_BAD_HEAD_DIM] = {"ATTN_E_BAD_HEAD_DIM", "invalid head dimension"},
    [ATTN_E_BAD_BLOCK_SIZE] = {"ATTN_E_BAD_BLOCK_SIZE", "invalid KV block size"},
    [ATTN_E_BAD_WINDOW] = {"ATTN_E_BAD_WINDOW", "invalid sliding window"},
    [ATTN_E_BAD_LAYER] = {"ATTN_E_BAD_LAYER", "invalid layer parameter"},
    [ATTN_E_BAD_DTYPE] = {"ATTN_E_BAD_DTYPE", "invalid element type"},
    [ATTN_E_BAD_THREADS] = {"ATTN_E_BAD_THREADS", "invalid thread count"},
    [ATTN_E_BAD_BATCH] = {"ATTN_E_BAD_BATCH", "invalid batch (requests or query_start_loc)"},
    [ATTN_E_BAD_SEQ_LEN] = {"ATTN_E_BAD_SEQ_LEN", "invalid sequence length"},
    [ATTN_E_BAD_BLOCK_TABLE] = {"ATTN_E_BAD_BLOCK_TABLE", "invalid block table"},
    [ATTN_E_BAD_OPTION] = {"ATTN_E_BAD_OPTION", "invalid plan option"},
    [ATTN_E_LAYER_MISMATCH] = {"ATTN_E_LAYER_MISMATCH",
                               "layer differs from what the plan was built for"},
    [ATTN_E_TENSOR_MISMATCH] = {"ATTN_E_TENSOR_MISMATCH",
                                "tensor shape or dtype differs from the plan"},
    [ATTN_E_SCRATCH_TOO_SMALL] = {"ATTN_E_SCRATCH_TOO_SMALL",
                                  "scratchpad smaller than the plan needs"},
    [ATTN_E_SCRATCH_ALIGN] = {"ATTN_E_SCRATCH_ALIGN", "scratchpad is not 64-byte aligned"},
    [ATTN_E_BAD_SLOT] = {"ATTN_E_BAD_SLOT", "slot mapping entry outside the cache"},
    [ATTN_E_BAD_ISA] = {"ATTN_E_BAD_ISA", "requested ISA unknown or unavailable"},
    [ATTN_E_INTERNAL] = {"ATTN_E_INTERNAL", "internal engine invariant failed (a bug)"},
    [ATTN_E_TOO_LARGE] = {"ATTN_E_TOO_LARGE",
                          "the plan's scratchpad or metadata would exceed the byte limit"},
};
_Static_assert(sizeof k_status / sizeof k_status[0] == ATTN_STATUS_COUNT,
               "status table out of sync with attn_status");

const char *attn_strerror(attn_status status) {
    if ((unsigned)status >= ATTN_STATUS_COUNT) return "unknown attn_status";
    return k_status[status].text;
}

const char *attn_status_name(attn_status status) {
    if ((unsigned)status >= ATTN_STATUS_COUNT) return "ATTN_E_?";
    return k_status[status].name;
}

attn_status attn__fail(attn_error *err, attn_status status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->status = status;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

void attn__ok(attn_error *err) {
    if (err) {
        err->status = ATTN_OK;
        err->message[0] = '\0';
    }
}

const char *attn_dtype_name(attn_dtype dtype) {
    switch (dtype) {
    case ATTN_DTYPE_F32: return "f32";
    case ATTN_DTYPE_BF16: return "bf16";
    case ATTN_DTYPE_F16: return "f16";
    case ATTN_DTYPE_FP8_E4M3: return "fp8e4m3";
    case ATTN_DTYPE_FP8_E5M2: return "fp8e5m2";
    default: return NULL;
    }
}

size_t attn_dtype_size(attn_dtype dtype) { return attn__dtype_size(dtype); }

/* Reached only in ATTN_DEBUG builds, only when the engine broke its own
 * invariant (never because of caller input): printing and aborting is the
 * point, so a death test and a debugger both see it. */
void attn__assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "attnguard: engine invariant failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
