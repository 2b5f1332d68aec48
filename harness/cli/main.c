/*
 * main.c — the `attnguard` command line: `check` runs case files through
 * the same oracles as the fuzz targets (check_case) against the chosen
 * engine and prints what each layer saw; `show` and `repro` (repro.c)
 * print any case, corpus or crash file as a case and rerun a crash under
 * AddressSanitizer; `engines` lists the adapters.  Thin on purpose: the
 * logic lives in check.c, case.c and repro.c.
 */
#include "../case/case.h"
#include "../host/engine_host.h"
#include "../judge/oracles.h"
#include "repro.h"
#include "repro_options.h"
#include "repro_verdict.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fputs("usage: attnguard check [--engine E] FILE.case...\n"
          "                                       judge cases with every oracle against engine E\n"
          "       attnguard show [--target T] FILE...\n"
          "                                       print a .case, corpus or crash file as a case\n"
          "       attnguard repro FILE [--target T] [--inject BUG] [--minimize [--out F.case]] [-v]\n"
          "                                       rerun a crash under AddressSanitizer, name the oracle\n"
          "       attnguard engines                list the built-in engines and their capabilities\n"
          "       attnguard classify [--status N] LOG...   name each log's finding (JSON lines)\n"
          "       attnguard fuzz-flags FILE.options...     a fuzz target's libFuzzer flags\n"
          "       attnguard --help\n"
          "\n"
          "E is a built-in engine (attnguard, ggml) or a path to an adapter .so; default\n"
          "$ATTNGUARD_ENGINE, else attnguard.  check prints one line per layer (its window, the\n"
          "error against the fp64 reference), the kernels, profile and rounding that ran, and\n"
          "PASS, FAIL (with the oracle's finding) or SKIP (what the engine lacks); then\n"
          "`N passed, N failed, N skipped`.  Exit status 1 if any case failed.\n",
          f);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_window(int32_t l, int32_t r) {
    if (l == -1 && r == -1) printf("none");
    else printf("(%d, %d)", (int)l, (int)r);
}

/* The line of case file `path` that sets what defect text `what` names
 * ("layers.1.window = 0" -> the `layer.1` line, "kv_len[0] = ..." -> the
 * `requests` line); 0 when not found. */
static int defect_line(const char *path, const char *what) {
    char key[48] = "";
    unsigned idx;
    if (sscanf(what, "layers.%u", &idx) == 1) snprintf(key, sizeof key, "layer.%u", idx);
    else if (!strncmp(what, "kv_len", 6) || !strncmp(what, "q_len", 5) ||
             !strncmp(what, "causal[", 7) || !strncmp(what, "num_reqs", 8))
        snprintf(key, sizeof key, "requests");
    else if (!strncmp(what, "split", 5)) snprintf(key, sizeof key, "split");
    else if (!strncmp(what, "num_kv_heads", 12)) snprintf(key, sizeof key, "kv_heads");
    else sscanf(what, "%47[a-z_]", key);
    FILE *f = fopen(path, "r");
    if (!f || !key[0]) {
        if (f) fclose(f);
        return 0;
    }
    char line[4096];
    int n = 0, found = 0;
    const size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        n++;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!strncmp(p, key, kl) && (p[kl] == ' ' || p[kl] == '=' || p[kl] == '\t')) found = n;
    }
    fclose(f);
    return found;
}

/* A case that expects success but breaks the contract cannot be run: say
 * which field, which value and which line, instead of judging the engine's
 * (correct) refusal.  Returns 1 if it printed such a failure. */
static int not_runnable(const char *path, const case_spec *c) {
    if (c->expect != ATTN_OK) return 0;
    case_defects d;
    oracle_case_defects(c, &d);
    if (d.unexpressible || d.n == 0) return 0;
    for (int i = 0; i < d.n; i++) {
        const int line = defect_line(path, d.d[i].what);
        printf("%s  FAIL: the case expects ok but cannot be run: %s", c->name, d.d[i].what);
        if (line) printf(" (%s line %d)", path, line);
        printf(", which the engine must refuse with %s\n", attn_status_name(d.d[i].status));
    }
    return 1;
}

