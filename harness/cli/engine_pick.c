/*
 * engine_pick.c — the engine repro, show and check run on (see
 * engine_pick.h).
 */
#include "engine_pick.h"

#include "../../include/attnguard/engine.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when --engine's (or $ATTNGUARD_ENGINE's) value names the recorded
 * engine: the same built-in name, or the same object by its real path. */
static int same_engine(const char *given, const engine_record *r) {
    if (!strchr(given, '/')) return strcmp(given, r->engine) == 0;
    char abs[PATH_MAX];
    return realpath(given, abs) && strcmp(abs, r->engine) == 0;
}

/* The adapter's own name for a built-in name or an object path; -1 when
 * there is no such engine (message in err). */
static int name_of(const char *engine, char *name, size_t cap, char *err, size_t errlen) {
    ag_msg msg;
    const ag_engine *e = ag_engine_find(engine, &msg);
    if (!e) {
        snprintf(err, errlen, "%s", msg.text);
        return -1;
    }
    snprintf(name, cap, "%s", e->name ? e->name : "?");
    return 0;
}

/* "NAME" or "NAME at PATH" for a record. */
static void record_words(char *buf, size_t cap, const engine_record *r) {
    if (strcmp(r->name, r->engine) == 0) snprintf(buf, cap, "%s", r->name);
    else snprintf(buf, cap, "%s at %s", r->name, r->engine);
}

/* $ATTNGUARD_ENGINE_OPTIONS, when set, as the pick's options. */
static void env_options(engine_pick *p) {
    const char *o = getenv("ATTNGUARD_ENGINE_OPTIONS");
    if (!o) return;
    snprintf(p->options, sizeof p->options, "%s", o);
    p->have_options = 1;
}

int engine_pick_for(const char *flag, char *const *files, int n, FILE *say, const char *prefix,
                    engine_pick *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    /* The files' records: the first one, and whether any other differs. */
    engine_record first, rec;
    char first_at[PATH_MAX] = "", at[PATH_MAX], last_at[PATH_MAX] = "";
    int have = 0;
    for (int i = 0; i < n; i++) {
        const int found = engine_record_find(files[i], &rec, at, sizeof at, err, errlen);
        if (found < 0) return -1;
        if (!found || strcmp(at, last_at) == 0) continue;   /* a folder's files come together */
        snprintf(last_at, sizeof last_at, "%s", at);
        if (!have) {
            first = rec;
            snprintf(first_at, sizeof first_at, "%s", at);
            have = 1;
        }
        char w[PATH_MAX + 80];
        record_words(w, sizeof w, &rec);
        if (flag) {
            if (!same_engine(flag, &rec))
                fprintf(say, "%snote: %s (and any file beside it) was recorded on engine %s "
                             "(%s); running on %s, as --engine asks\n",
                        prefix, files[i], w, at, flag);
        } else if (strcmp(rec.engine, first.engine) != 0 || strcmp(rec.options, first.options)) {
            char w0[PATH_MAX + 80];
            record_words(w0, sizeof w0, &first);
            snprintf(err, errlen, "the files come from sessions of two engines: %s (%s) and %s "
                     "(%s); give them one engine at a time, or choose one with --engine",
                     w0, first_at, w, at);
            return -1;
        }
    }

    const char *env = getenv("ATTNGUARD_ENGINE");
    if (env && !*env) env = NULL;
    if (flag) {
        p->source = ENGINE_FROM_FLAG;
        snprintf(p->engine, sizeof p->engine, "%s", flag);
        if (name_of(flag, p->name, sizeof p->name, err, errlen) != 0) return -1;
        /* the record's open() options belong to the recorded engine */
        if (have && same_engine(flag, &first)) {
            snprintf(p->options, sizeof p->options, "%s", first.options);
            p->have_options = 1;
        } else {
            env_options(p);
        }
        return 0;
    }
    if (have) {
        char w[PATH_MAX + 80];
        record_words(w, sizeof w, &first);
        if (strchr(first.engine, '/')) {
            char now[40];
            if (access(first.engine, R_OK) != 0) {
                snprintf(err, errlen, "the files' session ran on engine %s, which is not there "
                         "any more (%s): give --engine to rerun them on another", w, first_at);
                return -1;
            }
            if (engine_record_build_of(first.engine, now, sizeof now) == 0 &&
                strcmp(now, first.build) != 0)
                fprintf(say, "%snote: the adapter %s has changed since the session recorded it "
                             "(build %s, now %s): a finding may not reproduce on this build\n",
                        prefix, first.engine, first.build, now);
        }
        if (env && !same_engine(env, &first))
            fprintf(say, "%snote: $ATTNGUARD_ENGINE=%s is not followed: the files were recorded "
                         "on engine %s (%s); --engine %s runs them there\n",
                    prefix, env, w, first_at, env);
        p->source = ENGINE_FROM_RECORD;
        snprintf(p->engine, sizeof p->engine, "%s", first.engine);
        snprintf(p->options, sizeof p->options, "%s", first.options);
        p->have_options = 1;
        snprintf(p->record, sizeof p->record, "%s", first_at);
        /* its name as recorded: repro and show do not load the engine (the
         * target or check does, and says so if it cannot) */
        snprintf(p->name, sizeof p->name, "%s", first.name);
        return 0;
    }
    if (env) {
        p->source = ENGINE_FROM_ENV;
        snprintf(p->engine, sizeof p->engine, "%s", env);
        env_options(p);
        return name_of(env, p->name, sizeof p->name, err, errlen);
    }
    p->source = ENGINE_FROM_DEFAULT;
    const char *names[1];
    ag_engine_list(names, 1);
    snprintf(p->engine, sizeof p->engine, "%s", names[0]);
    snprintf(p->name, sizeof p->name, "%s", names[0]);
    env_options(p);
    return 0;
}

void engine_pick_describe(const engine_pick *p, char *buf, size_t cap) {
    char at[PATH_MAX + 8] = "";
    if (strcmp(p->engine, p->name) != 0) snprintf(at, sizeof at, " at %s", p->engine);
    char opts[300] = "";
    if (p->options[0]) snprintf(opts, sizeof opts, ", options '%s'", p->options);
    switch (p->source) {
    case ENGINE_FROM_FLAG:
        snprintf(buf, cap, "%s%s%s (--engine)", p->name, at, opts);
        break;
    case ENGINE_FROM_RECORD:
        snprintf(buf, cap, "%s%s%s (recorded in %s)", p->name, at, opts, p->record);
        break;
    case ENGINE_FROM_ENV:
        snprintf(buf, cap, "%s%s%s ($ATTNGUARD_ENGINE)", p->name, at, opts);
        break;
    default:
        snprintf(buf, cap, "%s%s (the default)", p->name, opts);
        break;
    }
}
