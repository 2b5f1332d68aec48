/*
 * guard.c — guarded buffers for the harness (see guard.h).
 *
 * Owns: the mapping of every guarded buffer, the canary fill and scan, the
 * AddressSanitizer (un)poisoning of the bytes that belong to no region, the
 * read-only switch for inputs, a small registry of live guards that turns an
 * address into words, and the ASan error hook that names the scratch-bounds
 * oracle when ASan itself catches the write.  Must not touch the engine:
 * it only reads the region table the plan hands out.
 *
 * One mapping per buffer:
 *
 *     [PROT_NONE page][front redzone >= GUARD_FRONT][buf .. buf+size)[PROT_NONE page]
 *
 * buf + size is exactly the start of the rear PROT_NONE page, so a linear
 * overrun of the buffer faults even without ASan; the front page catches a
 * wild underrun.  Every byte of [front redzone, buf + size) that is not inside
 * a region (the front redzone, the gaps the plan's redzone leaves between
 * regions, the tail after the last region) is filled with GUARD_CANARY and,
 * under ASan, poisoned.
 *
 * ASan granularity (8 bytes).  The shadow of one granule can say "all
 * addressable", "the first k bytes addressable" or "poisoned"; it cannot
 * say "the first k bytes poisoned, the rest addressable".  Regions start
 * GUARD_ALIGN (64) aligned, so every gap ENDS on a granule boundary and its
 * tail is always poisonable.  A gap that STARTS mid-granule (a region whose
 * size is not a multiple of 8, e.g. the one-byte-per-piece flags) shares that
 * granule with its region: ASan marks it "first k bytes addressable", which
 * is exact on this runtime, but the interface only promises
 * [align_up(start), end), so we never rely on it.  The canary covers every
 * gap byte regardless, including that shared granule: a write there is
 * caught by guard_check even when ASan stays silent.
 *
 * Poisoning is not thread-safe: arm before attn_run and check after it,
 * never from inside an OpenMP parallel region.  The registry is a plain
 * static array, meant for the single-threaded harness drivers; a guard must
 * not be moved (copied to another address) while it is live.
 */
#include "guard.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GUARD_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(GUARD_ASAN)
#define GUARD_ASAN 1
#endif

#ifdef GUARD_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

int guard_have_asan(void) {
#ifdef GUARD_ASAN
    return 1;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------- registry */

#define GUARD_REGISTRY_MAX 512
static guard *g_live[GUARD_REGISTRY_MAX];

static int g_live_hint;   /* where the next free slot search starts */

static void registry_add(guard *g) {
    for (int k = 0; k < GUARD_REGISTRY_MAX; k++) {
        const int i = (g_live_hint + k) % GUARD_REGISTRY_MAX;
        if (!g_live[i]) {
            g_live[i] = g;
            g->slot = i + 1;
            g_live_hint = i + 1;
            return;
        }
    }
    /* Full: the guard still works, only guard_describe_addr cannot name it. */
}

static void registry_remove(guard *g) {
    if (g->slot > 0 && g->slot <= GUARD_REGISTRY_MAX && g_live[g->slot - 1] == g) {
        g_live[g->slot - 1] = NULL;
        if (g->slot - 1 < g_live_hint) g_live_hint = g->slot - 1;
    }
    g->slot = 0;
}

/* -------------------------------------------------------------- helpers */

static size_t page_size(void) {
    static size_t ps;
    if (!ps) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (size_t)v : 4096;
    }
    return ps;
}

/* Round a up to a multiple of m (a power of two); 1 on overflow. */
static int round_up(size_t a, size_t m, size_t *out) {
    size_t t;
    if (__builtin_add_overflow(a, m - 1, &t)) return 1;
    *out = t & ~(m - 1);
    return 0;
}

/* The writable body: front redzone + buffer. */
static unsigned char *body_start(const guard *g) { return g->map + page_size(); }
static size_t body_len(const guard *g) { return g->map_len - 2 * page_size(); }

/* ------------------------------------------------------- mapping pool */

