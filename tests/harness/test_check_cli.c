/*
 * test_check_cli.c — `attnguard check` (harness/cli/check.c) as a user
 * meets it: its verdict lines, its summary and its exit status, read from
 * what it prints.  The command runs in this process with its stdout and
 * stderr sent to files.
 *
 * Covers: a case whose options are another engine's words is a SKIP that
 * does not fail the run (docs/case-format.md says so); `--engine` with no
 * value is a usage error naming the option, not a case file.
 */
#include <criterion/criterion.h>

#include "../../harness/cli/cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void setup(void) {
    snprintf(dir, sizeof dir, "%s/attnguard-test-check-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_check_cli: could not remove %s\n", dir);
}

TestSuite(check_cli, .init = setup, .fini = teardown);

/* dir/name with `text` in it; the path in out. */
static void write_case(const char *name, const char *text, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", dir, name);
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f, "cannot write %s", out);
    fputs(text, f);
    fclose(f);
}

/* A whole file into buf (NUL-terminated, truncated to cap). */
static void slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* `attnguard check argv...` with its stdout in out and its stderr in err. */
static int run_check(int argc, char **argv, char *out, size_t ocap, char *err, size_t ecap) {
    char opath[PATH_MAX + 8], epath[PATH_MAX + 8];
    snprintf(opath, sizeof opath, "%s/out", dir);
    snprintf(epath, sizeof epath, "%s/err", dir);
    fflush(stdout);
    fflush(stderr);
    const int so = dup(1), se = dup(2);
    cr_assert(freopen(opath, "w", stdout) != NULL);
    cr_assert(freopen(epath, "w", stderr) != NULL);
    const int rc = cli_check(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp(opath, out, ocap);
    slurp(epath, err, ecap);
    return rc;
}

#define SMALL_CASE "kv_heads = 2\nhead_dim = 16\nrequests = 1x8\nlayer.0 = heads=4\n"

Test(check_cli, another_engines_options_are_a_skip_that_passes_the_run) {
    char a[PATH_MAX + 16], b[PATH_MAX + 16];
    write_case("foreign.case", "name = foreign\noptions = op=gqa\n" SMALL_CASE, a, sizeof a);
    write_case("plain.case", "name = plain\n" SMALL_CASE, b, sizeof b);
    char *argv[] = {a, b};
    static char out[1 << 16], err[1 << 16];
    const int rc = run_check(2, argv, out, sizeof out, err, sizeof err);
    cr_assert(strstr(out, "foreign  SKIP") != NULL, "no SKIP line for the foreign case:\n%s", out);
    cr_assert(strstr(out, "op=gqa") != NULL, "the skip does not name the word:\n%s", out);
    cr_assert(strstr(out, "NOT RUN") == NULL, "a foreign option is not a NOT RUN:\n%s", out);
    cr_assert(strstr(out, "1 passed, 0 failed, 1 skipped, 0 not run") != NULL, "%s", out);
    cr_assert_eq(rc, 0, "a skip must not fail the run:\n%s", out);
}

Test(check_cli, engine_without_a_value_is_a_usage_error) {
    char a[PATH_MAX + 16];
    write_case("plain.case", "name = plain\n" SMALL_CASE, a, sizeof a);
    static char out[1 << 16], err[1 << 16];
    char *alone[] = {(char *)"--engine"};
    cr_assert_eq(run_check(1, alone, out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "--engine needs a value") != NULL, "stderr:\n%s", err);
    cr_assert(strstr(out, "does not load") == NULL, "--engine was read as a file:\n%s", out);
    char *last[] = {a, (char *)"--engine"};
    cr_assert_eq(run_check(2, last, out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "--engine needs a value") != NULL, "stderr:\n%s", err);
    char *unknown[] = {(char *)"--engin", a};
    cr_assert_eq(run_check(2, unknown, out, sizeof out, err, sizeof err), 2);
    cr_assert(strstr(err, "unknown option '--engin'") != NULL, "stderr:\n%s", err);
}
