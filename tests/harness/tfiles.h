/*
 * tfiles.h — a scratch folder per test for the suites that drive the CLI
 * on files (header-only, static inline, like tests/tutil.h): make it under
 * $TMPDIR, put files in it (their folders made), read one back, remove it
 * all.  Not a test file itself (the Makefile compiles only tests' .c files).
 */
#ifndef ATTN_TFILES_H
#define ATTN_TFILES_H

#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* $TMPDIR (else /tmp)/attnguard-test-<stem>-XXXXXX, made; its path in dir. */
static inline void tf_mkdir(char *dir, size_t cap, const char *stem) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/attnguard-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", stem);
    cr_assert_not_null(mkdtemp(dir), "cannot make %s", dir);
}

static inline void tf_rmtree(const char *dir) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "tfiles: could not remove %s\n", dir);
}

/* dir/rel holding text, the folders of rel made; its path in out. */
static inline void tf_put(const char *dir, const char *rel, const char *text, char *out,
                          size_t cap) {
    snprintf(out, cap, "%s/%s", dir, rel);
    for (char *s = strchr(out + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(out, 0700);
        *s = '/';
    }
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f, "cannot write %s", out);
    fputs(text, f);
    fclose(f);
}

/* A whole file into buf (NUL-terminated, cut at cap). */
static inline void tf_slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    const size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

#endif /* ATTN_TFILES_H */
