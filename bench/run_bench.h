/*
 * bench/run_bench.h — `make bench`: this machine's limits (util_limits.c),
 * then one engine on every row the environment keeps (run_rows.h), each
 * row's figures against the limits and its target's verdict (run_judge.c),
 * the fp8 rounds (run_fp8.c), and the reports (report_bench.c).
 */
#ifndef AG_BENCH_RUN_BENCH_H
#define AG_BENCH_RUN_BENCH_H

/* Engine `engine` (a built-in name or an adapter path) in its default
 * variant; writes OUTDIR/bench.md and OUTDIR/bench.json.  0, or 1 when the
 * engine does not open, the limits cannot be measured or the reports
 * cannot be written (said on stderr). */
int run_bench(const char *engine, const char *outdir);

#endif /* AG_BENCH_RUN_BENCH_H */
