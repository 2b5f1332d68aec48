/*
 * test_inject.c — src/inject_list.h is the one list of the injected bugs:
 * every bug it names is behind ATTN_INJECT_<name> in the file it names,
 * and every ATTN_INJECT_<name> under src/ and engines/ is in the list (so the mutant
 * campaign, which reads the list, sees every bug the engine can carry).
 * Reads the sources from the repository root (the directory make runs
 * the suites in).
 */
#include <criterion/criterion.h>

#include "../../src/inject_list.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bug {
    const char *name, *engine, *where, *what;
} bug;
#define BUG(n, e, w, d) {#n, #e, w, d},
static const bug k_bugs[] = {ATTN_INJECT_LIST(BUG)};
#define N_BUGS ((int)(sizeof k_bugs / sizeof k_bugs[0]))

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static int listed(const char *name, size_t len) {
    for (int i = 0; i < N_BUGS; i++)
        if (strlen(k_bugs[i].name) == len && !strncmp(k_bugs[i].name, name, len)) return 1;
    return 0;
}

Test(inject, listed_bugs_live_where_listed) {
    for (int i = 0; i < N_BUGS; i++) {
        char path[256], token[96];
        snprintf(path, sizeof path, "%s", k_bugs[i].where);
        snprintf(token, sizeof token, "ATTN_INJECT_%s", k_bugs[i].name);
        char *s = slurp(path);
        cr_assert_not_null(s, "%s: cannot read %s (run from the repository root)", k_bugs[i].name,
                           path);
        cr_assert(strstr(s, token), "%s is listed in %s but %s does not hold it", token, path, path);
        free(s);
    }
}

static void scan_dir(const char *dir, int *found) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s (run from the repository root)", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t n = strlen(e->d_name);
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *s = slurp(path);
        cr_assert_not_null(s, "cannot read %s", path);
        for (const char *p = strstr(s, "ATTN_INJECT_"); p; p = strstr(p + 1, "ATTN_INJECT_")) {
            const char *name = p + strlen("ATTN_INJECT_");
            size_t len = 0;
            while ((name[len] >= 'a' && name[len] <= 'z') || (name[len] >= '0' && name[len] <= '9') ||
                   name[len] == '_')
                len++;
            if (len == 0 || (name[0] >= 'A' && name[0] <= 'Z')) continue; /* ATTN_INJECT_NAME, _LIST */
            cr_assert(listed(name, len), "%s: ATTN_INJECT_%.*s is not in src/inject_list.h", path,
                      (int)len, name);
            (*found)++;
        }
        free(s);
    }
    closedir(d);
}

Test(inject, every_bug_in_src_is_listed) {
    int found = 0;
    scan_dir("src", &found);
    scan_dir("src/kernels", &found);
    scan_dir("engines/attnguard", &found);
    scan_dir("engines/ggml", &found);
    scan_dir("engines/ort", &found);
    cr_assert_geq(found, N_BUGS, "%d ATTN_INJECT_ uses for %d listed bugs", found, N_BUGS);
}

/* The engine column names an engine the registry knows (engines.def lists
 * ggml only when its headers were fetched, so read the file, not the
 * compiled registry). */
Test(inject, engine_column_names_a_registered_engine) {
    char *def = slurp("engines/engines.def");
    cr_assert_not_null(def, "cannot read engines/engines.def (run from the repository root)");
    for (int i = 0; i < N_BUGS; i++) {
        char token[96];
        snprintf(token, sizeof token, "AG_ENGINE(%s)", k_bugs[i].engine);
        cr_assert(strstr(def, token), "%s: engine '%s' is not in engines/engines.def",
                  k_bugs[i].name, k_bugs[i].engine);
    }
    free(def);
}
