/*
 * show.c — `attnguard show`: any corpus, crash or .case file printed as a
 * canonical case (see repro.h for the contract).
 */
#include "repro.h"

#include "input.h"
#include "known.h"

#include <stdio.h>
#include <string.h>

static void show_usage(FILE *f) {
    fputs("usage: attnguard show [--target T] FILE...\n"
          "  print corpus, crash or .case files as canonical case text (fuzz bytes are\n"
          "  decoded; T = fuzz_api, or a fuzz_api directory in the path, reads the\n"
          "  4-byte fuzz_api prefix first)\n",
          f);
}

int cli_show(int argc, char **argv) {
    const char *target = NULL;
    int nfiles = 0, rc = 0, shown = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            show_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--target") == 0) {
            if (i + 1 >= argc || !cli_valid_word(argv[i + 1])) {
                show_usage(stderr);
                return 2;
            }
            target = argv[++i];
            char why[1024];
            if (!cli_known_target(target, why, sizeof why)) {
                fprintf(stderr, "attnguard show: %s\n", why);
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "attnguard show: unknown option '%s'\n", argv[i]);
            show_usage(stderr);
            return 2;
        } else {
            nfiles++;
        }
    }
    if (nfiles == 0) {
        show_usage(stderr);
        return 2;
    }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--target") == 0) {
            i++;
            continue;
        }
        case_spec c;
        repro_input in;
        char err[512];
        if (repro_load_any(argv[i], target, &c, &in, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard: %s\n", err);
            rc = 1;
            continue;
        }
        if (shown++) putchar('\n');
        if (!in.was_text || nfiles > 1) repro_print_origin(stdout, argv[i], &in);
        case_print(stdout, &c);
    }
    fflush(stdout);
    return rc;
}

