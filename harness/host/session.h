/*
 * session.h — one problem run through one engine by the adapter ABI,
 * without oracles or guards: create, write the caches, plan, then run any
 * layer any number of times.  For the report grid and the benchmarks
 * (which time run and must own where the large buffers live); the oracles
 * use check.c's guarded runs instead.
 */
#ifndef AG_SESSION_H
#define AG_SESSION_H

#include "engine_host.h"
#include "../case/problem.h"

/* Large-buffer allocation (caches, scratch): NULL means aligned_alloc/free.
 * bench/ puts them on huge pages. */
typedef void *(*session_alloc_fn)(size_t bytes, size_t align);
typedef void (*session_free_fn)(void *ptr, size_t bytes);

typedef struct session {
    const engine_host *E;
    const problem *p;
    void *grp, *plan;
    void *k_cache, *v_cache;
    size_t cache_bytes;
    void *scratch;
    ag_plan_info info;
    ag_group_info gi;
    ag_status status;          /* of the last call */
    const char *stage;         /* where it stopped: "create", "kv", "plan", "run", "" */
    ag_msg msg;
    session_alloc_fn alloc;
    session_free_fn free;
} session;

/* Create a group for problem p (materialized) with engine options and a
 * thread count (0: the case's), write both caches, plan with po (NULL:
 * the case's split policy, no redzone) and allocate the scratch.  Returns
 * 0, or -1 with s->status, s->stage and s->msg saying why (s is then
 * already closed). */
int session_open(session *s, const engine_host *E, const problem *p, const char *options,
                 int32_t threads, const ag_plan_opts *po, session_alloc_fn alloc,
                 session_free_fn free_fn);
/* Run layer l with query q (NULL: the problem's) into out (num_tokens x
 * the layer's heads x head_dim, out_dtype).  0, or -1 with status/msg. */
int session_run(session *s, int32_t l, const void *q, void *out);
void session_close(session *s);   /* safe on a closed or failed session */

/* Writes every plain row of p (the slots the caller maps them to) into an
 * engine's caches through write_kv, in 1 to 4 calls cut and ordered by the
 * case's seed, one row skipped (-1) in its call and written alone at the
 * end: the writer is exercised with the arguments a serving engine passes
 * over many steps, not one call.  AG_OK, or the first refusal (msg). */
ag_status session_write_rows(const ag_engine *e, void *grp, void *k_cache, void *v_cache,
                             const problem *p, const int64_t *slots, ag_msg *msg);

#endif /* AG_SESSION_H */
