/*
 * check.c — `attnguard check [--engine E] FILE.case...`: each case through
 * the same oracles as the fuzz targets (check_case) against the chosen
 * engine, one line per layer, one verdict per case, one summary.
 *
 * Owns: what a verdict means.  PASS: every oracle ran and none fired (or
 * the case expected a refusal and got it).  FAIL: an oracle fired, or the
 * file does not load.  SKIP: the chosen engine lacks a capability that
 * attnguard's own engine has, or the case's options are words of another
 * engine (counted, not an error).  NOT RUN: the case
 * cannot be judged as written — it expects success but carries a defect
 * the engine must refuse, needs what no engine here computes, or stopped
 * at a resource limit before any output was compared; the line names the
 * field, its value and its line in the file.  Exit status 0 when every
 * case passed or was skipped, 1 otherwise, 2 on usage errors.
 */
#include "cli.h"

#include "../case/validity.h"
#include "../host/engine_host.h"
#include "../host/isolate.h"
#include "../judge/oracles.h"
#include "engine_pick.h"
#include "repro_verdict.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum verdict { V_PASS, V_FAIL, V_SKIP, V_NOT_RUN, V_COUNT };

/* The compute budget: the multiply-adds a case may give the reference and
 * the engine together (check_work_estimate) before check declines to run
 * it, and the most one guarded run's plan may declare (run_macs).  2^34
 * (1.7e10) is about a minute of check on a laptop-class core: three times
 * what the costliest shipped case is estimated at on any engine here.
 * $ATTNGUARD_MAX_WORK sets another (0 or none: no budget). */
#define CHECK_DEFAULT_MAX_WORK ((uint64_t)1 << 34)
#define MAX_WORK_ENV "ATTNGUARD_MAX_WORK"

/* The budget from the environment: 0 with *out set (0: none), or -1 with
 * a message. */
