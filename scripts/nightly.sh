#!/usr/bin/env bash
# nightly.sh — the nightly job behind `make nightly` (and .github/workflows/nightly.yml).
#
#   1. build: library, CLI, tests, libFuzzer targets (ASan+UBSan)
#   2. fuzz every target with libFuzzer -fork for NIGHTLY_TIME seconds in total,
#      split over the targets by weight (scripts/fuzzkit.py run --keep-going),
#      into build/nightly/fuzz/; then from an empty corpus (discovery: the
#      reach table, every injected bug's time to detect from nothing)
#   3. merge + minimise each corpus with -merge=1 into a fresh directory
#      (build/nightly/corpus/<target>/; fuzzkit.py merge)
#   4. triage every crash artifact (scripts/nightly_triage.py): reproduce N
#      times in fresh processes, minimise, deduplicate by the classifier's
#      kind + top-3 frames, write a .case and an issue-ready issue.md per
#      unique finding under build/nightly/findings/
#   5. the mutant quick mode (make mutants-quick)
#   6. coverage over the merged corpora (make coverage), then the report
#      (make report, with the nightly fuzz summary and findings)
#   7. collect everything worth keeping in build/nightly/artifacts/
#
# Knobs (environment; mk/nightly.mk passes the make variables through):
#   NIGHTLY_TIME=600           fuzzing seconds in total (all targets)
#   NIGHTLY_TARGETS            the targets (make's FUZZ_ALL)
#   NIGHTLY_WEIGHTS            time share per target (make's FUZZ_WEIGHTS)
#   NIGHTLY_FORK=2             libFuzzer -fork workers per target
#   NIGHTLY_REPRO=3            fresh-process reruns per crash artifact
#   NIGHTLY_MIN_TIME=60        seconds of -minimize_crash per unique finding
#   NIGHTLY_MUTANTS=1 NIGHTLY_COVERAGE=1 NIGHTLY_REPORT=1   0 skips a step
#   NIGHTLY_DISCOVERY=1        the empty-corpus session (NIGHTLY_DISCOVERY_TIME=600 s;
#                              its reach table must have no zero row) and every
#                              injected bug from an empty corpus
#                              (NIGHTLY_DISCOVERY_MUTANT_TIME=120 s per bug)
#   NIGHTLY_INJECT=<bug>       fuzz a mutant build instead (to rehearse triage)
#   NIGHTLY_ENGINE=<name>      the engine the targets drive (ATTNGUARD_ENGINE)
#   NIGHTLY_SEED_CORPUS=DIR    extra read-only seeds: DIR/<target>/ (the corpus
#                              ClusterFuzzLite keeps in its storage repository)
#   CLI                        the attnguard CLI (classifier, options reader)
#
# Exit status: 0 clean night; 1 a unique finding, a failing grid cell or a
# failed step (everything is still collected); 2 build failure.

# The step functions run through `step NAME fn`, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -euo pipefail

NIGHTLY_TIME=${NIGHTLY_TIME:-600}
: "${NIGHTLY_TARGETS:?NIGHTLY_TARGETS is not set (run make nightly)}"
NIGHTLY_WEIGHTS=${NIGHTLY_WEIGHTS:-}
NIGHTLY_FORK=${NIGHTLY_FORK:-2}
NIGHTLY_REPRO=${NIGHTLY_REPRO:-3}
NIGHTLY_MIN_TIME=${NIGHTLY_MIN_TIME:-60}
NIGHTLY_MUTANTS=${NIGHTLY_MUTANTS:-1}
NIGHTLY_COVERAGE=${NIGHTLY_COVERAGE:-1}
NIGHTLY_REPORT=${NIGHTLY_REPORT:-1}
NIGHTLY_DISCOVERY=${NIGHTLY_DISCOVERY:-1}
NIGHTLY_DISCOVERY_TIME=${NIGHTLY_DISCOVERY_TIME:-600}
NIGHTLY_DISCOVERY_MUTANT_TIME=${NIGHTLY_DISCOVERY_MUTANT_TIME:-120}
NIGHTLY_INJECT=${NIGHTLY_INJECT:-}
NIGHTLY_ENGINE=${NIGHTLY_ENGINE:-}
NIGHTLY_SEED_CORPUS=${NIGHTLY_SEED_CORPUS:-}
MAKE=${MAKE:-make}
export ATTNGUARD_CLI=${CLI:-build/attnguard}

