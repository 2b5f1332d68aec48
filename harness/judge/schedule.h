/*
 * schedule.h — the engine's schedule under the harness: seeded delays at
 * the synchronisation points the engine reports (ag_group.sync_hook), so
 * that a missing barrier or a wrong hand-off between threads shows within
 * minutes instead of by luck; and a watchdog that names a run which does
 * not finish within a bound derived from its size (the hang oracle: a
 * split slot whose completion flags overlap its partials hangs rather
 * than crashes).
 */
#ifndef AG_SCHEDULE_H
#define AG_SCHEDULE_H

#include <stdint.h>

/* The perturbation of one run: ctx for sched_perturb_hook. */
typedef struct sched_perturb {
    uint64_t seed;
    uint64_t counter;   /* drawn atomically by the engine's threads */
} sched_perturb;

/* ag_group.sync_hook: at each point, with a probability drawn from the
 * seed, the calling thread yields its core or sleeps up to 200 us. */
void sched_perturb_hook(void *ctx, int32_t site);

/* Arm the watchdog: unless sched_watch_disarm comes first, after `seconds`
 * it prints "attnguard: ORACLE hang: <what> ..." and aborts the process
 * (from its own thread, started on first use).  One run at a time. */
void sched_watch_arm(double seconds, const char *what);
void sched_watch_disarm(void);

/* The watchdog's bound for a run of `macs` multiply-adds on `threads`
 * threads: 2 s + 1 us per multiply-add, at most 20 s, scaled by the
 * threads per online core beyond one. */
double sched_bound_seconds(uint64_t macs, int32_t threads);

/* The bound for a run whose engine declared `macs` multiply-adds of its own
 * (ag_plan_info.run_macs): 2 s and 5 ns per multiply-add (the slowest
 * engine build here, ggml's x64 CPU variant, made ~1.3 G/s), not capped,
 * scaled as above when the engine spins at its barriers (spin != 0). */
double sched_bound_declared(double macs, int32_t threads, int spin);

#endif /* AG_SCHEDULE_H */
