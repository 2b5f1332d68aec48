/*
 * bench/main_bench.c — the benchmark's entry point: the command line, and
 * the two commands it hands to their runners (`make bench`: run_bench.c;
 * `make bench-peer`: run_peer.c).  The bench's files go in layers, each
 * calling only downwards (scripts/check_layers.py): main_* (this, and
 * main_probe.c for `make probe`), run_* (running rows, judging them
 * against the limits), report_* (bench.md, bench.json, bench-peer.*),
 * util_* (the rows, the machine's limits, clocks and memory).
 *
 *   bench [--engine NAME] OUTDIR
 *       `make bench`: this machine's limits, then one engine (attnguard by
 *       default) on every row against them, in one run; writes
 *       OUTDIR/bench.md and OUTDIR/bench.json.
 *   bench --peer [--engines a,b,...] OUTDIR
 *       `make bench-peer`: attnguard and every peer given ($BENCH_ENGINES)
 *       in each of its configurations, and PyTorch (--torch CMD), on the
 *       same rows, timed round by round in turn in the same run, each
 *       output checked against the fp64 reference; each row names every
 *       peer's fastest correct configuration and attnguard's verdict
 *       against the best; writes OUTDIR/bench-peer.md and .json.
 *
 * What each row's figures mean: run_judge.c.
 *
 * Narrowing (environment): BENCH_ONLY=word[,word] (decode1, decode8,
 * prefill, laguna, fp8; a word takes every part it begins: decode takes
 * decode1 and decode8), BENCH_DTYPE (f32, f16, bf16, fp8e4m3, fp8e5m2:
 * the decode and prefill rows of one KV dtype), BENCH_HKV (32, 8: the
 * prefill rows), BENCH_THREADS=1, BENCH_NO_LIMITS=1 (skips the limits),
 * BENCH_READ_PF=bytes (the DRAM read loop's prefetch distance, 1024).
 * Reports are written from what ran.
 */
#include "run_bench.h"
#include "run_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fputs("usage: bench [--engine NAME] OUTDIR            limits + one engine -> bench.{md,json}\n"
          "       bench --peer [--engines a,b] [--torch CMD] OUTDIR\n"
          "                                               the first engine against the others "
          "at their best,\n"
          "                                               and PyTorch (CMD: bench/peer.py "
          "--serve) -> bench-peer.{md,json}\n"
          "(engines: built-in names or adapter paths; --engines defaults to $BENCH_ENGINES, "
          "else attnguard)\n",
          stderr);
}

int main(int argc, char **argv) {
    const char *outdir = NULL, *engine = "attnguard", *torch = NULL;
    const char *engines = getenv("BENCH_ENGINES");
    int peer = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--peer") == 0) peer = 1;
        else if (strcmp(argv[i], "--engine") == 0 && i + 1 < argc) engine = argv[++i];
        else if (strcmp(argv[i], "--engines") == 0 && i + 1 < argc) engines = argv[++i];
        else if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc) torch = argv[++i];
        else if (argv[i][0] != '-' && !outdir) outdir = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!outdir) outdir = "reports";
    const char *isa = getenv("ATTN_ISA");
    if (isa && strchr(isa, '@')) {
        /* an emulated table runs the AVX-512 kernels over SIMDe: correct,
         * and no measure of anything a user would run */
        fprintf(stderr, "bench: ATTN_ISA=%s is an emulated kernel table (mk/isa.mk, EMU_TABLES); "
                        "it is for tests and fuzzing and is never timed\n", isa);
        return 2;
    }
    return peer ? run_peer(engines && *engines ? engines : "attnguard", torch, outdir)
                : run_bench(engine, outdir);
}
