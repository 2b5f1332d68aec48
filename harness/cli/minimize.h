/*
 * minimize.h — `attnguard repro --minimize`: a crashing input shrunk by
 * libFuzzer in the target's own binary, kept only when the same oracle
 * still fires, written as a .case.
 */
#ifndef ATTN_CLI_MINIMIZE_H
#define ATTN_CLI_MINIMIZE_H

#include "repro_options.h"
#include "repro_verdict.h"

#include <stddef.h>

typedef struct repro_min_opts {
    const char *file;   /* the input as the user named it (FILE.min.case by default) */
    const char *out;    /* --out, or NULL */
    long runs;          /* libFuzzer -runs */
    long max_time;      /* libFuzzer -max_total_time, seconds */
} repro_min_opts;

/* Minimise `input` (in_bytes long, already run: its verdict is orig) in
 * workdir; prints what it does.  Returns 1 when a smaller input that fires
 * the same oracle was written (the exit status of a finding), 2 on a setup
 * error. */
int repro_minimize(const char *bin, const repro_flags *fl, const repro_min_opts *o,
                   const char *target, const char *input, size_t in_bytes, const char *workdir,
                   const repro_verdict *orig);
#endif /* ATTN_CLI_MINIMIZE_H */
