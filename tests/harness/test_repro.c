/*
 * test_repro.c — `attnguard repro` (harness/cli/repro.c) leaves nothing
 * behind in the temporary directory unless --keep asks for its work folder.
 *
 * Covers: a passing input, a finding and a minimisation each end with
 * $TMPDIR as empty as it began; with --keep exactly one attnguard-repro-*
 * folder stays, holding the run's log.  The fuzz binary is a small shell
 * script in a folder given with --fuzz-dir: it prints an oracle line (or
 * nothing) the way the real targets do, and under -minimize_crash=1 copies
 * its input to -exact_artifact_path, so repro's own code paths (encoding a
 * text case, running, reading the verdict, minimising, writing the .case)
 * all run without a libFuzzer build.
 *
 * Also: a crash file under a fuzz session's folder reruns on the engine the
 * session recorded (harness/cli/engine_record.h), with no ATTNGUARD_ENGINE
 * in the environment: the stand-in target finds the bug only when the
 * engine it is handed is the recorded one.
 */
#include <criterion/criterion.h>

#include "../../harness/cli/engine_record.h"
#include "../../harness/cli/repro.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[1024], tmpdir[PATH_MAX], bindir[PATH_MAX], casefile[PATH_MAX];

static void write_file(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(chmod(path, mode), 0);
}

/* A stand-in fuzz target: `finds` = 1 prints an oracle line and exits 1. */
static void make_target(int finds) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/fuzz_plan", bindir);
    write_file(path,
               finds ? "#!/bin/sh\n"
                       "out=\n"
                       "for a in \"$@\"; do\n"
                       "    case $a in -exact_artifact_path=*) out=${a#*=} ;; esac\n"
                       "    last=$a\n"
                       "done\n"
                       "[ -z \"$out\" ] || cp \"$last\" \"$out\"\n"
                       "echo 'attnguard: ORACLE sizing: layers.0 (8 heads) needs 64 bytes'\n"
                       "exit 1\n"
                     : "#!/bin/sh\nexit 0\n",
               0755);
    snprintf(path, sizeof path, "%s/fuzz_plan.options", bindir);
    write_file(path, "[libfuzzer]\ntimeout = 25\n", 0644);
}

static void setup(void) {
    snprintf(base, sizeof base, "%s/attnguard-test-repro-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(base));
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", base);
    snprintf(bindir, sizeof bindir, "%s/bin", base);
    snprintf(casefile, sizeof casefile, "%s/small.case", base);
    cr_assert_eq(mkdir(tmpdir, 0700), 0);
    cr_assert_eq(mkdir(bindir, 0700), 0);
    write_file(casefile, "name = small\nkv_heads = 2\nhead_dim = 16\nrequests = 1x8\n"
                         "layer.0 = heads=8\n", 0644);
    /* repro's work folder goes under $TMPDIR: here, a folder of our own */
    cr_assert_eq(setenv("TMPDIR", tmpdir, 1), 0);
}

/* Criterion runs each test in its own process; the files go with `base`. */
static void teardown(void) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "test_repro: could not remove %s\n", base);
}

