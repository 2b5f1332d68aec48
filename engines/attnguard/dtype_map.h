/*
 * dtype_map.h — where the ABI's element types (ag_dtype,
 * include/attnguard/dtype.h) meet attnguard's engine's (attn_dtype,
 * src/attn.h): the engine's five types are the ABI's first five, value for
 * value, asserted at compile time, so a type is passed across by value.
 * Included by every file that passes one across: the adapter
 * (engines/attnguard/adapter.c), the fixture that drives src/ over harness
 * problems (tests/fixture.c) and the fuzz target of attnguard's own API
 * (fuzz/fuzz_api.c).  The ABI's block types have no engine counterpart:
 * the adapter refuses them before it converts.
 */
#ifndef AG_ATTNGUARD_DTYPE_MAP_H
#define AG_ATTNGUARD_DTYPE_MAP_H

#include "../../include/attnguard/engine.h"
#include "../../src/attn.h"

_Static_assert((int)AG_F32 == (int)ATTN_DTYPE_F32, "ag_dtype and attn_dtype: f32");
_Static_assert((int)AG_BF16 == (int)ATTN_DTYPE_BF16, "ag_dtype and attn_dtype: bf16");
_Static_assert((int)AG_F16 == (int)ATTN_DTYPE_F16, "ag_dtype and attn_dtype: f16");
_Static_assert((int)AG_FP8_E4M3 == (int)ATTN_DTYPE_FP8_E4M3, "ag_dtype and attn_dtype: e4m3fn");
_Static_assert((int)AG_FP8_E5M2 == (int)ATTN_DTYPE_FP8_E5M2, "ag_dtype and attn_dtype: e5m2");
_Static_assert((int)ATTN_DTYPE_COUNT <= (int)AG_DTYPE_COUNT,
               "every engine type is an ABI type (a new one: a row in dtype.h first)");

/* The engine's type of an ABI type (a value outside the engine's set
 * passes through unchanged: the engine refuses it as ATTN_E_BAD_DTYPE). */
static inline attn_dtype attn_dtype_of(ag_dtype d) { return (attn_dtype)d; }
/* The ABI's type of an engine type. */
static inline ag_dtype ag_dtype_of(attn_dtype d) { return (ag_dtype)d; }

#endif /* AG_ATTNGUARD_DTYPE_MAP_H */