/* Fresh mappings cost a system call each way and a page fault per page
 * touched, for every buffer of every run of every fuzz input.  Unmapped
 * guards park here instead and are handed out again for the same length,
 * zeroed like a fresh mapping (so no byte of an earlier input survives:
 * a finding must not depend on what ran before it); both guard pages stay
 * PROT_NONE throughout.  Bodies up to POOL_CLASS_MAX are rounded up to a
 * power of two pages so that inputs of different shapes share mappings;
 * the slack lies before the buffer and is front redzone (canary, and
 * poisoned under ASan) like the rest of it. */
#define POOL_SLOTS 96
#define POOL_MAX_BYTES ((size_t)256 << 20)
static struct {
    unsigned char *map;
    size_t len;
} g_pool[POOL_SLOTS];
static size_t g_pool_bytes;

static unsigned char *pool_take(size_t len) {
    for (int i = 0; i < POOL_SLOTS; i++)
        if (g_pool[i].map && g_pool[i].len == len) {
            unsigned char *m = g_pool[i].map;
            g_pool[i].map = NULL;
            g_pool_bytes -= len;
            return m;
        }
    return NULL;
}

/* 1 parked (the caller must not unmap), 0 full. */
static int pool_put(unsigned char *map, size_t len) {
    if (len > POOL_MAX_BYTES / 4 || g_pool_bytes + len > POOL_MAX_BYTES) return 0;
    for (int i = 0; i < POOL_SLOTS; i++)
        if (!g_pool[i].map) {
            g_pool[i].map = map;
            g_pool[i].len = len;
            g_pool_bytes += len;
            return 1;
        }
    return 0;
}

/* Map [PROT_NONE][body][PROT_NONE] for `size` bytes ending flush with the
 * rear page, register the guard.  Regions are installed by the caller. */
#define POOL_CLASS_MAX ((size_t)16 << 20)

static int map_buffer(guard *g, const char *label, size_t size) {
    memset(g, 0, sizeof *g);
    const size_t ps = page_size();
    size_t body, len;
    if (__builtin_add_overflow((size_t)GUARD_FRONT, size, &body) || round_up(body, ps, &body))
        return -1;
    if (body <= POOL_CLASS_MAX) {
        size_t c = ps;
        while (c < body) c *= 2;
        body = c;
    }
    if (__builtin_add_overflow(body, 2 * ps, &len)) return -1;
    unsigned char *map = pool_take(len);
    if (map) {
        if (mprotect(map + ps, body, PROT_READ | PROT_WRITE) != 0) {
            munmap(map, len);
            return -1;
        }
        memset(map + ps, 0, body);
    } else {
        void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return -1;
        map = m;
        if (mprotect(map + ps, body, PROT_READ | PROT_WRITE) != 0) {
            munmap(m, len);
            return -1;
        }
    }
    g->map = map;
    g->map_len = len;
    g->buf = map + ps + body - size;
    g->size = size;
    snprintf(g->label, sizeof g->label, "%s", label ? label : "buffer");
    registry_add(g);
    return 0;
}

/* Regions must be sorted, disjoint, inside [0, total). */
static int regions_ok(const ag_region *r, size_t n, size_t total) {
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].offset < end || r[i].offset > total || r[i].size > total - r[i].offset)
            return 0;
        end = r[i].offset + r[i].size;
    }
    return 1;
}

int guard_init_regions(guard *g, const char *label, const ag_region *regions, size_t n,
                       size_t total, size_t align) {
    if (!g) return -1;
    memset(g, 0, sizeof *g);
    if (align < 8) align = 8;
    size_t size;
    if ((align & (align - 1)) || align > page_size() || (n && !regions) ||
        !regions_ok(regions, n, total) || round_up(total, align, &size))
        return -1;
    /* buf aligned as the engine asked; a tail of < align bytes after
     * `total` (a canary gap) when total is not a multiple of it */
    if (map_buffer(g, label, size) != 0) return -1;
    if (n) {
        g->regions = malloc(n * sizeof *g->regions);
        if (!g->regions) {
            guard_free(g);
            return -1;
        }
        memcpy(g->regions, regions, n * sizeof *g->regions);
    } else {
        /* no table: the whole scratch is one region */
        g->regions = calloc(1, sizeof *g->regions);
        if (!g->regions) {
            guard_free(g);
            return -1;
        }
        snprintf(g->regions[0].name, sizeof g->regions[0].name, "%s", g->label);
        g->regions[0].size = total;
        n = 1;
    }
    g->num_regions = n;
    return 0;
}

