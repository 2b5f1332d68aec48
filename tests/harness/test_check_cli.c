/*
 * test_check_cli.c — `attnguard check` (harness/cli/check.c) as a user
 * meets it: its verdict lines, its summary and its exit status, read from
 * what it prints.  The command runs in this process with its stdout and
 * stderr sent to files.
 *
 * Covers: a case whose options are another engine's words is a SKIP that
 * does not fail the run (docs/case-format.md says so); `--engine` with no
 * value is a usage error naming the option, not a case file; and nothing
 * the engine does kills the verdict: an engine that writes past its
 * scratch onto the guard page (an adapter without `extents`, so no plan
 * oracle sees it coming), one that aborts and one that hangs each get a
 * FAIL naming what happened, and the cases after them still run to the
 * summary.  Those engines are attnguard's adapter wrapped
 * (engine_host_adopt), misbehaving only on batches of more than one
 * query token, so a one-token case still passes beside them.  And an
 * engine whose open() starts a thread and whose exit-time teardown waits
 * on it (ONNX Runtime's static destructors do) does not hang a case's
 * process, which has no such thread; under LeakSanitizer, a leak of the
 * engine's fails the case that leaked.
 */
#include <criterion/criterion.h>

#include "../../harness/cli/cli.h"
#include "../../harness/host/engine_host.h"
#include "../../harness/judge/guard.h"
#include "tfiles.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void setup(void) { tf_mkdir(dir, sizeof dir, "check"); }
static void teardown(void) { tf_rmtree(dir); }

TestSuite(check_cli, .init = setup, .fini = teardown);

static void write_case(const char *name, const char *text, char *out, size_t cap) {
    tf_put(dir, name, text, out, cap);
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
    tf_slurp(opath, out, ocap);
    tf_slurp(epath, err, ecap);
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

/* ---- an engine that misbehaves on batches of more than one token ---- */

enum fault { FAULT_GUARD_PAGE, FAULT_ABORT, FAULT_HANG };
static const ag_engine *g_real;
static ag_engine g_wrap;
static enum fault g_fault;

static ag_status bad_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const ag_status st = g_real->run(plan, layer, a, msg);
    if (a->num_tokens < 2) return st;
    if (g_fault == FAULT_ABORT) abort();
    if (g_fault == FAULT_HANG)
        for (;;) pause();
    /* past the planned bytes up to the next page: the guard's PROT_NONE
     * page follows the scratch there, whatever its size */
    volatile unsigned char *end = (unsigned char *)a->scratch + a->scratch_bytes;
    const uintptr_t page = ((uintptr_t)end + 4095) & ~(uintptr_t)4095;
    for (volatile unsigned char *p = end; (uintptr_t)p <= page; p++) *p = 0x5a;
    return st;
}

static void adopt(enum fault fault) {
    ag_msg msg;
    g_real = ag_engine_find("attnguard", &msg);
    cr_assert(g_real, "%s", msg.text);
    g_wrap = *g_real;
    g_wrap.name = "overrun";
    g_wrap.variants = NULL;   /* one code path: one run per configuration */
    g_wrap.extents = NULL;    /* no sizing oracle: the write is the first sign */
    g_wrap.run = bad_run;
    g_fault = fault;
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
}

/* prefill (4 tokens: the engine misbehaves), decode (1 token: it does not) */
static int check_both(char *out, size_t ocap, char *err, size_t ecap) {
    char a[PATH_MAX + 16], b[PATH_MAX + 16], c[PATH_MAX + 16];
    write_case("prefill.case", "name = prefill\nkv_heads = 2\nhead_dim = 16\nrequests = 4x8\n"
                               "layer.0 = heads=4\n", a, sizeof a);
    write_case("decode.case", "name = decode\n" SMALL_CASE, b, sizeof b);
    write_case("prefill2.case", "name = prefill2\nkv_heads = 2\nhead_dim = 16\n"
                                "requests = 2x16\nlayer.0 = heads=2\n", c, sizeof c);
    char *argv[] = {a, b, c};
    return run_check(3, argv, out, ocap, err, ecap);
}

Test(check_cli, a_write_onto_the_guard_page_fails_its_case_and_the_run_goes_on) {
    adopt(FAULT_GUARD_PAGE);
    static char out[1 << 16], err[1 << 18];
    const int rc = check_both(out, sizeof out, err, sizeof err);
    cr_assert(strstr(out, "prefill  FAIL: ORACLE scratch-bounds: scratch:") != NULL,
              "no scratch-bounds FAIL naming the buffer:\n%s", out);
    cr_assert(strstr(out, "PROT_NONE page") != NULL, "the fault's place is not named:\n%s", out);
    cr_assert(strstr(out, "prefill2  FAIL: ORACLE scratch-bounds") != NULL,
              "the case after the crash did not run:\n%s", out);
    cr_assert(strstr(out, "decode  PASS") != NULL, "%s", out);
    cr_assert(strstr(out, "1 passed, 2 failed, 0 skipped, 0 not run") != NULL,
              "no summary:\n%s", out);
    cr_assert_eq(rc, 1);
}

