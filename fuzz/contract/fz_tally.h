/*
 * fz_tally.h — owns the contract targets' counted messages: the refusals,
 * aborts and reasons a run did not judge, each line counted under a key,
 * printed at exit.  Shared by fuzz_ggml_contract and fuzz_ort_contract.
 */
#ifndef ATTNGUARD_FZ_TALLY_H
#define ATTNGUARD_FZ_TALLY_H

#define FZ_TALLY_LINES 24     /* distinct keys kept; later ones are dropped */
#define FZ_TALLY_KEY 160      /* bytes of a key, its terminator included */

typedef struct fz_tally {
    char key[FZ_TALLY_LINES][FZ_TALLY_KEY];
    unsigned long n[FZ_TALLY_LINES];
    int used;
} fz_tally;

/* Counts text under a key of at most 111 characters with every run of
 * digits folded to one '#' and newlines made spaces, so "got 3" and
 * "got 17" are one line (ORT's messages, which quote the values). */
void fz_tally_folded(fz_tally *t, const char *text);

/* Counts text as it is, up to FZ_TALLY_KEY - 1 characters (ggml's abort
 * messages, whose file:line tells the asserts apart). */
void fz_tally_exact(fz_tally *t, const char *text);

/* Prints "  <title>:" (when t has lines) and one "  <count> x <key>" line
 * per key, in first-seen order, to stderr; title NULL: the lines only. */
void fz_tally_print(const char *title, const fz_tally *t);

#endif
