/*
 * main.c — the `attnguard` command line: the usage text, `engines`, and
 * the dispatch to the subcommands (cli.h), each in its own file.
 */
#include "cli.h"

#include "../../include/attnguard/engine.h"
#include "engine_record.h"

#include <stdio.h>
#include <string.h>

static void cli_usage(FILE *f) {
    fputs("usage: attnguard check [--engine E] FILE.case...\n"
          "                                       judge cases with every oracle against engine E\n"
          "       attnguard show [--target T] FILE...\n"
          "                                       print a .case, corpus or crash file as a case\n"
          "       attnguard repro FILE [--target T] [--inject BUG] [--minimize [--out F.case]]\n"
          "                       [--keep] [-v]   rerun a crash under AddressSanitizer, name the oracle\n"
          "       attnguard engines                list the built-in engines and their variants\n"
          "       attnguard engines --record [E]   the record a fuzz session keeps of engine E\n"
          "       attnguard classify [--status N] LOG...   name each log's finding (JSON lines)\n"
          "       attnguard fuzz-flags FILE.options...     a fuzz target's libFuzzer flags\n"
          "       attnguard --help\n"
          "\n"
          "E is a built-in engine (attnguard, ggml, ...) or a path to an adapter .so; default\n"
          "$ATTNGUARD_ENGINE, else attnguard.  check prints one line per layer (its window, the\n"
          "error against the fp64 reference), the kernels, profile and rounding that ran, and\n"
          "PASS, FAIL (with the oracle's finding), SKIP (what the engine lacks that attnguard's\n"
          "own engine has, or options meant for another engine) or NOT RUN (what keeps the\n"
          "case from being judged, with the field, value and line); then `N passed, N failed,\n"
          "N skipped, N not run`.  Exit status 1 if any case failed or was not run.\n",
          f);
}

/* `engines --record [E]`: the record of engine E (else $ATTNGUARD_ENGINE,
 * else the default) with $ATTNGUARD_ENGINE_OPTIONS, as the fuzz launcher
 * writes it into a session's folder (engine_record.h). */
static int cmd_engine_record(int argc, char **argv) {
    if (argc > 1 || (argc == 1 && (!argv[0][0] || argv[0][0] == '-'))) {
        fputs("usage: attnguard engines --record [E]\n", stderr);
        return 2;
    }
    engine_record r;
    char err[512];
    if (engine_record_make(argc ? argv[0] : NULL, NULL, &r, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard engines: %s\n", err);
        return 2;
    }
    engine_record_print(stdout, &r);
    return 0;
}

/* Every built-in adapter, its summary and, when it opens here, its
 * variants. */
static int cmd_engines(int argc, char **argv) {
    if (argc >= 1 && strcmp(argv[0], "--record") == 0) return cmd_engine_record(argc - 1, argv + 1);
    if (argc) {
        fputs("usage: attnguard engines [--record [E]]\n", stderr);
        return 2;
    }
    const char *names[16];
    const int n = ag_engine_list(names, 16);
    for (int i = 0; i < n && i < 16; i++) {
        ag_msg msg;
        const ag_engine *e = ag_engine_find(names[i], &msg);
        printf("%-10s %s\n", names[i], e ? e->summary : msg.text);
        void *ctx = NULL;
        if (!e || e->open(NULL, &ctx, &msg) != AG_OK) {
            if (e) printf("           (does not open here: %s)\n", msg.text);
            continue;
        }
        ag_variant v[32];
        const int nv = e->variants ? e->variants(ctx, v, 32) : 0;
        for (int k = 0; k < nv && k < 32; k++)
            printf("           %-9s %s%s%s%s\n", ag_variant_kind_name((ag_variant_kind)v[k].kind),
                   v[k].options[0] ? v[k].options : "(no options)",
                   v[k].twin ? "  (emulation: bit for bit as " : "", v[k].twin ? v[k].twin : "",
                   v[k].twin ? ")" : "");
        e->close(ctx);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        cli_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        cli_usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "check")) return cli_check(argc - 2, argv + 2);
    if (!strcmp(cmd, "show")) return cli_show(argc - 2, argv + 2);
    if (!strcmp(cmd, "repro")) return cli_repro(argc - 2, argv + 2);
    if (!strcmp(cmd, "classify")) return cli_classify(argc - 2, argv + 2);
    if (!strcmp(cmd, "fuzz-flags")) return cli_fuzz_flags(argc - 2, argv + 2);
    if (!strcmp(cmd, "engines")) return cmd_engines(argc - 2, argv + 2);
    fprintf(stderr, "attnguard: unknown command '%s'\n", cmd);
    cli_usage(stderr);
    return 2;
}
