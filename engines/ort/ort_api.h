/*
 * engines/ort/ort_api.h — the few pieces of ONNX Runtime's stable C ABI the
 * ort adapter calls, declared by the adapter itself (no ORT header ships
 * with the npm package, and none is committed here).
 *
 * Owns: the opaque handle types, the handful of enumerations whose values
 * the adapter passes, the allocator record ORT calls back into, and the
 * positions in ORT's function table of the entries the adapter uses.
 *
 * The ABI facts.  OrtGetApiBase() (the library's one exported entry)
 * returns two function pointers: GetApi(version) and GetVersionString().
 * GetApi returns the address of one table of function pointers whose order
 * never changes between releases (new entries only ever go at its end), or
 * NULL when the library is older than the version asked for.  Every entry
 * uses the platform's plain C calling convention; those that can fail
 * return an OrtStatus pointer, NULL meaning success.  So the adapter needs
 * no struct layout at all: it reads the table as an array of pointers and
 * casts entry ORTA_<name> to the signature written beside it here.
 * ORT asserts that order in its own build; ort_load.c checks at open()
 * that the positions it can test answer as their entries should (the
 * probes there).
 */
#ifndef AG_ORT_API_H
#define AG_ORT_API_H

#include <stddef.h>
#include <stdint.h>

/* The table version the adapter asks GetApi for: the oldest table that
 * holds every entry below.  ORT's own source marks where each version's
 * table ends: RegisterAllocator came with version 9, Has/Get-
 * SessionConfigEntry with 14, and GetBuildInfoString is the last entry of
 * version 15.  A library that does not know version 15 returns NULL and
 * the adapter refuses to load it. */
#define ORTA_API_VERSION 15u

/* Opaque handles: the adapter only passes them back. */
typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;

/* Status codes (OrtErrorCode). */
enum { ORTA_OK = 0, ORTA_FAIL = 1, ORTA_INVALID_ARGUMENT = 2, ORTA_NOT_IMPLEMENTED = 9 };

/* Logging levels (OrtLoggingLevel): the adapter keeps ORT quiet. */
enum { ORTA_LOG_WARNING = 2, ORTA_LOG_ERROR = 3, ORTA_LOG_FATAL = 4 };

/* Graph optimisation levels: a one-node graph needs none. */
enum { ORTA_OPT_DISABLE_ALL = 0 };

/* Where a CPU memory record says memory comes from (OrtAllocatorType,
 * OrtMemType). */
enum { ORTA_DEVICE_ALLOCATOR = 0, ORTA_ARENA_ALLOCATOR = 1 };
enum { ORTA_MEM_DEFAULT = 0 };

/* Tensor element types: the numbers of ONNX's TensorProto.DataType, which
 * ORT's element-type enumeration repeats. */
enum {
    ORTA_T_FLOAT = 1,
    ORTA_T_INT32 = 6,
    ORTA_T_INT64 = 7,
    ORTA_T_BOOL = 9,
    ORTA_T_FLOAT16 = 10,
    ORTA_T_BFLOAT16 = 16
};

/* The allocator record ORT calls into (OrtAllocator).  `version` tells ORT
 * how many of the fields exist; the first three are all a version below
 * 18 has, and the adapter fills exactly those: Alloc(self, bytes) with no
 * alignment argument, Free(self, p), Info(self) naming the memory. */
typedef struct OrtaAllocator {
    uint32_t version;
    void *(*Alloc)(struct OrtaAllocator *self, size_t bytes);
    void (*Free)(struct OrtaAllocator *self, void *p);
    const OrtMemoryInfo *(*Info)(const struct OrtaAllocator *self);
} OrtaAllocator;