int guard_init_buffer(guard *g, const char *label, size_t bytes) {
    if (!g) return -1;
    /* 64-byte aligned AND flush with the rear page: the mapping covers
     * bytes rounded up to GUARD_ALIGN, and the (< 64 byte) tail beyond
     * `bytes` is a canary/poisoned gap like any other. */
    size_t size;
    if (round_up(bytes, GUARD_ALIGN, &size)) {
        memset(g, 0, sizeof *g);
        return -1;
    }
    if (map_buffer(g, label, size) != 0) return -1;
    g->regions = malloc(sizeof *g->regions);
    if (!g->regions) {
        guard_free(g);
        return -1;
    }
    memset(g->regions, 0, sizeof *g->regions);
    snprintf(g->regions[0].name, sizeof g->regions[0].name, "%s", g->label);
    g->regions[0].offset = 0;
    g->regions[0].size = bytes;
    g->num_regions = 1;
    return 0;
}

int guard_init_placed(guard *g, const char *label, size_t bytes, int head) {
    if (!g) return -1;
    if (map_buffer(g, label, bytes ? bytes : 1) != 0) return -1;
    if (head) {
        /* the first byte right after the front PROT_NONE page; what follows
         * the buffer up to the rear page is a canary gap */
        g->buf = body_start(g);
        g->size = body_len(g);
    } else if (!bytes) {
        g->buf += 1;   /* an empty buffer: its end is the rear page */
        g->size = 0;
    }
    g->regions = malloc(sizeof *g->regions);
    if (!g->regions) {
        guard_free(g);
        return -1;
    }
    memset(g->regions, 0, sizeof *g->regions);
    snprintf(g->regions[0].name, sizeof g->regions[0].name, "%s", g->label);
    g->regions[0].size = bytes;
    g->num_regions = 1;
    return 0;
}

/* The gaps in address order: gap 0 is the front redzone (before buf),
 * gap i+1 follows region i (the last one runs to buf + size).  With no
 * regions, gap 1 is the whole buffer.  Returns the number of gaps. */
static size_t gap_count(const guard *g) { return g->num_regions + 1 + (g->num_regions == 0); }

static void gap_at(const guard *g, size_t i, unsigned char **p, size_t *len) {
    if (i == 0) {
        *p = body_start(g);
        *len = (size_t)(g->buf - body_start(g));
        return;
    }
    if (g->num_regions == 0) {
        *p = g->buf;
        *len = g->size;
        return;
    }
    const ag_region *r = &g->regions[i - 1];
    size_t start = r->offset + r->size;
    size_t end = i < g->num_regions ? g->regions[i].offset : g->size;
    *p = g->buf + start;
    *len = end - start;
}

void guard_arm(guard *g) {
    if (!g || !g->map) return;
    int ro = g->readonly;
    if (ro) guard_set_readonly(g, 0);
    UNPOISON(body_start(g), body_len(g));
    const size_t n = gap_count(g);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p;
        size_t len;
        gap_at(g, i, &p, &len);
        if (len) memset(p, (int)GUARD_CANARY, len);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char *p;
        size_t len;
        gap_at(g, i, &p, &len);
        if (len) POISON(p, len);
    }
    if (ro) guard_set_readonly(g, 1);
}

void guard_fill_regions(guard *g, unsigned char byte) {
    if (!g || !g->map || g->readonly) return;
    for (size_t i = 0; i < g->num_regions; i++)
        if (g->regions[i].size)
            memset(g->buf + g->regions[i].offset, byte, g->regions[i].size);
}

/* First byte in [p, p+len) that is not the canary, or len. */
static size_t first_bad(const unsigned char *p, size_t len) {
    size_t i = 0;
    const uint64_t pat = 0x0101010101010101ull * (uint64_t)GUARD_CANARY;
    while (i < len && ((uintptr_t)(p + i) & 7u)) {
        if (p[i] != GUARD_CANARY) return i;
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w != pat) break;
    }
    for (; i < len; i++)
        if (p[i] != GUARD_CANARY) return i;
    return len;
}

