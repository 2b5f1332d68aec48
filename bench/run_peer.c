/*
 * bench/run_peer.c — `make bench-peer`: attnguard against each peer, in
 * one run.  The first engine given is the one judged (its default variant,
 * and its table held to AVX2 beside it); every other engine runs in each
 * configuration it offers here (engine_configs), and PyTorch (run_torch.h)
 * in each of its formulations; all of them on the same rows, interleaved
 * round by round (row_run: every configuration once per round, PyTorch
 * last), each output checked against the fp64 reference, and a race that
 * stops the configurations whose place is settled (row_race).  Per row
 * (judge): each peer's fastest correct configuration, the best of those,
 * and engine 0's time over the best's, over each peer's default, and held
 * to AVX2 over the fastest peer configuration held to it, each with the
 * spread of the per-round ratios.  Reports: report_peer.c.  No machine
 * limits here: those are `make bench`'s.
 */
#include "run_peer.h"
#include "run_rows.h"
#include "run_torch.h"
#include "report_peer.h"
#include "util_host.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The q/out dtype every engine takes for row s: the row's own, else f32. */
static ag_dtype peer_io(const row_spec *s, const peer_run *run) {
    const ag_dtype own = row_io_dtype(s);
    for (int c = 0; c < run->ncfg; c++) {
        const uint32_t bit = AG_DTYPE_BIT(own);
        if (!(run->cfg[c].E->caps.q_dtypes & bit) || !(run->cfg[c].E->caps.out_dtypes & bit))
            return AG_F32;
    }
    return own;
}

/* base's words, each replaced by over's word of the same key, then over's
 * words of keys base lacks: a kernels variant's words ("cpu=piledriver")
 * put into a layout variant's ("cpu=haswell layout=streams"). */
static void merge_words(const char *base, const char *over, char *out, size_t cap) {
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++)
        for (const char *w = pass ? over : base; *w;) {
            w += strspn(w, " ");
            const size_t n = strcspn(w, " "), kl = strcspn(w, "= ");
            const char *use = w;
            size_t un = n;
            int in_other = 0;
            for (const char *o = pass ? base : over; *o && n;) {
                o += strspn(o, " ");
                const size_t on = strcspn(o, " ");
                if (on && strcspn(o, "= ") == kl && !strncmp(o, w, kl)) in_other = 1, use = o, un = on;
                o += on;
            }
            if (n && (!pass || !in_other)) {
                const size_t u = strlen(out);
                snprintf(out + u, cap - u, "%s%.*s", u ? " " : "", (int)un, use);
            }
            w += n;
        }
}

/* Whether kernel choice `opt` ("cpu=haswell") is one of the comma list
 * `names`. */
static int named_kernel(const char *names, const char *opt) {
    const size_t n = strlen(opt);
    for (const char *w = names; *w;) {
        const size_t len = strcspn(w, ",");
        if (len == n && !strncmp(w, opt, n)) return 1;
        w += len + (w[len] == ',');
    }
    return 0;
}

/* Whether option words `w` hold an engine to the ISA of the ISA-against-
 * ISA comparison: they contain one of BENCH_PEER_ISA's words (a comma
 * list; default "isa=avx2,cpu=haswell": attnguard's AVX2 table, ggml's
 * AVX2 build).  An engine without such a word (ONNX Runtime, vLLM,
 * PyTorch choose their kernels from the CPU themselves) is not in it. */
static int peer_held(const char *w) {
    const char *env = getenv("BENCH_PEER_ISA");
    const char *names = env ? env : "isa=avx2,cpu=haswell";
    for (const char *x = w ? w : ""; *x;) {
        x += strspn(x, " ");
        const size_t n = strcspn(x, " ");
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), x);
        if (n && named_kernel(names, word)) return 1;
        x += n;
    }
    return 0;
}

/* The configurations of engine h: every layout, precision and tuning
 * variant with each kernel choice.  BENCH_PEER_KERNELS says which kernel
 * choices: a count (the default's and the next ones in the engine's
 * order, 2 by default), "all", or a comma list of choices by name
 * ("cpu=haswell,cpu=alderlake": the default's and those, so an ISA the
 * CPU would not pick first can be timed beside it).  A choice that holds
 * the engine to the compared ISA (peer_held) is always added.  The judged
 * engine runs its default, and its held choice when the default is not
 * held. */
