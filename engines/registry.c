/*
 * registry.c — finding an adapter by name: the built-in ones listed in
 * engines.def, or a shared object that exports AG_ENGINE_ENTRY (a user's
 * own engine, loaded without rebuilding attnguard).  The ABI's names and
 * sizes are engines/abi.c's.
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
    msg->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
}

static const ag_engine *checked(const ag_engine *e, const char *name, ag_msg *msg) {
    if (!e) {
        say(msg, "engine '%s' has no adapter table", name);
        return NULL;
    }
    if (e->abi_version != AG_ENGINE_ABI_VERSION) {
        say(msg, "engine '%s' was built for adapter ABI version %u, this harness speaks %u", name,
            (unsigned)e->abi_version, (unsigned)AG_ENGINE_ABI_VERSION);
        return NULL;
    }
    if (msg) msg->code[0] = msg->text[0] = '\0';
    return e;
}

const ag_engine *ag_engine_find(const char *name, ag_msg *msg) {
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
