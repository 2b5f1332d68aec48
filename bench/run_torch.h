/*
 * bench/run_torch.h — PyTorch as a peer of `make bench-peer`, timed in
 * the same rounds as the engines: a child process (bench/peer.py --serve)
 * that prepares one row at a time and runs each of its formulations once
 * per round when asked (the protocol: peer.py's top comment).  While the
 * child runs, this process waits on the pipe, and the other way round, so
 * the two never compete for the cores.
 */
#ifndef AG_BENCH_RUN_TORCH_H
#define AG_BENCH_RUN_TORCH_H

#include "util_rows.h"

#include <stddef.h>

/* TORCH_MAX_FORMS, the formulations a row holds: util_rows.h */
#define TORCH_FORM_LEN 64

typedef struct torch_peer torch_peer;

/* Start `cmd` (a shell command line) and read its greeting; info gets
 * "torch <version>, <function>".  NULL (info: why) when it does not start. */
torch_peer *torch_peer_start(const char *cmd, char *info, size_t cap);
void torch_peer_stop(torch_peer *t);

/* Prepare row r (threads); returns the formulations' count, their names
 * in form[], or 0 with why (skipped: PyTorch cannot run the row here), or
 * -1 when the child is gone. */
int torch_peer_row(torch_peer *t, const row_spec *r, int threads, char form[][TORCH_FORM_LEN],
                   char *why, size_t cap);
/* Round it of the prepared row: each formulation's seconds (NaN: failed);
 * lead: each timed call right after an untimed one (row_race's settle). */
int torch_peer_round(torch_peer *t, int it, int lead, double *sec, int n);
/* The check of the prepared row: abs[i], rel[i] per formulation. */
int torch_peer_check(torch_peer *t, double *abs_err, double *rel_err, int n);
/* Free the row's memory in the child. */
void torch_peer_done(torch_peer *t);

#endif /* AG_BENCH_RUN_TORCH_H */
