/*
 * novelty.h — whether the input that just ran reached coverage no earlier
 * input of this process did, read from the coverage counters libFuzzer
 * keeps (the section the linker names __sancov_cntrs; libFuzzer clears
 * the counters before each input).  The fuzz targets give such an input
 * their deep tier: it is likely to join the corpus.
 *
 * This file is compiled without coverage instrumentation (every harness
 * file is, in the fuzz build): a translation unit that declares the
 * section's bounds itself must not also carry counters of its own.
 */
#ifndef AG_NOVELTY_H
#define AG_NOVELTY_H

/* 1 when a counter that no earlier input of this process touched is set:
 * an edge reached for the first time (hit-count buckets, libFuzzer's other
 * features, do not count: early in a session nearly every input adds one,
 * and each would pay the deep tier); 0 otherwise, and always 0 in a build
 * without counters (a crash file rerun alone then takes the deep tier by
 * its other rules). */
int novelty_new_coverage(void);

#endif /* AG_NOVELTY_H */
