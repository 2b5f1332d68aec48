/*
 * test_docs.c — docs/fuzzing.md's table of fuzz targets is the list of
 * fuzz/fuzz_*.c (mk/fuzz.mk's definition of the targets): a row for every
 * target, and no row for one that does not exist (it once counted three
 * targets where there were five).  Runs from the repository root.
 */
#include <criterion/criterion.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_doc(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s (run from the repository root)", path);
    static char text[1 << 18];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

Test(docs, fuzzing_md_lists_every_fuzz_target) {
    const char *doc = read_doc("docs/fuzzing.md");
    glob_t g;
    cr_assert_eq(glob("fuzz/fuzz_*.c", 0, NULL, &g), 0, "no fuzz/fuzz_*.c");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char row[128];
        const char *base = g.gl_pathv[i] + strlen("fuzz/");
        snprintf(row, sizeof row, "\n| `%.*s`", (int)(strlen(base) - 2), base);
        cr_assert(strstr(doc, row), "docs/fuzzing.md has no table row for %s", g.gl_pathv[i]);
    }
    /* and every row names a target that exists */
    size_t rows = 0;
    for (const char *p = strstr(doc, "\n| `fuzz_"); p; p = strstr(p + 1, "\n| `fuzz_")) {
        char name[96], path[128];
        if (sscanf(p, "\n| `%95[a-z_]`", name) != 1) continue;
        snprintf(path, sizeof path, "fuzz/%s.c", name);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "docs/fuzzing.md has a row for %s, which does not exist", name);
        fclose(f);
        rows++;
    }
    cr_assert_geq(rows, g.gl_pathc);
    globfree(&g);
}
