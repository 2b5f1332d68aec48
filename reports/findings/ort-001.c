/*
 * ort-001 reproducer: ONNX Runtime writes through a NULL returned by a
 * user allocator.  An OrtAllocator registered on the environment
 * (RegisterAllocator) and taken by a session (session.use_env_allocators
 * = 1, CPU arena off) answers NULL, as an allocator out of memory does, to
 * the first request made while Run executes.  ORT does not check the
 * result: the GroupQueryAttention kernel transposes the query into the
 * NULL buffer and the process dies of SIGSEGV instead of Run returning an
 * error status.
 *
 * Node: com.microsoft GroupQueryAttention, B 1, S 4, num_heads 4,
 * kv_num_heads 2, head size 8, f32, a past of 3 rows (one subsequent
 * prompt chunk: seqlens_k = 6, total_sequence_length = 7).
 *
 *     cc -O1 -g ort-001.c -ldl -o ort-001 && ./ort-001 [libonnxruntime.so.1]
 *
 * Exit: killed by SIGSEGV when the defect reproduces; 0 when Run returns
 * (an error status is the documented behaviour); 2 on a setup failure.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engines/ort/onnx_proto.c"
#include "../../engines/ort/ort_api.h"

static void *const *api;
#define FN(type, name) ((type)api[ORTA_##name])

static OrtMemoryInfo *cpu;
static int running;           /* requests during Run get NULL */
static unsigned long refused;

static void *my_alloc(OrtaAllocator *self, size_t n) {
    (void)self;
    if (running && n > 0) {
        refused++;
        return NULL;          /* out of memory, as any allocator may be */
    }
    return aligned_alloc(64, (n + 63) & ~(size_t)63);
}
static void my_free(OrtaAllocator *self, void *p) { (void)self, free(p); }
static const OrtMemoryInfo *my_info(const OrtaAllocator *self) { (void)self; return cpu; }

