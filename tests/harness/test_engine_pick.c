/*
 * test_engine_pick.c — the engine record a fuzz session keeps in its folder
 * (harness/cli/engine_record.c) and the engine repro, show and check
 * choose from it (harness/cli/engine_pick.c).
 *
 * Covers: a record reads back as written; a file finds the record of its
 * folder or the nearest one above; the order --engine, record,
 * $ATTNGUARD_ENGINE, default; each disagreement said (a file recorded on
 * another engine than --engine's, $ATTNGUARD_ENGINE not followed, an
 * adapter changed since its record); files of two engines' sessions
 * without --engine, and a recorded adapter that is gone, refused; `check`
 * on a recorded folder runs on the recorded engine whatever
 * $ATTNGUARD_ENGINE says.  The adapter objects here are plain files: the
 * choice never loads a recorded one (the target, or check, does).
 */
#include <criterion/criterion.h>

#include "../../harness/cli/cli.h"
#include "../../harness/cli/engine_pick.h"
#include "tfiles.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void setup(void) {
    tf_mkdir(dir, sizeof dir, "pick");
    unsetenv("ATTNGUARD_ENGINE");
    unsetenv("ATTNGUARD_ENGINE_OPTIONS");
}

static void teardown(void) { tf_rmtree(dir); }

TestSuite(engine_pick, .init = setup, .fini = teardown);

static void put(const char *rel, const char *text, char *out, size_t cap) {
    tf_put(dir, rel, text, out, cap);
}

/* A session folder `session` recording an adapter object adapter (a file
 * of dir, made with `bytes`), its build as of now. */
static void session_of(const char *session, const char *adapter, const char *bytes,
                       const char *options) {
    char so[PATH_MAX + 64], rec[PATH_MAX + 64], build[40], text[3 * PATH_MAX];
    put(adapter, bytes, so, sizeof so);
    cr_assert_eq(engine_record_build_of(so, build, sizeof build), 0);
    snprintf(text, sizeof text, "# a record\nname = mine\nengine = %s\noptions = %s\nbuild = %s\n"
             "key = mine-%.8s\n", so, options, build, build + 8);
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/" ENGINE_RECORD_FILE, session);
    put(rel, text, rec, sizeof rec);
}

/* engine_pick_for on files with the notes in `said`. */
static int pick(const char *flag, char **files, int n, engine_pick *p, char *said, size_t cap,
                char *err, size_t ecap) {
    said[0] = '\0';
    FILE *f = fmemopen(said, cap, "w");
    cr_assert_not_null(f);
    const int rc = engine_pick_for(flag, files, n, f, "> ", p, err, ecap);
    fclose(f);
    return rc;
}

