/*
 * registry.c — finding an adapter by name: one linked into the program
 * (an engine's own fuzz build, below), the built-in ones listed in
 * engines.def, or a shared object that exports AG_ENGINE_ENTRY (a user's
 * own engine, loaded without rebuilding attnguard), refused when it was
 * built for another ABI version.
 */
#include "../include/attnguard/engine.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define AG_ENGINE(n) const ag_engine *ag_engine_##n(void);
#include "engines.def"
#undef AG_ENGINE

typedef const ag_engine *(*getter_fn)(void);
static const struct {
    const char *name;
    getter_fn get;
} k_builtin[] = {
#define AG_ENGINE(n) {#n, ag_engine_##n},
#include "engines.def"
#undef AG_ENGINE
};
enum { N_BUILTIN = sizeof k_builtin / sizeof k_builtin[0] };

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(ag_msg *msg, const char *fmt, ...) {
    if (!msg) return;
    msg->refusal = AG_R_NONE;
    msg->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
}

/* The entry points engine.h requires, in the table's order: a table
 * lacking one is refused with its name before anything calls through it
 * (the optional ones, variants .. paths, may be NULL). */
#define AG_REQUIRED_ENTRIES(X)                                                                 \
    X(open) X(close) X(caps) X(create) X(destroy) X(kv_cache_bytes) X(write_kv) X(plan)       \
    X(plan_destroy) X(run)

int ag_engine_check(const ag_engine *e, const char *name, ag_msg *msg) {
    if (!e) {
        say(msg, "engine '%.64s' has no adapter table", name ? name : "?");
        return -1;
    }
    /* the version first: a table of another version has another layout,
     * so none of its other fields may be read as this version's */
    if (e->abi_version != AG_ENGINE_ABI_VERSION) {
        say(msg, "engine '%.64s' was built for adapter ABI version %u, this host speaks %u: "
                 "rebuild it against the headers of ABI %u (pkg-config --modversion attnguard)",
            name ? name : "(unnamed)", (unsigned)e->abi_version,
            (unsigned)AG_ENGINE_ABI_VERSION, (unsigned)AG_ENGINE_ABI_VERSION);
        return -1;
    }
    if (!name) name = e->name ? e->name : "?";
    if (!e->name || !e->name[0] || !e->summary) {
        say(msg, "engine '%.64s': its adapter table has no %s (the ABI requires it)", name,
            !e->name || !e->name[0] ? "name" : "summary");
        return -1;
    }
#define AG_CHECK_ENTRY(f)                                                                      \
    if (!e->f) {                                                                               \
        say(msg, "engine '%.64s': its adapter table has no entry '" #f "' (NULL; the ABI "      \
            "requires it: a table built for another version, cut short, or not filled in)",   \
            name);                                                                            \
        return -1;                                                                             \
    }
    AG_REQUIRED_ENTRIES(AG_CHECK_ENTRY)
#undef AG_CHECK_ENTRY
    if (msg) {
        msg->refusal = AG_R_NONE;
        msg->code[0] = msg->text[0] = '\0';
    }
    return 0;
}

static const ag_engine *checked(const ag_engine *e, const char *name, ag_msg *msg) {
    return ag_engine_check(e, name, msg) == 0 ? e : NULL;
}

/* An adapter linked into the program itself defines AG_ENGINE_ENTRY
 * there: the fuzz targets of an engine's ClusterFuzzLite or OSS-Fuzz
 * build (`make oss-fuzz FUZZ_LINK_ADAPTER=...`), where nothing sets
 * $ATTNGUARD_ENGINE, so that engine is the default and answers to its own
 * name.  Weak: in every other program (the CLI, the kit's fuzz targets)
 * there is none, and an adapter object loaded later (RTLD_LOCAL) never
 * binds it. */
const ag_engine *attnguard_engine(void) __attribute__((weak));

static const ag_engine *linked_in(void) {
    return attnguard_engine ? attnguard_engine() : NULL;
}

const ag_engine *ag_engine_find(const char *name, ag_msg *msg) {
    const ag_engine *own = linked_in();
    if (own && (!name || !*name || (own->name && strcmp(name, own->name) == 0)))
        return checked(own, NULL, msg);
    if (!name || !*name) name = k_builtin[0].name;
    for (int i = 0; i < N_BUILTIN; i++)
        if (strcmp(name, k_builtin[i].name) == 0) return checked(k_builtin[i].get(), name, msg);
    if (!strchr(name, '/')) {
        char known[160] = "";
        for (int i = 0; i < N_BUILTIN; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, k_builtin[i].name, sizeof known - strlen(known) - 1);
        }
        say(msg, "no engine named '%.64s' (built in: %s; or give a path to a shared object "
                 "exporting %s)", name, known, AG_ENGINE_ENTRY);
        return NULL;
    }
    /* A path: the adapter stays loaded for the life of the process. */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        say(msg, "cannot load engine %.120s: %.160s", name, dlerror());
        return NULL;
    }
    ag_engine_entry_fn entry;
    void *sym = dlsym(h, AG_ENGINE_ENTRY);
    memcpy(&entry, &sym, sizeof entry);   /* object -> function pointer, POSIX style */
    if (!entry) {
        say(msg, "%.200s does not export %s", name, AG_ENGINE_ENTRY);
        return NULL;
    }
    return checked(entry(), name, msg);
}

int ag_engine_list(const char **names, int cap) {
    for (int i = 0; names && i < N_BUILTIN && i < cap; i++) names[i] = k_builtin[i].name;
    return N_BUILTIN;
}