static void engine_configs(peer_run *run, const engine_host *h, int judged) {
    peer_engine *pe = &run->eng[run->neng];
    pe->first = run->ncfg;
    const char *env = getenv("BENCH_PEER_KERNELS");
    const int by_name = env && strchr(env, '=') != NULL;
    const int nk = !env ? 2 : by_name || !strcmp(env, "all") ? ENGINE_HOST_MAX_VARIANTS : atoi(env);
    const ag_variant *v = h->variants;
    const char *kern[ENGINE_HOST_MAX_VARIANTS] = {NULL};   /* NULL: the default's */
    int nkern = 1, nheld = 0;
    const int default_held = h->n_variants > 0 && peer_held(v[0].options);
    for (int i = 1; i < h->n_variants; i++) {
        /* an emulated table ("isa=avx512@emu", "isa=amx@sim") is for
         * correctness, many times slower than any real path: never timed */
        if (v[i].kind != AG_VARIANT_KERNELS || strchr(v[i].options, '@')) continue;
        const int held = !default_held && !nheld && peer_held(v[i].options);
        const int next =
            !judged && nkern - nheld < nk && (!by_name || named_kernel(env, v[i].options));
        if (held || next)
            kern[nkern++] = v[i].options, nheld += held;
    }
    for (int b = 0; b < h->n_variants && run->ncfg < ROW_MAX_CONFIGS; b++) {
        if (b > 0 && (judged || v[b].kind == AG_VARIANT_KERNELS)) continue;
        for (int k = 0; k < nkern && run->ncfg < ROW_MAX_CONFIGS; k++) {
            char *w = run->words[run->ncfg];
            if (kern[k]) merge_words(v[b].options, kern[k], w, PEER_LABEL_LEN);
            else snprintf(w, PEER_LABEL_LEN, "%s", v[b].options ? v[b].options : "");
            int dup = 0;
            for (int c = pe->first; c < run->ncfg; c++) dup |= !strcmp(run->words[c], w);
            if (dup) continue;
            /* the default runs with no options, as production does */
            const int dflt = b == 0 && !kern[k];
            run->cfg[run->ncfg] = (row_config){h, dflt ? NULL : w, w};
            run->held[run->ncfg] = peer_held(w);
            /* the race (row_race): the judged engine's configurations run
             * every round; a peer's race the others of their engine (the
             * held ones among themselves; never its default) and the
             * judged configuration of their kind */
            run->pool[run->ncfg] = judged ? -1 : 2 * run->neng + run->held[run->ncfg];
            run->keep[run->ncfg] = dflt;
            /* judged against engine 0's default, or its held table */
            run->ref[run->ncfg] = -1;
            for (int c = 0; !judged && c < run->eng[0].count; c++)
                if (run->held[c] == run->held[run->ncfg]) run->ref[run->ncfg] = c;
            run->ncfg++;
        }
    }
    pe->count = run->ncfg - pe->first;
    snprintf(pe->name, sizeof pe->name, "%s", h->e->name);
    snprintf(pe->summary, sizeof pe->summary, "%s", h->e->summary);
    run->neng++;
}

/* PyTorch's rounds inside row_run's (row_extra). */
typedef struct torch_rounds {
    torch_peer *t;
    peer_row *p;
    int base, n, reps, failed, done;   /* done: timed rounds answered */
    int lead;                          /* row_race's settle: a lead-in call each */
} torch_rounds;

static void torch_round(void *ctx, int it) {
    torch_rounds *x = ctx;
    double sec[TORCH_MAX_FORMS];
    if (x->failed) return;
    if (torch_peer_round(x->t, it, x->lead, sec, x->n) != 0) {
        x->failed = 1;
        return;
    }
    for (int i = 0; it > 0 && it <= ROW_MAX_ROUNDS && i < x->n; i++)
        x->p->r[x->base + i].round_sec[it - 1] = sec[i];
    if (it > 0) x->done++;
}

