/*
 * abi.c — the names and sizes of the adapter ABI's enumerations
 * (include/attnguard/engine.h), shared by the harness, the adapters and
 * the case format: one table per enumeration, indexed by its values.
 */
#include "../include/attnguard/engine.h"

#include <string.h>

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *ag_status_name(ag_status st) {
    static const char *const k[AG_STATUS_COUNT] = {"AG_OK", "AG_REFUSED", "AG_UNSUPPORTED",
                                                   "AG_INTERNAL"};
    return (unsigned)st < AG_STATUS_COUNT ? k[st] : "AG_?";
}

const char *ag_dtype_name(ag_dtype d) {
    static const char *const k[AG_DTYPE_COUNT] = {"f32",  "bf16", "f16",  "fp8e4m3",
                                                  "fp8e5m2", "q8_0", "q4_0", "q4_1",
                                                  "q5_0", "q5_1", "iq4_nl"};
    return (unsigned)d < AG_DTYPE_COUNT ? k[d] : NULL;
}

/* Bytes of one block: one element for the plain types, AG_DTYPE_BLOCK for
 * the block types (their layouts: engine.h, ag_dtype). */
static size_t block_bytes(ag_dtype d) {
    static const size_t k[AG_DTYPE_COUNT] = {4, 2, 2, 1, 1, 34, 18, 20, 22, 24, 18};
    return (unsigned)d < AG_DTYPE_COUNT ? k[d] : 0;
}

int ag_dtype_block(ag_dtype d) {
    if ((unsigned)d >= AG_DTYPE_COUNT) return 0;
    return d >= AG_Q8_0 ? AG_DTYPE_BLOCK : 1;
}

size_t ag_dtype_size(ag_dtype d) { return ag_dtype_block(d) == 1 ? block_bytes(d) : 0; }

int ag_dtype_bytes(ag_dtype d, size_t n, size_t *bytes) {
    const int b = ag_dtype_block(d);
    size_t out = 0;
    const int ok = b > 0 && n % (size_t)b == 0 &&
                   !__builtin_mul_overflow(n / (size_t)b, block_bytes(d), &out);
    if (bytes) *bytes = ok ? out : 0;
    return ok ? 0 : -1;
}

/* The spelling case files use after `expect =` (docs/case-format.md). */
static const char *const k_refusal[AG_R_COUNT] = {
    "none",   "mixed_heads", "heads",  "head_dim", "block_size", "window",   "layer",
    "dtype",  "threads",     "options", "plan_option", "batch",  "length",   "block_id",
    "slot",   "limit",       "overflow", "resource", "mismatch", "scratch", "null",
};

const char *ag_refusal_name(ag_refusal r) {
    return (unsigned)r < AG_R_COUNT ? k_refusal[r] : "?";
}

int ag_refusal_parse(const char *name) {
    for (int i = 0; name && i < COUNT_OF(k_refusal); i++)
        if (strcmp(name, k_refusal[i]) == 0) return i;
    return -1;
}

const char *ag_region_kind_name(ag_region_kind k) {
    static const char *const n[AG_REGION_KIND_COUNT] = {
        "other", "q", "acc", "state", "scores", "kv", "flags", "partial", "max", "sum"};
    return (unsigned)k < AG_REGION_KIND_COUNT ? n[k] : "?";
}

const char *ag_variant_kind_name(ag_variant_kind k) {
    static const char *const n[AG_VARIANT_KIND_COUNT] = {"default", "kernels", "tuning",
                                                         "layout", "precision"};
    return (unsigned)k < AG_VARIANT_KIND_COUNT ? n[k] : "?";
}
