/*
 * values.h — the value generator: per-tensor distributions (case_values)
 * drawn from a splitmix64 stream and rounded into the tensor's dtype by the
 * harness's own conversions (round to nearest even; fp8 e4m3fn saturates,
 * as PyTorch's conversion does).
 */
#ifndef AG_VALUES_H
#define AG_VALUES_H

#include "case.h"

#include <stddef.h>
#include <stdint.h>

/* Fill n elements of dtype dt, in rows of `row` elements (a head's or a KV
 * row's head_dim), drawn per v from the stream `state`.  A block dtype
 * (q8_0 .. iq4_nl): the values, drawn at f16's precision within the
 * largest magnitude the type holds, are quantized per block of 32 by the
 * harness's own quantizer (n a multiple of 32; ag_dtype_bytes(dt, n)
 * bytes). */
void values_fill(void *buf, size_t n, size_t row, ag_dtype dt, const case_values *v,
                 uint64_t state);

/* Store x (double) at element i, rounded to nearest even into dt;
 * values beyond the dtype's range become its infinity, or for e4m3fn (no
 * infinity) +-448.  A block dtype has no single element to store: nothing
 * is written. */
void values_store(void *buf, size_t i, ag_dtype dt, double x);

/* The largest finite value of dt (FLT_MAX, 0x1.fep127, 65504, 448, 57344;
 * a block type's largest drawn magnitude: 65504 times its largest level). */
double values_dtype_max(ag_dtype dt);
/* The smallest positive subnormal of dt. */
double values_dtype_tiny(ag_dtype dt);

#endif /* AG_VALUES_H */
