/*
 * test_verdict.c — the crash classifier (harness/cli/repro_verdict.c) and the
 * .options reader (harness/cli/repro_options.c) that every fuzz tool relies on.
 *
 * Covers: each kind of report (oracle line, ASan error with its access
 * line, LeakSanitizer, UBSan with report_error_type, libFuzzer timeout and
 * OOM, the replay driver's watchdog) gets its kind; an oracle line wins
 * over the abort that follows it; a passing log has no kind and a silent
 * non-zero exit reads as a failure; the top frames skip the sanitizer,
 * libFuzzer, libc and oracle plumbing and keep file:line without the
 * column; the options reader turns [libfuzzer] lines into flags, resolves
 * the dict beside the file, ignores other sections and names the line of a
 * malformed one.  Logs are written inline: the formats are the sanitizers'.
 */
#include <criterion/criterion.h>

#include "../../harness/cli/repro_options.h"
#include "../../harness/cli/repro_verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static repro_verdict parse(const char *text, int status) {
    repro_verdict v;
    repro_parse_log(text, status, &v);
    return v;
}

Test(verdict, oracle_line_names_the_finding_over_the_abort) {
    repro_verdict v = parse(
        "INFO: Seed: 1\n"
        "attnguard: ORACLE sizing: layers.0 (64 heads) needs 4096 bytes\n"
        "==7== ERROR: libFuzzer: deadly signal\n"
        "    #0 0x1 in __sanitizer_print_stack_trace /llvm/asan_stack.cpp:87:3\n"
        "    #1 0x2 in fuzzer::PrintStackTrace() /llvm/FuzzerUtil.cpp:210:5\n"
        "    #2 0x3 in abort (/lib/x86_64-linux-gnu/libc.so.6+0x2653c)\n"
        "    #3 0x4 in oracle_fire_sizing /w/harness/judge/oracles.c:94:1\n"
        "    #4 0x5 in check_sizing /w/harness/judge/oracles.c:300:9\n"
        "    #5 0x6 in LLVMFuzzerTestOneInput /w/fuzz/fuzz_plan.c:40:5\n"
        "    #6 0x7 in plan_build /w/src/plan.c:12:1\n"
        "    #7 0x8 in builder_go /w/src/builder.c:13:1\n"
        "\n"
        "    #0 0x9 in later_stack /w/src/x.c:1:1\n",
        1);
    cr_assert_str_eq(v.kind, "sizing");
    cr_assert(v.from_oracle);
    cr_assert_str_eq(v.detail, "layers.0 (64 heads) needs 4096 bytes");
    cr_assert_eq(v.nframes, 3);
    cr_assert_str_eq(v.frames[0], "check_sizing@oracles.c:300");
    cr_assert_str_eq(v.frames[1], "LLVMFuzzerTestOneInput@fuzz_plan.c:40");
    cr_assert_str_eq(v.frames[2], "plan_build@plan.c:12");
}

Test(verdict, asan_error_keeps_kind_and_access) {
    repro_verdict v = parse(
        "==9==ERROR: AddressSanitizer: use-after-poison on address 0x6 at pc 0x5\n"
        "WRITE of size 4 at 0x6 thread T0\n"
        "    #0 0x5 in attn_kernel_tile /w/src/kernels/avx512.c:120:7\n"
        "SUMMARY: AddressSanitizer: use-after-poison /w/src/kernels/avx512.c:120:7\n",
        1);
    cr_assert_str_eq(v.kind, "asan:use-after-poison");
    cr_assert_not(v.from_oracle);
    cr_assert_str_eq(v.access, "WRITE of size 4 at 0x6 thread T0");
    cr_assert_eq(v.nframes, 1);
    cr_assert_str_eq(v.frames[0], "attn_kernel_tile@avx512.c:120");
}