static void check(OrtStatus *s, const char *what) {
    if (!s) return;
    fprintf(stderr, "%s: %s\n", what, ((const char *(*)(const OrtStatus *))api[ORTA_GetErrorMessage])(s));
    exit(2);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "build/engines/ort/lib/libonnxruntime.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const OrtaApiBase *(*base)(void) = h ? (const OrtaApiBase *(*)(void))dlsym(h, "OrtGetApiBase") : NULL;
    if (!base || !(api = (void *const *)base()->GetApi(ORTA_API_VERSION))) {
        fprintf(stderr, "cannot load %s\n", path);
        return 2;
    }
    enum { B = 1, S = 4, HQ = 4, HKV = 2, D = 8, PAST = 3, TOT = PAST + S };
    const onnx_value in[7] = {
        {"query", ORTA_T_FLOAT, 3, {{B, NULL}, {S, NULL}, {HQ * D, NULL}}},
        {"key", ORTA_T_FLOAT, 3, {{B, NULL}, {S, NULL}, {HKV * D, NULL}}},
        {"value", ORTA_T_FLOAT, 3, {{B, NULL}, {S, NULL}, {HKV * D, NULL}}},
        {"past_key", ORTA_T_FLOAT, 4, {{B, NULL}, {HKV, NULL}, {PAST, NULL}, {D, NULL}}},
        {"past_value", ORTA_T_FLOAT, 4, {{B, NULL}, {HKV, NULL}, {PAST, NULL}, {D, NULL}}},
        {"seqlens_k", ORTA_T_INT32, 1, {{B, NULL}}},
        {"total_sequence_length", ORTA_T_INT32, 0, {{0, NULL}}}};
    const onnx_value out[3] = {
        {"output", ORTA_T_FLOAT, 3, {{B, NULL}, {S, NULL}, {HQ * D, NULL}}},
        {"present_key", ORTA_T_FLOAT, 4, {{B, NULL}, {HKV, NULL}, {TOT, NULL}, {D, NULL}}},
        {"present_value", ORTA_T_FLOAT, 4, {{B, NULL}, {HKV, NULL}, {TOT, NULL}, {D, NULL}}}};
    const onnx_attr at[2] = {{"num_heads", ONNX_ATTR_INT, 0, HQ}, {"kv_num_heads", ONNX_ATTR_INT, 0, HKV}};
    const onnx_node_model m = {10, 21, 1, "GroupQueryAttention", "com.microsoft", in, 7, out, 3, at, 2};
    uint8_t *model;
    size_t len;
    if (onnx_encode_model(&m, &model, &len)) return 2;

    OrtEnv *env;
    check(FN(OrtStatus *(*)(int, const char *, OrtEnv **), CreateEnv)(ORTA_LOG_FATAL, "ort-001", &env), "CreateEnv");
    check(FN(OrtStatus *(*)(int, int, OrtMemoryInfo **), CreateCpuMemoryInfo)(ORTA_DEVICE_ALLOCATOR, ORTA_MEM_DEFAULT, &cpu), "CreateCpuMemoryInfo");
    static OrtaAllocator mine = {1, my_alloc, my_free, my_info};
    check(FN(OrtStatus *(*)(OrtEnv *, OrtaAllocator *), RegisterAllocator)(env, &mine), "RegisterAllocator");
    OrtSessionOptions *so;
    check(FN(OrtStatus *(*)(OrtSessionOptions **), CreateSessionOptions)(&so), "CreateSessionOptions");
    check(FN(OrtStatus *(*)(OrtSessionOptions *), DisableCpuMemArena)(so), "DisableCpuMemArena");
    check(FN(OrtStatus *(*)(OrtSessionOptions *, int), SetIntraOpNumThreads)(so, 1), "threads");
    check(FN(OrtStatus *(*)(OrtSessionOptions *, const char *, const char *), AddSessionConfigEntry)(
              so, "session.use_env_allocators", "1"), "AddSessionConfigEntry");
    OrtSession *sess;
    check(FN(OrtStatus *(*)(const OrtEnv *, const void *, size_t, const OrtSessionOptions *, OrtSession **),
             CreateSessionFromArray)(env, model, len, so, &sess), "CreateSessionFromArray");

    static float q[B * S * HQ * D], k[B * S * HKV * D], v[B * S * HKV * D];
    static float pk[B * HKV * PAST * D], pv[B * HKV * PAST * D], y[B * S * HQ * D];
    static float prk[B * HKV * TOT * D], prv[B * HKV * TOT * D];
    static int32_t seqlens[B] = {TOT - 1}, total = TOT;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) q[i] = (float)(i % 7) / 7;
    const int64_t sq[3] = {B, S, HQ * D}, sk[3] = {B, S, HKV * D}, sp[4] = {B, HKV, PAST, D};
    const int64_t sr[4] = {B, HKV, TOT, D}, ss[1] = {B};
    OrtStatus *(*tensor)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, OrtValue **) =
        FN(OrtStatus *(*)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, OrtValue **),
           CreateTensorWithDataAsOrtValue);
    OrtValue *iv[7], *ov[3];
    check(tensor(cpu, q, sizeof q, sq, 3, ORTA_T_FLOAT, &iv[0]), "tensor");
    check(tensor(cpu, k, sizeof k, sk, 3, ORTA_T_FLOAT, &iv[1]), "tensor");
    check(tensor(cpu, v, sizeof v, sk, 3, ORTA_T_FLOAT, &iv[2]), "tensor");
    check(tensor(cpu, pk, sizeof pk, sp, 4, ORTA_T_FLOAT, &iv[3]), "tensor");
    check(tensor(cpu, pv, sizeof pv, sp, 4, ORTA_T_FLOAT, &iv[4]), "tensor");
    check(tensor(cpu, seqlens, sizeof seqlens, ss, 1, ORTA_T_INT32, &iv[5]), "tensor");
    check(tensor(cpu, &total, sizeof total, NULL, 0, ORTA_T_INT32, &iv[6]), "tensor");
    check(tensor(cpu, y, sizeof y, sq, 3, ORTA_T_FLOAT, &ov[0]), "tensor");
    check(tensor(cpu, prk, sizeof prk, sr, 4, ORTA_T_FLOAT, &ov[1]), "tensor");
    check(tensor(cpu, prv, sizeof prv, sr, 4, ORTA_T_FLOAT, &ov[2]), "tensor");
    const char *const inn[7] = {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                "total_sequence_length"};
    const char *const outn[3] = {"output", "present_key", "present_value"};
    printf("Run with an allocator that answers NULL ...\n");
    fflush(stdout);
    running = 1;
    OrtStatus *s = FN(OrtStatus *(*)(OrtSession *, const OrtRunOptions *, const char *const *,
                                     const OrtValue *const *, size_t, const char *const *, size_t,
                                     OrtValue **), Run)(sess, NULL, inn, (const OrtValue *const *)iv, 7,
                                                        outn, 3, ov);
    running = 0;
    printf("Run returned %s after %lu NULL answers: not reproduced\n", s ? "an error status" : "OK",
           refused);
    return 0;
}