Test(check_cli, an_abort_in_the_engine_fails_its_case_and_the_run_goes_on) {
    adopt(FAULT_ABORT);
    static char out[1 << 16], err[1 << 18];
    const int rc = check_both(out, sizeof out, err, sizeof err);
    cr_assert(strstr(out, "prefill  FAIL: the engine's process was killed by signal 6") != NULL ||
                  strstr(out, "prefill  FAIL: the engine's process exited") != NULL,
              "no FAIL for the abort:\n%s", out);
    cr_assert(strstr(out, "1 passed, 2 failed, 0 skipped, 0 not run") != NULL, "%s", out);
    cr_assert_eq(rc, 1);
}

/* The watchdog's bound for a small case is 2 s: the hang is named after
 * it, twice (two such cases), and the run still ends with its summary. */
Test(check_cli, a_hang_in_the_engine_fails_its_case_and_the_run_goes_on, .timeout = 60) {
    adopt(FAULT_HANG);
    static char out[1 << 16], err[1 << 18];
    const int rc = check_both(out, sizeof out, err, sizeof err);
    cr_assert(strstr(out, "prefill  FAIL: ORACLE hang:") != NULL, "no hang FAIL:\n%s", out);
    cr_assert(strstr(out, "1 passed, 2 failed, 0 skipped, 0 not run") != NULL, "%s", out);
    cr_assert_eq(rc, 1);
}

/* ---- an engine that leaks (seen by LeakSanitizer builds only) ---- */

/* The block is lost on a thread of its own, which then ends: no stale
 * copy of the pointer stays on a live stack for LeakSanitizer's scan. */
static void *lose_a_block(void *arg) {
    (void)arg;
    volatile char *lost = malloc(1024);
    if (lost) lost[0] = 1;
    return NULL;
}

static ag_status leaky_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    pthread_t t;
    if (pthread_create(&t, NULL, lose_a_block, NULL) == 0) pthread_join(t, NULL);
    return g_real->run(plan, layer, a, msg);
}

/* The case's process checks for leaks before it ends (isolate.c): a leak
 * of the engine's fails the case that leaked, named. */
Test(check_cli, a_leak_in_the_engine_fails_its_case) {
    if (!guard_have_asan()) cr_skip_test("LeakSanitizer builds only (make test-asan)");
    ag_msg msg;
    g_real = ag_engine_find("attnguard", &msg);
    cr_assert(g_real, "%s", msg.text);
    g_wrap = *g_real;
    g_wrap.name = "leaky";
    g_wrap.variants = NULL;
    g_wrap.run = leaky_run;
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    char a[PATH_MAX + 16];
    write_case("decode.case", "name = decode\n" SMALL_CASE, a, sizeof a);
    char *argv[] = {a};
    static char out[1 << 16], e[1 << 18];
    cr_assert_eq(run_check(1, argv, out, sizeof out, e, sizeof e), 1, "%s\n--- stderr:\n%s", out, e);
    cr_assert(strstr(out, "decode  FAIL: after its verdict the case's process exited with "
                          "status 23: asan:leak") != NULL, "%s", out);
}

/* ---- an engine with a thread of its own, and exit-time teardown ---- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER, g_ready_cv = PTHREAD_COND_INITIALIZER;
static int g_stop, g_ready;
static pid_t g_owner;
static pthread_t g_worker;

/* Waits on g_cv until told to stop (its `ready` is said under the mutex
 * the wait releases: once open() sees it, the worker is a waiter). */
static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_mu);
    g_ready = 1;
    pthread_cond_signal(&g_ready_cv);
    while (!g_stop) pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* The teardown an exit runs: the owner stops its worker first; any other
 * process destroys a condition variable the worker waits on in the owner,
 * which blocks for good (glibc waits for the waiters to leave). */
static void teardown_at_exit(void) {
    if (getpid() == g_owner) {
        pthread_mutex_lock(&g_mu);
        g_stop = 1;
        pthread_cond_broadcast(&g_cv);
        pthread_mutex_unlock(&g_mu);
        pthread_join(g_worker, NULL);
    }
    pthread_cond_destroy(&g_cv);
}

static ag_status threaded_open(const char *options, void **ctx, ag_msg *msg) {
    const ag_status st = g_real->open(options, ctx, msg);
    g_owner = getpid();
    cr_assert_eq(pthread_create(&g_worker, NULL, worker, NULL), 0);
    pthread_mutex_lock(&g_mu);
    while (!g_ready) pthread_cond_wait(&g_ready_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    atexit(teardown_at_exit);
    return st;
}

Test(check_cli, an_engine_thread_of_the_parent_does_not_hang_a_case, .timeout = 60) {
    ag_msg msg;
    g_real = ag_engine_find("attnguard", &msg);
    cr_assert(g_real, "%s", msg.text);
    g_wrap = *g_real;
    g_wrap.name = "threaded";
    g_wrap.variants = NULL;
    g_wrap.open = threaded_open;
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    char a[PATH_MAX + 16];
    write_case("decode.case", "name = decode\n" SMALL_CASE, a, sizeof a);
    char *argv[] = {a};
    static char out[1 << 16], e[1 << 16];
    cr_assert_eq(run_check(1, argv, out, sizeof out, e, sizeof e), 0, "%s", out);
    cr_assert(strstr(out, "decode  PASS") != NULL, "%s", out);
}
