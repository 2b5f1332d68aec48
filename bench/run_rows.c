/*
 * bench/run_rows.c — see run_rows.h: the rows the environment keeps, and
 * one row (row_run) through several configurations: sessions on huge
 * pages (one per cold rotation, all of a configuration's rotations sharing
 * one scratch), the configurations of one engine sharing that engine's
 * caches, untimed passes, timed runs interleaved configuration by
 * configuration round by round (with an extra peer, bench-peer's PyTorch,
 * at the end of each round), and a check of every configuration's output
 * against the fp64 reference on sampled query rows.
 */
#include "run_rows.h"
#include "run_inputs.h"
#include "util_host.h"

#include "../harness/host/session.h"
#include "../harness/judge/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- narrowing */

#define REPS 7   /* timed batches of a row, but cold decode and prefill rows */

/* 1 when a word of `only` (comma- or space-separated) begins `part`:
 * "decode" takes decode1 and decode8. */
static int only_takes(const char *only, const char *part) {
    for (const char *w = only; *w;) {
        w += strspn(w, ", ");
        const size_t n = strcspn(w, ", ");
        if (n && strncmp(part, w, n) == 0) return 1;
        w += n;
    }
    return 0;
}

int bench_skip_row(const row_spec *r) {
    const char *only = getenv("BENCH_ONLY"), *dt = getenv("BENCH_DTYPE"), *hkv = getenv("BENCH_HKV");
    if (only && !only_takes(only, r->part)) return 1;
    if (dt && r->kind != ROW_LAGUNA && strcmp(dt, ag_dtype_name(r->kv)) != 0) return 1;
    if (hkv && r->kind == ROW_PREFILL && atoi(hkv) != r->hkv) return 1;
    return 0;
}

int bench_threads_max(void) {
    const char *t = getenv("BENCH_THREADS");
    return t && atoi(t) == 1 ? 1 : 2;
}

/* Timed batches of a row: cold decode rows twice the rest (their
 * rotation makes single runs noisier), prefill 5. */
int bench_row_reps(const row_spec *r) {
    return r->kind == ROW_PREFILL ? 5 : r->kind == ROW_DECODE && r->cold ? 2 * REPS : REPS;
}

int bench_open_engine(engine_host *h, const char *name) {
    char err[AG_MSG_TEXT_LEN + 64];
    if (engine_host_open(h, name, NULL, err, sizeof err) == 0) return 0;
    fprintf(stderr, "bench: %s\n", err);
    return -1;
}

/* ------------------------------------------------------------- one row */

typedef struct row_engine {
    session s[MAX_GROUPS][MAX_ROT];
    int opened[MAX_GROUPS];
    int borrowed;            /* its caches are another configuration's */
    void *out[MAX_GROUPS];
    double *times;
    double cpu, wall;
} row_engine;

static void engine_free(row_engine *x, int ngroups) {
    for (int g = 0; g < ngroups; g++) {
        for (int k = x->opened[g] - 1; k >= 0; k--) {
            session *s = &x->s[g][k];
            /* a borrower's session must not free its owner's caches, nor
             * a rotation the scratch it shares with rotation 0 */
            if (x->borrowed) s->k_cache = s->v_cache = NULL;
            if (k > 0 && s->scratch == x->s[g][0].scratch) s->scratch = NULL;
            session_close(s);
        }
        free(x->out[g]);
    }
    free(x->times);
}

/* Wait ms milliseconds, busy (row_race's settle): the other engines'
 * workers stop spinning all the same, and a short busy pause leaves the
 * next run as fast as back to back (decode B=1 f32 hot on 2 threads,
 * attnguard alone: 0.72-0.78 ms back to back, 0.74-0.81 after 5 ms busy
 * and a run of its own, 0.92-1.31 after a 30 ms nanosleep and that run). */
static void settle_for(int ms) {
    const double end = bench_now() + ms * 1e-3;
    while (bench_now() < end) {}
}

