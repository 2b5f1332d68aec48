/*
 * engines/ort/ort_load.h — ONNX Runtime, loaded at run time (private to
 * the ort adapter).
 *
 * Owns: finding and dlopen'ing libonnxruntime.so.1, taking its function
 * table at the version the adapter declares, checking at load time that
 * the table positions answer as ort_api.h says, the process-wide ORT
 * environment, and the adapter's message helpers.  attnguard binaries have
 * no link-time dependency on ORT.
 */
#ifndef AG_ORT_LOAD_H
#define AG_ORT_LOAD_H

#include <pthread.h>

#include "attnguard/engine.h"
#include "ort_api.h"

#define ORTA_PATH_LEN 1024

typedef struct orta_lib {
    char dir[ORTA_PATH_LEN];   /* where libonnxruntime.so.1 was found */
    void *handle;
    orta_fns f;                /* the entries of ort_api.h, typed */
    char version[32];          /* GetVersionString(): "1.30.0" */
    char build[160];           /* GetBuildInfoString(), for group_info */
    OrtEnv *env;               /* one per process, as ORT wants */
    OrtMemoryInfo *cpu;        /* plain CPU memory: the harness's buffers */
    size_t l2_bytes;           /* one core's L2 cache as the system reports it (0: unknown);
                                  ORT's CPU kernels size their tiles by it */
    /* Held while an allocator is registered on env and a session created
     * with it (ort_session.c): the env has one slot per kind of memory. */
    pthread_mutex_t env_mu;
} orta_lib;

/* Loads ORT from the first of: options "dir=<folder>", $ORT_DIR (its lib/
 * or itself), the folder `make engines` fills (AG_ORT_DEFAULT_DIR).
 * AG_UNSUPPORTED when it is not there (msg says how to install it) or its
 * table fails a probe; AG_REFUSED for an option word this adapter does not
 * know. */
ag_status orta_load(const char *options, orta_lib **out, ag_msg *msg);
void orta_unload(orta_lib *lib);

/* Writes msg (when not NULL) and returns st. */
ag_status orta_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* AG_OK with msg cleared (the ABI writes msg on success too). */
ag_status orta_ok(ag_msg *msg);

/* An ORT status turned into the adapter's answer: NULL is AG_OK; else
 * AG_INTERNAL with ORT's own error code and message after `what`.  The
 * status is released. */
ag_status orta_check(const orta_lib *lib, OrtStatus *s, ag_msg *msg, const char *what);

/* The value of `key` among space-separated "key=value" words, into val.
 * 1 found, 2 found more than once (docs/engines.md, create: the caller refuses it),
 * 0 absent, -1 a word whose key is not in keys[] (its text in val). */
int orta_option(const char *options, const char *key, const char *const *keys, char *val,
                size_t cap);

#endif /* AG_ORT_LOAD_H */
