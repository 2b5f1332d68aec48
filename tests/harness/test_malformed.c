/*
 * test_malformed.c — every door answers bad input with a status (issue 61):
 * the case text at its edges (a window of INT32_MIN, empty request items,
 * floats past float's range, escape sequences in what a message quotes),
 * adapter tables the registry must refuse, and the CLI's answers to input
 * it cannot use.  Each test failed on the code before its fix.
 *
 * The CLI's subcommands are called in this process with stdout and stderr
 * sent to files (Criterion runs each test in a process of its own).  Runs
 * from the repository root.
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/case/case_bytes.h"
#include "../../harness/case/mutate.h"
#include "../../harness/case/validity.h"
#include "../../harness/cli/cli.h"
#include "../../include/attnguard/engine.h"
#include "../../harness/host/engine_host.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- values */

Test(malformed, window_extremes_resolve_without_overflow) {
    static const struct {
        int32_t window, want;
    } w[] = {{INT32_MIN, INT32_MIN}, {INT32_MIN + 1, INT32_MIN}, {-2, -3}, {0, -2},
             {-1, -1}, {1, 0}, {INT32_MAX, INT32_MAX - 1}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        case_layer L;
        memset(&L, 0, sizeof L);
        L.window = w[i].window;
        L.window_left = L.window_right = CASE_WINDOW_UNSET;
        int32_t left = 0, right = 0;
        case_layer_window(&L, &left, &right);
        cr_assert(left == w[i].want && right == w[i].want, "window %d -> (%d, %d), want %d",
                  (int)w[i].window, (int)left, (int)right, (int)w[i].want);
    }
    /* and the model calls INT32_MIN a window defect, naming the value */
    case_spec c;
    char err[256];
    cr_assert_eq(case_parse("layer.0 = heads=8 window=-2147483648\n", &c, err, sizeof err), 0,
                 "%s", err);
    case_defects d;
    validity_defects(&c, NULL, &d);
    cr_assert_eq(d.n, 1);
    cr_assert_eq(d.d[0].kind, AG_R_WINDOW);
    cr_assert(strstr(d.d[0].what, "-2147483648"), "%s", d.d[0].what);
}

/* The text must not parse; its message must hold every `want`. */
static void refused(const char *text, const char *const *want, size_t n) {
    case_spec c;
    char err[512] = "";
    cr_assert_neq(case_parse(text, &c, err, sizeof err), 0, "parsed: %s", text);
    for (size_t k = 0; k < n && want[k]; k++)
        cr_assert(strstr(err, want[k]), "'%s' lacks '%s' (text: %s)", err, want[k], text);
}