N=build/nightly
BIN=build/fuzz${NIGHTLY_INJECT:+-inject-$NIGHTLY_INJECT}
fuzzkit=(python3 scripts/fuzzkit.py)
common=(--targets "$NIGHTLY_TARGETS" --bin-dir "$BIN" ${NIGHTLY_ENGINE:+--engine "$NIGHTLY_ENGINE"})
seeds=()
[ -n "$NIGHTLY_SEED_CORPUS" ] && seeds=(--seeds "$NIGHTLY_SEED_CORPUS")
# the engine's own libFuzzer flags (mk/engines.mk's <e>_FUZZ_FLAGS), for the runs
runflags=()
[ -n "${NIGHTLY_FLAGS:-}" ] && runflags=(--flags="$NIGHTLY_FLAGS")   # = : a value that starts with a dash
t_start=$(date +%s)
declare -A step_rc=()

say() { printf 'nightly: %s\n' "$*"; }
step() {   # name command...: run, remember the status, never stop the night
    local name=$1 rc=0
    shift
    local t0
    t0=$(date +%s)
    say "== $name"
    "$@" || rc=$?
    step_rc[$name]=$rc
    say "== $name: exit $rc ($(($(date +%s) - t0)) s)"
}

rm -rf "$N"
mkdir -p "$N/logs" "$N/artifacts"

# ------------------------------------------------------------------ 1 build
say "== build"
if ! $MAKE --no-print-directory all >"$N/logs/build.log" 2>&1 ||
    ! $MAKE --no-print-directory fuzz-build ${NIGHTLY_INJECT:+INJECT=$NIGHTLY_INJECT} \
        >>"$N/logs/build.log" 2>&1; then
    tail -n 40 "$N/logs/build.log"
    say "build failed (log $N/logs/build.log)"
    exit 2
fi
say "== build: ok ($(($(date +%s) - t_start)) s)"

# ------------------------------------------------------------------- 2 fuzz
# One lane, -fork workers per target: both cores on one target at a time.
fuzz_t0=$(date +%s)
step fuzz "${fuzzkit[@]}" run "${common[@]}" --time "$NIGHTLY_TIME" --jobs 1 \
    --fork "$NIGHTLY_FORK" --keep-going --weights "$NIGHTLY_WEIGHTS" --root "$N/fuzz" \
    ${NIGHTLY_INJECT:+--inject "$NIGHTLY_INJECT"} "${seeds[@]}" "${runflags[@]}"
fuzz_wall=$(($(date +%s) - fuzz_t0))

# ------------------------------------------------------- 2b discovery
# What the fuzzer finds and reaches from nothing: a session from an empty
# corpus (both cores), whose reach table must have no row at zero (a row
# never reached is a blind spot of the generator), and every injected bug
# fuzzed from an empty corpus (one seed each).  Both are published.
if [ "$NIGHTLY_DISCOVERY" = 1 ]; then
    step discovery "${fuzzkit[@]}" run "${common[@]}" --time "$NIGHTLY_DISCOVERY_TIME" \
        --jobs 2 --keep-going --root "$N/discovery" --empty "${runflags[@]}"
    step reach python3 scripts/reach_gate.py "$N/discovery/summary.json"
    step mutants-empty bash -c "ATTNGUARD_CLI='$ATTNGUARD_CLI' python3 scripts/mutants.py \
        --modes empty --seeds 1 --time $NIGHTLY_DISCOVERY_MUTANT_TIME --no-normal \
        ${NIGHTLY_ENGINE:+--engine $NIGHTLY_ENGINE} --out build/mutants-empty \
        >'$N/logs/mutants-empty.log' 2>&1"
    grep -E 'detected|not found' "$N/logs/mutants-empty.log" | tail -n 3 | sed 's/^/nightly:   /' || true
fi

