/*
 * known.c — is a fuzz target or injected bug name one this tree has (see
 * known.h).  AG_FUZZ_TARGETS and AG_INJECT_BUGS are comma-separated lists
 * make writes on this file's command line from their one source each.
 */
#include "known.h"

#include <stdio.h>
#include <string.h>

/* 1 when name is an item of the comma-separated list; else 0 with `why`
 * saying so, `what` naming the kind of name and `where` the list's home. */
static int in_list(const char *list, const char *name, const char *what, const char *where,
                   char *why, size_t cap) {
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p += len + (p[len] == ',');
    }
    if (!why || !cap) return 0;
    int used = snprintf(why, cap, "no %s named '%.64s' (%s:", what, name, where);
    for (const char *p = list; *p && used >= 0 && (size_t)used < cap;) {
        const size_t len = strcspn(p, ",");
        used += snprintf(why + used, cap - (size_t)used, " %.*s%s", (int)len, p,
                         p[len] ? "," : ")");
        p += len + (p[len] == ',');
    }
    return 0;
}

int cli_known_target(const char *name, char *why, size_t cap) {
#ifdef AG_FUZZ_TARGETS
    return in_list(AG_FUZZ_TARGETS, name ? name : "", "fuzz target", "the targets, fuzz/fuzz_*.c",
                   why, cap);
#else
    (void)name, (void)why, (void)cap;
    return 1;
#endif
}

int cli_known_bug(const char *name, char *why, size_t cap) {
#ifdef AG_INJECT_BUGS
    return in_list(AG_INJECT_BUGS, name ? name : "", "injected bug",
                   "the bugs of src/inject_list.h", why, cap);
#else
    (void)name, (void)why, (void)cap;
    return 1;
#endif
}