/* One batch (every group) on rotation k; 0, or -1 with why. */
static int run_batch(row_engine *x, row_group *grp, int ngroups, int k, char *why, size_t cap) {
    for (int g = 0; g < ngroups; g++) {
        session *s = &x->s[g][k];
        if (session_run(s, 0, grp[g].q, x->out[g]) != 0) {
            snprintf(why, cap, "failed: run: %s %s: %s", ag_status_name(s->status), s->msg.code,
                     s->msg.text);
            return -1;
        }
    }
    return 0;
}

/* A session of configuration `options` over session `from`'s caches: the
 * ABI lets every group of one KV spec read caches written through any of
 * them, so one engine's configurations share one set of caches (cold rows
 * hold >= 1.5 GiB of them per set).  0, or -1 with s->status, stage, msg. */
static int session_over(session *s, const session *from, const char *options, int threads) {
    memset(s, 0, sizeof *s);
    s->E = from->E, s->p = from->p, s->alloc = from->alloc, s->free = from->free;
    const ag_engine *e = s->E->e;
    const problem *p = s->p;
    ag_group g = p->group;
    g.num_threads = threads;
    g.options = options;
    size_t bytes = 0;
    s->stage = "create";
    if ((s->status = e->create(s->E->ctx, &g, &s->grp, &s->msg)) != AG_OK) {
        s->grp = NULL;
        return -1;
    }
    if (!e->group_info || e->group_info(s->grp, &s->gi) != AG_OK) memset(&s->gi, 0, sizeof s->gi);
    s->stage = "kv";
    if ((s->status = e->kv_cache_bytes(s->grp, p->num_blocks, &bytes, &s->msg)) != AG_OK)
        return -1;
    if (bytes != from->cache_bytes) {   /* the layout may not depend on options */
        s->status = AG_INTERNAL;
        snprintf(s->msg.text, sizeof s->msg.text, "cache of %zu bytes, %zu for the default: the "
                 "layout depends on the options", bytes, from->cache_bytes);
        return -1;
    }
    s->k_cache = from->k_cache, s->v_cache = from->v_cache, s->cache_bytes = from->cache_bytes;
    const ag_plan_opts own = {p->c.split, p->c.split_count, 0};
    s->stage = "plan";
    if ((s->status = e->plan(s->grp, &p->batch, &own, &s->plan, &s->info, &s->msg)) != AG_OK) {
        s->plan = NULL;
        return -1;
    }
    s->scratch = s->alloc(s->info.scratch_bytes, s->info.scratch_align);
    if (!s->scratch) {
        s->status = AG_INTERNAL;
        snprintf(s->msg.text, sizeof s->msg.text, "out of memory for %zu bytes of scratch",
                 s->info.scratch_bytes);
        return -1;
    }
    s->status = AG_OK;
    s->stage = "";
    return 0;
}

/* Open configuration C's sessions for every group and rotation (over
 * owner's caches when owner is not NULL).  0 ok, 1 the configuration
 * cannot express the row (why), -1 a failure (why). */
static int engine_open(row_engine *x, const row_config *C, const row_engine *owner,
                       row_group *grp, int ngroups, int rot, int threads, row_result *res) {
    x->borrowed = owner != NULL;
    for (int g = 0; g < ngroups; g++) {
        char why[160];
        if (engine_host_unsupported(C->E, &grp[g].p.c, why, sizeof why)) {
            snprintf(res->why, sizeof res->why, "skipped: the engine lacks %s", why);
            return 1;
        }
        for (int k = 0; k < rot; k++) {
            session *s = &x->s[g][k];
            const int rc = owner ? session_over(s, &owner->s[g][k], C->options, threads)
                                 : session_open(s, C->E, &grp[g].p, C->options, threads, NULL,
                                                bench_big_alloc, bench_big_free);
            if (owner && rc != 0) {   /* session_open closes itself on failure */
                s->k_cache = s->v_cache = NULL;
                const ag_msg m = s->msg;
                const ag_status st = s->status;
                const char *stage = s->stage;
                session_close(s);
                s->msg = m, s->status = st, s->stage = stage;
            }
            if (rc != 0) {
                snprintf(res->why, sizeof res->why, "%s: %s: %s %s: %.120s",
                         s->status == AG_UNSUPPORTED ? "skipped" : "failed", s->stage,
                         ag_status_name(s->status), s->msg.code, s->msg.text);
                return s->status == AG_UNSUPPORTED ? 1 : -1;
            }
            x->opened[g] = k + 1;
            /* One scratch per configuration and group, shared by its
             * rotations: a serving engine reuses its scratch batch after
             * batch, and a copy per rotation of an engine's gathered K/V
             * (ONNX Runtime's live in its scratch) would hold another
             * >= 1.5 GiB per configuration on cold rows. */
            const session *s0 = &x->s[g][0];
            if (k > 0 && s->scratch && s->info.scratch_bytes == s0->info.scratch_bytes &&
                s->info.scratch_align <= s0->info.scratch_align) {
                s->free(s->scratch, s->info.scratch_bytes);
                s->scratch = s0->scratch;
            }
        }
        snprintf(res->kernels, sizeof res->kernels, "%s", x->s[g][0].gi.kernels);
        x->out[g] = bench_big_alloc(grp[g].out_bytes, 64);
        if (!x->out[g]) {
            snprintf(res->why, sizeof res->why, "failed: out of memory for the output");
            return -1;
        }
    }
    return 0;
}

