/*
 * case_bytes.h — the compact binary form of a case, the one libFuzzer
 * mutates.  A small data producer draws every parameter from the input;
 * every value is clamped into its valid range or into a deliberately
 * invalid one, so EVERY byte string decodes to some case (the decoder
 * never fails).  Encoding is canonical: decode(encode(c)) == c for every
 * case in the decodable domain (which covers every shipped .case file).
 */
#ifndef ATTN_CASE_BYTES_H
#define ATTN_CASE_BYTES_H

#include "case.h"

#include <stddef.h>
#include <stdint.h>

#define CASE_BYTES_MAX 1024   /* an encoding never exceeds this */

/* Decode any byte string into a case (never fails; missing bytes read as 0). */
void case_decode(const uint8_t *data, size_t size, case_spec *out);

/* Encode; returns the length written, or 0 if cap is too small or the case
 * lies outside the decodable domain (a value no byte string decodes to);
 * in that case errbuf (may be NULL) names the field. */
size_t case_encode(const case_spec *c, uint8_t *buf, size_t cap, char *errbuf, size_t errlen);

#endif /* ATTN_CASE_BYTES_H */
