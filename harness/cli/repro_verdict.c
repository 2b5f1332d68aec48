/*
 * repro_verdict.c — parse a fuzz target's log into a verdict (the oracle's
 * `attnguard: ORACLE <name>:` line first, else the sanitizer's or
 * libFuzzer's error, plus the top frames of the first stack) and print it,
 * as text for `attnguard repro` or as JSON for `attnguard classify`.  Split
 * from repro.c, which runs the child.
 */
#include "repro_verdict.h"

#include "../util/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void copy_line(char *dst, size_t cap, const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* The word after `prefix` in [s, s+n) into dst ("heap-buffer-overflow"). */
static void word_after(char *dst, size_t cap, const char *s, size_t n, const char *prefix) {
    const char *p = strstr(s, prefix);
    dst[0] = '\0';
    if (!p || p >= s + n) return;
    p += strlen(prefix);
    size_t k = 0;
    while (p + k < s + n && p[k] != ' ' && p[k] != ':' && p[k] != '\n' && p[k] != '\r') k++;
    if (k >= cap) k = cap - 1;
    memcpy(dst, p, k);
    dst[k] = '\0';
}

/* Frames that belong to the reporting machinery, not to the bug: the
 * sanitizer and libFuzzer runtimes, libc's abort path, the harness's
 * oracle_fire_* functions (every oracle aborts through them) and
 * fuzz_api.c's violation() wrapper around them. */
static int plumbing_frame(const char *fn) {
    static const char *const prefix[] = {"__sanitizer", "__asan", "__ubsan", "__lsan",
                                         "__interceptor", "fuzzer::", "__pthread_kill",
                                         "pthread_kill", "__GI_", "__libc_", "__assert",
                                         "oracle_fire", "violation", "("};
    static const char *const exact[] = {"raise", "abort", "gsignal", "_start", "main",
                                        "__sigaction"};
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        if (strncmp(fn, prefix[i], strlen(prefix[i])) == 0) return 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(fn, exact[i]) == 0) return 1;
    return 0;
}

/* A stack line "#3 0x55d0 in fn /path/file.c:12:5" -> "fn@file.c:12" in out
 * (just "fn" when the location is a module "(lib.so+0x..)" or absent).
 * Returns 1 for a frame line (out empty when the frame is plumbing), 0 for
 * any other line. */
static int parse_frame(const char *line, char *out, size_t cap) {
    out[0] = '\0';
    if (line[0] != '#' || line[1] < '0' || line[1] > '9') return 0;
    const char *p = line + 1;
    while (*p >= '0' && *p <= '9') p++;
    if (strncmp(p, " 0x", 3) != 0) return 0;
    p = strstr(p, " in ");
    if (!p) return 1;   /* an unsymbolized frame: no name to key on */
    p += 4;
    size_t fl = strcspn(p, " ");
    char fn[128];
    if (fl >= sizeof fn) fl = sizeof fn - 1;
    memcpy(fn, p, fl);
    fn[fl] = '\0';
    if (plumbing_frame(fn)) return 1;
    const char *loc = p + strcspn(p, " ");
    while (*loc == ' ') loc++;
    if (!*loc || *loc == '(') {
        snprintf(out, cap, "%s", fn);
        return 1;
    }
    /* basename, then file:line (the column moves with unrelated edits) */
    size_t ll = strcspn(loc, " ");
    const char *base = loc;
    for (const char *q = loc; q < loc + ll; q++)
        if (*q == '/') base = q + 1;
    size_t bl = (size_t)(loc + ll - base);
    const char *c1 = memchr(base, ':', bl);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(base + bl - c1 - 1)) : NULL;
    if (c2) bl = (size_t)(c2 - base);
    snprintf(out, cap, "%s@%.*s", fn, (int)bl, base);
    return 1;
}