Test(verdict, leak_ubsan_and_libfuzzer_kinds) {
    cr_assert_str_eq(parse("==1==ERROR: LeakSanitizer: detected memory leaks\n", 1).kind,
                     "asan:leak");
    cr_assert_str_eq(parse("x.c:3:5: runtime error: signed integer overflow\n"
                           "SUMMARY: UndefinedBehaviorSanitizer: signed-integer-overflow x.c:3:5\n",
                           1).kind,
                     "ubsan:signed-integer-overflow");
    cr_assert_str_eq(parse("x.c:3:5: runtime error: shift exponent 40\n", 1).kind,
                     "ubsan:runtime-error");
    cr_assert_str_eq(parse("==2== ERROR: libFuzzer: timeout after 25 seconds\n", 1).kind,
                     "timeout");
    cr_assert_str_eq(parse("==2== ERROR: libFuzzer: out-of-memory (used: 2600Mb)\n", 1).kind,
                     "oom");
    cr_assert_str_eq(parse("replay: TIMEOUT corpus/fuzz_plan/a.bin\n", 1).kind, "timeout");
}

Test(verdict, passing_and_silent_failure) {
    repro_verdict ok = parse("INFO: Running with entropic power schedule\nDone 1 runs\n", 0);
    cr_assert_str_eq(ok.kind, "");
    cr_assert_eq(ok.nframes, 0);
    cr_assert_str_eq(parse("something went wrong\n", 3).kind, "failure(exit 3)");
}

/* Write text to a fresh file named name in a private directory; returns
 * the path (static buffer).  Each test runs in its own process, so the
 * directory is that test's; tmp_cleanup (the tests' .fini) removes it. */
static char tmp_dir[64];
static const char *tmp_file(const char *name, const char *text) {
    static char path[128];
    char *dir = tmp_dir;
    if (!dir[0]) {
        snprintf(dir, sizeof tmp_dir, "/tmp/attn-verdict-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void tmp_cleanup(void) {
    static const char *const names[] = {"t.dict", "t.options", "bad.options", "empty.options"};
    if (!tmp_dir[0]) return;
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
        unlink(path);
    }
    rmdir(tmp_dir);
}

Test(verdict, options_become_flags_with_the_dict_beside, .fini = tmp_cleanup) {
    tmp_file("t.dict", "\"x\"\n");
    const char *p = tmp_file("t.options", "# limits\n[libfuzzer]\ntimeout = 7\n"
                                          "rss_limit_mb=1234\n\n[asan]\ndetect_leaks = 0\n");
    repro_flags fl;
    char err[256];
    cr_assert_eq(repro_read_options(p, &fl, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fl.n, 3);
    cr_assert_str_eq(fl.flag[0], "-timeout=7");
    cr_assert_str_eq(fl.flag[1], "-rss_limit_mb=1234");
    cr_assert(strstr(fl.flag[2], "-dict=") == fl.flag[2] && strstr(fl.flag[2], "/t.dict"));
    cr_assert_str_eq(repro_flag_value(&fl, "timeout"), "7");
    cr_assert_null(repro_flag_value(&fl, "detect_leaks"));   /* other sections: not flags */
}

Test(verdict, malformed_options_name_the_line, .fini = tmp_cleanup) {
    const char *p = tmp_file("bad.options", "[libfuzzer]\ntimeout = 7\nmax_len 1024\n");
    repro_flags fl;
    char err[256] = "";
    cr_assert_eq(repro_read_options(p, &fl, err, sizeof err), -1);
    cr_assert(strstr(err, "bad.options:3:") != NULL, "%s", err);
    p = tmp_file("empty.options", "[libfuzzer]\ntimeout =\n");
    cr_assert_eq(repro_read_options(p, &fl, err, sizeof err), -1);
    cr_assert(strstr(err, "empty.options:2:") != NULL, "%s", err);
    cr_assert_eq(repro_read_options("/nonexistent/x.options", &fl, err, sizeof err), -1);
}