/* The entries of $TMPDIR; the first one's name in first[] when any. */
static int entries(char *first, size_t cap) {
    DIR *d = opendir(tmpdir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n++ == 0 && first) snprintf(first, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static int repro(const char *extra1, const char *extra2, const char *extra3) {
    char *argv[8];
    int n = 0;
    argv[n++] = casefile;
    argv[n++] = (char *)"--target";
    argv[n++] = (char *)"fuzz_plan";
    argv[n++] = (char *)"--fuzz-dir";
    argv[n++] = bindir;
    if (extra1) argv[n++] = (char *)extra1;
    if (extra2) argv[n++] = (char *)extra2;
    if (extra3) argv[n++] = (char *)extra3;
    fflush(stdout);
    return cli_repro(n, argv);
}

TestSuite(repro, .init = setup, .fini = teardown);

Test(repro, passing_input_leaves_no_folder) {
    make_target(0);
    cr_assert_eq(repro(NULL, NULL, NULL), 0);
    cr_assert_eq(entries(NULL, 0), 0, "repro left a folder in $TMPDIR");
}

Test(repro, finding_leaves_no_folder) {
    make_target(1);
    cr_assert_eq(repro(NULL, NULL, NULL), 1);
    cr_assert_eq(entries(NULL, 0), 0, "repro left a folder in $TMPDIR");
}

Test(repro, minimizing_leaves_no_folder_and_writes_the_case) {
    make_target(1);
    char out[PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/min.case", base);
    cr_assert_eq(repro("--minimize", "--out", out), 1);
    cr_assert_eq(access(out, R_OK), 0, "no minimised case at %s", out);
    cr_assert_eq(entries(NULL, 0), 0, "repro left a folder in $TMPDIR");
}

Test(repro, keep_keeps_one_folder_with_the_log) {
    make_target(1);
    cr_assert_eq(repro("--keep", NULL, NULL), 1);
    char name[256] = "";
    cr_assert_eq(entries(name, sizeof name), 1);
    cr_assert_eq(strncmp(name, "attnguard-repro-", 16), 0, "unexpected entry %s", name);
    char log[PATH_MAX + 300];
    snprintf(log, sizeof log, "%s/%s/repro.log", tmpdir, name);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f, "no log at %s", log);
    char line[256] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_assert(strstr(line, "ORACLE sizing") != NULL, "log holds '%s'", line);
}

/* build/fuzz-session-engine-mine-<hash>/ as make fuzz leaves it: the
 * record, and a crash under artifacts/fuzz_plan/. */
Test(repro, a_recorded_crash_reruns_on_its_engine_without_the_environment) {
    unsetenv("ATTNGUARD_ENGINE");
    unsetenv("ATTNGUARD_ENGINE_OPTIONS");
    char session[PATH_MAX], so[PATH_MAX + 32], rec[PATH_MAX + 64], crash[PATH_MAX + 128];
    snprintf(session, sizeof session, "%s/fuzz-session-engine-mine", base);
    snprintf(so, sizeof so, "%s/libmine.so", base);
    write_file(so, "an adapter object", 0644);
    char build[40];
    cr_assert_eq(engine_record_build_of(so, build, sizeof build), 0);
    cr_assert_eq(mkdir(session, 0700), 0);
    snprintf(rec, sizeof rec, "%s/artifacts", session);
    cr_assert_eq(mkdir(rec, 0700), 0);
    snprintf(rec, sizeof rec, "%s/artifacts/fuzz_plan", session);
    cr_assert_eq(mkdir(rec, 0700), 0);
    snprintf(crash, sizeof crash, "%s/crash-1", rec);
    write_file(crash, "\x01\x02", 0644);
    char text[2 * PATH_MAX];
    snprintf(text, sizeof text, "name = mine\nengine = %s\noptions = k=v\nbuild = %s\nkey = mine\n",
             so, build);
    snprintf(rec, sizeof rec, "%s/" ENGINE_RECORD_FILE, session);
    write_file(rec, text, 0644);
    /* the stand-in target: a finding only on the recorded engine */
    char path[PATH_MAX + 32], script[3 * PATH_MAX];
    snprintf(path, sizeof path, "%s/fuzz_plan", bindir);
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "[ \"$ATTNGUARD_ENGINE\" = '%s' ] && [ \"$ATTNGUARD_ENGINE_OPTIONS\" = k=v ] || exit 0\n"
             "echo 'attnguard: ORACLE sizing: layers.0 (8 heads) needs 64 bytes'\n"
             "exit 1\n", so);
    write_file(path, script, 0755);
    snprintf(path, sizeof path, "%s/fuzz_plan.options", bindir);
    write_file(path, "[libfuzzer]\ntimeout = 25\n", 0644);
    char *argv[] = {crash, (char *)"--fuzz-dir", bindir};
    fflush(stdout);
    cr_assert_eq(cli_repro(3, argv), 1, "the crash did not rerun on the recorded engine");
    /* --engine names another: it runs there (and the stand-in passes) */
    char *other[] = {crash, (char *)"--fuzz-dir", bindir, (char *)"--engine", (char *)"attnguard"};
    cr_assert_eq(cli_repro(5, other), 0);
}
