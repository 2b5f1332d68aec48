/*
 * validity.h — the harness's one model of what makes a case invalid: every
 * defect of a case (bad heads, dims, windows, dtypes, threads, batch,
 * mixed layer head counts, ...) with the API stage that must see it and the
 * status it deserves.  Written from the contract (docs/design.md), not
 * from any engine's validation code; the parser, the problem builder, the
 * bad-input and mixed-heads oracles and the tests all ask it.
 */
#ifndef AG_VALIDITY_H
#define AG_VALIDITY_H

#include "case.h"

#define ORACLE_MAX_DEFECTS 64
#define ORACLE_KIND_SLOTS 24 /* the list's last places: new (status, stage, binds) only */

/* Where the engine must notice a defect: create (group) or plan (batch,
 * plan options). */
typedef enum defect_stage { DEFECT_CREATE = 1, DEFECT_BUILD = 2 } defect_stage;

typedef struct case_defect {
    attn_status status;      /* the status this defect deserves */
    defect_stage stage;
    uint32_t binds;          /* AG_CAP_* bits an engine must declare for this defect to bind
                                it (0: every engine).  AG_CAP_ATTN_CODES: beyond attnguard's
                                own ATTN_MAX_* limits, which another engine may accept and
                                compute; AG_CAP_SPLIT_KV: a split option, a hint to an
                                engine that does not honour it */
    char what[64];           /* "layers.1.window = 0", ... */
} case_defect;

/* The independent model of a case's defects (bad-input oracle).  Empty
 * means the case is valid and every stage must return ATTN_OK.  `mixed` is
 * set when the case's layers disagree on num_heads (listed as
 * ATTN_E_MIXED_HEADS, stage create).  `unexpressible` is set for cases the
 * harness cannot hand to the engine faithfully (num_layers or num_reqs
 * beyond CASE_MAX_*): check_case then judges nothing. */
typedef struct case_defects {
    int n;
    case_defect d[ORACLE_MAX_DEFECTS];
    int mixed;
    int unexpressible;
} case_defects;

void oracle_case_defects(const case_spec *c, case_defects *out);

/* 1 if `st` is listed for a defect whose stage is in stage_mask (1|2). */
int oracle_defects_allow(const case_defects *d, unsigned stage_mask, attn_status st);
/* "{ATTN_E_BAD_WINDOW (layers.0.window = 0), ...}" into buf. */
void oracle_defects_format(const case_defects *d, unsigned stage_mask, char *buf, size_t cap);

#endif /* AG_VALIDITY_H */
