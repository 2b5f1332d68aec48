/*
 * engine_host.h — the harness's side of the adapter ABI: which engine this
 * process drives (chosen once: --engine, $ATTNGUARD_ENGINE, else the first
 * built-in), its capabilities and variants, and whether a case needs a
 * capability the engine lacks (such cases are skipped and counted, never
 * judged).
 */
#ifndef AG_ENGINE_HOST_H
#define AG_ENGINE_HOST_H

#include "../../include/attnguard/engine.h"
#include "../case/case.h"
#include "../case/validity.h"

#define ENGINE_HOST_MAX_VARIANTS 16

typedef struct engine_host {
    const ag_engine *e;
    void *ctx;                      /* from e->open */
    ag_caps caps;
    int n_variants;                 /* >= 1; variants[0] is the default */
    ag_variant variants[ENGINE_HOST_MAX_VARIANTS];
} engine_host;

/* What the defect model knows of the engine: its declarations (the result
 * points into E). */
static inline validity_engine engine_host_validity(const engine_host *E) {
    validity_engine v = {&E->caps, E->variants, E->n_variants};
    return v;
}

/* Open an engine of one's own (the report grid and the benchmarks drive
 * several side by side): a built-in name or an adapter path, with process
 * options (may be NULL).  0, or -1 with a message. */
int engine_host_open(engine_host *h, const char *name, const char *options, char *err,
                     size_t cap);
void engine_host_close(engine_host *h);

/* Choose the process's engine (the one check_case drives) before its first use: a built-in name or a path to an
 * adapter object (ag_engine_find), with its process options (may be NULL).
 * Returns 0, or -1 with a message (no such engine, or open refused: e.g.
 * ggml is not installed, with the command that installs it). */
int engine_host_select(const char *name, const char *options, char *err, size_t cap);
/* Choose an adapter table the caller holds (an embedding program's own, a
 * test's wrapper of another adapter) as the process's engine, opening it
 * now with its process options (may be NULL).  Before any other choice or
 * use; 0, or -1 with a message. */
int engine_host_adopt(const ag_engine *e, const char *options, char *err, size_t cap);
/* The selected engine, opened on first use ($ATTNGUARD_ENGINE and
 * $ATTNGUARD_ENGINE_OPTIONS when none was selected); NULL with a message
 * when it cannot be opened. */
const engine_host *engine_host_current(char *err, size_t cap);

/* 1 when a case needs something the engine does not declare (a dtype,
 * GQA, a window shape, soft cap, ALiBi slopes, sinks, scale, a physical
 * block order, non-causal or mixed-causality batches, fp8 scales, engine
 * options meant for another engine); `why` then names the capability.  0
 * otherwise.  A value past a limit the engine declares is not a missing
 * capability but a defect the engine must refuse (validity.h). */
int engine_host_unsupported(const engine_host *E, const case_spec *c, char *why, size_t cap);
/* The same, also saying which key of the case needs it (*index: the layer
 * for CASE_KEY_LAYER, else -1); key and index may be NULL. */
int engine_host_unsupported_at(const engine_host *E, const case_spec *c, char *why, size_t cap,
                               case_key *key, int32_t *index);

/* Counts of skipped cases by reason, for the summaries of `check` and the
 * fuzz targets: record one, and print "N skipped: reason (k), ..." (nothing
 * when none was skipped).  A reason is counted without the quoted words in
 * it (" 'op=gqa'"): those are the input's, the capability is the rest. */
void engine_host_count_skip(const char *why);
void engine_host_print_skips(FILE *f, const char *prefix);
/* The counts so far: the reasons (why[i], n[i], at most cap of them, the
 * first met first) and the return value their number; *total is every
 * skipped execution, reasons past the table's size included. */
int engine_host_skips(const char **why, long *n, int cap, long *total);

#endif /* AG_ENGINE_HOST_H */
