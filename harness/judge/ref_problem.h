/*
 * ref_problem.h — a layer of a materialized problem (case/problem.h) as
 * the reference's input (ref.h).
 */
#ifndef AG_REF_PROBLEM_H
#define AG_REF_PROBLEM_H

#include "../case/problem.h"
#include "ref.h"

/* The reference's description of layer l of a materialized problem; the
 * pointers are into p. */
void ref_input_of_problem(const problem *p, int32_t l, ref_input *in);

#endif /* AG_REF_PROBLEM_H */