# ------------------------------------------------------------------ 3 merge
merge_from=(--from corpus --from "$N/fuzz/corpus")
[ -n "$NIGHTLY_SEED_CORPUS" ] && merge_from+=(--from "$NIGHTLY_SEED_CORPUS")
step merge "${fuzzkit[@]}" merge "${common[@]}" --into "$N/corpus" "${merge_from[@]}" \
    --log-dir "$N/logs"

# ----------------------------------------------------------------- 4 triage
step triage python3 scripts/nightly_triage.py --nightly "$N" --bin-dir "$BIN" \
    --targets "$NIGHTLY_TARGETS" --repro "$NIGHTLY_REPRO" --min-time "$NIGHTLY_MIN_TIME" \
    ${NIGHTLY_INJECT:+--inject "$NIGHTLY_INJECT"}

# ------------------------------------------------------- 5 mutants, 6 report
if [ "$NIGHTLY_MUTANTS" = 1 ]; then
    step mutants-quick bash -c "$MAKE --no-print-directory mutants-quick >'$N/logs/mutants-quick.log' 2>&1"
    tail -n 5 "$N/logs/mutants-quick.log" | sed 's/^/nightly:   /' || true
fi
if [ "$NIGHTLY_COVERAGE" = 1 ]; then
    step coverage bash -c "$MAKE --no-print-directory coverage COVERAGE_CORPUS='$N/corpus' \
        >'$N/logs/coverage.log' 2>&1"
    grep '^coverage: src/' "$N/logs/coverage.log" | sed 's/^/nightly:   /' || true
fi
if [ "$NIGHTLY_REPORT" = 1 ]; then
    step report bash -c "$MAKE --no-print-directory report \
        REPORT_RENDER_ARGS='--fuzz $N/fuzz-summary.json --nightly $N/findings/findings.json' \
        >'$N/logs/report.log' 2>&1"
    grep -E '^(render|report_grid): .*(cells|->)' "$N/logs/report.log" | tail -n 2 |
        sed 's/^/nightly:   /' || true
fi

# ---------------------------------------------------------------- 7 collect
A=$N/artifacts
cp -r "$N/findings" "$A/" 2>/dev/null || true
cp -r "$N/fuzz/artifacts" "$A/crashes" 2>/dev/null || true
cp "$N/fuzz-summary.json" "$A/" 2>/dev/null || true
cp -r "$N/logs" "$A/" 2>/dev/null || true
cp -r "$N/fuzz/logs" "$A/logs/fuzz" 2>/dev/null || true
[ -d "$N/corpus" ] && tar -czf "$A/corpus-merged.tar.gz" -C "$N" corpus
cp "$N/discovery/summary.json" "$A/discovery-summary.json" 2>/dev/null || true
for f in build/mutants-quick.json build/mutants-quick.md build/mutants-empty.json \
    build/mutants-empty.md build/coverage/summary.json build/coverage/report.txt; do
    [ -f "$f" ] && cp "$f" "$A/$(echo "$f" | sed 's|^build/||; s|/|-|g')"
done
[ -d build/report ] && cp -r build/report "$A/report"

unique=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['findings']))" \
    "$N/findings/findings.json" 2>/dev/null || echo "?")
{
    printf '{\n  "date": "%s",\n  "fuzz_time": %s,\n  "fuzz_wall_s": %s,\n  "unique_findings": "%s",\n  "steps": {' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NIGHTLY_TIME" "$fuzz_wall" "$unique"
    sep=
    for k in "${!step_rc[@]}"; do printf '%s"%s": %s' "$sep" "$k" "${step_rc[$k]}"; sep=', '; done
    printf '},\n  "wall_s": %s\n}\n' "$(($(date +%s) - t_start))"
} >"$A/status.json"

say "done in $(($(date +%s) - t_start)) s: unique findings: $unique; steps:$(for k in "${!step_rc[@]}"; do printf ' %s=%s' "$k" "${step_rc[$k]}"; done)"
say "artifacts: $A/"
rc=0
[ "$unique" = 0 ] || rc=1
for k in "${!step_rc[@]}"; do [ "${step_rc[$k]}" = 0 ] || rc=1; done
exit $rc
