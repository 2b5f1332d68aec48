/*
 * show.c — `attnguard show`: any corpus, crash or .case file printed as a
 * canonical case (see repro.h for the contract).
 */
#include "repro.h"

#include "../../include/attnguard/engine.h"
#include "engine_pick.h"
#include "input.h"
#include "known.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static void show_usage(FILE *f) {
    fputs("usage: attnguard show [--engine E] [--target T] FILE...\n"
          "  print corpus, crash or .case files as canonical case text (fuzz bytes are\n"
          "  decoded; T = fuzz_api, or a fuzz_api directory in the path, reads the\n"
          "  4-byte fuzz_api prefix first), with a comment naming the engine each runs on\n"
          "  (--engine, else the one recorded for its fuzz session, else $ATTNGUARD_ENGINE,\n"
          "  else attnguard) when it was recorded or given, or the file is fuzz bytes\n",
          f);
}

/* "# engine: ..." for one file, and the notes of a disagreement; the
 * engine is said, not opened (show runs nothing). */
static void print_engine(const char *engine, const char *path, int always) {
    engine_pick pick;
    char err[512], said[PATH_MAX + 400];
    char *files[1] = {(char *)path};
    if (engine_pick_for(engine, files, 1, stdout, "# ", &pick, err, sizeof err) != 0) {
        printf("# engine: none can be chosen: %s\n", err);
        return;
    }
    if (!always && pick.source != ENGINE_FROM_FLAG && pick.source != ENGINE_FROM_RECORD) return;
    engine_pick_describe(&pick, said, sizeof said);
    printf("# engine: %s\n", said);
}

int cli_show(int argc, char **argv) {
    const char *target = NULL, *engine = NULL;
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
        } else if (strcmp(argv[i], "--engine") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "attnguard show: --engine needs a value (a built-in engine's "
                                "name or a path to an adapter .so)\n");
                return 2;
            }
            engine = argv[++i];
            ag_msg msg;
            if (!ag_engine_find(engine, &msg)) {
                fprintf(stderr, "attnguard show: %s\n", msg.text);
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
        if (strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "--engine") == 0) {
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
        const int origin = !in.was_text || nfiles > 1;
        if (origin) repro_print_origin(stdout, argv[i], &in);
        print_engine(engine, argv[i], origin);
        case_print(stdout, &c);
    }
    fflush(stdout);
    return rc;
}

