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
 * row's head_dim), drawn per v from the stream `state`. */
void values_fill(void *buf, size_t n, size_t row, ag_dtype dt, const case_values *v,
                 uint64_t state);

/* Store x (double) at element i, rounded to nearest even into dt;
 * values beyond the dtype's range become its infinity, or for e4m3fn (no
 * infinity) +-448. */
void values_store(void *buf, size_t i, ag_dtype dt, double x);

/* The largest finite value of dt (FLT_MAX, 0x1.fep127, 65504, 448, 57344). */
double values_dtype_max(ag_dtype dt);
/* The smallest positive subnormal of dt. */
double values_dtype_tiny(ag_dtype dt);

#endif /* AG_VALUES_H */