/* After timing (and in a race before it too): one more run into a
 * NaN-filled output, every element written and the sampled rows against
 * the reference; the group's detail read again, so that it tells what the
 * plans did (ggml: fallbacks).  Returns the runs' seconds. */
static double engine_check(row_engine *x, row_group *grp, int ngroups, row_result *res) {
    double sec = 0;
    for (int g = 0; g < ngroups; g++) {
        const problem *p = &grp[g].p;
        const ag_dtype od = p->c.out_dtype;
        const size_t n = problem_out_elems(p, 0), hd = n / (size_t)p->num_tokens;
        session *s = &x->s[g][0];
        memset(x->out[g], 0xff, grp[g].out_bytes);   /* NaN in every dtype */
        const double t0 = bench_now();
        if (session_run(s, 0, grp[g].q, x->out[g]) != 0) {
            snprintf(res->why, sizeof res->why, "failed: check run: %s", s->msg.text);
            res->ran = 0;
            return sec;
        }
        sec += bench_now() - t0;
        ag_group_info gi;
        if (s->E->e->group_info && s->E->e->group_info(s->grp, &gi) == AG_OK)
            snprintf(res->detail, sizeof res->detail, "%s", gi.detail);
        for (size_t i = 0; i < n; i++) res->nan_count += isnan(cmp_elem_get(x->out[g], i, od));
        /* A speed figure's sanity check, not the verdict on correctness
         * (the report grid and the fuzz targets judge that, by intervals):
         * the largest error, absolute and relative to the largest output. */
        double big = 0;
        for (int j = 0; j < grp[g].n_tok; j++)
            for (size_t e = 0; e < hd; e++) {
                const double want = grp[g].ref[(size_t)j * hd + e];
                const double got = cmp_elem_get(x->out[g], (size_t)grp[g].tok[j] * hd + e, od);
                const double err = fabs(got - want);
                if (err > res->max_abs_err || isnan(err)) res->max_abs_err = isnan(err) ? INFINITY : err;
                if (fabs(want) > big) big = fabs(want);
            }
        const double rel = big > 0 ? res->max_abs_err / big : res->max_abs_err > 0 ? INFINITY : 0;
        if (rel > res->max_rel_err) res->max_rel_err = rel;
        res->err_rows = grp[g].n_tok;
    }
    return sec;
}

/* Rotations of a row: enough distinct caches that a timed batch finds
 * none of its KV in any cache level (1 for hot rows). */
static int rotations(const row_spec *r, const row_group *grp, int ngroups) {
    if (!r->cold) return 1;
    double batch = 0;
    for (int g = 0; g < ngroups; g++)
        batch += 2.0 * (double)grp[g].p.row_elems * (double)ag_dtype_size(r->kv);
    const int rot = (int)ceil(COLD_BYTES / batch);
    return rot < 3 ? 3 : rot > MAX_ROT ? MAX_ROT : rot;
}

