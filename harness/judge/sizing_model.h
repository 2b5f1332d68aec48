/*
 * sizing_model.h — the harness's own derivation of what each region of a
 * split-KV scratchpad must hold, from the design's formulas
 * (docs/design.md, section 1) and the schedule facts the engine states
 * (ag_plan_shape).  It shares nothing with any engine's sizing code, so an
 * arithmetic slip there (a formula one row short, the wrong element size)
 * shows up as a disagreement.
 */
#ifndef AG_SIZING_MODEL_H
#define AG_SIZING_MODEL_H

#include "../../include/attnguard/engine.h"

/* Bytes region r must hold for a layer with g query heads per KV head and
 * head_dim D: 0 with *need written; -1 when its kind is not one the design
 * sizes (AG_REGION_OTHER) or its owner does not fit the shape (no
 * expectation); 1 when the product overflows. */
int sizing_model_need(const ag_plan_shape *sh, const ag_region *r, int32_t g, int32_t D,
                      size_t *need);

#endif /* AG_SIZING_MODEL_H */
