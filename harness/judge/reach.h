/*
 * reach.h — the reach table: how many executions of a fuzz target reached
 * each feature of the cases (dtypes, GQA, windows, sinks, ALiBi, soft cap,
 * causality, block layouts, value classes, thread counts, split, invalid
 * inputs) and each path of the engine (its variants, the refusal kinds it
 * answered, the code paths it names through ag_engine.paths).  A row that
 * stays at zero through a long campaign is a blind spot of the generator.
 *
 * Owns: the list of expected rows (reach.c, one table) and the counts of
 * this process; written as JSON for the launcher (scripts/fuzzkit.py),
 * which adds up the targets and prints the table after `make fuzz`.
 */
#ifndef AG_REACH_H
#define AG_REACH_H

#include "../case/case.h"
#include "../host/engine_host.h"
#include "oracles.h"

#include <stdio.h>

/* What the target did with the input besides the case itself. */
enum {
    REACH_RAN = 1u,          /* guarded runs happened (CHECK_RUN) */
    REACH_DEEP = 2u,         /* the deep tier ran (every variant, the metamorphic runs) */
    REACH_PERTURBED = 4u,    /* the engine's synchronisation points were perturbed */
    REACH_PLAN_ONLY = 8u     /* too costly to run: the plan oracles alone */
};

/* Counts one execution: its case, what check_case reported (may be NULL)
 * and the flags above.  Before the first count the rows every engine and
 * every campaign should reach are entered at zero (the engine's variants
 * too), so that a row never reached still shows. */
void reach_count(const case_spec *c, const check_report *rep, const engine_host *E,
                 unsigned flags);

/* For a target that classifies its own calls into an engine's branches
 * (the contract targets): reach_enter puts rows group/names[0 .. n) in at
 * zero (once per process is enough), reach_exec counts one execution and
 * reach_hit one execution that reached group/name. */
void reach_enter(const char *group, const char *const *names, int n);
void reach_exec(void);
void reach_hit(const char *group, const char *name);

/* Adds one judged output (elems elements compared with the reference) and
 * what its reference left open, by reason, to the target's "judged"
 * figures: the fuzz summary's unjudged share.  reach_count adds the
 * layers of its report itself; a target that judges on its own (the
 * contract targets) calls this. */
void reach_judged(size_t elems, const ref_unjudged *why);

/* The counts as one JSON object {"target": ..., "execs": N, "rows":
 * {"group/name": n, ...}, "judged": {...}, "skipped": {"execs": N,
 * "reasons": {"kv dtype q8_0": n, ...}}} (skipped: the executions whose
 * case needs a capability the engine lacks, engine_host_skips) into path (written whole, then renamed into place); 0 or -1.  Does
 * nothing without a path.  reach_flush_every writes at most once per
 * `seconds` (the targets call it per input: an abort loses little). */
int reach_write(const char *path, const char *target);
void reach_flush_every(const char *path, const char *target, double seconds);

#endif /* AG_REACH_H */
