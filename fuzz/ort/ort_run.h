/*
 * ort_run.h — owns how fuzz_ort_contract runs a call on ORT (the host room
 * of the target): ORT loaded once, its buffers from the harness's guarded
 * allocator; the buffers we hand it and the values in them
 * (ort_buffers.c); the one-node model, its session (kept across inputs)
 * and the OrtValues of a Run (ort_session.c).  Counters are ort_stats.h's.
 */
#ifndef ATTNGUARD_ORT_RUN_H
#define ATTNGUARD_ORT_RUN_H

#include "../../harness/judge/guard_alloc.h"
#include "ort_case.h"

/* ORT, loaded by ortc_load; the allocator every buffer ORT allocates
 * comes from (registered on its environment), and the bridge that hands
 * it to ORT. */
extern orta_lib *ortc_lib;
extern guard_allocator ortc_galloc;
extern og_bridge ortc_bridge;

/* Loads ORT and sets up the allocator and its bridge; exits the process
 * with a message when it cannot (the target has nothing to fuzz). */
void ortc_load(void);

/* 1 when K would cost more than one input may (bytes mapped, bytes
 * touched by us or by ORT as its contract says, reference work): such an
 * input is not run.  Sets K->product (B x N x S x T). */
int ortc_over_cap(call *K);

/* Maps a guarded buffer for every tensor we hand ORT (exactly its size,
 * against a PROT_NONE page at its end or, with K->c.front, its start;
 * canaries armed) and marks which inputs are read-only while ORT runs;
 * outputs start as NaN.  Returns 0, or -1 when a mapping failed. */
int ortc_place(call *K);

/* Writes K's input values (ours: lengths, masks, q / k / v times their
 * amplitudes, the caches' live rows), drawn from K->c.seed. */
void ortc_fill(call *K);

/* Releases K's OrtValues and unmaps its buffers. */
void ortc_teardown(call *K);

/* The session for K's node, from the cache or made now; NULL when ORT
 * refused the model (counted as a graph or session refusal). */
OrtSession *ortc_session_for(const call *K);

/* Counts ORT's refusal s at `stage` ("run", "graph", "session") under its
 * message, adds one to *counter and releases s. */
void ortc_refusal(const char *stage, OrtStatus *s, unsigned long *counter);

/* OrtValues over K's buffers: the inputs and outputs of the Run, by name
 * (an output ORT allocates: a NULL value to be filled).  Returns ORT's
 * status (NULL: made). */
OrtStatus *ortc_values(call *K, const char **in_names, const OrtValue **in, size_t *nin,
                       const char **out_names, OrtValue **out, size_t *nout);

#endif
