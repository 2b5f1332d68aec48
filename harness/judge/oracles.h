/*
 * oracles.h — the oracles that decide whether the engine behaved on a
 * case (docs/design.md §5), and how a finding is reported: every oracle fires from
 * its own non-inlined function, so crash deduplication by top frames tells
 * them apart, after printing one line
 *     attnguard: ORACLE <name>: <detail>
 */
#ifndef AG_ORACLES_H
#define AG_ORACLES_H

#include "../case/case.h"
#include "compare.h"
#include "../host/engine_host.h"
#include "../case/problem.h"
#include "../case/validity.h"

typedef enum oracle_id {
    ORACLE_NONE = 0,
    ORACLE_SCRATCH_BOUNDS,   /* "scratch-bounds": a write outside the plan's regions */
    ORACLE_SIZING,           /* "sizing": a layer needs more than the plan sized */
    ORACLE_MIXED_HEADS,      /* "mixed-heads": a mixed group was not refused as such */
    ORACLE_DIFFERENTIAL,     /* "differential": output outside tolerance of the reference */
    ORACLE_INVARIANCE,       /* "invariance": split/threads/permutation/bitwise disagree */
    ORACLE_BAD_INPUT,        /* "bad-input": wrong/unlisted status, internal error, false refusal */
    ORACLE_INPUT_BOUNDS,     /* "input-bounds": an access outside an input the engine reads
                                (q, caches, batch arrays, slopes, sinks), or a write to one */
    ORACLE_ENGINE_CHECK,     /* "engine-check": the engine's own invariant check failed at run
                                time (AG_INTERNAL from run), a bug it caught itself */
    ORACLE_HANG,             /* "hang": a run did not finish within the bound for its size
                                (fired by the watchdog, judge/schedule.c) */
    ORACLE_CACHE_WRITE,      /* "cache-write": a cache writer stored other bits than the
                                row's conversion, or touched a slot it was not given */
    ORACLE_EMULATION,        /* "emulation": a variant and its twin (ag_variant.twin, an
                                emulation of the same kernels) disagree bit for bit */
    ORACLE_COUNT
} oracle_id;

const char *oracle_name(oracle_id id);   /* "scratch-bounds", ...; "none" */

typedef struct finding {
    oracle_id oracle;
    char detail[1024];
    char skipped[200];   /* ORACLE_NONE and not empty: the case was not judged, because the
                            engine lacks what it needs (names the capability) */
    char not_run[200];   /* ORACLE_NONE, no skip, and not empty: the first reason a guarded
                            run did not happen or stopped (a resource refusal, an input over
                            the harness's cap): what the case did not get judged on */
    case_key not_run_key;    /* the case key that reason comes from (an input over the cap:
                                the requests), else CASE_KEY_COUNT */
} finding;

/* What check_case runs. */
enum {
    CHECK_PLAN = 1u,        /* builder + plan: mixed-heads, bad-input, sizing (no kernels) */
    CHECK_RUN = 2u,         /* guarded runs of every layer: scratch-bounds, differential */
    CHECK_INVARIANCE = 4u,  /* extra runs: split off/on/fixed, 1 vs N threads, permuted blocks,
                               and a bitwise rerun with other junk in the scratch regions */
    CHECK_EVERY_VARIANT = 8u, /* every variant of the engine as the primary path (else: the
                                 case's options, or one variant chosen by its seed) */
    CHECK_PERTURB = 16u,      /* seeded delays at the engine's synchronisation points
                                 (judge/schedule.c), in runs of more than one thread */
    CHECK_ALL = 15u
};

/* Run the applicable oracles on a case against the harness's current
 * engine (engine_host_current); ORACLE_NONE when the engine behaved (or the
 * case needs what the engine lacks: f->skipped says what), else the first
 * finding (also written to *f).  Never aborts by itself
 * (but a write the guard's PROT_NONE page or ASan catches ends the process
 * after printing the scratch-bounds line).  The bad-input and mixed-heads
 * oracles always run; CHECK_PLAN adds sizing; CHECK_RUN the guarded runs.
 * Inputs are capped at ORACLE_MAX_BYTES: a bigger case is judged on its
 * builder and plan only.  Installs guard_install_fault_handler() once. */
