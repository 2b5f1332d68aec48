/*
 * engines/ort/ort_load.c — finds and loads libonnxruntime.so.1 with
 * dlopen, takes its function table, probes the table positions the
 * adapter relies on, and makes the process's ORT environment.
 *
 * The probes (probe() and its helpers) call the entries that can be called harmlessly
 * and check that each answers as the entry at that position must: a status
 * made with CreateStatus gives back its code and text; a session-options
 * entry written with AddSessionConfigEntry is read back with Has/Get; a
 * tensor made over our own buffer gives back our pointer, element type and
 * dims; the build string starts as ORT's does.  An entry at a wrong
 * position would fail one of them (or fault here, at open(), never in a
 * harness run).  The entries that cannot be probed without a model (Run,
 * session creation, thread and memory options, allocator registration) are
 * checked by the first session the adapter creates (ort_session.c counts
 * its inputs and outputs through SessionGetInputCount/OutputCount).
 */
#include "ort_load.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef AG_ORT_DEFAULT_DIR
#define AG_ORT_DEFAULT_DIR "build/engines/ort/lib"
#endif
#define ORT_LIB_NAME "libonnxruntime.so.1"

ag_status orta_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code,
                    const char *fmt, ...) {
    if (msg) {
        msg->refusal = st == AG_OK ? AG_R_NONE : (int32_t)kind;
        snprintf(msg->code, sizeof msg->code, "%s", code);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

ag_status orta_ok(ag_msg *msg) {
    if (msg) {
        msg->refusal = AG_R_NONE;
        msg->code[0] = msg->text[0] = '\0';
    }
    return AG_OK;
}

ag_status orta_check(const orta_lib *lib, OrtStatus *s, ag_msg *msg, const char *what) {
    if (!s) return AG_OK;
    ag_status st = orta_fail(msg, AG_INTERNAL, AG_R_NONE, "ORT_STATUS", "%s: ORT error %d: %s",
                             what, lib->f.GetErrorCode(s), lib->f.GetErrorMessage(s));
    lib->f.ReleaseStatus(s);
    return st;
}

int orta_option(const char *options, const char *key, const char *const *keys, char *val,
                size_t cap) {
    int found = 0;
    for (const char *p = options; p && *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n;
        int known = keys == NULL;
        for (const char *const *k = keys; k && *k; k++)
            known |= strlen(*k) == kl && !strncmp(p, *k, kl);
        if (!known) {
            snprintf(val, cap, "%.*s", (int)n, p);
            return -1;
        }
        if (strlen(key) == kl && !strncmp(p, key, kl)) {
            snprintf(val, cap, "%.*s", eq ? (int)(n - kl - 1) : 0, eq ? eq + 1 : "");
            found = found ? 2 : 1;
        }
        p += n;
    }
    return found;
}

/* ---- finding the library ---- */
static int readable(const char *dir) {
    char path[ORTA_PATH_LEN + 32];
    snprintf(path, sizeof path, "%.*s/" ORT_LIB_NAME, ORTA_PATH_LEN - 1, dir);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

static int find_dir(const char *opt_dir, char *dir, size_t cap, char *tried, size_t tcap) {
    const char *env = getenv("ORT_DIR");
    char cand[3][ORTA_PATH_LEN];
    int n = 0;
    if (opt_dir) snprintf(cand[n++], ORTA_PATH_LEN, "%s", opt_dir);
    else if (env && *env) {
        snprintf(cand[n++], ORTA_PATH_LEN, "%s/lib", env);
        snprintf(cand[n++], ORTA_PATH_LEN, "%s", env);
    } else snprintf(cand[n++], ORTA_PATH_LEN, "%s", AG_ORT_DEFAULT_DIR);
    tried[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (readable(cand[i])) return snprintf(dir, cap, "%s", cand[i]) > 0;
        size_t used = strlen(tried);
        snprintf(tried + used, tcap - used, "%s%s", i ? ", " : "", cand[i]);
    }
    return 0;
}

typedef void (*orta_any_fn)(void);

/* The typed table, filled by position (ort_api.h). */
static void take_entries(orta_fns *f, const orta_any_fn *t) {
#define TAKE(name) f->name = (__typeof__(f->name))t[ORTA_##name]
    TAKE(CreateStatus); TAKE(GetErrorCode); TAKE(GetErrorMessage); TAKE(CreateEnv);
    TAKE(CreateSessionFromArray); TAKE(Run); TAKE(CreateSessionOptions);
    TAKE(DisableMemPattern); TAKE(DisableCpuMemArena); TAKE(SetSessionLogSeverityLevel);
    TAKE(SetSessionGraphOptimizationLevel); TAKE(SetIntraOpNumThreads);
    TAKE(SetInterOpNumThreads); TAKE(SessionGetInputCount); TAKE(SessionGetOutputCount);
    TAKE(CreateTensorWithDataAsOrtValue); TAKE(GetTensorMutableData);
    TAKE(GetTensorElementType); TAKE(GetDimensionsCount); TAKE(GetDimensions);
    TAKE(GetTensorTypeAndShape); TAKE(CreateCpuMemoryInfo); TAKE(ReleaseEnv);
    TAKE(ReleaseStatus); TAKE(ReleaseMemoryInfo); TAKE(ReleaseSession); TAKE(ReleaseValue);
    TAKE(ReleaseTensorTypeAndShapeInfo); TAKE(ReleaseSessionOptions);
    TAKE(AddSessionConfigEntry); TAKE(RegisterAllocator); TAKE(UnregisterAllocator);
    TAKE(HasSessionConfigEntry); TAKE(GetSessionConfigEntry); TAKE(GetBuildInfoString);
#undef TAKE
}

/* ---- probes: each returns NULL or the name of the entry that failed ---- */
static const char *probe_status(const orta_fns *f) {
    static const char text[] = "attnguard probe 37";
    OrtStatus *s = f->CreateStatus(ORTA_INVALID_ARGUMENT, text);
    if (!s) return "CreateStatus";
    const char *bad = NULL;
    if (f->GetErrorCode(s) != ORTA_INVALID_ARGUMENT) bad = "GetErrorCode";
    else if (strcmp(f->GetErrorMessage(s), text) != 0) bad = "GetErrorMessage";
    f->ReleaseStatus(s);
    return bad;
}

static const char *probe_options(const orta_fns *f) {
    OrtSessionOptions *o = NULL;
    if (f->CreateSessionOptions(&o) || !o) return "CreateSessionOptions";
    const char *bad = NULL;
    char val[16] = "";
    size_t size = sizeof val;
    int has = 0;
    if (f->AddSessionConfigEntry(o, "attnguard.probe", "37")) bad = "AddSessionConfigEntry";
    else if (f->HasSessionConfigEntry(o, "attnguard.probe", &has) || has != 1)
        bad = "HasSessionConfigEntry";
    else if (f->GetSessionConfigEntry(o, "attnguard.probe", val, &size) || strcmp(val, "37"))
        bad = "GetSessionConfigEntry";
    f->ReleaseSessionOptions(o);
    return bad;
}

static const char *probe_tensor(const orta_fns *f, const OrtMemoryInfo *cpu) {
    static float data[2][3];
    const int64_t shape[2] = {2, 3};
    OrtValue *v = NULL;
    OrtTensorTypeAndShapeInfo *ti = NULL;
    void *p = NULL;
    int type = 0;
    size_t rank = 0;
    int64_t dims[2] = {0, 0};
    const char *bad = NULL;
    if (f->CreateTensorWithDataAsOrtValue(cpu, data, sizeof data, shape, 2, ORTA_T_FLOAT, &v))
        return "CreateTensorWithDataAsOrtValue";
    if (f->GetTensorMutableData(v, &p) || p != (void *)data) bad = "GetTensorMutableData";
    else if (f->GetTensorTypeAndShape(v, &ti) || !ti) bad = "GetTensorTypeAndShape";
    else if (f->GetTensorElementType(ti, &type) || type != ORTA_T_FLOAT)
        bad = "GetTensorElementType";
    else if (f->GetDimensionsCount(ti, &rank) || rank != 2) bad = "GetDimensionsCount";
    else if (f->GetDimensions(ti, dims, 2) || dims[0] != 2 || dims[1] != 3) bad = "GetDimensions";
    if (ti) f->ReleaseTensorTypeAndShapeInfo(ti);
    f->ReleaseValue(v);
    return bad;
}

static const char *probe(orta_lib *lib) {
    const orta_fns *f = &lib->f;
    const char *bad = probe_status(f);
    if (!bad) bad = probe_options(f);
    if (!bad) {
        const char *b = f->GetBuildInfoString();
        if (!b || strncmp(b, "ORT Build Info", 14) != 0) bad = "GetBuildInfoString";
        else snprintf(lib->build, sizeof lib->build, "%s", b);
    }
    if (!bad && (f->CreateCpuMemoryInfo(ORTA_DEVICE_ALLOCATOR, ORTA_MEM_DEFAULT, &lib->cpu) ||
                 !lib->cpu))
        bad = "CreateCpuMemoryInfo";
    if (!bad) bad = probe_tensor(f, lib->cpu);
    return bad;
}

/* The L2 size of cpu0 from sysfs ("512K"), or 0.  ORT asks the CPU the
 * same question (cpuinfo); ort_needs.c derives tile sizes from it. */
static size_t l2_size(void) {
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        int level = fgets(buf, sizeof buf, f) ? atoi(buf) : 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (level != 2 || !(f = fopen(path, "r"))) continue;
        char *end = NULL;
        unsigned long n = fgets(buf, sizeof buf, f) ? strtoul(buf, &end, 10) : 0;
        fclose(f);
        if (end && (*end == 'K' || *end == 'k')) n *= 1024;
        else if (end && *end == 'M') n *= 1024 * 1024;
        return n;
    }
    return 0;
}

static ag_status open_lib(orta_lib *lib, ag_msg *msg) {
    char path[ORTA_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/" ORT_LIB_NAME, lib->dir);
    /* RTLD_LOCAL: ORT's own symbols stay out of the process's namespace. */
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_LOAD", "%s", dlerror());
    const OrtaApiBase *(*get_base)(void);
    *(void **)&get_base = dlsym(lib->handle, "OrtGetApiBase");
    const OrtaApiBase *base = get_base ? get_base() : NULL;
    if (!base)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_LOAD",
                         "%s exports no OrtGetApiBase", path);
    snprintf(lib->version, sizeof lib->version, "%s", base->GetVersionString());
    const orta_any_fn *table = (const orta_any_fn *)base->GetApi(ORTA_API_VERSION);
    if (!table)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_API_VERSION",
                         "%s (ORT %s) has no function table of version %u, which the adapter "
                         "declares: an older ORT; run `make engines` for the pinned one",
                         path, lib->version, ORTA_API_VERSION);
    take_entries(&lib->f, table);
    lib->l2_bytes = l2_size();
    const char *bad = probe(lib);
    if (bad)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_API_PROBE",
                         "%s (ORT %s): the table entry the adapter calls %s does not answer "
                         "as that entry (ort_api.h position)", path, lib->version, bad);
    /* FATAL only: ORT reports through statuses, which the adapter returns;
     * its logger would print caller errors to stderr. */
    return orta_check(lib, lib->f.CreateEnv(ORTA_LOG_FATAL, "attnguard", &lib->env), msg,
                      "CreateEnv");
}

