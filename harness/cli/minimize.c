/*
 * minimize.c — `attnguard repro --minimize`: shrink a crashing input with
 * libFuzzer's -minimize_crash=1 in the target's own binary, keep the result
 * only when the same oracle still fires, and write it as a .case (see
 * minimize.h).
 */
#include "minimize.h"

#include "child.h"
#include "input.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int minimize_once(const char *bin, const repro_flags *fl, const repro_min_opts *o,
                         const char *input, const char *min_path, const char *log,
                         const char *asan, char *err, size_t errlen) {
    char a_runs[48], a_time[48], a_out[PATH_MAX + 32];
    snprintf(a_runs, sizeof a_runs, "-runs=%ld", o->runs);
    snprintf(a_time, sizeof a_time, "-max_total_time=%ld", o->max_time);
    snprintf(a_out, sizeof a_out, "-exact_artifact_path=%s", min_path);
    char *const extra[] = {(char *)"-minimize_crash=1", a_runs, a_time, a_out};
    unlink(min_path);
    if (repro_run_with_flags(bin, fl, extra, 4, input, asan, log, err, errlen) < 0) return -1;
    if (access(min_path, R_OK) != 0) {
        snprintf(err, errlen, "libFuzzer wrote no minimized input; the end of its log:");
        return -1;
    }
    return 0;
}

int repro_minimize(const char *bin, const repro_flags *fl, const repro_min_opts *o,
                       const char *target,
                       const char *input, size_t in_bytes, const char *workdir,
                       const repro_verdict *orig) {
    char min_path[PATH_MAX], log[PATH_MAX], vlog[PATH_MAX], err[512];
    if (cli_path_join(min_path, sizeof min_path, workdir, "minimized") != 0 ||
        cli_path_join(log, sizeof log, workdir, "minimize.log") != 0 ||
        cli_path_join(vlog, sizeof vlog, workdir, "minimized.log") != 0) {
        fprintf(stderr, "attnguard repro: temporary path too long\n");
        return 2;
    }
    /* (docs/fuzzing.md, "Minimising") dedup_token_length=3 keeps libFuzzer on the same crash for
     * sanitizer reports.  An oracle's abort has the same top frames whatever
     * the oracle, so if the oracle changed on the way, retry with ASan
     * handling the abort and a token deep enough to hold the oracle's own
     * frame. */
    static const char *const attempts[] = {
        "dedup_token_length=3:print_summary=1",
        "handle_abort=1:dedup_token_length=8:print_summary=1",
    };
    repro_verdict v;
    int kept = 0;
    for (size_t k = 0; k < sizeof attempts / sizeof attempts[0] && !kept; k++) {
        printf("repro: minimizing with libFuzzer -minimize_crash=1 -runs=%ld (ASAN_OPTIONS=%s)\n",
               o->runs, attempts[k]);
        fflush(stdout);
        if (minimize_once(bin, fl, o, input, min_path, log, attempts[k], err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            cli_print_tail(log, 8);
            return 2;
        }
        if (repro_run_verdict(bin, fl, min_path, vlog, &v, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard repro: %s\n", err);
            return 2;
        }
        kept = strcmp(v.kind, orig->kind) == 0;
        if (!kept)
            printf("repro: the minimized input fires %s instead of %s: %s\n",
                   v.kind[0] ? v.kind : "nothing", orig->kind,
                   k + 1 < sizeof attempts / sizeof attempts[0] ? "retrying" : "giving up");
    }
    if (!kept) return 1;

    case_spec c;
    repro_input mi;
    if (repro_load(min_path, target, 1, &c, &mi, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", err);
        return 2;
    }

    char out[PATH_MAX];
    if (o->out) {
        cli_str_copy(out, sizeof out, o->out);
    } else {
        size_t L = strlen(o->file);
        if (cli_ends_with(o->file, ".case")) L -= 5;
        if (L + sizeof ".min.case" > sizeof out) {
            fprintf(stderr, "attnguard repro: path too long\n");
            return 2;
        }
        memcpy(out, o->file, L);
        memcpy(out + L, ".min.case", sizeof ".min.case");
    }
    /* The fuzz_api prefix is not part of a case: keep it as a comment with
     * the command that reruns the case the same way. */
    char text[16384];
    size_t hl = 0;
    if (mi.api)
        hl = (size_t)snprintf(text, sizeof text,
                              "# fuzz_api prefix %02x%02x%02x%02x: rerun with attnguard repro "
                              "FILE --target fuzz_api --api-prefix %02x%02x%02x%02x\n",
                              mi.api_prefix[0], mi.api_prefix[1], mi.api_prefix[2],
                              mi.api_prefix[3], mi.api_prefix[0], mi.api_prefix[1],
                              mi.api_prefix[2], mi.api_prefix[3]);
    size_t tl = hl < sizeof text ? hl + case_format(text + hl, sizeof text - hl, &c) : hl;
    if (tl >= sizeof text || cli_write_all(out, text, tl, err, sizeof err) != 0) {
        fprintf(stderr, "attnguard repro: %s\n", tl >= sizeof text ? "case text too long" : err);
        return 2;
    }
    printf("repro: minimized %zu -> %zu bytes, still %s; wrote %s:\n", in_bytes, mi.nbytes,
           v.kind, out);
    fputs(text, stdout);
    repro_print_verdict(&v);
    return 1;
}
