/*
 * repro_verdict.h — what a fuzz target's log says happened: which oracle
 * fired (or which sanitizer / libFuzzer error), with the lines a reader
 * needs and the top frames that tell two crashes apart.  The project's one
 * crash classifier: `attnguard repro` (repro.c) names a rerun's finding with
 * it, and `attnguard classify` hands the same verdict as JSON lines to the
 * scripts (the fuzz launcher's summary, the mutant campaign, nightly triage).
 */
#ifndef ATTN_REPRO_VERDICT_H
#define ATTN_REPRO_VERDICT_H

#include <stdio.h>

#define REPRO_VERDICT_FRAMES 3   /* frames in the deduplication key */

typedef struct repro_verdict {
    char kind[64];        /* "sizing", "asan:use-after-poison", "timeout"; "" = passes */
    int from_oracle;      /* kind came from an `attnguard: ORACLE` line */
    char detail[768];     /* the oracle's detail text */
    char access[256];     /* ASan's "WRITE of size 4 at ..." line */
    char error[256];      /* the sanitizer/libFuzzer ERROR line */
    char summary[256];    /* the SUMMARY line */
    int status;           /* the child's exit status */
    int nframes;          /* frames[0..nframes) */
    char frames[REPRO_VERDICT_FRAMES][160];  /* "fn@file.c:12", plumbing skipped */
} repro_verdict;

/* Read a child's combined output and exit status into *v. */
void repro_parse_log(const char *text, int status, repro_verdict *v);
/* Print the `repro: ORACLE <name>` verdict (or `no finding`) and its details. */
void repro_print_verdict(const repro_verdict *v);
/* One JSON object on one line: {"file", "kind", "oracle", "status", "detail",
 * "error", "access", "summary", "frames"}; status is null when unknown. */
void repro_verdict_json(FILE *f, const char *file, const repro_verdict *v, int status_known);

/* `attnguard classify [--status N] LOG...`: one JSON line per log (see
 * repro_verdict_json); kind "" means no finding.  --status gives the exit
 * status of the run that wrote the logs (a non-zero status without any
 * report reads as "failure(exit N)").  A log that cannot be read gets
 * {"file", "read_error"} and the exit status 1; 2 is a usage error. */
int cli_classify(int argc, char **argv);

#endif /* ATTN_REPRO_VERDICT_H */