/* The race's verdict after timed rounds 1..k (row_race): which live
 * configurations stop, decided for all before any stops.  Far behind
 * their judged configuration from the first round on; outrun by another
 * of their pool only at k = race->after. */
static void race_drop(const row_race *race, int k, int n, int threads, row_engine *eng, int *live,
                      const int *wrong, const row_result *pre, row_result *res) {
    int drop[ROW_MAX_CONFIGS] = {0}, outrun[ROW_MAX_CONFIGS] = {0};
    for (int e = 0; e < n; e++) {
        if (!live[e] || race->pool[e] < 0) continue;
        const int r = race->ref[e];
        int slower = !race->keep[e] && k == race->after, far = r >= 0 && live[r];
        for (int j = 1; j <= k; j++) {
            double best = INFINITY;
            for (int o = 0; o < n; o++)
                if (live[o] && !wrong[o] && race->pool[o] == race->pool[e])
                    best = fmin(best, eng[o].times[j]);
            slower &= eng[e].times[j] > race->margin * best;
            far = far && eng[e].times[j] > race->far * eng[r].times[j];
        }
        drop[e] = (wrong[e] && k == race->after) || slower || far;
        outrun[e] = slower;
    }
    for (int e = 0; e < n; e++) {
        if (!drop[e]) continue;
        live[e] = 0;
        res[e] = pre[e];   /* the check's errors: the one run it had */
        res[e].ran = 1;
        res[e].stopped = 1;
        res[e].rounds = k;
        res[e].outrun = outrun[e];
        memcpy(res[e].round_sec, eng[e].times + 1, (size_t)k * sizeof(double));
        res[e].sec = bench_median(eng[e].times + 1, k);
        res[e].cpu_share = eng[e].cpu / (eng[e].wall * threads);
    }
}

