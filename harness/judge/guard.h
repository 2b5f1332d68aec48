/*
 * guard.h — guarded buffers for the harness.  A scratchpad is allocated at
 * exactly the plan's size, laid out with redzones between its regions (the
 * plan is built with opts.redzone = GUARD_REDZONE) and a redzone before it;
 * it ends flush against a PROT_NONE page.  Every byte that belongs to no
 * region is filled with a canary and, under AddressSanitizer, poisoned
 * (ASAN_POISON_MEMORY_REGION, outside parallel regions, 8-byte granularity
 * respected).  A live guard is registered by address (guard_describe_addr):
 * do not copy or move it between init and guard_free.  Output buffers get the same treatment as a single region;
 * inputs can be made read-only with mprotect while attention runs.
 */
#ifndef AG_GUARD_H
#define AG_GUARD_H

#include "../../include/attnguard/engine.h"

#include <stddef.h>
#include <stdint.h>

#define GUARD_ALIGN   64        /* plain buffers start this aligned (guard_init_buffer) */
#define GUARD_REDZONE 64        /* gap between regions the harness asks the plan for */
#define GUARD_FRONT   4096      /* redzone before the buffer */
#define GUARD_CANARY  0xA5u     /* canary byte */

typedef struct guard {
    unsigned char *map;   size_t map_len;   /* whole mapping incl. the PROT_NONE page */
    unsigned char *buf;   size_t size;      /* what the engine gets; buf + size is the PROT_NONE page */
    ag_region *regions; size_t num_regions; /* copy of the layout (1 region for plain buffers) */
    int readonly;                           /* currently mprotect'ed PROT_READ */
    char label[32];                         /* "scratch", "out", "q", "k_cache" ... */
    const char *oracle;                     /* the oracle a fault or poison hit here is
                                               named after (static text, set by the
                                               owner); NULL: "bounds" */
    int slot;                               /* its place in the live registry + 1 (0: none) */
} guard;

/* A scratchpad for a plan whose layout has `n` regions (n = 0: one region
 * covering it all) and `total` bytes, starting `align`-aligned (a power of
 * two up to a page; at least 8).  It ends flush with the PROT_NONE page
 * when total is a multiple of align, else a canary tail of < align bytes
 * separates them. */
int guard_init_regions(guard *g, const char *label, const ag_region *regions, size_t n,
                       size_t total, size_t align);
/* A plain buffer of `bytes` (one region covering it all); 64-byte aligned.
 * g->size is `bytes` rounded up to GUARD_ALIGN, so buf + size is the
 * PROT_NONE page; the < 64-byte tail after the region is a canary gap. */
int guard_init_buffer(guard *g, const char *label, size_t bytes);
/* A plain buffer placed to catch an over- or under-read of exactly one
 * element: head = 0, its last byte abuts the rear PROT_NONE page (no
 * rounding: buf may then be aligned to the element size only); head = 1, its
 * first byte follows the front PROT_NONE page, and the rest of that page up
 * to the rear one is a canary gap.  bytes may be 0 (buf then points at the
 * rear page). */
int guard_init_placed(guard *g, const char *label, size_t bytes, int head);
/* Fill canaries outside the regions and poison them (ASan).  Call before a run. */
void guard_arm(guard *g);

typedef struct guard_violation {
    char label[32];           /* which buffer */
    size_t offset;            /* first corrupted byte, from buf (may be past a region) */
    char region[AG_REGION_NAME_LEN]; /* region the corrupted byte lies after ("" = before the first) */
    size_t region_size;
    size_t past_end;          /* offset - (region.offset + region.size) */
    size_t bytes;             /* corrupted bytes in this gap */
    size_t before_start;      /* > 0: the byte lies this far before buf (front
                                 redzone; offset/region are then 0/"") */
} guard_violation;

/* Fill every region's bytes with `byte` (e.g. 0xFF: NaN in f32/bf16/f16),
 * so a kernel that reads scratch or output it never wrote sees junk, not
 * the zeros of a fresh mapping.  No-op on a read-only guard. */
void guard_fill_regions(guard *g, unsigned char byte);

/* Unpoison and verify every canary; 0 = clean, 1 = violation described in *v. */
int guard_check(guard *g, guard_violation *v);
/* Make a plain buffer read-only / writable again (mprotect). */
int guard_set_readonly(guard *g, int readonly);
void guard_free(guard *g);                 /* safe on a zeroed guard */

/* One line for a violation ("scratch: offset 6336, 128 bytes past the end of
 * region r0.partial (size 6144), ..."); returns snprintf's length. */
size_t guard_format_violation(const guard_violation *v, char *buf, size_t cap);

/* 1 when this translation unit was built with AddressSanitizer. */
int guard_have_asan(void);

/* Install (once) a SIGSEGV handler that prints
 * "attnguard: ORACLE scratch-bounds: <where>" for a fault inside a live
 * guard (its PROT_NONE pages), then passes the signal on to the previous
 * handler (ASan's, libFuzzer's) or, with none, lets it kill the process as
 * before.  Returns 1 installed now, 0 already installed, -1 on error. */
int guard_install_fault_handler(void);

/* Describe an address that belongs to a live guard (for the ASan error
 * hook): writes "scratch: offset 6336, 128 bytes past the end of region
 * r0.partial (size 6144)" and returns 1; 0 if the address is not guarded. */
int guard_describe_addr(const void *addr, char *buf, size_t cap);

#endif /* AG_GUARD_H */