Test(malformed, empty_request_items_are_errors) {
    static const struct {
        const char *text, *why;
    } t[] = {
        {"requests = 1x1,,1x1\n", "request 2 is empty (two commas in a row)"},
        {"requests = , 1x1\n", "request 1 is empty (a comma before the first request)"},
        {"requests = 1x1,\n", "request 2 is empty (a comma after the last request)"},
        {"requests = 1x1, ,1x1\n", "request 2 is empty"},
        {"requests = ,\n", "request 1 is empty"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *want[] = {"line 1", "requests", t[i].why};
        refused(t[i].text, want, 3);
    }
}

Test(malformed, floats_past_float_range_are_errors) {
    static const char *const bad[] = {
        "layer.0 = heads=8 scale=1e308\n",   "layer.0 = heads=8 softcap=-1e39\n",
        "layer.0 = heads=8 k_scale=1e39\n",  "layer.0 = heads=8 scale=1e-50\n",
        "layer.0 = heads=1 alibi=[1e39]\n",  "layer.0 = heads=1 sinks=[-1e300]\n",
        "q_values = uniform 1e39\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *want[] = {"line 1", "bad value"};
        refused(bad[i], want, 2);
    }
    /* what the text means to be infinite, NaN or tiny stays so */
    static const struct {
        const char *text;
        int inf, nan;
    } good[] = {{"layer.0 = heads=8 scale=inf\n", 1, 0},
                {"layer.0 = heads=8 scale=-inf\n", 1, 0},
                {"layer.0 = heads=8 scale=nan\n", 0, 1},
                {"layer.0 = heads=8 scale=1e-40\n", 0, 0},
                {"layer.0 = heads=8 scale=3.4028234e38\n", 0, 0}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        case_spec c;
        char err[256];
        cr_assert_eq(case_parse(good[i].text, &c, err, sizeof err), 0, "%s: %s", good[i].text,
                     err);
        const float s = c.layers[0].scale;
        cr_assert((isinf(s) != 0) == good[i].inf && (isnan(s) != 0) == good[i].nan && s != 0.0f,
                  "%s: %g", good[i].text, (double)s);
    }
}

Test(malformed, messages_quote_no_terminal_control) {
    static const char *const texts[] = {
        "fo\x1b[31mo = 1\n",
        "layer.0 = heads=\x1b]0;title\x07\n",
        "name = \xff\xfe\n",
        "requests = 1x1\x1b[2J\n",
        "layer.\x9b\x31 = heads=8\n",
        "kv_heads = 4\r\n\x01\x02 = 3\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        case_spec c;
        char err[512] = "";
        cr_assert_neq(case_parse(texts[i], &c, err, sizeof err), 0, "text %zu parsed", i);
        for (const unsigned char *p = (const unsigned char *)err; *p; p++)
            cr_assert(*p >= 0x20 && *p < 0x7F, "text %zu: byte 0x%02x in '%s'", i, *p, err);
        cr_assert(strstr(err, "\\x"), "text %zu: '%s' shows no escaped byte", i, err);
    }
}

/* The structure-aware mutator edits whatever the fuzzer hands it: cases at
 * int32's ends (which the byte form now decodes to), invalid ones kept, an
 * engine whose limits are INT32_MAX.  Under UBSan (make test-asan) any
 * signed overflow in its arithmetic ends the test; everywhere, every
 * mutated case must still have its byte form. */
Test(malformed, mutator_takes_cases_at_int32_ends) {
    static const ag_caps huge = {.max_heads = INT32_MAX, .max_head_dim = INT32_MAX,
                                 .max_block_size = INT32_MAX, .max_threads = INT32_MAX,
                                 .max_seq_len = INT32_MAX, .max_splits = INT32_MAX};
    const mutate_ctx m = {&huge, NULL, 0, (uint64_t)1 << 16};
    uint64_t rng = 0x61;
    for (int start = 0; start < 64; start++) {
        case_spec c;
        case_default(&c);
        const int32_t v = start % 2 ? INT32_MAX : INT32_MIN;
        int32_t *const f[] = {&c.num_kv_heads, &c.layers[0].num_heads, &c.layers[0].window,
                              &c.model_num_heads, &c.head_dim, &c.block_size, &c.threads,
                              &c.kv_len[0], &c.q_len[0]};
        const int nf = (int)(sizeof f / sizeof f[0]);
        /* one field, or (start >= 32) all of them, at an end; a valid
         * request of INT32_MAX keys is the budget's to shorten */
        for (int i = 0; i < nf; i++)
            if (start >= 32 || i == (start / 2) % nf) *f[i] = v;
        if (start % 4 == 1) c.q_len[0] = 1, c.kv_len[0] = INT32_MAX;
        for (int e = 0; e < 200; e++) {
            if (e % 10 == 9) {   /* a cross-over with a case at the other end */
                case_spec other, out;
                case_default(&other);
                const int32_t w = v == INT32_MAX ? INT32_MIN : INT32_MAX;
                other.num_kv_heads = other.layers[0].num_heads = w;
                other.kv_len[0] = w;
                /* a layer at int32's top over one KV head, crossed into a
                 * case of many: its heads scale by a's KV heads */
                if (e % 20 == 19) {
                    other.num_kv_heads = 1;
                    other.layers[0].num_heads = INT32_MAX;
                    c.num_kv_heads = 64;
                }
                case_cross(&c, &other, &out, &rng, &m);
                c = out;
            }
            case_mutate(&c, &rng, &m);
            uint8_t buf[CASE_BYTES_MAX];
            char err[200];
            const size_t n = case_encode(&c, buf, sizeof buf, err, sizeof err);
            cr_assert(n > 0 || strstr(err, "more than"), "start %d edit %d: %s", start, e, err);
        }
    }
}

/* --------------------------------------------------------- adapter tables */

/* engine.h's required entries, as its comments state them (the registry's
 * list is checked against this one, not derived from it). */
static const struct {
    const char *name;
    size_t off;
} k_required[] = {
    {"open", offsetof(ag_engine, open)},
    {"close", offsetof(ag_engine, close)},
    {"caps", offsetof(ag_engine, caps)},
    {"create", offsetof(ag_engine, create)},
    {"destroy", offsetof(ag_engine, destroy)},
    {"kv_cache_bytes", offsetof(ag_engine, kv_cache_bytes)},
    {"write_kv", offsetof(ag_engine, write_kv)},
    {"plan", offsetof(ag_engine, plan)},
    {"plan_destroy", offsetof(ag_engine, plan_destroy)},
    {"run", offsetof(ag_engine, run)},
};

static ag_status no_open(const char *options, void **ctx, ag_msg *msg) {
    (void)options, (void)ctx, (void)msg;
    cr_assert_fail("a refused table was opened");
    return AG_INTERNAL;
}

Test(malformed, registry_refuses_broken_tables) {
    ag_msg msg;
    const ag_engine *real = ag_engine_find("attnguard", &msg);
    cr_assert_not_null(real, "%s", msg.text);
    cr_assert_eq(ag_engine_check(real, NULL, &msg), 0, "%s", msg.text);
    for (size_t i = 0; i < sizeof k_required / sizeof k_required[0]; i++) {
        ag_engine t = *real;
        void *null = NULL;
        memcpy((char *)&t + k_required[i].off, &null, sizeof null);
        cr_assert_neq(ag_engine_check(&t, "broken", &msg), 0, "NULL %s accepted",
                      k_required[i].name);
        char want[64];
        snprintf(want, sizeof want, "'%s'", k_required[i].name);
        cr_assert(strstr(msg.text, want) && strstr(msg.text, "broken"), "%s", msg.text);
    }
    /* the optional entries may be NULL */
    ag_engine opt = *real;
    opt.variants = NULL;
    opt.group_info = NULL;
    opt.extents = NULL;
    opt.plan_shape = NULL;
    opt.internal_needs = NULL;
    opt.paths = NULL;
    cr_assert_eq(ag_engine_check(&opt, "optional", &msg), 0, "%s", msg.text);
    /* another version: refused on the version, naming both */
    ag_engine old = *real;
    old.abi_version = AG_ENGINE_ABI_VERSION - 1;
    cr_assert_neq(ag_engine_check(&old, "old", &msg), 0);
    cr_assert(strstr(msg.text, "version") && strstr(msg.text, "old"), "%s", msg.text);
    /* a table cut short in its initializer: the first missing entry named */
    const ag_engine shorty = {.abi_version = AG_ENGINE_ABI_VERSION, .name = "short",
                              .summary = "cut short", .open = no_open};
    cr_assert_neq(ag_engine_check(&shorty, NULL, &msg), 0);
    cr_assert(strstr(msg.text, "'close'") && strstr(msg.text, "short"), "%s", msg.text);
    ag_engine nameless = *real;
    nameless.name = NULL;
    cr_assert_neq(ag_engine_check(&nameless, "x.so", &msg), 0);
    cr_assert(strstr(msg.text, "name"), "%s", msg.text);
    cr_assert_neq(ag_engine_check(NULL, "none", &msg), 0);
    /* and a harness never opens one */
    char err[400];
    cr_assert_neq(engine_host_adopt(&shorty, NULL, err, sizeof err), 0);
    cr_assert(strstr(err, "'close'"), "%s", err);
}

/* ------------------------------------------------------------------- CLI */

static char g_dir[PATH_MAX];

static void cli_setup(void) {
    snprintf(g_dir, sizeof g_dir, "%s/attnguard-test-malformed-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(g_dir));
}

static void cli_teardown(void) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "test_malformed: could not remove %s\n", g_dir);
}

