/*
 * repro_verdict.c — parse a fuzz target's log into a verdict (the oracle's
 * `attnguard: ORACLE <name>:` line first, else the sanitizer's or
 * libFuzzer's error) and print it.  Split from repro.c, which runs the child.
 */
#include "repro_verdict.h"

#include <stdio.h>
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

void repro_parse_log(const char *text, int status, repro_verdict *v) {
    memset(v, 0, sizeof *v);
    v->status = status;
    char asan_kind[48] = "", ubsan_kind[48] = "", fuzzer_kind[48] = "";   /* + prefix fits kind */
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        char line[1024];
        copy_line(line, sizeof line, s, n);
        const char *p;
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
}