void repro_parse_log(const char *text, int status, repro_verdict *v) {
    memset(v, 0, sizeof *v);
    v->status = status;
    char asan_kind[48] = "", ubsan_kind[48] = "", fuzzer_kind[48] = "";   /* + prefix fits kind */
    int stack_done = 0;   /* frames come from the first stack with frames of ours */
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        char line[1024];
        copy_line(line, sizeof line, s, n);
        const char *p;
        char frame[sizeof v->frames[0]];
        if (!stack_done && parse_frame(line, frame, sizeof frame)) {
            if (frame[0] && v->nframes < REPRO_VERDICT_FRAMES)
                memcpy(v->frames[v->nframes++], frame, sizeof frame);
        } else if (v->nframes > 0 && !line[0]) {
            stack_done = 1;
        }
        if (!v->from_oracle && (p = strstr(line, "attnguard: ORACLE ")) != NULL) {
            p += strlen("attnguard: ORACLE ");
            const char *colon = strchr(p, ':');
            size_t k = colon ? (size_t)(colon - p) : strlen(p);
            if (k >= sizeof v->kind) k = sizeof v->kind - 1;
            memcpy(v->kind, p, k);
            v->kind[k] = '\0';
            const char *d = colon ? colon + 1 + (colon[1] == ' ') : "";
            copy_line(v->detail, sizeof v->detail, d, strlen(d));
            v->from_oracle = 1;
        } else if (!asan_kind[0] && strstr(line, "ERROR: AddressSanitizer: ")) {
            word_after(asan_kind, sizeof asan_kind, line, strlen(line), "ERROR: AddressSanitizer: ");
            copy_line(v->error, sizeof v->error, line, strlen(line));
        } else if (!asan_kind[0] && strstr(line, "ERROR: LeakSanitizer")) {
            snprintf(asan_kind, sizeof asan_kind, "leak");
            copy_line(v->error, sizeof v->error, line, strlen(line));
        } else if (!v->access[0] && (strncmp(line, "WRITE of size", 13) == 0 ||
                                     strncmp(line, "READ of size", 12) == 0)) {
            copy_line(v->access, sizeof v->access, line, strlen(line));
        } else if (!ubsan_kind[0] && strstr(line, "runtime error:")) {
            snprintf(ubsan_kind, sizeof ubsan_kind, "runtime-error");
            if (!v->error[0]) copy_line(v->error, sizeof v->error, line, strlen(line));
        } else if (!fuzzer_kind[0] && strstr(line, "ERROR: libFuzzer: ")) {
            p = strstr(line, "ERROR: libFuzzer: ") + strlen("ERROR: libFuzzer: ");
            if (strncmp(p, "timeout", 7) == 0) snprintf(fuzzer_kind, sizeof fuzzer_kind, "timeout");
            else if (strncmp(p, "out-of-memory", 13) == 0)
                snprintf(fuzzer_kind, sizeof fuzzer_kind, "oom");
            else if (strncmp(p, "deadly signal", 13) == 0)
                snprintf(fuzzer_kind, sizeof fuzzer_kind, "signal");
            else if (strncmp(p, "fuzz target exited", 18) == 0)
                snprintf(fuzzer_kind, sizeof fuzzer_kind, "exit");
            else snprintf(fuzzer_kind, sizeof fuzzer_kind, "libfuzzer");
            if (!v->error[0]) copy_line(v->error, sizeof v->error, line, strlen(line));
        } else if (!fuzzer_kind[0] && strncmp(line, "replay: TIMEOUT ", 16) == 0) {
            /* the replay driver's (fuzz/replay.c) own watchdog */
            snprintf(fuzzer_kind, sizeof fuzzer_kind, "timeout");
            if (!v->error[0]) copy_line(v->error, sizeof v->error, line, strlen(line));
        } else if (!v->summary[0] && strncmp(line, "SUMMARY: ", 9) == 0) {
            copy_line(v->summary, sizeof v->summary, line, strlen(line));
            /* with report_error_type=1 the summary names the check */
            if (strstr(line, "SUMMARY: UndefinedBehaviorSanitizer: "))
                word_after(ubsan_kind, sizeof ubsan_kind, line, strlen(line),
                           "SUMMARY: UndefinedBehaviorSanitizer: ");
        }
        if (!nl) break;
        s = nl + 1;
    }
    if (v->from_oracle) return;
    if (asan_kind[0]) snprintf(v->kind, sizeof v->kind, "asan:%s", asan_kind);
    else if (ubsan_kind[0]) snprintf(v->kind, sizeof v->kind, "ubsan:%s", ubsan_kind);
    else if (fuzzer_kind[0]) copy_line(v->kind, sizeof v->kind, fuzzer_kind, strlen(fuzzer_kind));
    else if (status != 0) snprintf(v->kind, sizeof v->kind, "failure(exit %d)", status);
}

