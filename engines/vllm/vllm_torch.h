/*
 * engines/vllm/vllm_torch.h — the part of PyTorch's stable C ABI the vllm
 * adapter calls (private to it).
 *
 * vLLM's CPU attention ops are PyTorch custom ops in vllm/_C*.abi3.so; the
 * adapter reaches them the way a C extension built against libtorch's
 * stable ABI does: tensors made over harness-owned memory with
 * aoti_torch_create_tensor_from_blob_v2, and the op called by name through
 * torch_call_dispatcher with a stack of 64-bit values.  The declarations
 * are the adapter's own (the wheel's C++ headers are not used, so the
 * adapter stays C11 and builds without torch installed); each entry is
 * looked up in libtorch_cpu.so with dlsym at open() and checked there.
 *
 * Stack values (torch's StableIValue), as PyTorch 2.13 documents them in
 * torch/csrc/stable/stableivalue_conversions.h: an int or SymInt is the
 * int64 itself, a float the bits of the double, a bool 0 or 1, a
 * ScalarType the value of aoti_torch_dtype_<type>(), a Tensor a fresh
 * tensor handle, a str a fresh string handle, an absent optional 0 and a
 * present one a pointer (torch_new_stable_ivalue) to the value.  The
 * dispatcher takes ownership of every handle and pointer on the stack; on
 * return stack[0] holds the op's result (a new tensor handle, ours).
 */
#ifndef AG_VLLM_TORCH_H
#define AG_VLLM_TORCH_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t vt_ivalue;                      /* StableIValue */
typedef struct vt_tensor_opaque *vt_tensor;      /* AtenTensorHandle */
typedef struct vt_string_opaque *vt_string;      /* StringHandle */
typedef int32_t vt_err;                          /* AOTITorchError: 0 = success */

/* The libtorch version the stack encoding above is written for (torch's
 * TORCH_VERSION_2_13_0): torch_call_dispatcher converts the stack as an
 * extension built against that version would have made it. */
#define VT_ABI_2_13 ((2ull << 56) | (13ull << 48))

typedef struct vt_api {
    vt_err (*from_blob)(void *data, int64_t ndim, const int64_t *sizes, const int64_t *strides,
                        int64_t storage_offset, int32_t dtype, int32_t device_type,
                        int32_t device_index, vt_tensor *ret, int32_t layout,
                        const uint8_t *opaque_metadata, int64_t opaque_metadata_size);
    vt_err (*delete_tensor)(vt_tensor t);
    vt_err (*data_ptr)(vt_tensor t, void **ret);
    vt_err (*numel)(vt_tensor t, int64_t *ret);
    vt_err (*new_string)(const char *data, size_t length, vt_string *ret);
    vt_err (*new_ivalue)(vt_ivalue **ret);
    vt_err (*call)(const char *op, const char *overload, vt_ivalue *stack, uint64_t version);
    const char *(*what)(void);   /* the last exception's message, without backtrace */
    int32_t (*dt_f32)(void), (*dt_bf16)(void), (*dt_f16)(void), (*dt_u8)(void),
        (*dt_i32)(void), (*dt_i64)(void);
    int32_t (*cpu)(void), (*strided)(void);
} vt_api;

#endif /* AG_VLLM_TORCH_H */
