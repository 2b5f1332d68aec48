#!/usr/bin/env bash
# nightly.sh — the nightly job behind `make nightly` (and .github/workflows/nightly.yml).
#
#   1. build: library, CLI, tests, libFuzzer targets (ASan+UBSan)
#   2. fuzz every target with libFuzzer -fork for NIGHTLY_TIME seconds in total,
#      split over the targets by weight, into work corpora under build/nightly/
#   3. merge + minimise each corpus with -merge=1 into a fresh directory
#      (build/nightly/corpus/<target>/)
#   4. triage every crash artifact (scripts/nightly_triage.py): reproduce N
#      times in fresh processes, minimise, deduplicate by oracle + top-3
#      frames, write a .case and an issue-ready issue.md per unique finding
#      under build/nightly/findings/
#   5. the mutant quick mode (make mutants-quick)
#   6. coverage over the merged corpora (make coverage), then the report
#      (make report, with the nightly fuzz summary and findings)
#   7. collect everything worth keeping in build/nightly/artifacts/
#
# Knobs (environment; mk/nightly.mk passes the make variables through):
#   NIGHTLY_TIME=600           fuzzing seconds in total (all targets)
#   NIGHTLY_TARGETS="fuzz_plan fuzz_attention fuzz_api"
#   NIGHTLY_WEIGHTS="fuzz_attention=2"   time share per target (default 1)
#   NIGHTLY_FORK=2             libFuzzer -fork workers per target
#   NIGHTLY_REPRO=3            fresh-process reruns per crash artifact
#   NIGHTLY_MIN_TIME=60        seconds of -minimize_crash per unique finding
#   NIGHTLY_MUTANTS=1 NIGHTLY_COVERAGE=1 NIGHTLY_REPORT=1   0 skips a step
#   NIGHTLY_INJECT=<bug>       fuzz a mutant build instead (to rehearse triage)
#   NIGHTLY_SEED_CORPUS=DIR    extra read-only seeds: DIR/<target>/ (e.g. last
#                              night's merged corpus, restored from a CI cache)
#
# Exit status: 0 clean night; 1 a unique finding, a failing grid cell or a
# failed step (everything is still collected); 2 build failure.

# The step functions run through `step NAME fn`, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -euo pipefail

NIGHTLY_TIME=${NIGHTLY_TIME:-600}
NIGHTLY_TARGETS=${NIGHTLY_TARGETS:-fuzz_plan fuzz_attention fuzz_api}
NIGHTLY_WEIGHTS=${NIGHTLY_WEIGHTS:-fuzz_attention=2}
NIGHTLY_FORK=${NIGHTLY_FORK:-2}
NIGHTLY_REPRO=${NIGHTLY_REPRO:-3}
NIGHTLY_MIN_TIME=${NIGHTLY_MIN_TIME:-60}
NIGHTLY_MUTANTS=${NIGHTLY_MUTANTS:-1}
NIGHTLY_COVERAGE=${NIGHTLY_COVERAGE:-1}
NIGHTLY_REPORT=${NIGHTLY_REPORT:-1}
NIGHTLY_INJECT=${NIGHTLY_INJECT:-}
NIGHTLY_SEED_CORPUS=${NIGHTLY_SEED_CORPUS:-}
MAKE=${MAKE:-make}

