/*
 * sizing_model.h — the harness's own derivation of what each region of a
 * split-KV scratchpad must hold, from DESIGN §1's formulas and the schedule
 * facts the engine states (ag_plan_shape).  It shares nothing with any
 * engine's sizing code, so an arithmetic slip there (a formula one row
 * short, the wrong element size) shows up as a disagreement.
 */
#ifndef AG_SIZING_MODEL_H
#define AG_SIZING_MODEL_H

#include "../../include/attnguard/engine.h"

/* Bytes region `name` must hold for a layer with g query heads per KV head
 * and head_dim D: 0 with *need written; -1 when the name does not follow
 * the convention (no expectation); 1 when the product overflows. */
int sizing_model_need(const ag_plan_shape *sh, const char *name, int32_t g, int32_t D,
                      size_t *need);

#endif /* AG_SIZING_MODEL_H */