/* A path in the test's folder (16 kept at once). */
static const char *in_dir(const char *name) {
    static char path[16][PATH_MAX + 64];
    static int next;
    char *p = path[next++ % 16];
    snprintf(p, sizeof path[0], "%s/%s", g_dir, name);
    return p;
}

static const char *write_case(const char *name, const char *text) {
    const char *path = in_dir(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* main.c's usage text is not in the harness library: check prints it on a
 * usage error only, which these tests reach for no command. */
void cli_usage(FILE *f) { fputs("usage: attnguard (test stand-in)\n", f); }

typedef int (*cli_fn)(int, char **);

/* Runs a subcommand with stdout and stderr in files; returns its status
 * and both outputs (static, until the next call). */
static int run_cli(cli_fn fn, const char *const *args, const char **out, const char **err) {
    static char obuf[16384], ebuf[16384];
    char *argv[16];
    int argc = 0;
    for (; args[argc]; argc++) argv[argc] = (char *)args[argc];
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    char opath[PATH_MAX + 16], epath[PATH_MAX + 16];
    snprintf(opath, sizeof opath, "%s/stdout", g_dir);
    snprintf(epath, sizeof epath, "%s/stderr", g_dir);
    const int o = dup(1), e = dup(2);
    cr_assert(freopen(opath, "w", stdout) && freopen(epath, "w", stderr));
    const int rc = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(o, 1);
    dup2(e, 2);
    close(o);
    close(e);
    FILE *f = fopen(opath, "r");
    obuf[fread(obuf, 1, sizeof obuf - 1, f)] = '\0';
    fclose(f);
    f = fopen(epath, "r");
    ebuf[fread(ebuf, 1, sizeof ebuf - 1, f)] = '\0';
    fclose(f);
    *out = obuf;
    *err = ebuf;
    return rc;
}

TestSuite(malformed_cli, .init = cli_setup, .fini = cli_teardown);

Test(malformed_cli, a_folder_is_named_as_one) {
    const char *out, *err;
    const char *dir = in_dir("cases");
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *show[] = {dir, NULL};
    cr_assert_eq(run_cli(cli_show, show, &out, &err), 1);
    cr_assert(strstr(err, "is a directory"), "%s", err);
    const char *check[] = {dir, NULL};
    cr_assert_eq(run_cli(cli_check, check, &out, &err), 1);
    cr_assert(strstr(out, "is a directory"), "%s", out);
    const char *repro[] = {dir, NULL};
    cr_assert_eq(run_cli(cli_repro, repro, &out, &err), 2);
    cr_assert(strstr(err, "is a directory"), "%s", err);
}

Test(malformed_cli, unknown_target_and_bug_are_named) {
    const char *out, *err;
    const char *c = write_case("small.case", "requests = 1x8\n");
    const char *t[] = {c, "--target", "bogus", NULL};
    cr_assert_eq(run_cli(cli_repro, t, &out, &err), 2);
    cr_assert(strstr(err, "no fuzz target named 'bogus'") && strstr(err, "fuzz_attention"),
              "%s", err);
    const char *b[] = {c, "--inject", "nosuchbug", NULL};
    cr_assert_eq(run_cli(cli_repro, b, &out, &err), 2);
    cr_assert(strstr(err, "no injected bug named 'nosuchbug'") &&
                  strstr(err, "model_wide_heads"),
              "%s", err);
    const char *s[] = {"--target", "bogus", c, NULL};
    cr_assert_eq(run_cli(cli_show, s, &out, &err), 2);
    cr_assert(strstr(err, "no fuzz target named 'bogus'"), "%s", err);
    cr_assert_eq(out[0], '\0', "decoded anyway: %s", out);
}

Test(malformed_cli, compute_budget_names_the_limit_and_the_fields) {
    const char *out, *err;
    cr_assert_eq(unsetenv("ATTNGUARD_MAX_WORK"), 0);
    /* the case: under every byte cap, about 10^14 multiply-adds */
    const char *big = write_case("big.case", "kv_heads = 16\nhead_dim = 17\n"
                                             "requests = 100000x100000\nlayer.0 = heads=16\n");
    const char *a[] = {big, NULL};
    cr_assert_eq(run_cli(cli_check, a, &out, &err), 1);
    cr_assert(strstr(out, "NOT RUN") && strstr(out, "compute budget") &&
                  strstr(out, "ATTNGUARD_MAX_WORK") && strstr(out, "line 3 (requests)") &&
                  strstr(out, "line 2 (head_dim)"),
              "%s", out);
    /* overridable: the default small case past a budget of 1000 */
    const char *small = write_case("small.case", "requests = 1x37\n");
    cr_assert_eq(setenv("ATTNGUARD_MAX_WORK", "1000", 1), 0);
    const char *b[] = {small, NULL};
    cr_assert_eq(run_cli(cli_check, b, &out, &err), 1);
    cr_assert(strstr(out, "NOT RUN") && strstr(out, "budget of 1e+03"), "%s", out);
    cr_assert_eq(setenv("ATTNGUARD_MAX_WORK", "lots", 1), 0);
    cr_assert_eq(run_cli(cli_check, b, &out, &err), 2);
    cr_assert(strstr(err, "ATTNGUARD_MAX_WORK='lots'"), "%s", err);
    cr_assert_eq(setenv("ATTNGUARD_MAX_WORK", "none", 1), 0);
    cr_assert_eq(run_cli(cli_check, b, &out, &err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "PASS"), "%s", out);
}

Test(malformed_cli, not_run_names_the_line) {
    const char *out, *err;
    cr_assert_eq(setenv("ATTNGUARD_MAX_WORK", "none", 1), 0);
    const char *none = write_case("none.case", "model_num_heads = 8\nlayers = none\n");
    const char *a[] = {none, NULL};
    cr_assert_eq(run_cli(cli_check, a, &out, &err), 1);
    cr_assert(strstr(out, "the group has no layers") && strstr(out, "line 2 (layers)"), "%s",
              out);
    /* 6.5 GB of inputs for one decode row */
    const char *bytes = write_case("bytes.case", "kv_heads = 8\nhead_dim = 256\n"
                                                 "requests = 1x400000\nlayer.0 = heads=8\n");
    const char *b[] = {bytes, NULL};
    cr_assert_eq(run_cli(cli_check, b, &out, &err), 1);
    cr_assert(strstr(out, "need 6554494628 bytes") && strstr(out, "268435456") &&
                  strstr(out, "line 3 (requests)"),
              "%s", out);
}
