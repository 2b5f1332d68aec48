/*
 * bench/run_rows.h — running the rows, for both commands (`make bench`:
 * run_bench.c and run_fp8.c; `make bench-peer`: run_peer.c): which rows
 * the environment keeps (BENCH_ONLY, BENCH_DTYPE, BENCH_HKV,
 * BENCH_THREADS) and how often each is timed, opening an engine, and one
 * row run through one or more configurations of engines by the adapter
 * ABI (harness/host/session.h): its inputs (run_inputs.c), sessions on
 * huge pages (one per cold rotation, shared by the configurations of one
 * engine), untimed passes, timed runs interleaved configuration by
 * configuration round by round, and a check of every configuration's
 * output against the fp64 reference on sampled query rows (run_rows.c).
 */
#ifndef AG_BENCH_RUN_ROWS_H
#define AG_BENCH_RUN_ROWS_H

#include "util_rows.h"

#define BENCH_MAX_RESULTS 128   /* rows (x thread counts) one run measures */

int bench_skip_row(const row_spec *r);      /* 1: the environment leaves row r out */
int bench_threads_max(void);                /* 2, or 1 with BENCH_THREADS=1 */
int bench_row_reps(const row_spec *r);      /* timed batches of row r */
/* engine_host_open, printing why it failed; 0 or -1. */
int bench_open_engine(engine_host *h, const char *name);

/* A peer timed outside the adapter ABI in the same rounds (bench-peer's
 * PyTorch): called at the end of every round, it 0 being the warm-up. */
typedef struct row_extra {
    void *ctx;
    void (*round)(void *ctx, int it);
} row_extra;

/* A race among the configurations of a row (bench-peer: a peer's
 * configuration whose place is settled need not be timed to the end).
 * Every configuration is checked once before it is timed (on a hot row
 * that run is its warm-up); a configuration c with pool[c] >= 0 stops
 *   - after any of the first `after` timed rounds when in each round so
 *     far it took more than `far` times configuration ref[c] (>= 0: the
 *     judged one it is compared with; how far behind it is, is settled),
 *   - after `after` timed rounds when its check was wrong (relative error
 *     beyond `bound`, NaN, unwritten), or when keep[c] is 0 and in each
 *     of those rounds it took more than `margin` times the fastest right
 *     configuration of its pool (it cannot be its engine's fastest).
 * One whose check run took more than 2 far times ref[c]'s stops before
 * any round.  Stopped configurations keep the rounds they ran
 * (res.stopped, res.rounds) and the check's errors.
 *
 * settle_ms (> 0, and threads > 1): before each timed run this thread
 * waits that long, busy, so that the workers of the engine that ran before
 * stop spinning (libgomp's, ONNX Runtime's, PyTorch's spin for
 * milliseconds after a run and took one of the 2 cores), and the
 * configuration runs once untimed on the previous rotation, so that its
 * own workers are awake: each is timed as a serving loop runs it, warm
 * and alone.  The extra peer's round is preceded by the same pause. */
typedef struct row_race {
    int after;
    double margin, far, bound;
    const int *pool, *keep, *ref;
    int settle_ms;
} row_race;

/* Run row r on n configurations C[0..n) with `threads` threads and q/out
 * dtype io: reps (at most ROW_MAX_ROUNDS) timed batches per configuration
 * after one untimed pass over every rotation and one warm-up round,
 * configuration after configuration within each round, then `extra` (may
 * be NULL): a phase of the machine touches every one alike; `race` (may
 * be NULL) leaves out those that cannot win.  A
 * configuration that cannot express the row is skipped (res[e].why).  0,
 * or -1 when the row's own inputs cannot be built (out of memory:
 * res[0].why). */
int row_run(const row_spec *r, const row_config *C, int n, int threads, int reps, ag_dtype io,
            row_result *res, const row_extra *extra, const row_race *race);

#endif /* AG_BENCH_RUN_ROWS_H */
