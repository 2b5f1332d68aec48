/*
 * oracles.h — the six oracles that decide whether the engine behaved on a
 * case (DESIGN §4), and how a finding is reported: every oracle fires from
 * its own non-inlined function, so crash deduplication by top frames tells
 * them apart, after printing one line
 *     attnguard: ORACLE <name>: <detail>
 */
#ifndef ATTN_ORACLES_H
#define ATTN_ORACLES_H

#include "case.h"

typedef enum oracle_id {
    ORACLE_NONE = 0,
    ORACLE_SCRATCH_BOUNDS,   /* "scratch-bounds": a write outside the plan's regions */
    ORACLE_SIZING,           /* "sizing": a layer needs more than the plan sized */
    ORACLE_MIXED_HEADS,      /* "mixed-heads": a mixed group was not refused as such */
    ORACLE_DIFFERENTIAL,     /* "differential": output outside tolerance of the reference */
    ORACLE_INVARIANCE,       /* "invariance": split/threads/permutation/bitwise disagree */
    ORACLE_BAD_INPUT,        /* "bad-input": wrong/unlisted status, internal error, false refusal */
    ORACLE_COUNT
} oracle_id;

const char *oracle_name(oracle_id id);   /* "scratch-bounds", ...; "none" */

typedef struct finding {
    oracle_id oracle;
    char detail[1024];
} finding;

/* What check_case runs. */
enum {
    CHECK_PLAN = 1u,        /* builder + plan: mixed-heads, bad-input, sizing (no kernels) */
    CHECK_RUN = 2u,         /* guarded runs of every layer: scratch-bounds, differential */
    CHECK_INVARIANCE = 4u,  /* extra runs: split off/on/fixed, 1 vs N threads, permuted blocks, bitwise */
    CHECK_ALL = 7u
};

/* Run the applicable oracles on a case; ORACLE_NONE when the engine behaved,
 * else the first finding (also written to *f).  Never aborts by itself. */
oracle_id check_case(const attn_case *c, unsigned what, finding *f);

/* Print the finding's line and abort from the oracle's own frame. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void oracle_fire(const finding *f);

#endif /* ATTN_ORACLES_H */
