/*
 * ort_judge.h — owns fuzz_ort_contract's verdicts on what ORT did not
 * refuse (the judge room of the target): the outputs against the
 * harness's fp64 reference within ORT's declared rounding, the presents
 * as the schema's exact copies, the canaries of every buffer (ours and
 * ORT's own).  The reference's input is ort_ref.c's, the comparison
 * ort_judge.c's.
 */
#ifndef ATTNGUARD_ORT_JUDGE_H
#define ATTNGUARD_ORT_JUDGE_H

#include "../contract/fz_judge.h"
#include "ort_case.h"

/* Judges a call inside the contract that ORT ran: fires the differential
 * oracle (after describing K) on an output element outside its range, a
 * present row that is not its copy or an output ORT allocated in another
 * shape; counts what it compared and what it left open. */
void ortc_judge(const call *K);

/* After Run: every canary of ours and of ORT's blocks intact, else an
 * input-bounds or scratch-bounds finding fires. */
void ortc_check_canaries(call *K);

/* The reference's input for K's op (ort_ref.c): J zeroed first, filled
 * from K's buffers.  Returns 0, or -1 when out of memory. */
int ortc_reference_of(const call *K, fz_judged *J);

#endif
