/*
 * twrap.h — the harness suites' wrapped engine: attnguard's adapter table
 * copied under another name, some entries replaced by the test, adopted as
 * the process's engine (harness/host/engine_host.h), and a shipped case to
 * run on it.  Header-only, for Criterion test files.
 */
#ifndef AG_TWRAP_H
#define AG_TWRAP_H

#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/host/engine_host.h"

/* *w becomes attnguard's table named `name`; returns the real table, whose
 * entries the test's replacements call on. */
static inline const ag_engine *twrap_start(ag_engine *w, const char *name) {
    ag_msg msg;
    const ag_engine *real = ag_engine_find("attnguard", &msg);
    cr_assert(real, "%s", msg.text);
    *w = *real;
    w->name = name;
    return real;
}

/* w, with the test's replacements in place, as the process's engine, and
 * the shipped case at path loaded into *c. */
static inline void twrap_adopt(const ag_engine *w, const char *path, case_spec *c) {
    char err[256];
    cr_assert_eq(engine_host_adopt(w, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(case_load(path, c, err, sizeof err), 0, "%s", err);
}

#endif /* AG_TWRAP_H */