/* Returns 1 passed, 0 failed, 2 skipped. */
static int check_one(const char *path) {
    case_spec c;
    char err[512];
    if (case_load(path, &c, err, sizeof(err)) != 0) {
        printf("%s  load error: %s  FAIL\n", path, err);
        return 0;
    }
    if (not_runnable(path, &c)) return 0;
    /* Name the case before running it: if the engine crashes, the last
     * stderr line says which case did it. */
    fprintf(stderr, "attnguard: running %s (%s)\n", c.name, path);
    double t0 = now_seconds();
    finding f;
    check_report rep;
    oracle_id id = check_case_report(&c, CHECK_ALL, &f, &rep);
    double secs = now_seconds() - t0;
    if (id == ORACLE_NONE && f.skipped[0]) {
        printf("%s  SKIP (%s lacks: %s)\n", c.name, rep.engine[0] ? rep.engine : "engine",
               f.skipped);
        engine_host_count_skip(f.skipped);
        return 2;
    }
    if (c.expect != ATTN_OK)
        printf("%s  expect %s: refused as expected\n", c.name, attn_status_name(c.expect));
    for (int32_t l = 0; l < rep.num_layers; l++) {
        const check_layer_report *L = &rep.layers[l];
        printf("%s layers.%d  heads=%d window=", c.name, (int)l, (int)c.layers[l].num_heads);
        print_window(L->window_left, L->window_right);
        if (L->judged)
            printf("  err_abs=%.3g err_rel=%.3g%s", L->cmp.err_abs, L->cmp.err_rel,
                   L->cmp.unjudged ? " (some elements unjudged)" : "");
        printf("\n");
    }
    if (rep.runs) {
        printf("%s  engine %s, kernels %s (%s), rounding q %s p %s acc %s, group window ",
               c.name, rep.engine, rep.kernels[0] ? rep.kernels : "-",
               rep.detail[0] ? rep.detail : "-", ag_dtype_name(rep.precision.q_dot),
               ag_dtype_name(rep.precision.p_dot), ag_dtype_name(rep.precision.acc));
        print_window(rep.group_window_left, rep.group_window_right);
        printf(", scratch %zu bytes in %zu regions, %d guarded runs\n", rep.scratch_bytes,
               rep.num_regions, rep.runs);
    }
    if (id != ORACLE_NONE) {
        printf("%s  FAIL: ORACLE %s: %s\n", c.name, oracle_name(id), f.detail);
        return 0;
    }
    printf("%s  PASS\n", c.name);
    fprintf(stderr, "attnguard: %s took %.2f s\n", c.name, secs);
    return 1;
}

static int cmd_check(int argc, char **argv) {
    int i = 0;
    if (i + 1 < argc && strcmp(argv[i], "--engine") == 0) {
        char err[512];
        if (engine_host_select(argv[i + 1], NULL, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard: %s\n", err);
            return 2;
        }
        i += 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    char err[512];
    if (!engine_host_current(err, sizeof err)) {
        fprintf(stderr, "attnguard: %s\n", err);
        return 2;
    }
    int passed = 0, failed = 0, skipped = 0;
    for (; i < argc; i++) {
        int r = check_one(argv[i]);
        if (r == 1) passed++;
        else if (r == 2) skipped++;
        else failed++;
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    engine_host_print_skips(stdout, "");
    return failed ? 1 : 0;
}

static int cmd_engines(void) {
    const char *names[16];
    int n = ag_engine_list(names, 16);
    for (int i = 0; i < n && i < 16; i++) {
        ag_msg msg;
        const ag_engine *e = ag_engine_find(names[i], &msg);
        printf("%-10s %s\n", names[i], e ? e->summary : msg.text);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "check") == 0) return cmd_check(argc - 2, argv + 2);
    if (strcmp(argv[1], "show") == 0) return cli_show(argc - 2, argv + 2);
    if (strcmp(argv[1], "repro") == 0) return cli_repro(argc - 2, argv + 2);
    if (strcmp(argv[1], "classify") == 0) return cli_classify(argc - 2, argv + 2);
    if (strcmp(argv[1], "fuzz-flags") == 0) return cli_fuzz_flags(argc - 2, argv + 2);
    if (strcmp(argv[1], "engines") == 0) return cmd_engines();
    fprintf(stderr, "attnguard: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
