#!/usr/bin/env bash
# bench_ab.sh — compare two builds of the benchmark (bench/, build/bin/bench)
# on this shared machine.
#
#   scripts/bench_ab.sh [-p] ROUNDS PART A_BIN B_BIN
#
# PART is a BENCH_ONLY word (decode1, decode8, prefill, laguna, fp8).  Prints,
# per bench row, A's and B's figure (GB/s or GFLOP/s) of every round and B/A.
# (Two engines in one binary are compared by `make bench-peer` instead.)
#
# Why: other tenants move wall-clock figures here by 5-10 % between runs,
# which hides the 1-5 % changes a kernel edit makes (docs/perf-notes.md).
#   default  A and B alternate, each on 2 threads, ROUNDS times: for
#            memory-bound rows (decode), which must not share DRAM.
#   -p       A and B run at the same time, 1 thread each, pinned to
#            different cores, cores swapped every round: both see the same
#            moment of the machine, so their ratio stays within ~2 % where
#            the absolute figures move by 10 %.  For compute-bound rows
#            (prefill); memory-bound rows would share the bandwidth.
# Build B from another worktree or commit (its build/bin/bench); the kernels
# have no compile-time switches to flip (docs/perf-notes.md).
set -euo pipefail

paired=0
if [ "${1:-}" = -p ]; then paired=1; shift; fi
if [ $# -ne 4 ]; then
    echo "usage: $0 [-p] ROUNDS PART A_BIN B_BIN" >&2
    exit 2
fi
rounds=$1 part=$2 a=$3 b=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/a" "$tmp/b" # bench writes its reports there

# "<row name> <figure>" for the rows of one thread count
rows() { awk -v t="$2 thr" 'index($0, t) && / ms / {
    n = index($0, t); name = substr($0, 1, n - 1); gsub(/ +$/, "", name); gsub(/ /, "_", name)
    split(substr($0, n + length(t)), f, " "); print name, f[3] }' "$1"; }

for r in $(seq "$rounds"); do
    if [ "$paired" = 1 ]; then
        ca=$(( (r + 1) % 2 )) cb=$(( r % 2 ))
        BENCH_ONLY=$part BENCH_NO_LIMITS=1 BENCH_THREADS=1 taskset -c "$ca" "$a" "$tmp/a" >"$tmp/a.txt" 2>&1 &
        BENCH_ONLY=$part BENCH_NO_LIMITS=1 BENCH_THREADS=1 taskset -c "$cb" "$b" "$tmp/b" >"$tmp/b.txt" 2>&1 &
        wait
        t=1
    else
        BENCH_ONLY=$part BENCH_NO_LIMITS=1 BENCH_THREADS=2 "$a" "$tmp/a" >"$tmp/a.txt" 2>&1
        BENCH_ONLY=$part BENCH_NO_LIMITS=1 BENCH_THREADS=2 "$b" "$tmp/b" >"$tmp/b.txt" 2>&1
        t=2
    fi
    join <(rows "$tmp/a.txt" $t | sort) <(rows "$tmp/b.txt" $t | sort) >>"$tmp/all"
done
awk '{ a[$1] = a[$1] " " $2; b[$1] = b[$1] " " $3; q[$1] = q[$1] sprintf(" %+.1f%%", ($3 / $2 - 1) * 100) }
     END { for (k in a) printf "%s\n  A:%s\n  B:%s\n  B/A:%s\n", k, a[k], b[k], q[k] }' "$tmp/all"
