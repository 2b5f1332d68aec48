/*
 * repro_verdict.h — what a fuzz target's log says happened: which oracle
 * fired (or which sanitizer / libFuzzer error), with the lines a reader needs.
 * Used by `attnguard repro` (repro.c) to name the finding of a rerun.
 */
#ifndef ATTN_REPRO_VERDICT_H
#define ATTN_REPRO_VERDICT_H

typedef struct repro_verdict {
    char kind[64];        /* "sizing", "asan:use-after-poison", "timeout"; "" = passes */
    int from_oracle;      /* kind came from an `attnguard: ORACLE` line */
    char detail[768];     /* the oracle's detail text */
    char access[256];     /* ASan's "WRITE of size 4 at ..." line */
    char error[256];      /* the sanitizer/libFuzzer ERROR line */
    char summary[256];    /* the SUMMARY line */
    int status;           /* the child's exit status */
} repro_verdict;

/* Read a child's combined output and exit status into *v. */
void repro_parse_log(const char *text, int status, repro_verdict *v);
/* Print the `repro: ORACLE <name>` verdict (or `no finding`) and its details. */
void repro_print_verdict(const repro_verdict *v);

#endif /* ATTN_REPRO_VERDICT_H */
