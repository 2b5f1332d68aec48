/*
 * fz_input.c — the contract targets' byte reader (fz_input.h).
 */
#include "fz_input.h"

unsigned fz_u8(fz_rd *r) { return r->n ? (r->n--, *r->p++) : 0; }
