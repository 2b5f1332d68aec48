/*
 * engines/ort/ort_engine.h — how a build that links the ort adapter in
 * reaches it (engines/registry.c).  Built as a shared object with
 * -DAG_ORT_SHARED_OBJECT the adapter exports AG_ENGINE_ENTRY instead.
 */
#ifndef AG_ORT_ENGINE_H
#define AG_ORT_ENGINE_H

#include "attnguard/engine.h"

/* Adapter 3: ONNX Runtime's CPU attention, loaded at run time (open()
 * says AG_UNSUPPORTED with the way to install it when ORT is missing). */
const ag_engine *ag_engine_ort(void);

#endif /* AG_ORT_ENGINE_H */