/* PyTorch's cells after the rounds: medians, the check. */
static void torch_finish(torch_rounds *x, const row_spec *s) {
    double a[TORCH_MAX_FORMS], rel[TORCH_MAX_FORMS];
    const int checked = !x->failed && torch_peer_check(x->t, a, rel, x->n) == 0;
    for (int i = 0; i < x->n; i++) {
        row_result *r = &x->p->r[x->base + i];
        double v[ROW_MAX_ROUNDS];
        int ok = !x->failed && x->done == x->reps;
        for (int k = 0; k < x->reps; k++) ok &= isfinite(v[k] = r->round_sec[k]);
        if (!ok) {
            snprintf(r->why, sizeof r->why, "failed: the PyTorch peer's rounds");
            continue;
        }
        r->ran = 1;
        r->rounds = x->reps;
        r->sec = bench_median(v, x->reps);
        r->cpu_share = NAN;
        r->max_abs_err = checked ? a[i] : INFINITY;
        r->max_rel_err = checked ? rel[i] : INFINITY;
        r->err_rows = s->kind == ROW_DECODE ? s->batch : 16;
    }
    torch_peer_done(x->t);
}

/* Cell us against cell them (either may be -1; none: the verdict when
 * them is): the median of their
 * per-round ratios, both timed in the same round, so that a phase of the
 * machine that moves both cancels (decode B=1 f16 hot on 2 threads: 3
 * slow rounds and 4 fast ones for every engine put attnguard's median in
 * the slow ones and PyTorch's in the fast: 1.11x, though attnguard was
 * ahead in 6 of 7 rounds); the ratio of the medians when them stopped
 * after its check (no round in common). */
static peer_cmp compare(const peer_row *p, int us, int them, const char *none) {
    peer_cmp c = {us, them, 0, INFINITY, 0, NULL};
    c.verdict = us < 0 || !p->r[us].ran ? "did not run"
                : !p->correct[us]       ? "output beyond the sanity bound"
                : them < 0              ? none
                                        : NULL;
    if (c.verdict) return c;
    const row_result *a = &p->r[us], *b = &p->r[them];
    double q[ROW_MAX_ROUNDS];
    int n = 0;
    for (int k = 0; k < a->rounds && k < b->rounds; k++) {
        q[n] = a->round_sec[k] / b->round_sec[k];
        c.rmin = fmin(c.rmin, q[n]), c.rmax = fmax(c.rmax, q[n]);
        n++;
    }
    c.ratio = n ? bench_median(q, n) : a->sec / b->sec;
    if (!n) c.rmin = c.rmax = c.ratio;
    c.verdict = c.ratio >= 1 ? "NOT ahead" : c.rmax < 1 ? "ahead" : "ahead (not in every round)";
    return c;
}

/* Whether cell c is a configuration held to the compared ISA (PyTorch's
 * formulations never are). */
static int cell_held(const peer_run *run, const peer_row *p, int c) {
    return c < run->ncfg && run->held[c] && !run->eng[p->engine_of[c]].torch;
}

/* Winners, the best peer, and engine 0's verdicts: against the best, each
 * peer's default against its default, and held to the ISA against the
 * fastest held peer configuration.  A configuration the race outran is no
 * winner: another of its engine was faster in every round it ran (one it
 * stopped for being far behind engine 0 is: its median is over fewer
 * rounds). */
