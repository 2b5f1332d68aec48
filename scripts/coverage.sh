#!/usr/bin/env bash
# coverage.sh — the run half of `make coverage` (mk/coverage.mk builds the
# instrumented binaries into $COV_B/bin first).
#
# Replays every fuzz corpus through its instrumented replay driver (once per
# kernel table, via ATTN_ISA), checks the shipped cases with the CLI, runs the
# Criterion suites, merges the raw profiles and writes:
#   $COV_B/html/index.html     llvm-cov show -format=html
#   $COV_B/report.txt          llvm-cov report over src/
#   $COV_B/summary.json        src/ totals (lines, branches, functions, regions)
# A replay that stops on a finding is rerun one input per process, so the
# profiles of the inputs before and after it still count (abort() writes no
# profile); findings are reported but do not fail coverage.
set -euo pipefail

COV_B=${COV_B:-build/coverage}
: "${COV_TARGETS:?COV_TARGETS is not set (run make coverage)}"
: "${COVERAGE_ISAS:?COVERAGE_ISAS is not set (run make coverage)}"
COVERAGE_CORPUS=${COVERAGE_CORPUS:-}
COVERAGE_TESTS=${COVERAGE_TESTS:-1}
sfx=${COV_TOOLS_SUFFIX--14}
profdata=llvm-profdata$sfx
llvmcov=llvm-cov$sfx
bin=$COV_B/bin
raw=$COV_B/raw
t0=$(date +%s)

rm -rf "$raw" "$COV_B/html"
mkdir -p "$raw" "$COV_B/logs"
export LLVM_PROFILE_FILE="$PWD/$raw/%p-%m.profraw"

inputs=0
findings=0

# Kernel tables to try: COVERAGE_ISAS (the probe below keeps those this CPU runs).

# The replay limits are the target's .options ones (attnguard fuzz-flags).
flags_of() {
    LLVM_PROFILE_FILE=/dev/null "$bin/attnguard" fuzz-flags "fuzz/$1.options"
}

replay_dir() {   # target dir isa
    local t=$1 dir=$2 isa=$3 log
    local n flags
    flags=$(flags_of "$t")
    n=$(find "$dir" -maxdepth 1 -type f ! -name '.*' | wc -l)
    [ "$n" -gt 0 ] || return 0
    log=$COV_B/logs/replay_${t}_${isa}_$(echo "$dir" | tr '/' '_').log
    inputs=$((inputs + n))
    # shellcheck disable=SC2086 # one flag per word
    if ATTN_ISA=$isa "$bin/replay_$t" $flags "$dir" >"$log" 2>&1; then
        return 0
    fi
    if grep -q "ATTN_E_BAD_ISA\|unknown isa\|not on this CPU" "$log"; then
        return 0
    fi
    echo "coverage: replay_$t ($isa) stopped on a finding in $dir; rerunning one input per process"
    local f
    while IFS= read -r f; do
        # shellcheck disable=SC2086
        if ! ATTN_ISA=$isa "$bin/replay_$t" $flags "$f" >>"$log.each" 2>&1; then
            findings=$((findings + 1))
            echo "coverage:   finding: $f (log $log.each)"
        fi
    done < <(find "$dir" -maxdepth 1 -type f ! -name '.*' | sort)
}

# Which ISAs does this CPU run?  A replay with an unusable ATTN_ISA fails
# every case immediately; probe with the smallest shipped case instead.
isas=()
cases=(corpus/cases/*.case)
probe=${cases[0]}
for isa in $COVERAGE_ISAS; do
    if ATTN_ISA=$isa LLVM_PROFILE_FILE=/dev/null "$bin/attnguard" check "$probe" >/dev/null 2>&1; then
        isas+=("$isa")
    fi
done
[ ${#isas[@]} -gt 0 ] || isas=("${COVERAGE_ISAS%% *}")   # the portable table comes first
echo "coverage: kernel tables: ${isas[*]}"

for isa in "${isas[@]}"; do
    for t in $COV_TARGETS; do
        for root in corpus $COVERAGE_CORPUS; do
            [ -d "$root/$t" ] && replay_dir "$t" "$root/$t" "$isa"
        done
    done
    ATTN_ISA=$isa "$bin/attnguard" check corpus/cases/*.case >"$COV_B/logs/check_$isa.log" 2>&1 ||
        echo "coverage: attnguard check failed with ATTN_ISA=$isa (see $COV_B/logs/check_$isa.log)"
done
echo "coverage: replayed $inputs inputs (corpora x ${#isas[@]} kernel tables), $findings finding(s)"

if [ "$COVERAGE_TESTS" = 1 ]; then
    for suite in engine harness; do
        t="$bin/${suite}_tests" log="$COV_B/logs/${suite}_tests.log"
        [ -x "$t" ] || continue
        if "$t" --jobs 2 --short-filename >"$log" 2>&1; then
            echo "coverage: Criterion ($suite): $(tail -n 1 "$log")"
        else
            echo "coverage: Criterion $suite suite reported failures: $(tail -n 1 "$log")"
        fi
    done
fi

"$profdata" merge -sparse -o "$COV_B/merged.profdata" "$raw"/*.profraw
objs=(-object "$bin/attnguard")
for b in "$bin"/replay_* "$bin/engine_tests" "$bin/harness_tests"; do
    [ -x "$b" ] && objs+=(-object "$b")
done
first=${objs[1]}
rest=("${objs[@]:2}")
"$llvmcov" show "$first" "${rest[@]}" -instr-profile="$COV_B/merged.profdata" \
    -format=html -output-dir="$COV_B/html" -show-branches=count \
    -project-title=attnguard src/ harness/ fuzz/ >/dev/null
"$llvmcov" report "$first" "${rest[@]}" -instr-profile="$COV_B/merged.profdata" \
    -show-region-summary=false src/ >"$COV_B/report.txt"
"$llvmcov" export "$first" "${rest[@]}" -instr-profile="$COV_B/merged.profdata" \
    -summary-only src/ >"$COV_B/export.json"

python3 - "$COV_B/export.json" "$COV_B/summary.json" "$inputs" "${#isas[@]}" "$COV_B/html/index.html" <<'PY'
import json, sys
src, dst, inputs, nisa, html = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
tot = json.load(open(src))["data"][0]["totals"]
def fig(k):
    t = tot[k]
    return {"covered": t["covered"], "total": t["count"], "percent": round(t["percent"], 2)}
doc = {"scope": "src/", "lines": fig("lines"), "branches": fig("branches"),
       "functions": fig("functions"), "regions": fig("regions"),
       "inputs": inputs, "kernel_tables": nisa, "html": html}
json.dump(doc, open(dst, "w"), indent=1)
print(f"coverage: src/ lines {doc['lines']['percent']}% ({doc['lines']['covered']}/{doc['lines']['total']}), "
      f"branches {doc['branches']['percent']}% ({doc['branches']['covered']}/{doc['branches']['total']}), "
      f"functions {doc['functions']['percent']}%")
PY
echo "coverage: html $COV_B/html/index.html, summary $COV_B/summary.json ($(($(date +%s) - t0)) s)"
