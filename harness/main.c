/*
 * main.c — the `attnguard` command line: `check` runs case files through
 * runcase and prints one line per layer; `show` and `repro` (repro.c) print
 * any case, corpus or crash file as a case and rerun a crash under
 * AddressSanitizer.  Thin on purpose: the logic lives in runcase.c, case.c
 * and repro.c.
 */
#include "case.h"
#include "repro.h"
#include "repro_options.h"
#include "repro_verdict.h"
#include "runcase.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
    fputs("usage: attnguard check FILE.case...   run cases against the reference\n"
          "       attnguard show [--target T] FILE...\n"
          "                                       print a .case, corpus or crash file as a case\n"
          "       attnguard repro FILE [--target T] [--inject BUG] [--minimize [--out F.case]] [-v]\n"
          "                                       rerun a crash under AddressSanitizer, name the oracle\n"
          "       attnguard classify [--status N] LOG...   name each log's finding (JSON lines)\n"
          "       attnguard fuzz-flags FILE.options...     a fuzz target's libFuzzer flags\n"
          "       attnguard --help\n"
          "\n"
          "check prints `name layers.i  max_abs=.. max_rel=.. PASS|FAIL` per layer\n"
          "(or the refusal status for cases with `expect`), then `N passed, N failed`\n"
          "over cases; exit status 1 if any case failed.\n",
          f);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Returns 1 if the case passed. */
static int check_one(const char *path) {
    attn_case c;
    char err[512];
    if (case_load(path, &c, err, sizeof(err)) != 0) {
        printf("%s  load error: %s  FAIL\n", path, err);
        return 0;
    }
    runcase_result res;
    /* Name the case before running it: if the engine crashes, the last
     * stderr line says which case did it. */
    fprintf(stderr, "attnguard: running %s (%s)\n", c.name, path);
    double t0 = now_seconds();
    int pass = runcase_run(&c, NULL, &res);
    double secs = now_seconds() - t0;
    char want[48], got[48];

    if (res.refusal) {
        printf("%s  expect=%s got=%s (%s: %s)  %s\n", c.name,
               runcase_status_short(c.expect, want, sizeof(want)),
               runcase_status_short(res.status, got, sizeof(got)),
               res.stage[0] ? res.stage : "-", res.message, pass ? "PASS" : "FAIL");
        return pass;
    }
    if (res.num_layers == 0) {
        /* decided before any layer ran (or a group without layers) */
        printf("%s  %s%s%s  %s\n", c.name, res.stage[0] ? res.stage : "no layers",
               res.message[0] ? ": " : "", res.message, pass ? "PASS" : "FAIL");
        return pass;
    }
    for (int32_t l = 0; l < res.num_layers; l++) {
        const runcase_layer *lr = &res.layers[l];
        if (lr->status != ATTN_OK)
            printf("%s layers.%d  attn_run=%s  FAIL\n", c.name, (int)l,
                   runcase_status_short(lr->status, got, sizeof(got)));
        else
            printf("%s layers.%d  max_abs=%.3g max_rel=%.3g%s  %s\n", c.name, (int)l,
                   lr->cmp.max_abs, lr->cmp.max_rel, lr->scratch_ok ? "" : " scratch=BAD",
                   lr->pass ? "PASS" : "FAIL");
    }
    if (!pass) printf("%s  %s\n", c.name, res.message);
    fprintf(stderr, "attnguard: %s took %.2f s, scratch %zu bytes\n", c.name, secs,
            res.scratch_bytes);
    return pass;
}

static int cmd_check(int argc, char **argv) {
    if (argc < 1) {
        usage(stderr);
        return 2;
    }
    int passed = 0, failed = 0;
    for (int i = 0; i < argc; i++) {
        if (check_one(argv[i])) passed++;
        else failed++;
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
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
    fprintf(stderr, "attnguard: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
