/*
 * engines/ggml/ggml_engine.h — how a build that links the ggml adapter in
 * reaches it (engines/registry.c).  Built as a shared object
 * (build/engines/libag_ggml.so) the adapter exports AG_ENGINE_ENTRY instead.
 */
#ifndef AG_GGML_ENGINE_H
#define AG_GGML_ENGINE_H

#include "attnguard/engine.h"

/* Adapter 2: ggml's CPU flash attention, loaded at run time (open() says
 * AG_UNSUPPORTED with the way to install it when ggml is missing). */
const ag_engine *ag_engine_ggml(void);

#endif /* AG_GGML_ENGINE_H */