static void judge(const peer_run *run, peer_row *p) {
    for (int c = 0; c < p->ncell; c++) {
        const row_result *r = &p->r[c];
        p->correct[c] = r->ran && r->nan_count == 0 && r->max_rel_err <= peer_bound(p->spec);
    }
    const int us = run->eng[0].first;
    int us_held = -1, best_held = -1;
    p->best = -1;
    for (int e = 0; e < run->neng; e++) {
        p->winner[e] = -1;
        int dflt = -1;
        for (int c = 0; c < p->ncell; c++) {
            if (p->engine_of[c] != e) continue;
            /* an engine's default: its configuration without options,
             * PyTorch's first formulation */
            if (dflt < 0 && (run->eng[e].torch || !run->cfg[c].options)) dflt = c;
            if (e == 0 && us_held < 0 && cell_held(run, p, c)) us_held = c;
            if (!p->correct[c] || p->r[c].outrun) continue;
            if (p->winner[e] < 0 || p->r[c].sec < p->r[p->winner[e]].sec) p->winner[e] = c;
            if (e > 0 && cell_held(run, p, c) &&
                (best_held < 0 || p->r[c].sec < p->r[best_held].sec))
                best_held = c;
        }
        if (e > 0 && p->winner[e] >= 0 && (p->best < 0 || p->r[p->winner[e]].sec < p->r[p->best].sec))
            p->best = p->winner[e];
        if (e > 0)
            p->vs_default[e] = compare(p, us, dflt >= 0 && p->correct[dflt] ? dflt : -1,
                                       "its default did not run correctly");
    }
    /* engine 0's winner is its default unless it ran its held table too */
    p->winner[0] = us < p->ncell && p->correct[us] ? us : -1;
    const peer_cmp best = compare(p, us, p->best, "no peer ran correctly");
    p->ratio = best.ratio, p->rmin = best.rmin, p->rmax = best.rmax, p->verdict = best.verdict;
    p->isa = cell_held(run, p, us) ? (peer_cmp){-1, -1, 0, 0, 0, "its default is held to the ISA"}
             : compare(p, us_held, best_held, "no held peer ran correctly");
}

static void run_row(peer_run *run, torch_peer *torch, peer_row *p) {
    const row_spec *s = p->spec;
    const int reps = bench_row_reps(s) < ROW_MAX_ROUNDS ? bench_row_reps(s) : ROW_MAX_ROUNDS;
    for (int c = 0; c < run->ncfg; c++) {
        snprintf(p->label[c], PEER_LABEL_LEN, "%s", run->cfg[c].label);
        for (int e = 0; e < run->neng; e++)
            if (c >= run->eng[e].first && c < run->eng[e].first + run->eng[e].count) p->engine_of[c] = e;
    }
    p->ncell = run->ncfg;
    torch_rounds tr = {torch, p, run->ncfg, 0, reps, 0, 0, run->settle_ms > 0 && p->threads > 1};
    if (torch) {
        char form[TORCH_MAX_FORMS][TORCH_FORM_LEN];
        tr.n = torch_peer_row(torch, s, p->threads, form, p->torch_why, sizeof p->torch_why);
        if (tr.n < 0) tr.n = 0;   /* the peer is gone: its why says so */
        for (int i = 0; i < tr.n; i++) {
            snprintf(p->label[p->ncell], PEER_LABEL_LEN, "%.*s", TORCH_FORM_LEN - 1, form[i]);
            p->engine_of[p->ncell++] = run->neng - 1;
        }
    }
    const row_extra extra = {&tr, torch_round};
    const row_race race = {run->race_after, run->race_margin, run->race_far, peer_bound(s),
                           run->pool,       run->keep,        run->ref,      run->settle_ms};
    if (row_run(s, run->cfg, run->ncfg, p->threads, reps, p->io, p->r, tr.n ? &extra : NULL,
                run->race_after > 0 ? &race : NULL) != 0)
        fprintf(stderr, "bench: %s: %s\n", p->name, p->r[0].why);
    if (tr.n) torch_finish(&tr, s);
    judge(run, p);
}

static void print_row(const peer_run *run, const peer_row *p) {
    printf("%-36s %d thr", p->name, p->threads);
    for (int e = 0; e < run->neng; e++) {
        const int w = p->winner[e];
        if (w < 0) printf(" | %s: none", run->eng[e].name);
        else printf(" | %s %.2f ms", run->eng[e].name, p->r[w].sec * 1e3);
    }
    if (p->best >= 0 && p->ratio > 0)
        printf(" | %.2fx (%.2f..%.2f) %s\n", p->ratio, p->rmin, p->rmax, p->verdict);
    else printf(" | %s\n", p->verdict);
    fflush(stdout);
}

