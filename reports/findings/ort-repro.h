/*
 * ort-repro.h — what the ort-NNN.c reproducers share: loading
 * libonnxruntime.so.1 and its C function table by position
 * (../../engines/ort/ort_api.h), the one-node model encoder
 * (../../engines/ort/onnx_proto.c, compiled in), a session with optional
 * allocator registration, tensors over the caller's memory, and a guarded
 * allocator whose every block ends flush against a PROT_NONE page (so an
 * over-read of ORT's own buffers faults as it does under attnguard's
 * guard_alloc.c).  Our own code, written against ORT's public C API only.
 */
#ifndef ORT_REPRO_H
#define ORT_REPRO_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../engines/ort/onnx_proto.c"
#include "../../engines/ort/ort_api.h"

static orta_fns F;
static OrtEnv *R_env;
static OrtMemoryInfo *R_cpu;

static void r_check(OrtStatus *s, const char *what) {
    if (!s) return;
    fprintf(stderr, "%s: %s\n", what, F.GetErrorMessage(s));
    exit(2);
}

/* Loads ORT (argv[1], else the copy `make engines` fetches) and makes the
 * environment; exits 2 when it cannot. */
static void r_load(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "build/engines/ort/lib/libonnxruntime.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const OrtaApiBase *(*base)(void) = NULL;
    if (h) *(void **)&base = dlsym(h, "OrtGetApiBase");
    void *const *t = base ? (void *const *)base()->GetApi(ORTA_API_VERSION) : NULL;
    if (!t) {
        fprintf(stderr, "cannot load %s\n", path);
        exit(2);
    }
#define TAKE(n) memcpy(&F.n, &t[ORTA_##n], sizeof F.n)
    TAKE(GetErrorMessage); TAKE(CreateEnv); TAKE(CreateSessionFromArray); TAKE(Run);
    TAKE(CreateSessionOptions); TAKE(DisableCpuMemArena); TAKE(SetIntraOpNumThreads);
    TAKE(CreateTensorWithDataAsOrtValue); TAKE(CreateCpuMemoryInfo); TAKE(AddSessionConfigEntry);
    TAKE(RegisterAllocator); TAKE(SetSessionLogSeverityLevel);
#undef TAKE
    r_check(F.CreateEnv(ORTA_LOG_FATAL, "ort-repro", &R_env), "CreateEnv");
    r_check(F.CreateCpuMemoryInfo(ORTA_DEVICE_ALLOCATOR, ORTA_MEM_DEFAULT, &R_cpu), "CpuMemoryInfo");
}

/* ---- a guarded allocator: [block][PROT_NONE page], the block's end flush
 * against the page (blocks are multiples of 64 bytes in the cases here, so
 * ORT's 64-byte alignment holds) ---- */
static void *g_alloc(OrtaAllocator *self, size_t n) {
    (void)self;
    const size_t ps = (size_t)sysconf(_SC_PAGESIZE), body = (n + ps - 1) / ps * ps;
    unsigned char *m = mmap(NULL, body + ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    mprotect(m + body, ps, PROT_NONE);
    return m + body - n;
}
static void g_free(OrtaAllocator *self, void *p) { (void)self, (void)p; /* kept: a repro is short */ }
static const OrtMemoryInfo *g_info(const OrtaAllocator *self) { (void)self; return R_cpu; }
static __attribute__((unused)) OrtaAllocator R_guarded = {1, g_alloc, g_free, g_info};

/* A session of one node; with `alloc`, ORT's buffers come from it. */
static OrtSession *r_session(const onnx_node_model *m, OrtaAllocator *alloc) {
    uint8_t *model;
    size_t len;
    if (onnx_encode_model(m, &model, &len)) exit(2);
    OrtSessionOptions *so;
    r_check(F.CreateSessionOptions(&so), "CreateSessionOptions");
    r_check(F.SetIntraOpNumThreads(so, 1), "threads");
    r_check(F.SetSessionLogSeverityLevel(so, ORTA_LOG_FATAL), "log level");
    if (alloc) {
        r_check(F.DisableCpuMemArena(so), "arena");
        r_check(F.AddSessionConfigEntry(so, "session.use_env_allocators", "1"), "config");
        r_check(F.RegisterAllocator(R_env, alloc), "RegisterAllocator");
    }
    OrtSession *s;
    r_check(F.CreateSessionFromArray(R_env, model, len, so, &s), "CreateSessionFromArray");
    free(model);
    return s;
}

/* A tensor over p (bytes) of the given shape and ONNX element type. */
static OrtValue *r_tensor(void *p, size_t bytes, const int64_t *shape, size_t rank, int et) {
    static int64_t none;
    OrtValue *v;
    r_check(F.CreateTensorWithDataAsOrtValue(R_cpu, p ? p : &none, bytes, shape, rank, et, &v),
            "CreateTensorWithDataAsOrtValue");
    return v;
}

#endif
