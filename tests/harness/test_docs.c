/*
 * test_docs.c — the docs' lists that something else defines: docs/fuzzing.md's
 * table of fuzz targets is the list of fuzz/fuzz_*.c (mk/fuzz.mk's definition
 * of the targets): a row for every target, and no row for one that does not
 * exist (it once counted three targets where there were five); docs/engines.md's
 * contract splits the ABI's entry points (engine.h) into required and
 * optional as the registry does (ag_engine_check: `extents` was once listed
 * without "optional" there while engine.h called it optional), and its table
 * of refusal kinds has every kind.  Runs from the repository root.
 */
#include <criterion/criterion.h>

#include "../../include/attnguard/engine.h"

#include <glob.h>
#include <stddef.h>
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

/* ---- docs/engines.md's contract against the ABI and the registry ---- */

/* The entry points of struct ag_engine, in order, read from engine.h. */
static int entry_points(char names[][32], int cap) {
    static char hdr[1 << 17];
    FILE *f = fopen("include/attnguard/engine.h", "rb");
    cr_assert_not_null(f, "cannot read include/attnguard/engine.h");
    const size_t n = fread(hdr, 1, sizeof hdr - 1, f);
    fclose(f);
    hdr[n] = '\0';
    const char *p = strstr(hdr, "typedef struct ag_engine {");
    const char *end = p ? strstr(p, "} ag_engine;") : NULL;
    cr_assert(p && end, "engine.h has no struct ag_engine");
    int k = 0;
    for (const char *q = strstr(p, "(*"); q && q < end && k < cap; q = strstr(q + 2, "(*")) {
        if (sscanf(q, "(*%31[a-z_])(", names[k]) == 1) k++;
    }
    return k;
}

/* Whether `name` is the first cell of a row ("| `name` |") of the table
 * whose header row starts with `header`. */
static int has_row(const char *doc, const char *header, const char *name) {
    const char *t = strstr(doc, header);
    cr_assert_not_null(t, "docs/engines.md has no table headed '%s'", header);
    const char *end = strstr(t, "\n\n");
    char row[64];
    snprintf(row, sizeof row, "\n| `%.40s` |", name);
    const char *at = strstr(t, row);
    return at && (!end || at < end);
}

/* The docs' required list (the "**Required**:" line) and optional table
 * are the ABI's entry points, split as the registry splits them: nulling
 * an entry the docs call required makes ag_engine_check refuse the table,
 * nulling an optional one does not. */
Test(docs, engines_md_required_and_optional_are_the_registrys) {
    const char *doc = read_doc("docs/engines.md");
    const char *req = strstr(doc, "**Required**:");
    cr_assert_not_null(req, "docs/engines.md has no **Required**: list");
    const char *req_end = strstr(req, ".  ");
    cr_assert_not_null(req_end);
    char names[32][32];
    const int n = entry_points(names, 32);
    cr_assert_geq(n, 10, "only %d entry points read from engine.h", n);
    /* the entry points are contiguous function pointers from `open` on */
    cr_assert_eq(offsetof(ag_engine, paths),
                 offsetof(ag_engine, open) + (size_t)(n - 1) * sizeof(void (*)(void)),
                 "struct ag_engine's entry points are not %d contiguous pointers", n);
    ag_msg msg;
    const ag_engine *full = ag_engine_find("attnguard", &msg);
    cr_assert_not_null(full, "%s", msg.text);
    for (int i = 0; i < n; i++) {
        char tick[40];
        snprintf(tick, sizeof tick, "`%.32s`", names[i]);
        const char *at = strstr(req, tick);
        const int required = at && at < req_end;
        const int optional = has_row(doc, "| optional entry |", names[i]);
        cr_assert(required != optional, "docs/engines.md calls %s %s", names[i],
                  required ? "both required and optional" : "neither required nor optional");
        ag_engine e = *full;
        memset((char *)&e + offsetof(ag_engine, open) + (size_t)i * sizeof(void (*)(void)), 0,
               sizeof(void (*)(void)));
        const int refused = ag_engine_check(&e, "docs", &msg) != 0;
        cr_assert_eq(refused, required, "docs/engines.md calls %s %s, but the registry %s a "
                     "table without it", names[i], required ? "required" : "optional",
                     refused ? "refuses" : "accepts");
    }
}

/* Every refusal kind the ABI has (as case files spell them) has a row in
 * docs/engines.md's table of kinds. */
Test(docs, engines_md_names_every_refusal_kind) {
    const char *doc = read_doc("docs/engines.md");
    for (int r = 0; r < AG_R_COUNT; r++)
        cr_assert(has_row(doc, "| kind | the input it names |", ag_refusal_name((ag_refusal)r)),
                  "docs/engines.md's table of refusal kinds has no row for %s",
                  ag_refusal_name((ag_refusal)r));
}