int guard_check(guard *g, guard_violation *v) {
    if (!g || !g->map) return 0;
    UNPOISON(body_start(g), body_len(g));
    const size_t n = gap_count(g);
    for (size_t i = 0; i < n; i++) {
        unsigned char *p;
        size_t len;
        gap_at(g, i, &p, &len);
        size_t k = first_bad(p, len);
        if (k == len) continue;
        if (v) {
            memset(v, 0, sizeof *v);
            snprintf(v->label, sizeof v->label, "%s", g->label);
            size_t bad = 0;
            for (size_t j = k; j < len; j++) bad += p[j] != GUARD_CANARY;
            v->bytes = bad;
            if (i == 0) {
                v->offset = 0;
                v->before_start = (size_t)(g->buf - (p + k));
            } else {
                v->offset = (size_t)(p + k - g->buf);
                if (g->num_regions) {
                    const ag_region *r = &g->regions[i - 1];
                    snprintf(v->region, sizeof v->region, "%s", r->name);
                    v->region_size = r->size;
                    v->past_end = v->offset - (r->offset + r->size);
                } else {
                    v->past_end = v->offset;
                }
            }
        }
        return 1;
    }
    return 0;
}

int guard_set_readonly(guard *g, int readonly) {
    if (!g || !g->map) return -1;
    if (mprotect(body_start(g), body_len(g), readonly ? PROT_READ : PROT_READ | PROT_WRITE) != 0)
        return -1;
    g->readonly = readonly ? 1 : 0;
    return 0;
}

void guard_free(guard *g) {
    if (!g) return;
    registry_remove(g);
    if (g->map) {
        /* ASan keeps shadow across munmap: leave none of our poison behind
         * for whoever maps these addresses next. */
        UNPOISON(g->map, g->map_len);
        if (!pool_put(g->map, g->map_len)) munmap(g->map, g->map_len);
    }
    free(g->regions);
    memset(g, 0, sizeof *g);
}

size_t guard_format_violation(const guard_violation *v, char *buf, size_t cap) {
    if (!v || !buf || !cap) return 0;
    int n;
    if (v->before_start)
        n = snprintf(buf, cap, "%s: %zu bytes before the start of the buffer (front redzone), "
                               "%zu corrupted bytes", v->label, v->before_start, v->bytes);
    else if (v->region[0] && v->past_end == 0)
        n = snprintf(buf, cap,
                     "%s: offset %zu, the first byte past the end of region %s (size %zu), "
                     "%zu corrupted bytes in the gap", v->label, v->offset, v->region,
                     v->region_size, v->bytes);
    else if (v->region[0])
        n = snprintf(buf, cap,
                     "%s: offset %zu, %zu bytes past the end of region %s (size %zu), "
                     "%zu corrupted bytes in the gap", v->label, v->offset, v->past_end,
                     v->region, v->region_size, v->bytes);
    else
        n = snprintf(buf, cap, "%s: offset %zu, outside every region, %zu corrupted bytes",
                     v->label, v->offset, v->bytes);
    return n < 0 ? 0 : (size_t)n;
}

/* ------------------------------------------------------ describing addresses */

static const char *oracle_of(const guard *g) { return g->oracle ? g->oracle : "bounds"; }