oracle_id check_case(const case_spec *c, unsigned what, finding *f);

/* What the first primary run of check_case saw, for `attnguard check`. */
typedef struct check_layer_report {
    int32_t window_left, window_right;   /* as resolved for the engine */
    int judged;                          /* the differential oracle compared it */
    cmp_result cmp;
    ref_unjudged why;                    /* what its reference left open, and why */
} check_layer_report;

/* The most code-path names one plan's report keeps (ag_engine.paths):
 * every branch an engine's op can take at once (ggml names up to ~16). */
#define CHECK_MAX_PATHS 32

typedef struct check_report {
    char engine[32];
    char kernels[32], detail[96];        /* ag_group_info of that run */
    ag_precision precision;
    size_t scratch_bytes, num_regions;
    int32_t num_layers;
    int32_t group_window_left, group_window_right;   /* the pair all layers share, else -1 */
    int runs;                            /* guarded configurations that ran */
    check_layer_report layers[CASE_MAX_LAYERS];
    /* what the fuzz targets count in their reach table */
    uint32_t variants_run;               /* bit i: the engine's variant i ran as a primary path */
    int32_t refused_create, refused_plan;/* the refusal kind of each stage's answer, -1: none */
    int split_planned;                   /* the case's plan had split-merge regions */
    int regions_described;               /* its plan described its scratch as regions */
    int over_budget;                     /* configurations not run: check_set_run_budget */
    int n_paths;                         /* the engine's names of that plan's code paths */
    char paths[CHECK_MAX_PATHS][40];
} check_report;

/* The fuzz targets' budget: from here on no run happens whose plan
 * declares more than `macs` multiply-adds of the engine's own
 * (ag_plan_info.run_macs), nor with more than 4 threads per online core on
 * an engine that spins at its barriers (AG_CAP_SPIN_WAIT); such a plan
 * gets its plan oracles only and counts in check_report.over_budget.
 * 0 (the default, and `attnguard check`): no budget. */
void check_set_run_budget(uint64_t macs);

/* The work check_case would give the reference and the engine on c (what:
 * CHECK_*) against E, estimated from the case alone, before anything runs:
 * one pass is case_cost(c) multiply-adds for Q.K and as many for P.V; the
 * engine makes one per guarded configuration (its primary variants, their
 * emulated twins, the metamorphic runs: an upper bound), the reference one
 * per rounding model those runs may declare.  Saturates at UINT64_MAX.
 * What an engine computes beyond the case (ag_plan_info.run_macs) is known
 * only from its plan: check_set_work_limit judges that. */
typedef struct check_work {
    uint64_t reference, engine;  /* multiply-adds */
    int runs, models;            /* guarded configurations, reference models counted */
} check_work;
void check_work_estimate(const case_spec *c, const engine_host *E, unsigned what,
                         check_work *w);

/* `attnguard check`'s compute budget (0, the default: none): from here on
 * no run happens whose plan declares more than `macs` multiply-adds of the
 * engine's own (ag_plan_info.run_macs, times the layers), and the finding's
 * not_run says which plan and which limit.  Unlike check_set_run_budget it
 * leaves thread counts alone: the CLI runs the case as written or not. */
void check_set_work_limit(uint64_t macs);

/* check_case, also filling *rep (may be NULL). */
oracle_id check_case_report(const case_spec *c, unsigned what, finding *f, check_report *rep);


/* ---- the pieces check_case is made of, exposed so tests can feed them
 * crafted inputs (a plan built for fewer heads, a perturbed output, a case
 * whose expected status is wrong).  Each returns ORACLE_NONE or the oracle
 * that fired, with the finding in *f (f may not be NULL). ---- */


#define ORACLE_MAX_BYTES ((size_t)256 << 20)   /* input cap check_case gives problem_init */

/* Set f to a finding of oracle id with a printf-style detail (and no skip
 * reason); returns id.  oracle_clean empties f and returns ORACLE_NONE. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
oracle_id oracle_found(finding *f, oracle_id id, const char *fmt, ...);
oracle_id oracle_clean(finding *f);

/* The case file's own `expect` against the model: an expect that no defect
 * deserves is a bad-input finding (the case is wrong). */
