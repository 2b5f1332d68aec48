/*
 * session.c — see session.h.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t bytes, size_t align) {
    if (align < 64) align = 64;
    size_t n = (bytes + align - 1) / align * align;
    return aligned_alloc(align, n ? n : align);
}

static void default_free(void *ptr, size_t bytes) {
    (void)bytes;
    free(ptr);
}

static int stop(session *s, ag_status st, const char *stage) {
    s->status = st;
    s->stage = stage;
    ag_msg keep = s->msg;
    ag_status keep_st = st;
    session_close(s);
    s->msg = keep;
    s->status = keep_st;
    s->stage = stage;
    return -1;
}

int session_open(session *s, const engine_host *E, const problem *p, const char *options,
                 int32_t threads, const ag_plan_opts *po, session_alloc_fn alloc,
                 session_free_fn free_fn) {
    memset(s, 0, sizeof *s);
    s->E = E;
    s->p = p;
    s->alloc = alloc ? alloc : default_alloc;
    s->free = free_fn ? free_fn : default_free;
    const ag_engine *e = E->e;
    if (!p->materialized) {
        snprintf(s->msg.text, sizeof s->msg.text, "the problem has no buffers (%s)",
                 p->unmaterialized_reason ? p->unmaterialized_reason : "?");
        return stop(s, AG_REFUSED, "problem");
    }
    ag_group g = p->group;
    if (threads > 0) g.num_threads = threads;
    g.options = options && options[0] ? options : NULL;
    ag_status st = e->create(E->ctx, &g, &s->grp, &s->msg);
    if (st != AG_OK) {
        s->grp = NULL;
        return stop(s, st, "create");
    }
    if (!e->group_info || e->group_info(s->grp, &s->gi) != AG_OK) memset(&s->gi, 0, sizeof s->gi);
    st = e->kv_cache_bytes(s->grp, p->num_blocks, &s->cache_bytes, &s->msg);
    if (st != AG_OK) return stop(s, st, "kv");
    s->k_cache = s->alloc(s->cache_bytes, 64);
    s->v_cache = s->alloc(s->cache_bytes, 64);
    int64_t *slots = problem_identity_slots(p);
    if (!s->k_cache || !s->v_cache || !slots) {
        free(slots);
        snprintf(s->msg.text, sizeof s->msg.text, "out of memory for %zu-byte caches",
                 s->cache_bytes);
        return stop(s, AG_INTERNAL, "kv");
    }
    const int32_t rows = p->num_blocks * p->c.block_size;
    st = e->write_kv(s->grp, s->k_cache, s->v_cache, p->num_blocks, p->k_rows, p->v_rows, rows,
                     slots, &s->msg);
    free(slots);
    if (st != AG_OK) return stop(s, st, "kv");
    ag_plan_opts own = {p->c.split, p->c.split_count, 0};
    st = e->plan(s->grp, &p->batch, po ? po : &own, &s->plan, &s->info, &s->msg);
    if (st != AG_OK) {
        s->plan = NULL;
        return stop(s, st, "plan");
    }
    s->scratch = s->alloc(s->info.scratch_bytes, s->info.scratch_align);
    if (!s->scratch) {
        snprintf(s->msg.text, sizeof s->msg.text, "out of memory for %zu bytes of scratch",
                 s->info.scratch_bytes);
        return stop(s, AG_INTERNAL, "plan");
    }
    s->status = AG_OK;
    s->stage = "";
    return 0;
}

int session_run(session *s, int32_t l, const void *q, void *out) {
    const problem *p = s->p;
    ag_run_args a;
    memset(&a, 0, sizeof a);
    a.q = q ? q : p->q[l];
    a.k_cache = s->k_cache;
    a.v_cache = s->v_cache;
    a.batch = &p->batch;
    a.num_tokens = p->num_tokens;
    a.scratch = s->scratch;
    a.scratch_bytes = s->info.scratch_bytes;
    a.out = out;
    s->status = s->E->e->run(s->plan, l, &a, &s->msg);
    s->stage = s->status == AG_OK ? "" : "run";
    return s->status == AG_OK ? 0 : -1;
}

void session_close(session *s) {
    if (!s || !s->E) return;
    const ag_engine *e = s->E->e;
    if (s->scratch) s->free(s->scratch, s->info.scratch_bytes);
    if (s->plan) e->plan_destroy(s->plan);
    if (s->k_cache) s->free(s->k_cache, s->cache_bytes);
    if (s->v_cache) s->free(s->v_cache, s->cache_bytes);
    if (s->grp) e->destroy(s->grp);
    s->scratch = s->plan = s->k_cache = s->v_cache = s->grp = NULL;
}