static int describe_in(const guard *g, uintptr_t a, char *buf, size_t cap) {
    const uintptr_t lo = (uintptr_t)g->map, b = (uintptr_t)g->buf, e = b + g->size;
    if (a < lo || a >= lo + g->map_len) return 0;
    if (a < b) {
        snprintf(buf, cap, "%s: %zu bytes before the start of the buffer (%s)", g->label,
                 (size_t)(b - a), a < lo + page_size() ? "front PROT_NONE page" : "front redzone");
        return 1;
    }
    if (a >= e) {
        /* the region the overrun most likely ran out of: the last one */
        char last[AG_REGION_NAME_LEN + 64] = "";
        const ag_region *r = g->num_regions ? &g->regions[g->num_regions - 1] : NULL;
        if (r && strcmp(r->name, g->label) != 0)
            snprintf(last, sizeof last, ", after its last region %s (offset %zu, size %zu)",
                     r->name, r->offset, r->size);
        if (a == e)
            snprintf(buf, cap, "%s: offset %zu, the first byte past the end of the buffer (size "
                               "%zu%s), in the PROT_NONE page", g->label, (size_t)(a - b), g->size,
                     last);
        else
            snprintf(buf, cap, "%s: offset %zu, %zu bytes past the end of the buffer (size %zu%s), "
                               "in the PROT_NONE page", g->label, (size_t)(a - b), (size_t)(a - e),
                     g->size, last);
        return 1;
    }
    size_t off = (size_t)(a - b);
    const ag_region *prev = NULL;
    for (size_t i = 0; i < g->num_regions; i++) {
        const ag_region *r = &g->regions[i];
        if (off >= r->offset && off - r->offset < r->size) {
            snprintf(buf, cap, "%s: offset %zu, inside region %s (offset %zu, size %zu)",
                     g->label, off, r->name, r->offset, r->size);
            return 1;
        }
        if (r->offset + r->size <= off) prev = r;
    }
    if (prev && off == prev->offset + prev->size)
        snprintf(buf, cap, "%s: offset %zu, the first byte past the end of region %s (size %zu)",
                 g->label, off, prev->name, prev->size);
    else if (prev)
        snprintf(buf, cap, "%s: offset %zu, %zu bytes past the end of region %s (size %zu)",
                 g->label, off, off - (prev->offset + prev->size), prev->name, prev->size);
    else
        snprintf(buf, cap, "%s: offset %zu, before the first region", g->label, off);
    return 1;
}

/* The live guard holding addr, or NULL. */
static const guard *guard_of(uintptr_t a, char *buf, size_t cap) {
    for (int i = 0; i < GUARD_REGISTRY_MAX; i++)
        if (g_live[i] && g_live[i]->map && describe_in(g_live[i], a, buf, cap)) return g_live[i];
    return NULL;
}

int guard_describe_addr(const void *addr, char *buf, size_t cap) {
    if (!buf || !cap) return 0;
    buf[0] = '\0';
    return guard_of((uintptr_t)addr, buf, cap) != NULL;
}

/* ------------------------------------------------------------ fault hooks */

#ifdef GUARD_ASAN
/* ASan calls this while it reports, before printing the report: if the bad
 * address lies in a guarded buffer, name the oracle first so that the
 * crash reads as a scratch-bounds finding, not as an anonymous poison hit. */
void __asan_on_error(void) {
    void *a = __asan_get_report_address();
    char d[256];
    const guard *g = a ? guard_of((uintptr_t)a, d, sizeof d) : NULL;
    if (g) fprintf(stderr, "attnguard: ORACLE %s: %s\n", oracle_of(g), d);
}
#endif

static struct sigaction g_old_segv;
static volatile sig_atomic_t g_in_fault;

/* Name a fault inside a guard (the PROT_NONE pages), then hand the signal
 * to whoever had it before: ASan's or libFuzzer's handler reports as
 * usual; with the default action we restore it and return, so the access
 * faults again and the process dies of the same SIGSEGV. */
static void on_segv(int sig, siginfo_t *si, void *uctx) {
    if (!g_in_fault) {
        g_in_fault = 1;
        char d[256];
        const guard *g = si ? guard_of((uintptr_t)si->si_addr, d, sizeof d) : NULL;
        if (g) {
            char line[320];
            int n = snprintf(line, sizeof line, "attnguard: ORACLE %s: %s\n", oracle_of(g), d);
            if (n > 0) {
                ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
                (void)w;
            }
        }
    }
    if ((g_old_segv.sa_flags & SA_SIGINFO) && g_old_segv.sa_sigaction) {
        g_old_segv.sa_sigaction(sig, si, uctx);
        return;
    }
    if (g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN) {
        g_old_segv.sa_handler(sig);
        return;
    }
    sigaction(sig, &g_old_segv, NULL);
}

int guard_install_fault_handler(void) {
    static int installed;
    if (installed) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    /* SA_ONSTACK: keep a sanitizer's alternate stack usable for overflows */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &g_old_segv) != 0) return -1;
    installed = 1;
    return 1;
}