int run_peer(const char *engines, const char *torch_cmd, const char *outdir) {
    static engine_host hs[PEER_MAX_ENGINES];
    static peer_run run;
    static peer_row rows[BENCH_MAX_RESULTS];
    memset(&run, 0, sizeof run);
    int nh = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", engines);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (nh == PEER_MAX_ENGINES - 1) {
            fprintf(stderr, "bench: at most %d engines\n", PEER_MAX_ENGINES - 1);
            return 1;
        }
        if (bench_open_engine(&hs[nh], t) != 0) return 1;
        engine_configs(&run, &hs[nh], nh == 0);
        nh++;
    }
    if (nh == 0) {
        fprintf(stderr, "bench: no engine given\n");
        return 1;
    }
    torch_peer *torch = NULL;
    if (torch_cmd && *torch_cmd) {
        torch = torch_peer_start(torch_cmd, run.torch_info, sizeof run.torch_info);
        if (!torch) {
            fprintf(stderr, "bench: PyTorch peer: %s\n", run.torch_info);
            return 1;
        }
        peer_engine *pe = &run.eng[run.neng++];
        snprintf(pe->name, sizeof pe->name, "torch");
        snprintf(pe->summary, sizeof pe->summary, "PyTorch: %.120s (bench/peer_forms.py)",
                 run.torch_info);
        pe->torch = 1;
    }
    for (int e = 0; e < run.neng; e++) {
        printf("%s:", run.eng[e].name);
        for (int c = run.eng[e].first; c < run.eng[e].first + run.eng[e].count; c++)
            printf(" [%s]", run.cfg[c].label[0] ? run.cfg[c].label : "default");
        printf("%s\n", run.eng[e].torch ? " [each row's formulations]" : "");
    }
    /* BENCH_PEER_RACE="ROUNDS,MARGIN,FAR" (default 2,1.25,2; 0: no race):
     * after ROUNDS timed rounds a peer's configuration stops when in each
     * round it took more than MARGIN times its engine's fastest right one
     * (but an engine's default), or more than FAR times attnguard's
     * (row_race).  Within one round the configurations run back to back,
     * so a phase of the machine touches them alike: 1.25 in every round
     * is far outside what one configuration's rounds spread here, and
     * past 2x the verdict against it is settled (ONNX Runtime's f16
     * decode, 60x attnguard's time, would otherwise take a third of the
     * grid). */
    const char *race = getenv("BENCH_PEER_RACE");
    run.race_after = 2, run.race_margin = 1.25, run.race_far = 2;
    if ((race && sscanf(race, "%d,%lf,%lf", &run.race_after, &run.race_margin,
                        &run.race_far) < 1) ||
        run.race_after < 0 || run.race_margin < 1 || run.race_far < 1) {
        fprintf(stderr, "bench: BENCH_PEER_RACE=%s: want ROUNDS,MARGIN,FAR with MARGIN, FAR >= 1\n",
                race);
        return 1;
    }
    /* BENCH_PEER_SETTLE_MS (default 5; 0: none): on 2 threads each timed
     * run follows that pause and an untimed run of its own (row_race).
     * Without it, decode B=1 f32 hot on 2 threads gave attnguard 2.23 ms
     * (per round 0.24-3.23x PyTorch's), with 5 ms 0.88 ms (0.74-1.36x):
     * whoever ran after PyTorch or ORT shared a core with their spinning
     * workers. */
    const char *settle = getenv("BENCH_PEER_SETTLE_MS");
    run.settle_ms = settle ? atoi(settle) : 5;
    if (run.settle_ms < 0 || run.settle_ms > 10000) {
        fprintf(stderr, "bench: BENCH_PEER_SETTLE_MS=%s: want 0 .. 10000\n", settle);
        return 1;
    }
    run.rows = rows;
    for (int t = 1; t <= bench_threads_max(); t++)
        for (int i = 0; i < bench_num_rows && run.nrows < BENCH_MAX_RESULTS; i++) {
            const row_spec *s = &bench_rows[i];
            if (bench_skip_row(s)) continue;
            peer_row *p = &rows[run.nrows++];
            memset(p, 0, sizeof *p);
            p->spec = s;
            p->threads = t;
            p->io = peer_io(s, &run);
            row_name(s, p->name, sizeof p->name);
            run_row(&run, torch, p);
            print_row(&run, p);
        }
    peer_write(outdir, &run);
    torch_peer_stop(torch);
    for (int e = 0; e < nh; e++) engine_host_close(&hs[e]);
    return 0;
}
