/*
 * session.c — see session.h.
 */
#include "session.h"

#include "../case/rng.h"

#include <stdio.h>
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

/* Every plain row into the engine's caches, in 1 to 4 write_kv calls cut
 * at points and taken in an order drawn from the case's seed (a chunk may
 * start mid-block), with one row of the first call passed as -1 (skipped)
 * and written alone by a last call.  A writer that mishandles a skipped
 * slot, a chunk starting mid-block or calls in any order then shows in the
 * runs that read the cache. */
ag_status session_write_rows(const ag_engine *e, void *grp, void *k_cache, void *v_cache,
                             const problem *p, const int64_t *slots_in, ag_msg *msg) {
    const int32_t rows = (int32_t)(p->row_elems / ((size_t)p->c.num_kv_heads *
                                                   (size_t)p->c.head_dim));
    size_t row_bytes = 0;   /* whole blocks of a block dtype (the problem was built) */
    (void)ag_dtype_bytes(p->c.kv_dtype, (size_t)p->c.num_kv_heads * (size_t)p->c.head_dim,
                         &row_bytes);
    int64_t *slots = malloc(((size_t)rows + 1) * sizeof *slots);
    if (!slots) {
        snprintf(msg->text, sizeof msg->text, "out of memory for %d slots", (int)rows);
        return AG_INTERNAL;
    }
    memcpy(slots, slots_in, (size_t)rows * sizeof *slots);
    uint64_t rng = p->c.seed ^ 0x77726974656b76ull;
    int32_t cut[5] = {0, rows, rows, rows, rows};
    const int n = rows > 3 ? 1 + (int)rng_below(&rng, 4) : 1;
    for (int i = 1; i < n; i++) cut[i] = (int32_t)rng_below(&rng, (uint64_t)rows + 1);
    for (int i = 2; i < n; i++)   /* sort the cuts */
        for (int j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
            const int32_t t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    cut[n] = rows;
    const int first = n > 1 ? (int)rng_below(&rng, (uint64_t)n) : 0;
    const int32_t len = cut[first + 1] - cut[first];
    const int32_t skip = len > 0 ? cut[first] + (int32_t)rng_below(&rng, (uint64_t)len) : -1;
    const int64_t skipped_slot = skip >= 0 ? slots[skip] : -1;
    if (skip >= 0) slots[skip] = -1;
    ag_status st = AG_OK;
    for (int k = 0; k < n && st == AG_OK; k++) {
        const int c = (first + k) % n;   /* the drawn chunk first, then around */
        const int32_t a = cut[c], b = cut[c + 1];
        if (b > a)
            st = e->write_kv(grp, k_cache, v_cache, p->num_blocks,
                             (const char *)p->k_rows + (size_t)a * row_bytes,
                             (const char *)p->v_rows + (size_t)a * row_bytes, b - a, slots + a,
                             msg);
    }
    if (st == AG_OK && skip >= 0)
        st = e->write_kv(grp, k_cache, v_cache, p->num_blocks,
                         (const char *)p->k_rows + (size_t)skip * row_bytes,
                         (const char *)p->v_rows + (size_t)skip * row_bytes, 1, &skipped_slot,
                         msg);
    free(slots);
    return st;
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
    st = session_write_rows(e, s->grp, s->k_cache, s->v_cache, p, slots, &s->msg);
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
