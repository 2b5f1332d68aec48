/*
 * engines/ggml/ggml_load.c — finds and loads ggml's libraries with dlopen,
 * picks the CPU variants this machine can run, parses the adapter's
 * option words (cpu=<variant>, layout=unified|streams) and catches
 * GGML_ASSERT during graph construction.
 *
 * Variant choice follows ggml's own loader (ggml_backend_load_best): every
 * libggml-cpu-*.so in the folder is dlopen'ed and asked its exported
 * ggml_backend_score(), which checks the CPU's features with cpuid; 0 means
 * "cannot run here", the highest score wins.  We keep every runnable one so
 * that `cpu=<name>` can force any of them.  Libraries are opened
 * RTLD_LOCAL: the variants export the same symbol names and must not
 * interpose on one another.  They stay loaded for the life of the process.
 */
#include "ggml_load.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AG_GGML_DEFAULT_DIR
#define AG_GGML_DEFAULT_DIR "build/engines/ggml/lib"
#endif

ag_status agg_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code,
                   const char *fmt, ...) {
    if (msg) {
        msg->refusal = st == AG_OK ? AG_R_NONE : kind;
        snprintf(msg->code, sizeof msg->code, "%s", code);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* ---- GGML_ASSERT catching ---- */
static _Thread_local agg_catch *agg_catcher;

static void agg_on_abort(const char *message) {
    agg_catch *c = agg_catcher;
    if (!c) {   /* not ours to catch: ggml aborts after this returns */
        fprintf(stderr, "ggml: %s\n", message);
        return;
    }
    agg_catcher = NULL;
    snprintf(c->text, sizeof c->text, "%s", message);
    longjmp(c->env, 1);
}

void agg_catch_arm(const agg_lib *lib, agg_catch *c) {
    lib->base.ggml_set_abort_callback(agg_on_abort);
    c->text[0] = '\0';
    agg_catcher = c;
}

void agg_catch_disarm(void) { agg_catcher = NULL; }

/* ---- loading ---- */
#define LOAD_SYM(h, table, f, required)                                              \
    do {                                                                             \
        *(void **)&(table)->f = dlsym((h), #f);                                      \
        if (!(table)->f && (required)) return #f;                                    \
    } while (0)

/* Returns the name of the first missing required symbol, or NULL. */
static const char *load_base(void *h, agg_base *b) {
    LOAD_SYM(h, b, ggml_init, 1);
    LOAD_SYM(h, b, ggml_free, 1);
    LOAD_SYM(h, b, ggml_tensor_overhead, 1);
    LOAD_SYM(h, b, ggml_graph_overhead_custom, 1);
    LOAD_SYM(h, b, ggml_new_tensor_1d, 1);
    LOAD_SYM(h, b, ggml_new_tensor_4d, 1);
    LOAD_SYM(h, b, ggml_permute, 1);
    LOAD_SYM(h, b, ggml_flash_attn_ext, 1);
    LOAD_SYM(h, b, ggml_new_graph_custom, 1);
    LOAD_SYM(h, b, ggml_build_forward_expand, 1);
    LOAD_SYM(h, b, ggml_fp32_to_fp16, 1);
    LOAD_SYM(h, b, ggml_set_abort_callback, 1);
    LOAD_SYM(h, b, ggml_flash_attn_ext_add_sinks, 0);
    LOAD_SYM(h, b, ggml_prec_set_acc, 0);
    LOAD_SYM(h, b, ggml_threadpool_params_default, 0);
    return NULL;
}

static const char *load_cpu(void *h, agg_cpu *c) {
    LOAD_SYM(h, c, ggml_cpu_init, 1);
    LOAD_SYM(h, c, ggml_graph_plan, 1);
    LOAD_SYM(h, c, ggml_graph_compute, 1);
    LOAD_SYM(h, c, ggml_threadpool_new, 0);
    LOAD_SYM(h, c, ggml_threadpool_free, 0);
    return NULL;
}

/* "libggml-cpu-zen4.so" -> "zen4", "libggml-cpu.so" -> "cpu"; 0 if not a CPU backend. */
static int variant_name(const char *file, char *name, size_t cap) {
    size_t n = strlen(file);
    if (n < 14 || strncmp(file, "libggml-cpu", 11) != 0 || strcmp(file + n - 3, ".so") != 0)
        return 0;
    if (n == 14) return snprintf(name, cap, "cpu") > 0;
    if (file[11] != '-' || n - 15 >= cap) return 0;
    snprintf(name, cap, "%.*s", (int)(n - 15), file + 12);
    return 1;
}

static void pools_init(agg_lib *lib);

static int by_score(const void *a, const void *b) {
    const agg_variant *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void scan_variants(agg_lib *lib) {
    char dir[AGG_PATH_LEN];
    snprintf(dir, sizeof dir, "%s", lib->dir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && lib->nvar < AGG_MAX_VARIANTS) {
        agg_variant *v = &lib->var[lib->nvar];
        memset(v, 0, sizeof *v);
        if (!variant_name(e->d_name, v->name, sizeof v->name)) continue;
        if (snprintf(v->path, sizeof v->path, "%s/%.255s", dir, e->d_name) >= (int)sizeof v->path)
            continue;
        v->handle = dlopen(v->path, RTLD_NOW | RTLD_LOCAL);
        if (!v->handle) continue;
        int (*score)(void) = (int (*)(void))dlsym(v->handle, "ggml_backend_score");
        v->score = score ? score() : 1;
        if (v->score <= 0 || load_cpu(v->handle, &v->cpu) != NULL) {
            dlclose(v->handle);
            continue;
        }
        v->cpu.ggml_cpu_init();
        memcpy(v->option, "cpu=", 4);
        memcpy(v->option + 4, v->name, sizeof v->name);
        lib->nvar++;
    }
    if (d) closedir(d);
    qsort(lib->var, (size_t)lib->nvar, sizeof lib->var[0], by_score);
}

/* The value of `key` in space-separated "key=value" words, copied to val.
 * Returns 1 when found, 2 when found more than once (docs/engines.md, create: the
 * caller refuses it), 0 when absent, -1 for a word that is not one of
 * keys[] (its text in val), -2 for a known key without "=value" (its text
 * in val): a bare "cpu" is not the default variant. */
static int option(const char *options, const char *key, const char *const *keys, char *val,
                  size_t cap) {
    int found = 0;
    for (const char *p = options; p && *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n;
        int known = 0;
        for (const char *const *k = keys; *k; k++) known |= strlen(*k) == kl && !strncmp(p, *k, kl);
        if (!known || !eq) {
            snprintf(val, cap, "%.*s", (int)n, p);
            return known ? -2 : -1;
        }
        if (eq && strlen(key) == kl && !strncmp(p, key, kl)) {
            snprintf(val, cap, "%.*s", (int)(n - kl - 1), eq + 1);
            found = found ? 2 : 1;
        }
        p += n;
    }
    return found;
}

static int has_base(const char *dir) {
    char path[AGG_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/libggml-base.so", dir);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* The first folder holding libggml-base.so, in the order agg_load documents. */
static int find_dir(const char *opt_dir, char *dir, size_t cap, char *tried, size_t tcap) {
    const char *env = getenv("GGML_DIR");
    char cand[4][AGG_PATH_LEN];
    int n = 0;
    if (opt_dir) snprintf(cand[n++], AGG_PATH_LEN, "%s", opt_dir);
    else if (env && *env) {
        snprintf(cand[n++], AGG_PATH_LEN, "%s/lib", env);
        snprintf(cand[n++], AGG_PATH_LEN, "%s/bin", env);
        snprintf(cand[n++], AGG_PATH_LEN, "%s/build/bin", env);
        snprintf(cand[n++], AGG_PATH_LEN, "%s", env);
    } else snprintf(cand[n++], AGG_PATH_LEN, "%s", AG_GGML_DEFAULT_DIR);
    tried[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (has_base(cand[i])) return snprintf(dir, cap, "%s", cand[i]) > 0;
        size_t used = strlen(tried);
        snprintf(tried + used, tcap - used, "%s%s", i ? ", " : "", cand[i]);
    }
    return 0;
}

ag_status agg_load(const char *options, agg_lib **out, ag_msg *msg) {
    static const char *const keys[] = {"dir", NULL};
    char dir[AGG_PATH_LEN], tried[4 * AGG_PATH_LEN + 16];
    int o = option(options, "dir", keys, dir, sizeof dir);
    if (o == -2)
        return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_OPTION",
                        "engine option '%s' has no value (dir=<folder of libggml-base.so>)", dir);
    if (o < 0)
        return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_OPTION",
                        "unknown engine option '%s' (ggml's engine options: dir=<folder of "
                        "libggml-base.so>)", dir);
    agg_lib *lib = calloc(1, sizeof *lib);
    if (!lib) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "out of memory loading ggml");
    if (!find_dir(o ? dir : NULL, lib->dir, sizeof lib->dir, tried, sizeof tried)) {
        free(lib);
        return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_NOT_FOUND",
                        "no libggml-base.so in %s: run `make engines` (or set GGML_DIR to your "
                        "own ggml build)", tried);
    }
    char path[AGG_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/libggml-base.so", lib->dir);
    lib->base_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char *missing = lib->base_handle ? load_base(lib->base_handle, &lib->base) : NULL;
    if (!lib->base_handle || missing) {
        agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_LOAD", "%s: %s", path,
                 missing ? missing : dlerror());
        free(lib);
        return AG_UNSUPPORTED;
    }
    scan_variants(lib);
    if (lib->nvar == 0) {
        agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_NO_CPU_VARIANT",
                 "no libggml-cpu*.so in %s loads and scores > 0 on this CPU", lib->dir);
        free(lib);
        return AG_UNSUPPORTED;
    }
    pools_init(lib);
    for (int l = 0; l < 2; l++)
        snprintf(lib->words[l], sizeof lib->words[l], "%s layout=%s", lib->var[0].option,
                 l == AGG_LAYOUT_UNIFIED ? "unified" : "streams");
    *out = lib;
    return AG_OK;
}

/* One kept pool per variant: its thread count follows the last request. */
struct agg_pool {
    pthread_mutex_t mu;
    struct ggml_threadpool *tp;
    int n, busy;
    struct ggml_threadpool_params (*params)(int);
};

struct ggml_threadpool *agg_pool_get(const agg_variant *v, int n) {
    struct agg_pool *P = v->pool;
    if (!P || n < 2) return NULL;   /* one thread: ggml starts none */
    struct ggml_threadpool *tp = NULL;
    pthread_mutex_lock(&P->mu);
    if (!P->busy) {
        if (P->tp && P->n != n) {
            v->cpu.ggml_threadpool_free(P->tp);
            P->tp = NULL;
        }
        if (!P->tp) {
            struct ggml_threadpool_params tpp = P->params(n);
            tpp.poll = 0;   /* workers sleep between computes: the harness needs the cores */
            P->tp = v->cpu.ggml_threadpool_new(&tpp);
            P->n = n;
        }
        if (P->tp) {
            P->busy = 1;
            tp = P->tp;
        }
    }
    pthread_mutex_unlock(&P->mu);
    return tp;
}

void agg_pool_put(const agg_variant *v, struct ggml_threadpool *tp) {
    if (!tp) return;
    pthread_mutex_lock(&v->pool->mu);
    v->pool->busy = 0;
    pthread_mutex_unlock(&v->pool->mu);
}

static void pools_init(agg_lib *lib) {
    for (int i = 0; i < lib->nvar && lib->base.ggml_threadpool_params_default; i++) {
        agg_variant *v = &lib->var[i];
        if (!v->cpu.ggml_threadpool_new || !v->cpu.ggml_threadpool_free) continue;
        struct agg_pool *P = calloc(1, sizeof *P);
        if (!P) continue;
        pthread_mutex_init(&P->mu, NULL);
        P->params = lib->base.ggml_threadpool_params_default;
        v->pool = P;
    }
}

static void pools_free(agg_lib *lib) {
    for (int i = 0; i < lib->nvar; i++) {
        struct agg_pool *P = lib->var[i].pool;
        if (!P) continue;
        if (P->tp) lib->var[i].cpu.ggml_threadpool_free(P->tp);
        pthread_mutex_destroy(&P->mu);
        free(P);
        lib->var[i].pool = NULL;
    }
}

void agg_unload(agg_lib *lib) {
    if (lib) pools_free(lib);
    free(lib);
}

ag_status agg_group_options(const agg_lib *lib, const char *options, const agg_variant **v,
                            agg_layout *layout, ag_msg *msg) {
    static const char *const keys[] = {"cpu", "layout", NULL};
    char name[64];
    *layout = AGG_LAYOUT_UNIFIED;
    for (int k = 0; keys[k]; k++)
        if (option(options, keys[k], keys, name, sizeof name) == 2)
            return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_OPTION",
                            "group option %s given twice", keys[k]);
    int o = option(options, "layout", keys, name, sizeof name);
    if (o == -2)
        return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_OPTION",
                        "group option '%s' has no value (ggml's group options: cpu=<variant>, "
                        "layout=unified|streams)", name);
    if (o < 0)
        return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_OPTION",
                        "unknown group option '%s' (ggml's group options: cpu=<variant>, "
                        "layout=unified|streams)", name);
    if (o > 0 && !strcmp(name, "streams")) *layout = AGG_LAYOUT_STREAMS;
    else if (o > 0 && strcmp(name, "unified") != 0)
        return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_LAYOUT",
                        "group option layout=%s: the layouts are unified and streams", name);
    o = option(options, "cpu", keys, name, sizeof name);
    if (o == 0) {
        *v = &lib->var[0];
        return AG_OK;
    }
    for (int i = 0; i < lib->nvar; i++) {
        if (!strcmp(lib->var[i].name, name)) {
            *v = &lib->var[i];
            return AG_OK;
        }
    }
    return agg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "GGML_VARIANT",
                    "group option cpu=%s: no such CPU variant runnable here (%d in %s, best %s)",
                    name, lib->nvar, lib->dir, lib->var[0].name);
}