ag_status orta_load(const char *options, orta_lib **out, ag_msg *msg) {
    static const char *const keys[] = {"dir", NULL};
    char dir[ORTA_PATH_LEN], tried[3 * ORTA_PATH_LEN + 8];
    int o = orta_option(options, "dir", keys, dir, sizeof dir);
    if (o < 0)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTION",
                         "unknown engine option '%s' (ort's engine options: dir=<folder of "
                         ORT_LIB_NAME ">)", dir);
    orta_lib *lib = calloc(1, sizeof *lib);
    if (!lib) return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "loading ORT");
    if (!find_dir(o ? dir : NULL, lib->dir, sizeof lib->dir, tried, sizeof tried)) {
        free(lib);
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_NOT_FOUND",
                         "no " ORT_LIB_NAME " in %s: run `make engines` (or set ORT_DIR to a "
                         "folder holding it, or its lib/)", tried);
    }
    pthread_mutex_init(&lib->env_mu, NULL);
    ag_status st = open_lib(lib, msg);
    if (st != AG_OK) {
        orta_unload(lib);
        return st;
    }
    *out = lib;
    return orta_ok(msg);
}

/* The library stays mapped (no dlclose): static destructors of ORT run at
 * process exit and must still find their code. */
void orta_unload(orta_lib *lib) {
    if (!lib) return;
    if (lib->cpu) lib->f.ReleaseMemoryInfo(lib->cpu);
    if (lib->env) lib->f.ReleaseEnv(lib->env);
    pthread_mutex_destroy(&lib->env_mu);
    free(lib);
}