static int max_work(uint64_t *out, char *err, size_t cap) {
    const char *v = getenv(MAX_WORK_ENV);
    *out = CHECK_DEFAULT_MAX_WORK;
    if (!v || !*v) return 0;
    if (strcmp(v, "none") == 0) {
        *out = 0;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    const double d = strtod(v, &end);   /* 1e12 reads as well as 1000000000000 */
    if (errno || end == v || *end || !(d >= 0) || d >= 0x1p64) {
        snprintf(err, cap, "%s='%.40s': not a number of multiply-adds from 0 to 2^64 (0 or "
                 "none: no budget)", MAX_WORK_ENV, v);
        return -1;
    }
    *out = (uint64_t)d;
    return 0;
}
static uint64_t g_max_work;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_window(int32_t l, int32_t r) {
    if (l == -1 && r == -1) printf("none");
    else printf("(%d, %d)", (int)l, (int)r);
}

/* "corpus/cases/x.case line 7 (layer.1)" for key k of c, or the path. */
static void where(char *buf, size_t cap, const char *path, const case_spec *c, case_key k,
                  int32_t index) {
    const int32_t line = case_line(c, k, index);
    char key[24];
    if (k == CASE_KEY_LAYER) snprintf(key, sizeof key, "layer.%d", (int)index);
    else snprintf(key, sizeof key, "%s", case_key_name(k));
    if (line) snprintf(buf, cap, "%s line %d (%s)", path, (int)line, key);
    else snprintf(buf, cap, "%s (%s, not set in the file: its default)", path, key);
}

/* A case that expects success but carries defects cannot be run: name
 * each (field, value, line) instead of judging the engine's correct
 * refusal.  1 if it printed such a verdict. */
static int defective(const char *path, const case_spec *c, const engine_host *E) {
    if (c->expect != AG_R_NONE) return 0;
    case_defects d;
    const validity_engine ve = engine_host_validity(E);
    validity_defects(c, &ve, &d);
    if (d.unexpressible) {
        printf("%s  NOT RUN: more layers or requests than a case holds (%s)\n", c->name, path);
        return 1;
    }
    if (d.n == 0) return 0;
    for (int i = 0; i < d.n; i++) {
        char at[160];
        where(at, sizeof at, path, c, d.d[i].key, d.d[i].index);
        printf("%s  NOT RUN: %s (%s): the case expects ok, but engine %s must refuse this as %s%s\n",
               c->name, d.d[i].what, at, E->e->name, ag_refusal_name((ag_refusal)d.d[i].kind),
               d.d[i].limit ? " (a limit it declares)" : "");
    }
    return 1;
}

/* A case the chosen engine cannot express: a counted skip when attnguard's
 * own engine can (another engine's gap) or when the case's options are
 * another engine's words (docs/case-format.md: the case belongs to that
 * engine, so what attnguard's engine lacks says nothing), else NOT RUN
 * (nothing here can).  Returns V_COUNT when the engine can express it. */
static enum verdict unsupported(const char *path, const case_spec *c, const engine_host *E,
                                const engine_host *own, char *skipped, size_t cap) {
    char why[128];
    case_key k;
    int32_t index;
    if (!engine_host_unsupported_at(E, c, why, sizeof why, &k, &index)) return V_COUNT;
    char own_why[128];
    case_key ok;
    int32_t oi;
    /* a block (quantized) cache is ggml's: attnguard's own engine lacking
     * it is another engine's gap, counted, not a case nothing here runs */
    const int block_kv = (unsigned)c->kv_dtype < AG_DTYPE_COUNT && ag_dtype_block(c->kv_dtype) > 1;
    if (own && engine_host_unsupported_at(own, c, own_why, sizeof own_why, &ok, &oi) &&
        !(ok == CASE_KEY_KV_DTYPE && block_kv) && ok != CASE_KEY_OPTIONS) {
        char at[160];
        where(at, sizeof at, path, c, ok, oi);
        printf("%s  NOT RUN: it needs %s (%s), which no engine here computes%s\n", c->name,
               own_why, at, ok == CASE_KEY_Q_DTYPE || ok == CASE_KEY_OUT_DTYPE
                                ? " (fp8 is a KV-cache type: docs/design.md, section 2)"
                                : "");
        return V_NOT_RUN;
    }
    printf("%s  SKIP (%s lacks: %s)\n", c->name, E->e->name, why);
    snprintf(skipped, cap, "%s", why);
    return V_SKIP;
}

/* " (E of N elements, R of T rows unjudged: <reason> R1 rows E1 elements,
 * ...)": every reason ref.h's list names that left something open. */
static void print_unjudged(const cmp_result *cmp, const ref_unjudged *why) {
    printf(" (%zu of %zu elements, %llu of %llu rows unjudged:", cmp->unjudged, cmp->n,
           (unsigned long long)why->rows, (unsigned long long)why->rows_all);
    const char *sep = " ";
    for (int32_t w = 0; w < REF_WHY_COUNT; w++) {
        if (!why->elems[w]) continue;
        printf("%s%s %llu rows %llu elements", sep, ref_why_name(w),
               (unsigned long long)why->rows_why[w], (unsigned long long)why->elems[w]);
        sep = ", ";
    }
    printf(")");
}

static void print_report(const case_spec *c, const check_report *rep) {
    for (int32_t l = 0; l < rep->num_layers; l++) {
        const check_layer_report *L = &rep->layers[l];
        printf("%s layers.%d  heads=%d window=", c->name, (int)l, (int)c->layers[l].num_heads);
        print_window(L->window_left, L->window_right);
        if (L->judged) {
            printf("  err_abs=%.3g err_rel=%.3g", L->cmp.err_abs, L->cmp.err_rel);
            /* how much the reference left open (its declared limits, a
             * non-finite input), as a number: an unjudged share is a
             * blind spot of this case */
            if (L->cmp.unjudged) print_unjudged(&L->cmp, &L->why);
        }
        printf("\n");
    }
    if (!rep->runs) return;
    printf("%s  engine %s, kernels %s (%s), rounding q %s p %s acc %s, group window ", c->name,
           rep->engine, rep->kernels[0] ? rep->kernels : "-", rep->detail[0] ? rep->detail : "-",
           ag_dtype_name(rep->precision.q_dot), ag_dtype_name(rep->precision.p_dot),
           ag_dtype_name(rep->precision.acc));
    print_window(rep->group_window_left, rep->group_window_right);
    printf(", scratch %zu bytes in %zu regions, %d guarded runs\n", rep->scratch_bytes,
           rep->num_regions, rep->runs);
}

/* A case whose estimated work is past the budget is not run: name the
 * estimate, the budget and the fields it comes from.  1 if it printed such
 * a verdict. */
static int over_budget(const char *path, const case_spec *c, const engine_host *E) {
    check_work w;
    check_work_estimate(c, E, CHECK_ALL, &w);
    const double total = (double)w.reference + (double)w.engine;
    if (!g_max_work || total <= (double)g_max_work) return 0;
    uint64_t heads = 0;
    for (int32_t l = 0; l < c->num_layers; l++)
        heads += c->layers[l].num_heads > 0 ? (uint64_t)c->layers[l].num_heads : 1;
    char at[160], dim[160];
    where(at, sizeof at, path, c, CASE_KEY_REQUESTS, -1);
    where(dim, sizeof dim, path, c, CASE_KEY_HEAD_DIM, -1);
    printf("%s  NOT RUN: about %.3g multiply-adds (the fp64 reference %.3g over %d rounding "
           "models, engine %s %.3g over %d guarded runs), past the compute budget of %.3g "
           "(%s; 0 or none: no budget): each pass is the requests' query rows x keys (%s) "
           "x %llu heads over %d layers x head_dim %d (%s)\n",
           c->name, total, (double)w.reference, w.models, E->e->name, (double)w.engine,
           w.runs, (double)g_max_work, MAX_WORK_ENV, at, (unsigned long long)heads,
           (int)c->num_layers, (int)c->head_dim, dim);
    return 1;
}

/* What a case's child process hands back (memory shared with it). */
typedef struct outcome {
    int verdict;               /* enum verdict, once the child has one */
    char skipped[200];         /* V_SKIP: what the engine lacks (counted by the parent) */
} outcome;

typedef struct job {
    const char *path;
    const case_spec *c;
    outcome *o;
} job;

/* In the case's own process: the oracles, the report, the verdict. */
static void run_case(void *arg) {
    const job *j = arg;
    const case_spec *c = j->c;
    outcome *o = j->o;
    const double t0 = now_seconds();
    finding f;
    check_report rep;
    const oracle_id id = check_case_report(c, CHECK_ALL, &f, &rep);
    if (id == ORACLE_NONE && f.skipped[0]) {
        printf("%s  SKIP (%s lacks: %s)\n", c->name, rep.engine[0] ? rep.engine : "engine",
               f.skipped);
        snprintf(o->skipped, sizeof o->skipped, "%s", f.skipped);
        o->verdict = V_SKIP;
        return;
    }
    if (c->expect != AG_R_NONE && id == ORACLE_NONE)
        printf("%s  expect %s: refused as expected\n", c->name,
               ag_refusal_name((ag_refusal)c->expect));
    print_report(c, &rep);
    if (id != ORACLE_NONE) {
        printf("%s  FAIL: ORACLE %s: %s\n", c->name, oracle_name(id), f.detail);
        o->verdict = V_FAIL;
        return;
    }
    int judged = 0;
    for (int32_t l = 0; l < rep.num_layers; l++) judged |= rep.layers[l].judged;
    if (c->expect == AG_R_NONE && !judged) {
        /* name where the reason comes from: the key the judge names, or
         * `layers = none` for a group without layers */
        const case_key k = f.not_run[0] ? f.not_run_key
                           : rep.num_layers ? CASE_KEY_COUNT : CASE_KEY_LAYERS;
        char at[160] = "";
        if (k != CASE_KEY_COUNT) where(at, sizeof at, j->path, c, k, -1);
        printf("%s  NOT RUN: no output was compared: %s%s%s%s\n", c->name,
               f.not_run[0] ? f.not_run : rep.num_layers ? "no guarded run happened"
                                                         : "the group has no layers",
               at[0] ? " (" : "", at, at[0] ? ")" : "");
        o->verdict = V_NOT_RUN;
        return;
    }
    printf("%s  PASS\n", c->name);
    fprintf(stderr, "attnguard: %s took %.2f s\n", c->name, now_seconds() - t0);
    o->verdict = V_PASS;
}

/* The FAIL line of a case whose process did not end well: the oracle a
 * fault handler or the hang watchdog named (with the buffer and region of
 * a guard-page fault), else what a sanitizer or the signal says. */
static void print_death(const case_spec *c, const isolate_end *end) {
    repro_verdict v;
    repro_parse_log(end->log, end->status, &v);
    char how[96];
    if (end->signal)
        snprintf(how, sizeof how, "was killed by signal %d (%s)", end->signal,
                 strsignal(end->signal));
    else
        snprintf(how, sizeof how, "exited with status %d", end->status);
    if (end->returned)   /* its verdict was printed; what came after (a leak report) was not */
        printf("%s  FAIL: after its verdict the case's process %s: %s%s%s\n", c->name, how,
               v.kind[0] ? v.kind : "no report", v.error[0] ? ": " : "", v.error);
    else if (v.from_oracle)
        printf("%s  FAIL: ORACLE %s: %s (the engine's process %s)\n", c->name, v.kind,
               v.detail, how);
    else if (strncmp(v.kind, "asan:", 5) == 0 || strncmp(v.kind, "ubsan:", 6) == 0)
        printf("%s  FAIL: %s: %s (the engine's process %s; no guarded buffer at the "
               "address)\n", c->name, v.kind, v.error[0] ? v.error : v.summary, how);
    else
        printf("%s  FAIL: the engine's process %s, with no oracle line (a fault outside "
               "every guarded buffer, or an abort of the engine's own)\n", c->name, how);
}

/* One case: what the parent decides on its own (the file, the defects,
 * the capabilities), then the engine's part in a process of its own, so
 * that a fault, an abort or a hang of the engine is this case's FAIL and
 * the run goes on.  *skipped gets a skip's reason (the caller counts). */
static enum verdict check_one(const char *path, const engine_host *E, const engine_host *own,
                              char *skipped, size_t cap) {
    case_spec c;
    char err[512];
    skipped[0] = '\0';
    if (case_load(path, &c, err, sizeof(err)) != 0) {
        printf("%s  FAIL: the file does not load: %s\n", path, err);
        return V_FAIL;
    }
    /* the verdict lines start with the case's name: a case without one
     * (repro --minimize writes fuzz inputs' cases so) goes by its file's */
    if (!c.name[0]) {
        const char *base = strrchr(path, '/');
        snprintf(c.name, sizeof c.name, "%s", base ? base + 1 : path);
    }
    if (defective(path, &c, E)) return V_NOT_RUN;
    const enum verdict u = unsupported(path, &c, E, own, skipped, cap);
    if (u != V_COUNT) return u;
    if (over_budget(path, &c, E)) return V_NOT_RUN;
    /* Name the case before running it: the stderr lines that follow (an
     * engine's own messages, a sanitizer's report) are this case's. */
    fprintf(stderr, "attnguard: running %s (%s)\n", c.name, path);
    outcome *o = isolate_shared(sizeof *o);
    if (!o) {
        printf("%s  NOT RUN: no memory to share with its process\n", c.name);
        return V_NOT_RUN;
    }
    o->verdict = -1;
    job j = {path, &c, o};
    isolate_end end;
    enum verdict v;
    if (isolate_run(run_case, &j, 1, &end, err, sizeof err) != 0) {
        printf("%s  NOT RUN: %s\n", c.name, err);
        v = V_NOT_RUN;
    } else if (end.returned && end.status == 0 && o->verdict >= 0 && o->verdict < V_COUNT) {
        v = (enum verdict)o->verdict;
        if (v == V_SKIP) snprintf(skipped, cap, "%s", o->skipped);
    } else {
        print_death(&c, &end);
        v = V_FAIL;
    }
    isolate_end_free(&end);
    isolate_shared_free(o, sizeof *o);
    return v;
}

static void check_usage(FILE *f) {
    fputs("usage: attnguard check [--engine E] FILE.case...\n"
          "  judge each case with every oracle against engine E (a built-in engine's name\n"
          "  or a path to an adapter .so; default $ATTNGUARD_ENGINE, else attnguard);\n"
          "  exit status 0 when every case passed or was skipped, 1 otherwise, 2 usage\n",
          f);
}

int cli_check(int argc, char **argv) {
    char err[512];
    const char *engine = NULL;
    int nfiles = 0;
    /* Options first or among the files; a word starting with '-' is an
     * option (a file named so: ./-x), so `--engine` with nothing after it
     * is a usage error, not a case file called "--engine". */
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            check_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--engine") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "attnguard check: --engine needs a value (a built-in engine's "
                                "name or a path to an adapter .so)\n");
                return 2;
            }
            engine = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "attnguard check: unknown option '%s'\n", argv[i]);
            check_usage(stderr);
            return 2;
        } else {
            argv[nfiles++] = argv[i];   /* the files, in order, at the front */
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "attnguard check: no case file given\n");
        check_usage(stderr);
        return 2;
    }
    /* One engine for the whole run: --engine, else the one the files'
     * fuzz session recorded, else $ATTNGUARD_ENGINE, else the default. */
    engine_pick pick;
    if (engine_pick_for(engine, argv, nfiles, stdout, "check: ", &pick, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard check: %s\n", err);
        return 2;
    }
    if ((pick.source == ENGINE_FROM_FLAG || pick.source == ENGINE_FROM_RECORD) &&
        engine_host_select(pick.engine, pick.have_options ? pick.options : NULL, err,
                           sizeof err) != 0) {
        fprintf(stderr, "attnguard check: %s\n", err);
        return 2;
    }
    const engine_host *E = engine_host_current(err, sizeof err);
    if (!E) {
        fprintf(stderr, "attnguard check: %s\n", err);
        return 2;
    }
    /* the opened engine's own name (an embedding program may have chosen
     * it: engine_host_adopt) */
    snprintf(pick.name, sizeof pick.name, "%s", E->e->name);
    char said[PATH_MAX + 400];
    engine_pick_describe(&pick, said, sizeof said);
    printf("check: engine %s\n", said);
    if (max_work(&g_max_work, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard: %s\n", err);
        return 2;
    }
    /* the engine's own declared work, known from its plan, too */
    check_set_work_limit(g_max_work);
    /* attnguard's own engine: the measure of what "no engine here computes"
     * means (the selected one, when that is attnguard) */
    engine_host own_host;
    const engine_host *own = E;
    int own_open = 0;
    if (strcmp(E->e->name, "attnguard") != 0) {
        own_open = engine_host_open(&own_host, "attnguard", NULL, err, sizeof err) == 0;
        own = own_open ? &own_host : NULL;
    }
    int n[V_COUNT] = {0};
    for (int i = 0; i < nfiles; i++) {
        char skipped[200];
        const enum verdict v = check_one(argv[i], E, own, skipped, sizeof skipped);
        if (v == V_SKIP) engine_host_count_skip(skipped);
        n[v]++;
        fflush(stdout);
    }
    if (own_open) engine_host_close(&own_host);
    printf("%d passed, %d failed, %d skipped, %d not run\n", n[V_PASS], n[V_FAIL], n[V_SKIP],
           n[V_NOT_RUN]);
    engine_host_print_skips(stdout, "");
    return n[V_FAIL] || n[V_NOT_RUN] ? 1 : 0;
}