int row_run(const row_spec *r, const row_config *C, int n, int threads, int reps, ag_dtype io,
            row_result *res, const row_extra *extra, const row_race *race) {
    static row_group grp[MAX_GROUPS];
    static row_engine eng[ROW_MAX_CONFIGS];
    int ngroups = 0, rc = 0;
    if (n > ROW_MAX_CONFIGS) n = ROW_MAX_CONFIGS;
    if (reps > ROW_MAX_ROUNDS) reps = ROW_MAX_ROUNDS;
    memset(res, 0, (size_t)n * sizeof *res);
    memset(grp, 0, sizeof grp);
    memset(eng, 0, sizeof eng);
    if (row_build_groups(r, io, grp, &ngroups, res[0].why, sizeof res[0].why) != 0) {
        rc = -1;
        goto out;
    }
    const int rot = rotations(r, grp, ngroups);
    int live[ROW_MAX_CONFIGS] = {0};
    for (int e = 0; e < n; e++) {
        res[e].rotations = rot;
        /* the first live configuration of the same engine owns the caches */
        const row_engine *owner = NULL;
        for (int o = 0; o < e && !owner; o++)
            if (C[o].E == C[e].E && live[o] && !eng[o].borrowed) owner = &eng[o];
        const int o = engine_open(&eng[e], &C[e], owner, grp, ngroups, rot, threads, &res[e]);
        eng[e].times = malloc((size_t)(reps + 1) * sizeof(double));
        live[e] = o == 0 && eng[e].times;
        if (o == 0 && !eng[e].times) snprintf(res[e].why, sizeof res[e].why, "failed: no memory");
    }
    /* The plain rows were copied into every engine's caches; the sampled
     * reference is computed: free them before timing. */
    for (int g = 0; g < ngroups; g++) {
        free(grp[g].p.k_rows), free(grp[g].p.v_rows);
        grp[g].p.k_rows = grp[g].p.v_rows = NULL;
    }
    /* In a race every configuration is checked first, so that the race
     * knows which are right (rotation 0's run, before the untimed pass
     * that leaves it out of the caches again). */
    static row_result pre[ROW_MAX_CONFIGS];
    int wrong[ROW_MAX_CONFIGS] = {0};
    double csec[ROW_MAX_CONFIGS] = {0};
    for (int e = 0; race && e < n; e++) {
        if (!live[e]) continue;
        pre[e] = res[e];
        pre[e].ran = 1;
        csec[e] = engine_check(&eng[e], grp, ngroups, &pre[e]);
        wrong[e] = !pre[e].ran || pre[e].nan_count || !(pre[e].max_rel_err <= race->bound);
    }
    /* A right configuration whose check took more than twice `far` times
     * its judged one's stops there (ggml's Laguna batch: 7 s a run
     * against 0.5): the check is each one's first run, page faults and
     * all, so the margin is wider than a timed round's. */
    for (int e = 0; race && e < n; e++) {
        const int j = race->ref[e];
        if (!live[e] || wrong[e] || race->pool[e] < 0 || j < 0 || !live[j] || wrong[j] ||
            !(csec[e] > 2 * race->far * csec[j]))
            continue;
        live[e] = 0;
        res[e] = pre[e];
        res[e].stopped = 1, res[e].rounds = 0, res[e].sec = csec[e];
        res[e].cpu_share = NAN;
    }
    /* Cold runs start after one untimed pass over every rotation: right
     * after write_kv the caches are full of dirty lines, and each read miss
     * would also write one back (a serving engine reads KV written long
     * before: clean lines).  One pass per set of caches is enough: the
     * configurations that borrow a set read lines its owner cleaned (and
     * 96 rotations of B=1 f16 through ONNX Runtime's six took a minute). */
    for (int k = 1; r->cold && k < rot; k++)
        for (int e = 0; e < n; e++)
            if (live[e] && !eng[e].borrowed &&
                run_batch(&eng[e], grp, ngroups, k, res[e].why, sizeof res[e].why))
                live[e] = 0;
    /* Round `it` (0: warm-up: page faults, thread pools) runs every
     * configuration once, in order, then the extra peer.  Each run takes
     * the next rotation, so that no configuration finds in the caches the
     * KV the one before it read (configurations of one engine share
     * caches).  In a race on a hot row the check was the warm-up (the same
     * rotation; ggml's bf16 prefill takes 4 s a run). */
    const int checked_warm = race && rot == 1;
    const int settle = race && race->settle_ms > 0 && threads > 1;
    for (int it = 0, seq = 0; it <= reps; it++) {
        for (int e = 0; e < n; e++, seq++) {
            if (!live[e] || (it == 0 && checked_warm)) continue;
            const int k = seq % rot;
            if (settle) {
                settle_for(race->settle_ms);
                const int before = (k + rot - 1) % rot;
                if (run_batch(&eng[e], grp, ngroups, before, res[e].why, sizeof res[e].why)) {
                    live[e] = 0;
                    continue;
                }
            }
            const double c0 = bench_cpu_now(), t0 = bench_now();
            if (run_batch(&eng[e], grp, ngroups, k, res[e].why, sizeof res[e].why)) {
                live[e] = 0;
                continue;
            }
            eng[e].times[it] = bench_now() - t0;
            if (it) {
                eng[e].wall += eng[e].times[it];
                eng[e].cpu += bench_cpu_now() - c0;
            }
        }
        if (settle && extra && extra->round) settle_for(race->settle_ms);
        if (extra && extra->round) extra->round(extra->ctx, it);
        if (race && it >= 1 && it <= race->after && it < reps)
            race_drop(race, it, n, threads, eng, live, wrong, pre, res);
    }
    for (int e = 0; e < n; e++) {
        if (!live[e]) continue;
        res[e].ran = 1;
        res[e].rounds = reps;
        memcpy(res[e].round_sec, eng[e].times + 1, (size_t)reps * sizeof(double));
        res[e].sec = bench_median(eng[e].times + 1, reps);   /* sorts times, not round_sec */
        res[e].cpu_share = eng[e].cpu / (eng[e].wall * threads);
        engine_check(&eng[e], grp, ngroups, &res[e]);
    }
out:
    for (int e = n - 1; e >= 0; e--) engine_free(&eng[e], ngroups);   /* owners last */
    for (int g = 0; g < MAX_GROUPS; g++) row_group_free(&grp[g]);
    return rc;
}
