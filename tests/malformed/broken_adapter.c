/*
 * broken_adapter.c — an adapter object whose table is broken on purpose,
 * for the malformed-input gate (scripts/malformed.py, make test-malformed):
 * `attnguard check --engine libag_broken.so` must refuse each breakage with
 * a status and a message naming it, and never call through the table.
 *
 * $AG_BROKEN chooses the breakage when the harness asks for the table:
 *     null:<entry>   that entry NULL (open, close, caps, ... run)
 *     version        built for the ABI version before this one
 *     future         built for the version after this one
 *     short          a table of the old, shorter layout (version 1: only
 *                    the fields up to open exist)
 *     cut            this version, its initializer cut short after open
 *     noname         no name
 *     nosummary      no summary
 *     nulltable      the entry point returns NULL
 *     (unset)        the whole table, whose open refuses (AG_UNSUPPORTED):
 *                    the control that shows the object itself loads
 * Every entry point but open aborts if called: the host must refuse the
 * table before it calls any of them.
 */
#include "../../include/attnguard/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(ag_msg *msg, const char *text) {
    if (!msg) return;
    msg->refusal = AG_R_NONE;
    msg->code[0] = '\0';
    snprintf(msg->text, sizeof msg->text, "%s", text);
}

static ag_status b_open(const char *options, void **ctx, ag_msg *msg) {
    (void)options;
    *ctx = NULL;
    say(msg, "the broken-adapter stand-in opens nowhere (the control of the malformed gate)");
    return AG_UNSUPPORTED;
}

/* Entries that must never run: the harness refuses a broken table first. */
static void never(const char *what) {
    fprintf(stderr, "broken_adapter: %s was called through a table the harness should have "
                    "refused\n", what);
    abort();
}
static void b_close(void *ctx) { (void)ctx, never("close"); }
static void b_caps(void *ctx, ag_caps *out) { (void)ctx, (void)out, never("caps"); }
static ag_status b_create(void *ctx, const ag_group *g, void **grp, ag_msg *msg) {
    (void)ctx, (void)g, (void)grp, (void)msg, never("create");
    return AG_INTERNAL;
}
static void b_destroy(void *grp) { (void)grp, never("destroy"); }
static ag_status b_kv_cache_bytes(void *grp, int32_t n, size_t *bytes, ag_msg *msg) {
    (void)grp, (void)n, (void)bytes, (void)msg, never("kv_cache_bytes");
    return AG_INTERNAL;
}
static ag_status b_write_kv(void *grp, void *k, void *v, int32_t nb, const void *kr,
                            const void *vr, int32_t nt, const int64_t *slots, ag_msg *msg) {
    (void)grp, (void)k, (void)v, (void)nb, (void)kr, (void)vr, (void)nt, (void)slots, (void)msg;
    never("write_kv");
    return AG_INTERNAL;
}
static ag_status b_plan(void *grp, const ag_batch *b, const ag_plan_opts *o, void **plan,
                        ag_plan_info *info, ag_msg *msg) {
    (void)grp, (void)b, (void)o, (void)plan, (void)info, (void)msg, never("plan");
    return AG_INTERNAL;
}
static void b_plan_destroy(void *plan) { (void)plan, never("plan_destroy"); }
static ag_status b_run(void *plan, int32_t l, const ag_run_args *a, ag_msg *msg) {
    (void)plan, (void)l, (void)a, (void)msg, never("run");
    return AG_INTERNAL;
}

static const ag_engine k_whole = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "broken",
    .summary = "a table broken on purpose ($AG_BROKEN)",
    .open = b_open,
    .close = b_close,
    .caps = b_caps,
    .create = b_create,
    .destroy = b_destroy,
    .kv_cache_bytes = b_kv_cache_bytes,
    .write_kv = b_write_kv,
    .plan = b_plan,
    .plan_destroy = b_plan_destroy,
    .run = b_run,
};

/* The layout of version 1's table: the fields up to open, nothing after. */
typedef struct old_engine {
    uint32_t abi_version;
    const char *name;
    const char *summary;
    ag_status (*open)(const char *options, void **ctx, ag_msg *msg);
} old_engine;
static const old_engine k_short = {1, "broken-short", "a version 1 table", b_open};

static const ag_engine k_cut = {
    .abi_version = AG_ENGINE_ABI_VERSION, .name = "broken-cut", .summary = "cut short",
    .open = b_open,
};

static ag_engine g_table;

/* Sets entry `name` of t to NULL; 0, or -1 when there is no such entry. */
static int null_entry(ag_engine *t, const char *name) {
#define NULL_IF(f)                                                                             \
    if (strcmp(name, #f) == 0) {                                                               \
        t->f = NULL;                                                                           \
        return 0;                                                                              \
    }
    NULL_IF(open) NULL_IF(close) NULL_IF(caps) NULL_IF(variants) NULL_IF(create)
    NULL_IF(destroy) NULL_IF(group_info) NULL_IF(kv_cache_bytes) NULL_IF(write_kv) NULL_IF(plan)
    NULL_IF(plan_destroy) NULL_IF(extents) NULL_IF(run) NULL_IF(plan_shape)
    NULL_IF(internal_needs) NULL_IF(paths)
#undef NULL_IF
    return -1;
}

const ag_engine *attnguard_engine(void);
const ag_engine *attnguard_engine(void) {
    const char *b = getenv("AG_BROKEN");
    g_table = k_whole;
    if (!b || !*b) return &g_table;
    if (strncmp(b, "null:", 5) == 0) {
        if (null_entry(&g_table, b + 5) != 0) {
            fprintf(stderr, "broken_adapter: no entry '%s'\n", b + 5);
            abort();
        }
        return &g_table;
    }
    if (strcmp(b, "version") == 0) g_table.abi_version = AG_ENGINE_ABI_VERSION - 1;
    else if (strcmp(b, "future") == 0) g_table.abi_version = AG_ENGINE_ABI_VERSION + 1;
    else if (strcmp(b, "short") == 0) return (const ag_engine *)(const void *)&k_short;
    else if (strcmp(b, "cut") == 0) return &k_cut;
    else if (strcmp(b, "noname") == 0) g_table.name = NULL;
    else if (strcmp(b, "nosummary") == 0) g_table.summary = NULL;
    else if (strcmp(b, "nulltable") == 0) return NULL;
    else {
        fprintf(stderr, "broken_adapter: unknown AG_BROKEN '%s'\n", b);
        abort();
    }
    return &g_table;
}
