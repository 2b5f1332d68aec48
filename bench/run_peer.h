/*
 * bench/run_peer.h — `make bench-peer` (run_peer.c): engines side by side
 * on the same rows, round by round, and PyTorch beside them (run_torch.c);
 * the reports are report_peer.c's.
 */
#ifndef AG_BENCH_RUN_PEER_H
#define AG_BENCH_RUN_PEER_H

/* The first engine of the comma-separated list (its default variant, and
 * held to AVX2) against every other in each configuration it offers, and
 * PyTorch when torch_cmd (the command line of bench/peer.py --serve) is
 * not NULL or "", on every row, in turn round by round; writes
 * OUTDIR/bench-peer.{md,json}.  BENCH_PEER_KERNELS, BENCH_PEER_ISA and
 * BENCH_PEER_RACE shape it (mk/bench.mk).  0, or 1 (an engine that does
 * not open, a bad BENCH_PEER_RACE). */
int run_peer(const char *engines, const char *torch_cmd, const char *outdir);

#endif /* AG_BENCH_RUN_PEER_H */
