/*
 * fz_reach.h — owns a contract target's rows in the reach table
 * (harness/judge/reach.c): the engine's branches each input's calls took,
 * counted per input and written out while the target runs.  Shared by
 * fuzz_ggml_contract and fuzz_ort_contract.
 */
#ifndef ATTNGUARD_FZ_REACH_H
#define ATTNGUARD_FZ_REACH_H

/* Counts one hit of group/names[i] for every i < n with on[i] set (the
 * branches this input reached, each once however many calls took it),
 * then writes the table to $ATTNGUARD_REACH under `target` at most every
 * two seconds (reach_flush_every; nothing without the variable). */
void fz_reach_flush(const char *target, const char *group, const char *const *names,
                    const int *on, int n);

#endif