/* What OrtGetApiBase returns. */
typedef struct OrtaApiBase {
    const void *const *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtaApiBase;

/* Positions in the function table, each with the entry's signature. */
enum {
    ORTA_CreateStatus = 0,                   /* OrtStatus *(int code, const char *msg) */
    ORTA_GetErrorCode = 1,                   /* int (const OrtStatus *) */
    ORTA_GetErrorMessage = 2,                /* const char *(const OrtStatus *) */
    ORTA_CreateEnv = 3,                      /* S (int log_level, const char *id, OrtEnv **) */
    ORTA_CreateSessionFromArray = 8,         /* S (const OrtEnv *, const void *, size_t,
                                                   const OrtSessionOptions *, OrtSession **) */
    ORTA_Run = 9,                            /* S (OrtSession *, const OrtRunOptions *,
                                                   const char *const *in_names,
                                                   const OrtValue *const *in, size_t n_in,
                                                   const char *const *out_names, size_t n_out,
                                                   OrtValue **out) */
    ORTA_CreateSessionOptions = 10,          /* S (OrtSessionOptions **) */
    ORTA_DisableMemPattern = 17,             /* S (OrtSessionOptions *) */
    ORTA_DisableCpuMemArena = 19,            /* S (OrtSessionOptions *) */
    ORTA_SetSessionLogSeverityLevel = 22,    /* S (OrtSessionOptions *, int) */
    ORTA_SetSessionGraphOptimizationLevel = 23, /* S (OrtSessionOptions *, int) */
    ORTA_SetIntraOpNumThreads = 24,          /* S (OrtSessionOptions *, int) */
    ORTA_SetInterOpNumThreads = 25,          /* S (OrtSessionOptions *, int) */
    ORTA_SessionGetInputCount = 30,          /* S (const OrtSession *, size_t *) */
    ORTA_SessionGetOutputCount = 31,         /* S (const OrtSession *, size_t *) */
    ORTA_CreateTensorWithDataAsOrtValue = 49, /* S (const OrtMemoryInfo *, void *data,
                                                    size_t bytes, const int64_t *shape,
                                                    size_t rank, int elem_type, OrtValue **) */
    ORTA_GetTensorMutableData = 51,          /* S (OrtValue *, void **) */
    ORTA_GetTensorElementType = 60,          /* S (const OrtTensorTypeAndShapeInfo *, int *) */
    ORTA_GetDimensionsCount = 61,            /* S (const OrtTensorTypeAndShapeInfo *, size_t *) */
    ORTA_GetDimensions = 62,                 /* S (const OrtTensorTypeAndShapeInfo *, int64_t *,
                                                   size_t) */
    ORTA_GetTensorTypeAndShape = 65,         /* S (const OrtValue *, OrtTensorTypeAndShapeInfo **) */
    ORTA_CreateCpuMemoryInfo = 69,           /* S (int alloc_type, int mem_type, OrtMemoryInfo **) */
    ORTA_ReleaseEnv = 92,                    /* void (OrtEnv *) */
    ORTA_ReleaseStatus = 93,                 /* void (OrtStatus *) */
    ORTA_ReleaseMemoryInfo = 94,             /* void (OrtMemoryInfo *) */
    ORTA_ReleaseSession = 95,                /* void (OrtSession *) */
    ORTA_ReleaseValue = 96,                  /* void (OrtValue *) */
    ORTA_ReleaseTensorTypeAndShapeInfo = 99, /* void (OrtTensorTypeAndShapeInfo *) */
    ORTA_ReleaseSessionOptions = 100,        /* void (OrtSessionOptions *) */
    ORTA_AddSessionConfigEntry = 130,        /* S (OrtSessionOptions *, const char *key,
                                                   const char *value) */
    ORTA_RegisterAllocator = 176,            /* S (OrtEnv *, OrtaAllocator *) */
    ORTA_UnregisterAllocator = 177,          /* S (OrtEnv *, const OrtMemoryInfo *) */
    ORTA_HasSessionConfigEntry = 237,        /* S (const OrtSessionOptions *, const char *key,
                                                   int *has) */
    ORTA_GetSessionConfigEntry = 238,        /* S (const OrtSessionOptions *, const char *key,
                                                   char *value, size_t *size) */
    ORTA_GetBuildInfoString = 254,           /* const char *(void) */
    ORTA_TABLE_USED = 255                    /* entries the adapter may index: [0, 255) */
};

/* The entries, typed: one table of properly typed pointers filled from
 * ORT's table by position (ort_load.c), so that every call site is checked
 * by the compiler against the signature above. */
typedef struct orta_fns {
    OrtStatus *(*CreateStatus)(int code, const char *msg);
    int (*GetErrorCode)(const OrtStatus *s);
    const char *(*GetErrorMessage)(const OrtStatus *s);
    OrtStatus *(*CreateEnv)(int log_level, const char *logid, OrtEnv **out);
    OrtStatus *(*CreateSessionFromArray)(const OrtEnv *env, const void *model, size_t bytes,
                                         const OrtSessionOptions *opts, OrtSession **out);
    OrtStatus *(*Run)(OrtSession *s, const OrtRunOptions *ro, const char *const *in_names,
                      const OrtValue *const *in, size_t n_in, const char *const *out_names,
                      size_t n_out, OrtValue **out);
    OrtStatus *(*CreateSessionOptions)(OrtSessionOptions **out);
    OrtStatus *(*DisableMemPattern)(OrtSessionOptions *o);
    OrtStatus *(*DisableCpuMemArena)(OrtSessionOptions *o);
    OrtStatus *(*SetSessionLogSeverityLevel)(OrtSessionOptions *o, int level);
    OrtStatus *(*SetSessionGraphOptimizationLevel)(OrtSessionOptions *o, int level);
    OrtStatus *(*SetIntraOpNumThreads)(OrtSessionOptions *o, int n);
    OrtStatus *(*SetInterOpNumThreads)(OrtSessionOptions *o, int n);
    OrtStatus *(*SessionGetInputCount)(const OrtSession *s, size_t *out);
    OrtStatus *(*SessionGetOutputCount)(const OrtSession *s, size_t *out);
    OrtStatus *(*CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo *info, void *data,
                                                 size_t bytes, const int64_t *shape,
                                                 size_t rank, int elem_type, OrtValue **out);
    OrtStatus *(*GetTensorMutableData)(OrtValue *v, void **out);
    OrtStatus *(*GetTensorElementType)(const OrtTensorTypeAndShapeInfo *i, int *out);
    OrtStatus *(*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo *i, size_t *out);
    OrtStatus *(*GetDimensions)(const OrtTensorTypeAndShapeInfo *i, int64_t *dims, size_t n);
    OrtStatus *(*GetTensorTypeAndShape)(const OrtValue *v, OrtTensorTypeAndShapeInfo **out);
    OrtStatus *(*CreateCpuMemoryInfo)(int alloc_type, int mem_type, OrtMemoryInfo **out);
    void (*ReleaseEnv)(OrtEnv *e);
    void (*ReleaseStatus)(OrtStatus *s);
    void (*ReleaseMemoryInfo)(OrtMemoryInfo *m);
    void (*ReleaseSession)(OrtSession *s);
    void (*ReleaseValue)(OrtValue *v);
    void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo *i);
    void (*ReleaseSessionOptions)(OrtSessionOptions *o);
    OrtStatus *(*AddSessionConfigEntry)(OrtSessionOptions *o, const char *key, const char *val);
    OrtStatus *(*RegisterAllocator)(OrtEnv *e, OrtaAllocator *a);
    OrtStatus *(*UnregisterAllocator)(OrtEnv *e, const OrtMemoryInfo *m);
    OrtStatus *(*HasSessionConfigEntry)(const OrtSessionOptions *o, const char *key, int *has);
    OrtStatus *(*GetSessionConfigEntry)(const OrtSessionOptions *o, const char *key, char *val,
                                        size_t *size);
    const char *(*GetBuildInfoString)(void);
} orta_fns;

#endif /* AG_ORT_API_H */