oracle_id oracle_check_expect(const case_spec *c, const case_defects *d, finding *f);

/* One stage's answer against the model: `got` and `msg` from the engine's
 * create (stage DEFECT_CREATE) or plan (DEFECT_PLAN).  A refusal is
 * AG_REFUSED or AG_UNSUPPORTED; when the engine names its kind
 * (msg->refusal != AG_R_NONE) that kind must answer one of the stage's
 * defects.  A mixed group judged at create is the mixed-heads oracle
 * (refused as AG_R_MIXED_HEADS or as one of its other group defects, and no
 * handle handed back: handed_out != 0 is a finding); everything else is the
 * bad-input oracle.  A resource refusal (AG_R_RESOURCE) is never a
 * finding; AG_UNSUPPORTED for a valid input is a skip (f->skipped).
 * caps: the engine's AG_CAP_* flags (a defect binds only engines with its
 * `binds` bits). */
oracle_id oracle_check_status(const case_defects *d, defect_stage stage, ag_status got,
                              const ag_msg *msg, uint32_t caps, int handed_out, finding *f);

/* Sizing: the plan's region table is sorted, 8-byte aligned, disjoint and
 * inside the scratchpad; every region of a kind the design sizes fits what
 * the harness derives for each layer (with plan_shape); and for every layer
 * the engine's extents (needs computed without running, when it has the
 * entry point) fit the sized regions. */
oracle_id oracle_check_sizing(const engine_host *E, void *plan, const ag_plan_info *info,
                              const problem *p, finding *f);

/* A layer's reference: the exact outputs and the range each may take
 * under the engine's logit rounding (problem_reference); lo[i] == hi[i]
 * where the element is judged against val[i].  [problem_out_elems] each.
 * rlo, rhi: the ranges under the bf16-rounding model
 * (problem_reference_bf16dot), for runs that round; NULL until
 * oracle_reference_bf16dot computes them. */
typedef struct oracle_ref {
    double *val, *lo, *hi;   /* the exact outputs, and the interval of each */
    ag_precision prec;       /* the rounding model the intervals are for */
    ref_unjudged why;        /* the elements and rows left open, by reason */
} oracle_ref;

/* The reference for layer l of a materialized problem under the rounding
 * model of `prec` (an engine's ag_group_info.precision; all AG_F32: fp32
 * arithmetic) and the limits the engine declares in caps (NULL: an fp32
 * engine's, cmp_engine_model), allocated into r (free with
 * oracle_ref_free); 0 ok, -1 if the reference refused, -2 if r's buffers
 * could not be allocated (r is then empty). */
int oracle_reference(const problem *p, int32_t l, ag_precision prec, const ag_caps *caps,
                     oracle_ref *r);
void oracle_ref_free(oracle_ref *r);

/* Differential: `got` (out_dtype, layer l of p) against the reference
 * within cmp_tolerance of the reference's interval (cmp_compare). */
oracle_id oracle_check_differential(const problem *p, int32_t l, const void *got,
                                    const oracle_ref *ref, cmp_result *stats, finding *f);

/* Invariance: two engine outputs of layer l (out_dtype) agree within twice
 * the dtype tolerance (each is within one tolerance of the truth), or, when
 * bitwise != 0, byte for byte.  Where ref (may be NULL) gives an element a
 * range, two runs may differ inside it, so `other` must only lie within
 * tolerance of the range.  `what` names the variant. */
oracle_id oracle_check_agree(const problem *p, int32_t l, const void *base, const void *other,
                             const oracle_ref *ref, int bitwise, const char *what, finding *f);

/* 1 when an engine's answer says only that the environment's limits were
 * reached (AG_R_RESOURCE: out of memory, or a plan over the engine's own
 * byte budget).  Never a finding. */
int oracle_resource_limit(ag_status st, const ag_msg *msg);

/* Print the finding's line and abort from the oracle's own frame. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void oracle_fire(const finding *f);

#endif /* AG_ORACLES_H */
