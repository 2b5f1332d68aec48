/*
 * guard_alloc.c — see guard_alloc.h.  One guard (guard_init_regions, one
 * region covering the block) per request, kept in a list under the mutex;
 * the guard registry, which names a faulting address, is changed under the
 * same mutex.
 */
#include "guard_alloc.h"

#include "guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct guard_block {
    guard g;
    size_t bytes;
    unsigned long serial;        /* the request's number, for messages */
    guard_block *next;
};

static unsigned long g_serial;

/* The canaries of one block; 1 and a message when broken. */
static int block_broken(guard_block *b, char *msg, size_t cap) {
    guard_violation v;
    if (!guard_check(&b->g, &v)) return 0;
    char d[300];
    guard_format_violation(&v, d, sizeof d);
    snprintf(msg, cap, "internal block #%lu (%zu bytes): %s", b->serial, b->bytes, d);
    return 1;
}

static void *ga_alloc(void *ctx, size_t bytes, size_t align) {
    guard_allocator *a = ctx;
    if (align < 8 || (align & (align - 1)) || align > 4096) align = 64;
    guard_block *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_lock(&a->mu);
    b->serial = ++g_serial;
    b->bytes = bytes;
    char label[32];
    snprintf(label, sizeof label, "internal#%lu", b->serial);
    /* a 0-byte block still gets a mapping: its pointer is distinct */
    if (guard_init_regions(&b->g, label, NULL, 0, bytes, align) != 0) {
        pthread_mutex_unlock(&a->mu);
        free(b);
        return NULL;
    }
    b->g.oracle = "scratch-bounds";
    guard_arm(&b->g);
    b->next = a->live;
    a->live = b;
    if (a->n_log == a->cap_log) {
        const size_t cap = a->cap_log ? 2 * a->cap_log : 64;
        size_t *log = realloc(a->log, cap * sizeof *log);
        if (log) a->log = log, a->cap_log = cap;
    }
    /* without room the request goes unlogged: a need it met then shows
     * unmet (a finding to look at, never a bug hidden) */
    if (a->n_log < a->cap_log) a->log[a->n_log++] = bytes;
    pthread_mutex_unlock(&a->mu);
    return b->g.buf;
}

static void ga_free(void *ctx, void *p) {
    guard_allocator *a = ctx;
    if (!p) return;
    pthread_mutex_lock(&a->mu);
    guard_block **pp = &a->live;
    while (*pp && (*pp)->g.buf != p) pp = &(*pp)->next;
    guard_block *b = *pp;
    if (b) {
        *pp = b->next;
        if (!a->violation[0]) block_broken(b, a->violation, sizeof a->violation);
        guard_free(&b->g);
    }
    pthread_mutex_unlock(&a->mu);
    free(b);   /* a pointer this allocator never gave out is left alone */
}

int guard_alloc_init(guard_allocator *a) {
    memset(a, 0, sizeof *a);
    if (pthread_mutex_init(&a->mu, NULL) != 0) return -1;
    a->abi.alloc = ga_alloc;
    a->abi.free = ga_free;
    a->abi.ctx = a;
    return 0;
}

void guard_alloc_mark(guard_allocator *a) {
    pthread_mutex_lock(&a->mu);
    a->n_log = 0;
    pthread_mutex_unlock(&a->mu);
}

int guard_alloc_check(guard_allocator *a, char *msg, size_t cap) {
    int bad = 0;
    pthread_mutex_lock(&a->mu);
    if (a->violation[0]) {
        snprintf(msg, cap, "%s", a->violation);
        bad = 1;
    }
    for (guard_block *b = a->live; b && !bad; b = b->next) bad = block_broken(b, msg, cap);
    pthread_mutex_unlock(&a->mu);
    return bad;
}

static int by_size(const void *x, const void *y) {
    const size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

int guard_alloc_judge(const guard_allocator *a, const size_t *needs, size_t n_needs, char *msg,
                      size_t cap) {
    const size_t ng = a->n_log, nw = n_needs;
    size_t *got = malloc((ng + 1) * sizeof *got), *want = malloc((nw + 1) * sizeof *want);
    unsigned char *used = calloc(ng + 1, 1);
    int res = 0;
    if (!got || !want || !used) {
        res = -1;
        goto out;
    }
    memcpy(got, a->log, ng * sizeof *got);
    memcpy(want, needs, nw * sizeof *want);
    qsort(got, ng, sizeof *got, by_size);
    qsort(want, nw, sizeof *want, by_size);
    /* largest need first, each taking the smallest free request that
     * covers it: a greedy match that finds one whenever one exists */
    for (size_t i = nw; i-- > 0;) {
        size_t j = 0;
        while (j < ng && (used[j] || got[j] < want[i])) j++;
        if (j < ng) {
            used[j] = 1;
            continue;
        }
        size_t u = (size_t)snprintf(msg, cap, "a run needs a buffer of %zu bytes (the op's "
                                    "documented shapes), but of the engine's %zu requests to its "
                                    "allocator none that large was left; the largest:", want[i],
                                    ng);
        for (size_t k = ng; k-- > 0 && u < cap && k + 8 >= ng;)
            u += (size_t)snprintf(msg + u, cap - u, " %zu", got[k]);
        res = 1;
        break;
    }
out:
    free(got), free(want), free(used);
    return res;
}

void guard_alloc_destroy(guard_allocator *a) {
    pthread_mutex_lock(&a->mu);
    guard_block *b = a->live;
    a->live = NULL;
    while (b) {
        guard_block *next = b->next;
        guard_free(&b->g);
        free(b);
        b = next;
    }
    free(a->log);
    a->log = NULL;
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_destroy(&a->mu);
}
