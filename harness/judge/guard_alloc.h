/*
 * guard_alloc.h — the allocator the harness hands an engine whose work
 * buffers are internal (ag_group.alloc; ONNX Runtime's): every block is a
 * guarded mapping of its own (guard.c) that ends flush against a PROT_NONE
 * page (or a canary tail shorter than its alignment before it), every
 * request is logged, and the canaries are checked when a block comes back
 * and on demand.  Thread-safe: an engine's worker threads may call it at
 * once.
 *
 * The log of one run against what the adapter derives from the op's
 * documented shapes (ag_engine.internal_needs) is the sizing oracle one
 * level down (guard_alloc_judge).
 */
#ifndef AG_GUARD_ALLOC_H
#define AG_GUARD_ALLOC_H

#include "../../include/attnguard/engine.h"

#include <pthread.h>
#include <stddef.h>


typedef struct guard_block guard_block;

typedef struct guard_allocator {
    ag_allocator abi;            /* what ag_group.alloc points at */
    pthread_mutex_t mu;
    guard_block *live;           /* blocks handed out and not yet freed */
    size_t *log;                 /* bytes of each request since the last mark */
    size_t n_log, cap_log;       /* n_log requests logged (the log grows as needed) */
    char violation[400];         /* the first canary found broken at a free, or "" */
} guard_allocator;

/* Set up (a zeroed or fresh struct); 0, or -1. */
int guard_alloc_init(guard_allocator *a);
/* Start a new log (before a run). */
void guard_alloc_mark(guard_allocator *a);
/* 1 when a canary of a live block or of a block already freed was broken
 * (msg: which block, how far past its end); 0 when clean. */
int guard_alloc_check(guard_allocator *a, char *msg, size_t cap);
/* The run's requests against the adapter's needs: every need (bytes) must
 * be met by a request of at least that size, each request meeting one
 * need.  0 when met, else 1 with msg naming the first need left unmet and
 * what was asked for (-1: no memory to judge). */
int guard_alloc_judge(const guard_allocator *a, const size_t *needs, size_t n_needs, char *msg,
                      size_t cap);
/* Frees what is still live; the struct may be initialised again. */
void guard_alloc_destroy(guard_allocator *a);

#endif /* AG_GUARD_ALLOC_H */