void repro_print_verdict(const repro_verdict *v) {
    if (!v->kind[0]) {
        printf("repro: no finding (the input passes)\n");
        return;
    }
    if (v->from_oracle) printf("repro: ORACLE %s\n", v->kind);
    else printf("repro: %s (no attnguard oracle line; the sanitizer caught it)\n", v->kind);
    /* For bounds findings the oracle's detail is the region/offset/overrun line. */
    if (v->detail[0]) printf("repro:   %s\n", v->detail);
    /* An oracle's abort shows up as libFuzzer's "deadly signal": noise.  A
     * sanitizer's report (scratch-bounds caught by ASan) is worth its lines. */
    int sanitizer = strstr(v->error, "Sanitizer") != NULL || strstr(v->error, "runtime error") != NULL;
    if (v->error[0] && (sanitizer || !v->from_oracle)) printf("repro:   %s\n", v->error);
    if (v->access[0]) printf("repro:   %s\n", v->access);
    if (v->summary[0] && (sanitizer || !v->from_oracle)) printf("repro:   %s\n", v->summary);
    for (int i = 0; i < v->nframes; i++)
        printf("repro:   %s %s\n", i ? "   " : "at", v->frames[i]);
}


/* ------------------------------------------------------------------ JSON */

void repro_verdict_json(FILE *f, const char *file, const repro_verdict *v, int status_known) {
    fputs("{\"file\": ", f);
    json_str(f, file);
    fputs(", \"kind\": ", f);
    json_str(f, v->kind);
    fprintf(f, ", \"oracle\": %s, \"status\": ", v->from_oracle ? "true" : "false");
    if (status_known) fprintf(f, "%d", v->status);
    else fputs("null", f);
    const char *names[] = {"detail", "error", "access", "summary"};
    const char *vals[] = {v->detail, v->error, v->access, v->summary};
    for (int i = 0; i < 4; i++) {
        fprintf(f, ", \"%s\": ", names[i]);
        json_str(f, vals[i]);
    }
    fputs(", \"frames\": [", f);
    for (int i = 0; i < v->nframes; i++) {
        if (i) fputs(", ", f);
        json_str(f, v->frames[i]);
    }
    fputs("]}\n", f);
}

/* A log's text: all of it, or its last CLASSIFY_TAIL bytes when longer (a
 * long fuzzing log is mostly progress lines; the report is at the end).
 * NULL with errno set on failure. */
#define CLASSIFY_TAIL ((long)8 << 20)
static char *read_tail(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, size > CLASSIFY_TAIL ? size - CLASSIFY_TAIL : 0, SEEK_SET) != 0) {
        fclose(f);
        errno = EIO;
        return NULL;
    }
    size_t want = (size_t)(size > CLASSIFY_TAIL ? CLASSIFY_TAIL : size);
    char *buf = malloc(want + 1);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    size_t n = fread(buf, 1, want, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    /* NUL bytes in a log (a dumped input) would end the text early */
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0') buf[i] = ' ';
    buf[n] = '\0';
    return buf;
}

int cli_classify(int argc, char **argv) {
    static const char usage[] =
        "usage: attnguard classify [--status N] LOG...\n"
        "  name the finding in each fuzz-target log (oracle, sanitizer or libFuzzer\n"
        "  kind, detail lines, top frames): one JSON line per log\n";
    int status = 0, status_known = 0, files = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--status") == 0) {
            char *end = NULL;
            long st = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
            if (!end || *end || st < 0 || st > 255) {
                fprintf(stderr, "attnguard classify: --status takes an exit status 0..255\n");
                return 2;
            }
            status = (int)st;
            status_known = 1;
            i++;
        } else {
            files++;
        }
    }
    if (files == 0) {
        fputs(usage, stderr);
        return 2;
    }
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--status") == 0) {
            i++;
            continue;
        }
        char *text = read_tail(argv[i]);
        if (!text) {
            fputs("{\"file\": ", stdout);
            json_str(stdout, argv[i]);
            fputs(", \"read_error\": ", stdout);
            json_str(stdout, strerror(errno));
            fputs("}\n", stdout);
            rc = 1;
            continue;
        }
        repro_verdict v;
        repro_parse_log(text, status, &v);
        free(text);
        repro_verdict_json(stdout, argv[i], &v, status_known);
    }
    return rc;
}