Test(engine_pick, a_record_reads_back_as_written) {
    engine_record r, back;
    char err[512], path[PATH_MAX + 64];
    cr_assert_eq(engine_record_make("attnguard", "tune=amd", &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.name, "attnguard");
    cr_assert_str_eq(r.engine, "attnguard");
    cr_assert_str_eq(r.build, "built-in");
    cr_assert_str_eq(r.key, "attnguard");
    snprintf(path, sizeof path, "%s/" ENGINE_RECORD_FILE, dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    engine_record_print(f, &r);
    fclose(f);
    cr_assert_eq(engine_record_read(path, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(&r, &back, sizeof r), 0, "the record did not read back as written");
    char where[PATH_MAX];
    cr_assert_eq(engine_record_make("no-such-engine", NULL, &r, err, sizeof err), -1);
    cr_assert(strstr(err, "no-such-engine") != NULL, "%s", err);
    /* a key the format does not have is an error naming the line */
    put("bad/" ENGINE_RECORD_FILE, "name = x\nengine = x\nbuild = built-in\nkey = x\nwho = me\n",
        path, sizeof path);
    char file[PATH_MAX + 64];
    put("bad/crash-1", "x", file, sizeof file);
    cr_assert_eq(engine_record_find(file, &back, where, sizeof where, err, sizeof err), -1);
    cr_assert(strstr(err, "line 5") != NULL && strstr(err, "who") != NULL, "%s", err);
}

Test(engine_pick, a_file_follows_the_nearest_record_above_it) {
    session_of("s", "lib/libmine.so", "v1", "");
    char file[PATH_MAX + 64], where[PATH_MAX], err[512];
    put("s/artifacts/fuzz_plan/crash-1", "bytes", file, sizeof file);
    engine_record r;
    cr_assert_eq(engine_record_find(file, &r, where, sizeof where, err, sizeof err), 1, "%s", err);
    cr_assert_str_eq(r.name, "mine");
    cr_assert(strstr(where, "/s/" ENGINE_RECORD_FILE) != NULL, "%s", where);
    char other[PATH_MAX + 64];
    put("t/x.case", "name = x\n", other, sizeof other);
    cr_assert_eq(engine_record_find(other, &r, where, sizeof where, err, sizeof err), 0);
}

Test(engine_pick, the_order_is_flag_record_environment_default) {
    session_of("s", "lib/libmine.so", "v1", "k=v");
    char crash[PATH_MAX + 64], plain[PATH_MAX + 64], said[4096], err[512];
    put("s/artifacts/fuzz_plan/crash-1", "bytes", crash, sizeof crash);
    put("t/x.case", "name = x\n", plain, sizeof plain);
    engine_pick p;
    char *rec[] = {crash}, *none[] = {plain};

    /* the record, over $ATTNGUARD_ENGINE, which is said not to be followed */
    setenv("ATTNGUARD_ENGINE", "attnguard", 1);
    cr_assert_eq(pick(NULL, rec, 1, &p, said, sizeof said, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.source, ENGINE_FROM_RECORD);
    cr_assert(strstr(p.engine, "/lib/libmine.so") != NULL, "%s", p.engine);
    cr_assert_str_eq(p.options, "k=v");
    cr_assert(strstr(said, "> note: $ATTNGUARD_ENGINE=attnguard is not followed") != NULL,
              "%s", said);

    /* --engine over the record: said out loud */
    cr_assert_eq(pick("attnguard", rec, 1, &p, said, sizeof said, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.source, ENGINE_FROM_FLAG);
    cr_assert_str_eq(p.engine, "attnguard");
    cr_assert(strstr(said, "was recorded on engine mine at ") != NULL, "%s", said);
    cr_assert(strstr(said, "running on attnguard, as --engine asks") != NULL, "%s", said);
    cr_assert_str_eq(p.options, "", "the record's options belong to its engine");

    /* no record: the environment, then the default */
    cr_assert_eq(pick(NULL, none, 1, &p, said, sizeof said, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.source, ENGINE_FROM_ENV);
    unsetenv("ATTNGUARD_ENGINE");
    cr_assert_eq(pick(NULL, none, 1, &p, said, sizeof said, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.source, ENGINE_FROM_DEFAULT);
    cr_assert_str_eq(p.engine, "attnguard");
    cr_assert_str_eq(said, "", "nothing to say, nothing said: %s", said);
    cr_assert_eq(pick("no-such-engine", none, 1, &p, said, sizeof said, err, sizeof err), -1);
}

Test(engine_pick, disagreements_are_refused_or_said) {
    session_of("a", "lib/liba.so", "one", "");
    session_of("b", "lib/libb.so", "two", "");
    char fa[PATH_MAX + 64], fb[PATH_MAX + 64], said[4096], err[512];
    put("a/corpus/fuzz_plan/1", "x", fa, sizeof fa);
    put("b/corpus/fuzz_plan/1", "x", fb, sizeof fb);
    engine_pick p;
    char *both[] = {fa, fb};
    cr_assert_eq(pick(NULL, both, 2, &p, said, sizeof said, err, sizeof err), -1);
    cr_assert(strstr(err, "sessions of two engines") != NULL, "%s", err);
    cr_assert_eq(pick("attnguard", both, 2, &p, said, sizeof said, err, sizeof err), 0, "%s", err);

    /* the adapter rebuilt since the session: said; gone: refused */
    char so[PATH_MAX + 64];
    put("lib/liba.so", "one, rebuilt", so, sizeof so);
    char *one[] = {fa};
    cr_assert_eq(pick(NULL, one, 1, &p, said, sizeof said, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(said, "has changed since the session recorded it") != NULL, "%s", said);
    cr_assert_eq(unlink(so), 0);
    cr_assert_eq(pick(NULL, one, 1, &p, said, sizeof said, err, sizeof err), -1);
    cr_assert(strstr(err, "not there any more") != NULL, "%s", err);
}

/* check on a recorded folder runs on the recorded engine, says so, and
 * does not follow a $ATTNGUARD_ENGINE that names another (one that does
 * not even exist: before the record was followed, this run ended there). */
Test(engine_pick, check_runs_on_the_recorded_engine) {
    char rec[PATH_MAX + 64], file[PATH_MAX + 64];
    put("s/" ENGINE_RECORD_FILE, "name = attnguard\nengine = attnguard\noptions =\n"
        "build = built-in\nkey = attnguard\n", rec, sizeof rec);
    put("s/small.case", "name = small\nkv_heads = 2\nhead_dim = 16\nrequests = 1x8\n"
        "layer.0 = heads=4\n", file, sizeof file);
    setenv("ATTNGUARD_ENGINE", "no-such-engine", 1);
    char out[PATH_MAX + 8];
    snprintf(out, sizeof out, "%s/out", dir);
    fflush(stdout);
    const int so = dup(1);
    cr_assert(freopen(out, "w", stdout) != NULL);
    char *argv[] = {file};
    const int rc = cli_check(1, argv);
    fflush(stdout);
    dup2(so, 1);
    close(so);
    static char text[1 << 16];
    tf_slurp(out, text, sizeof text);
    cr_assert_eq(rc, 0, "%s", text);
    cr_assert(strstr(text, "check: engine attnguard (recorded in ") != NULL, "%s", text);
    cr_assert(strstr(text, "$ATTNGUARD_ENGINE=no-such-engine is not followed") != NULL, "%s",
              text);
    cr_assert(strstr(text, "small  PASS") != NULL, "%s", text);
}