N=build/nightly
BIN=build/fuzz${NIGHTLY_INJECT:+-inject-$NIGHTLY_INJECT}
read -r -a targets <<<"$NIGHTLY_TARGETS"
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
weight_of() {
    local t=$1 w=1 kv
    for kv in $NIGHTLY_WEIGHTS; do
        [ "${kv%%=*}" = "$t" ] && w=${kv#*=}
    done
    echo "$w"
}
total_w=0
for t in "${targets[@]}"; do total_w=$((total_w + $(weight_of "$t"))); done

# fuzz/<target>.options ([libfuzzer] key = value) -> -key=value
options_of() {
    local f=fuzz/$1.options
    [ -f "$f" ] || return 0
    sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/-\1=\2/p' "$f"
}

fuzz_one() {
    local t=$1 secs=$2 opts=() seeds=()
    seeds=("corpus/$t")
    [ -n "$NIGHTLY_SEED_CORPUS" ] && [ -d "$NIGHTLY_SEED_CORPUS/$t" ] && seeds+=("$NIGHTLY_SEED_CORPUS/$t")
    mkdir -p "$N/corpus-work/$t" "$N/crashes/$t"
    mapfile -t opts < <(options_of "$t")
    [ -f "fuzz/$t.dict" ] && opts+=("-dict=fuzz/$t.dict")
    date +%s >"$N/logs/fuzz-$t.start"
    say "fuzz $t: ${secs}s, -fork=$NIGHTLY_FORK"
    # -ignore_*: keep fuzzing after a finding; triage comes later.  A finding
    # makes libFuzzer exit non-zero, which is not a failure of this step.
    ASAN_OPTIONS=dedup_token_length=3:abort_on_error=1:symbolize=1:detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$BIN/$t" "${opts[@]}" -timeout=25 -rss_limit_mb=2560 -max_total_time="$secs" \
        -fork="$NIGHTLY_FORK" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -artifact_prefix="$N/crashes/$t/" -print_final_stats=1 \
        "$N/corpus-work/$t" "${seeds[@]}" >"$N/logs/fuzz-$t.log" 2>&1 || true
    grep -E '^#[0-9]+:? ' "$N/logs/fuzz-$t.log" | tail -n 1 | sed "s/^/nightly: fuzz $t: /" || true
}

fuzz_all() {
    local t secs
    for t in "${targets[@]}"; do
        secs=$((NIGHTLY_TIME * $(weight_of "$t") / total_w))
        [ "$secs" -ge 1 ] || secs=1
        fuzz_one "$t" "$secs"
    done
}
fuzz_t0=$(date +%s)
step fuzz fuzz_all
fuzz_wall=$(($(date +%s) - fuzz_t0))

# ------------------------------------------------------------------ 3 merge
merge_all() {
    local t seeds
    for t in "${targets[@]}"; do
        seeds=("corpus/$t")
        [ -n "$NIGHTLY_SEED_CORPUS" ] && [ -d "$NIGHTLY_SEED_CORPUS/$t" ] && seeds+=("$NIGHTLY_SEED_CORPUS/$t")
        mkdir -p "$N/corpus/$t"
        "$BIN/$t" -merge=1 -timeout=25 -rss_limit_mb=2560 "$N/corpus/$t" "${seeds[@]}" \
            "$N/corpus-work/$t" >"$N/logs/merge-$t.log" 2>&1 || {
            say "merge $t failed (log $N/logs/merge-$t.log)"
            return 1
        }
        say "merge $t: $(find "${seeds[@]}" "$N/corpus-work/$t" -type f | wc -l) inputs -> \
$(find "$N/corpus/$t" -type f | wc -l)"
    done
}
step merge merge_all

# ----------------------------------------------------------------- 4 triage
step triage python3 scripts/nightly_triage.py --nightly "$N" --bin-dir "$BIN" \
    --cli build/attnguard --targets "$NIGHTLY_TARGETS" --repro "$NIGHTLY_REPRO" \
    --min-time "$NIGHTLY_MIN_TIME" --fuzz-time "$NIGHTLY_TIME" --fuzz-wall "$fuzz_wall"

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
cp -r "$N/crashes" "$A/" 2>/dev/null || true
cp "$N/fuzz-summary.json" "$A/" 2>/dev/null || true
cp -r "$N/logs" "$A/" 2>/dev/null || true
[ -d "$N/corpus" ] && tar -czf "$A/corpus-merged.tar.gz" -C "$N" corpus
for f in build/mutants-quick.json build/mutants-quick.md build/coverage/summary.json \
    build/coverage/report.txt build/report/grid.json; do
    [ -f "$f" ] && cp "$f" "$A/$(echo "$f" | sed 's|^build/||; s|/|-|g')"
done
[ -d reports/latest ] && cp -r reports/latest "$A/report"

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
