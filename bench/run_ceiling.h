/*
 * bench/run_ceiling.h — the ceiling each row of `make bench` is judged
 * against, measured in the same run: the lowest of what the machine
 * allows that row (issue 60).  A decode row's candidates, in GB/s of the
 * K and V bytes it must read: the DRAM read (cold) or the read of its own
 * footprint again and again (hot), the walk of its own paged layout, that
 * walk with the row's arithmetic per line (its widening and its FMAs), and
 * the compute peak of the instructions it may use.  A prefill row's: the
 * compute peak of its path, in GFLOP/s.  The Laguna batch's: its
 * roofline.  The loops are bench/util_limits*.c's.
 */
#ifndef AG_BENCH_RUN_CEILING_H
#define AG_BENCH_RUN_CEILING_H

#include "report_bench.h"

/* Fill b->ceil at the start of the run: every candidate of b's row and
 * thread count from L (the start-of-run limits) and its own loops, and
 * which is the lowest.  Identical loops of two rows are measured once.
 * Needs b->spec and b->threads; L measured (else b->ceil.n stays 0). */
void ceiling_measure(bench_row *b, const bench_limits *L);

/* Every candidate of b measured again now (right before or after its
 * row): each keeps the better of these measurements (the start-of-run
 * figure only until the first), and the lowest binds. */
void ceiling_again(bench_row *b, const bench_limits *L);

#endif /* AG_BENCH_RUN_CEILING_H */
