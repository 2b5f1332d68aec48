/*
 * validity.h — the harness's one model of what makes a case invalid: every
 * defect of a case (bad heads, dims, windows, dtypes, threads, batch,
 * mixed layer head counts, a value past a limit the engine declares, an
 * engine option it does not offer, ...) with the stage of the ABI that
 * must see it and the kind of refusal it deserves (ag_refusal).
 *
 * Written from the contract (docs/design.md, section 2, and the ABI's
 * comments), never from an engine's validation code, so that a validation
 * bug cannot hide in both.  What it knows of the engine under test is what
 * the engine declares through the ABI: its limits (ag_caps) and its option
 * words (ag_variant).  The parser's callers, the problem builder, the
 * bad-input and mixed-heads oracles, the CLI and the tests all ask it.
 */
#ifndef AG_VALIDITY_H
#define AG_VALIDITY_H

#include "case.h"

#define VALIDITY_MAX_DEFECTS 64
#define VALIDITY_KIND_SLOTS 24 /* the list's last places: new (kind, stage, binds) only */

/* Where the engine must notice a defect: create (group) or plan (batch,
 * plan options). */
typedef enum defect_stage { DEFECT_CREATE = 1, DEFECT_PLAN = 2 } defect_stage;

typedef struct case_defect {
    int32_t kind;            /* the ag_refusal this defect deserves */
    int32_t limit;           /* 1: beyond a limit the engine declares (AG_R_LIMIT answers it
                                too) */
    defect_stage stage;
    uint32_t binds;          /* AG_CAP_* bits an engine must declare for this defect to bind
                                it (0: every engine): AG_CAP_SPLIT_KV for a split option, a
                                hint to an engine that does not honour it */
    case_key key;            /* the case key that set the value, for messages */
    int32_t index;           /* its layer for CASE_KEY_LAYER, else -1 */
    char what[72];           /* "layers.1.window = (0, -3)", ... */
} case_defect;

/* A case's defects.  Empty means the case is valid and every stage must
 * succeed.  `mixed` is set when the case's layers disagree on num_heads
 * and the engine does not declare AG_CAP_MIXED_HEADS (listed as
 * AG_R_MIXED_HEADS, stage create).  `unexpressible` is set for
 * cases the harness cannot hand to an engine faithfully (num_layers or
 * num_reqs beyond CASE_MAX_*): nothing is judged then. */
typedef struct case_defects {
    int n;
    case_defect d[VALIDITY_MAX_DEFECTS];
    int mixed;
    int unexpressible;
} case_defects;

/* What the model knows of the engine under test: its declarations.  A
 * NULL caps means an engine that declares no limits; no variants means
 * an engine without option words. */
typedef struct validity_engine {
    const ag_caps *caps;
    const ag_variant *variants;
    int n_variants;
} validity_engine;

/* Every defect of c for engine e (NULL: an engine without limits or
 * option words). */
void validity_defects(const case_spec *c, const validity_engine *e, case_defects *out);

/* 1 when the engine options of c name a key no variant of e uses (words
 * meant for another engine: such a case is skipped, not judged); `why`
 * then names the word.  0 otherwise. */
int validity_foreign_options(const case_spec *c, const validity_engine *e, char *why,
                             size_t cap);

/* 1 if refusal kind `kind` answers some defect whose stage is in
 * stage_mask (DEFECT_CREATE | DEFECT_PLAN). */
int validity_allows(const case_defects *d, unsigned stage_mask, int32_t kind);
/* "{window (layers.0.window = 0), ...}" into buf; "{none: valid}" when empty. */
void validity_format(const case_defects *d, unsigned stage_mask, char *buf, size_t cap);

#endif /* AG_VALIDITY_H */
