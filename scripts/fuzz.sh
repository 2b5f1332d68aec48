#!/usr/bin/env bash
# fuzz.sh — the fuzzing campaign behind `make fuzz` and `make corpus-merge`.
#
#   scripts/fuzz.sh run     fuzz the targets for FUZZ_TIME seconds in total
#   scripts/fuzz.sh merge   merge the working corpora into the shipped corpus
#
# Owns: scheduling libFuzzer runs over the available cores, their logs,
# the progress lines, the summary table and build/fuzz-summary.json.  It
# never writes into corpus/ except in `merge` (explicit `make corpus-merge`),
# and never builds anything: `make fuzz` builds the binaries first.
#
# Knobs (environment; mk/campaign.mk passes the make variables through):
#   FUZZ_TIME=60        wall-clock seconds for the whole campaign
#   FUZZ_TARGETS="fuzz_plan fuzz_attention fuzz_api"
#   FUZZ_SEED=          libFuzzer -seed (empty: a fresh random seed per run)
#   FUZZ_JOBS=2         targets fuzzed at the same time (one core each)
#   FUZZ_WEIGHTS="fuzz_attention=2"   share of the time per target (default 1)
#   INJECT=<bug>        fuzz the mutant build build/fuzz-inject-<bug>/
#   FUZZ_BIN_DIR, FUZZ_BUILD_ROOT (build), FUZZ_CORPUS_SRC (corpus),
#   FUZZ_OPTS_DIR (fuzz), FUZZ_SUMMARY (build/fuzz-summary[-inject-<bug>].json)
#
# Exit status: 0 no finding, 1 at least one finding, 2 usage/setup error,
# 130 interrupted without a finding.
set -euo pipefail

mode=${1:-run}
case $mode in
run | merge) ;;
-h | --help | help)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
*)
    echo "usage: $0 run|merge   (see the header for the FUZZ_* knobs)" >&2
    exit 2
    ;;
esac

FUZZ_TIME=${FUZZ_TIME:-60}
FUZZ_TARGETS=${FUZZ_TARGETS:-fuzz_plan fuzz_attention fuzz_api}
FUZZ_SEED=${FUZZ_SEED:-}
FUZZ_JOBS=${FUZZ_JOBS:-2}
FUZZ_WEIGHTS=${FUZZ_WEIGHTS:-fuzz_attention=2}
INJECT=${INJECT:-}
BUILD=${FUZZ_BUILD_ROOT:-build}
CORPUS_SRC=${FUZZ_CORPUS_SRC:-corpus}
OPTS_DIR=${FUZZ_OPTS_DIR:-fuzz}

# A mutant's coverage, findings and summary never mix with the normal
# build's (make report reads build/fuzz-summary.json as the normal build's).
sfx=
[ -n "$INJECT" ] && sfx="-inject-$INJECT"
SUMMARY_JSON=${FUZZ_SUMMARY:-$BUILD/fuzz-summary$sfx.json}
BIN_DIR=${FUZZ_BIN_DIR:-$BUILD/fuzz$sfx}
WORK_CORPUS=$BUILD/fuzz-corpus$sfx
ARTIFACTS=$BUILD/artifacts$sfx
LOGS=$BUILD/fuzz-logs$sfx

# Flags every run gets (DESIGN §6: never rely on libFuzzer's defaults).
TIMEOUT_S=25
RSS_MB=2560
GRACE_S=$((TIMEOUT_S + 5)) # past -max_total_time: SIGINT (only a hang gets here)
PROGRESS_S=5

die() {
    echo "fuzz: $*" >&2
    exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

{ is_uint "$FUZZ_TIME" && [ "$FUZZ_TIME" -ge 1 ]; } || die "FUZZ_TIME must be a whole number of seconds >= 1 (got '$FUZZ_TIME')"
{ is_uint "$FUZZ_JOBS" && [ "$FUZZ_JOBS" -ge 1 ]; } || die "FUZZ_JOBS must be >= 1 (got '$FUZZ_JOBS')"
[ -z "$FUZZ_SEED" ] || is_uint "$FUZZ_SEED" || die "FUZZ_SEED must be a number (got '$FUZZ_SEED')"
[[ $INJECT =~ ^[A-Za-z0-9_]*$ ]] || die "INJECT must be a bug name (got '$INJECT')"

[ "$mode" = run ] || [ -z "$INJECT" ] ||
    die "corpus-merge takes no INJECT: a mutant's corpus never goes into corpus/"

read -r -a targets <<<"$FUZZ_TARGETS"
[ ${#targets[@]} -gt 0 ] || die "FUZZ_TARGETS is empty"
for t in "${targets[@]}"; do
    [[ $t =~ ^[A-Za-z0-9_]+$ ]] || die "bad target name '$t'"
    [ -x "$BIN_DIR/$t" ] || die "no fuzzer binary $BIN_DIR/$t (run: make fuzz-build${INJECT:+ INJECT=$INJECT})"
done

now_ms() {
    local t=${EPOCHREALTIME/./}
    echo $((t / 1000))
}

weight_of() {
    local kv
    for kv in $FUZZ_WEIGHTS; do
        if [ "${kv%%=*}" = "$1" ] && is_uint "${kv#*=}"; then
            echo "${kv#*=}"
            return
        fi
    done
    echo 1
}

# Flags from fuzz/<target>.options: the [libfuzzer] section of the usual
# `key = value` format, or plain `-key=value` lines.  Relative dict paths
# are resolved against the options directory.
options_flags() {
    local t=$1 f=$OPTS_DIR/$1.options line key val section=libfuzzer
    local have_dict=0
    if [ -f "$f" ]; then
        while IFS= read -r line || [ -n "$line" ]; do
            line=${line%%#*}
            line=$(printf '%s' "$line" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
            [ -n "$line" ] || continue
            if [[ $line =~ ^\[(.*)\]$ ]]; then
                section=${BASH_REMATCH[1]}
                continue
            fi
            [ "$section" = libfuzzer ] || continue
            line=${line#-}
            [[ $line == *=* ]] || continue
            key=$(printf '%s' "${line%%=*}" | sed 's/[[:space:]]*$//')
            val=$(printf '%s' "${line#*=}" | sed 's/^[[:space:]]*//')
            if [ "$key" = dict ]; then
                [[ $val == /* ]] || [ -f "$val" ] || val=$OPTS_DIR/$val
                have_dict=1
            fi
            printf '%s\n' "-$key=$val"
        done <"$f"
    fi
    if [ $have_dict = 0 ] && [ -f "$OPTS_DIR/$t.dict" ]; then
        printf '%s\n' "-dict=$OPTS_DIR/$t.dict"
    fi
}

# ---------------------------------------------------------------- merge --
if [ "$mode" = merge ]; then
    rc=0
    for t in "${targets[@]}"; do
        src=$WORK_CORPUS/$t
        if [ ! -d "$src" ] || [ -z "$(ls -A "$src")" ]; then
            echo "merge: $t: no working corpus in $src (run make fuzz first)"
            continue
        fi
        mkdir -p "$CORPUS_SRC/$t" "$LOGS"
        before=$(find "$CORPUS_SRC/$t" -maxdepth 1 -type f | wc -l)
        mapfile -t opts < <(options_flags "$t")
        log=$LOGS/$t.merge.log
        if "$BIN_DIR/$t" -merge=1 -timeout=$TIMEOUT_S -rss_limit_mb=$RSS_MB \
            ${opts[@]+"${opts[@]}"} "$CORPUS_SRC/$t" "$src" >"$log" 2>&1; then
            after=$(find "$CORPUS_SRC/$t" -maxdepth 1 -type f | wc -l)
            echo "merge: $t: $CORPUS_SRC/$t $before -> $after files ($((after - before)) added from $src)"
        else
            echo "merge: $t: libFuzzer -merge=1 failed, see $log" >&2
            tail -n 5 "$log" >&2
            rc=1
        fi
    done
    exit $rc
fi

# ------------------------------------------------------------- schedule --
# Each target gets a nominal share of lanes*FUZZ_TIME core-seconds by
# weight (capped at FUZZ_TIME), targets go to the least-loaded lane
# (longest first), then each lane is scaled to exactly FUZZ_TIME.  With the
# defaults: lane 1 runs fuzz_attention for T, lane 2 fuzz_plan then fuzz_api
# for T/2 each.
n=${#targets[@]}
lanes=$FUZZ_JOBS
[ "$lanes" -le "$n" ] || lanes=$n
T_ms=$((FUZZ_TIME * 1000))
wsum=0
declare -A share lane_of
for t in "${targets[@]}"; do wsum=$((wsum + $(weight_of "$t"))); done
for t in "${targets[@]}"; do
    s=$((lanes * T_ms * $(weight_of "$t") / wsum))
    [ "$s" -le "$T_ms" ] || s=$T_ms
    share[$t]=$s
done
declare -a load lane_targets
for ((l = 0; l < lanes; l++)); do
    load[l]=0
    lane_targets[l]=
done
# longest first; ties keep the FUZZ_TARGETS order
mapfile -t order < <(for i in "${!targets[@]}"; do
    printf '%d %d %s\n' "${share[${targets[i]}]}" "$i" "${targets[i]}"
done | sort -k1,1nr -k2,2n | awk '{print $3}')
for t in "${order[@]}"; do
    best=0
    for ((l = 1; l < lanes; l++)); do
        [ "${load[l]}" -lt "${load[best]}" ] && best=$l
    done
    lane_of[$t]=$best
    load[best]=$((load[best] + share[$t]))
    lane_targets[best]="${lane_targets[best]} $t"
done
for t in "${targets[@]}"; do
    l=${lane_of[$t]}
    share[$t]=$((share[$t] * T_ms / load[l]))
done

mkdir -p "$LOGS" "$(dirname "$SUMMARY_JSON")"
for t in "${targets[@]}"; do
    mkdir -p "$WORK_CORPUS/$t" "$ARTIFACTS/$t"
    rm -f "$LOGS/$t.log" "$LOGS/$t.state"
done

# ----------------------------------------------------------------- runs --
# run_target TARGET SECONDS: one libFuzzer run; its state file records
# start/end (ms since the epoch), the exit status and the watchdog's pid.
run_target() {
    local t=$1 secs=$2 log=$LOGS/$1.log state=$LOGS/$1.state rc=0
    local -a args opts seeds=()
    mapfile -t opts < <(options_flags "$t")
    [ -d "$CORPUS_SRC/$t" ] && seeds=("$CORPUS_SRC/$t")
    # Order matters: libFuzzer keeps the last value of a flag, so the
    # options file may add flags but not loosen the campaign's limits.
    args=(${opts[@]+"${opts[@]}"}
        -max_total_time="$secs" -timeout="$TIMEOUT_S" -rss_limit_mb="$RSS_MB"
        -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$t/")
    [ -n "$FUZZ_SEED" ] && args+=(-seed="$FUZZ_SEED")
    # The first corpus directory receives new inputs; the shipped one is read.
    args+=("$WORK_CORPUS/$t" ${seeds[@]+"${seeds[@]}"})
    printf 'cmd=%s\nstart=%s\nbudget=%s\n' "$BIN_DIR/$t ${args[*]}" "$(now_ms)" "$secs" >"$state"
    ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}dedup_token_length=3:print_summary=1 \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:report_error_type=1} \
        timeout --foreground -s INT -k 5 $((secs + GRACE_S)) \
        "$BIN_DIR/$t" "${args[@]}" >"$log" 2>&1 &
    echo "pid=$!" >>"$state"
    wait $! || rc=$?
    printf 'end=%s\nrc=%s\n' "$(now_ms)" "$rc" >>"$state"
}

# run_lane LANE TARGET...: the lane's targets one after another; a target
# that stops early (a finding) leaves its time to the ones after it.
run_lane() {
    # The lane outlives a Ctrl-C so that its state file gets the run's end;
    # the fuzzer itself still stops (libFuzzer installs its own handler).
    trap '' INT TERM
    shift
    local -a mine=("$@")
    local lane_end=$(($(now_ms) + T_ms)) i j rest left secs
    for ((i = 0; i < ${#mine[@]}; i++)); do
        [ ! -e "$LOGS/.stop" ] || return 0
        rest=0
        for ((j = i; j < ${#mine[@]}; j++)); do rest=$((rest + share[${mine[j]}])); done
        left=$((lane_end - $(now_ms)))
        [ "$left" -gt 0 ] || left=0
        secs=$(((left * share[${mine[i]}] / rest + 500) / 1000))
        [ "$secs" -ge 1 ] || secs=1
        run_target "${mine[i]}" "$secs"
    done
}

# Latest `#N ... cov: ... exec/s:` line of a log as "execs cov ft corp exec/s".
last_stats() {
    local line
    line=$(grep -a -E '^#[0-9]+[[:space:]]' "$1" 2>/dev/null | tail -n 1) || true
    [ -n "$line" ] || return 1
    awk '{
        n = substr($1, 2); cov = "-"; ft = "-"; corp = "-"; eps = "-"
        for (i = 2; i < NF; i++) {
            if ($i == "cov:") cov = $(i + 1)
            else if ($i == "ft:") ft = $(i + 1)
            else if ($i == "corp:") { corp = $(i + 1); sub(/\/.*/, "", corp) }
            else if ($i == "exec/s:") eps = $(i + 1)
        }
        print n, cov, ft, corp, eps
    }' <<<"$line"
}

state_get() { # state_get FILE KEY
    [ -f "$1" ] && sed -n "s/^$2=//p" "$1" | tail -n 1
}

seed_desc=${FUZZ_SEED:-random}
echo "fuzz: ${FUZZ_TIME}s on $lanes core(s) from $BIN_DIR${INJECT:+ (mutant $INJECT)}, seed $seed_desc"
for ((l = 0; l < lanes; l++)); do
    desc=
    for t in ${lane_targets[l]}; do desc="$desc $t ($(((share[$t] + 500) / 1000))s)"; done
    echo "fuzz: lane $((l + 1)):$desc"
done
echo "fuzz: logs in $LOGS/, new inputs in $WORK_CORPUS/, crashes in $ARTIFACTS/"

interrupted=0
lane_pids=()
# shellcheck disable=SC2317 # invoked by the trap below
stop_all() {
    interrupted=1
    : >"$LOGS/.stop"
    local t p
    for t in "${targets[@]}"; do
        p=$(state_get "$LOGS/$t.state" pid) || true
        if [ -n "$p" ] && [ -z "$(state_get "$LOGS/$t.state" rc)" ]; then
            kill -INT "$p" 2>/dev/null || true
        fi
    done
}
trap stop_all INT TERM

rm -f "$LOGS/.stop"
t0=$(now_ms)
for ((l = 0; l < lanes; l++)); do
    # shellcheck disable=SC2086 # lane_targets holds bare target names
    run_lane "$l" ${lane_targets[l]} &
    lane_pids+=($!)
done

alive() {
    local p
    for p in "${lane_pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}

next_report=$((t0 + PROGRESS_S * 1000))
while alive; do
    sleep 1 || true
    [ "$(now_ms)" -ge "$next_report" ] || continue
    next_report=$((next_report + PROGRESS_S * 1000))
    el=$((($(now_ms) - t0) / 1000))
    for t in "${targets[@]}"; do
        st=$LOGS/$t.state
        [ -f "$st" ] || continue
        [ -z "$(state_get "$st" rc)" ] || continue
        if s=$(last_stats "$LOGS/$t.log"); then
            read -r ex cov ft corp eps <<<"$s"
            printf '[%4ds] %-16s execs %-9s exec/s %-6s cov %-6s ft %-7s corpus %s\n' \
                "$el" "$t" "$ex" "$eps" "$cov" "$ft" "$corp"
        else
            printf '[%4ds] %-16s loading the corpus\n' "$el" "$t"
        fi
    done
done
for p in "${lane_pids[@]}"; do wait "$p" 2>/dev/null || true; done
trap - INT TERM
wall=$((($(now_ms) - t0 + 500) / 1000))

# -------------------------------------------------------------- summary --
# classify LOG: the oracle (or sanitizer/libFuzzer kind) of the crash in LOG.
classify() {
    local log=$1 m
    m=$(grep -a -o -m1 -E 'attnguard: ORACLE [A-Za-z0-9_-]+' "$log" | awk '{print $3}') || true
    [ -n "$m" ] && { echo "$m"; return; }
    m=$(grep -a -o -m1 -E 'ERROR: AddressSanitizer: [A-Za-z0-9_-]+' "$log" | awk '{print $3}') || true
    [ -n "$m" ] && { echo "asan:$m"; return; }
    grep -a -q 'ERROR: LeakSanitizer' "$log" && { echo "asan:leak"; return; }
    m=$(grep -a -o -m1 -E 'SUMMARY: UndefinedBehaviorSanitizer: [A-Za-z0-9_-]+' "$log" | awk '{print $3}') || true
    [ -n "$m" ] && { echo "ubsan:$m"; return; }
    grep -a -q 'runtime error:' "$log" && { echo "ubsan:runtime-error"; return; }
    m=$(grep -a -o -m1 -E 'ERROR: libFuzzer: [A-Za-z0-9 _-]+' "$log" | sed 's/ERROR: libFuzzer: //; s/ *$//; s/ /-/g') || true
    case $m in
    timeout) echo timeout ;;
    out-of-memory*) echo oom ;;
    deadly-signal) echo signal ;;
    fuzz-target-exited) echo exit ;;
    "") echo unknown ;;
    *) echo "libfuzzer:$m" ;;
    esac
}

json_str() {
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

stat_of() { # stat_of LOG NAME
    grep -a -E "^stat::$2:" "$1" 2>/dev/null | awk '{print $2}' | tail -n 1
}

declare -A f_oracle f_artifact f_time f_execs
row_fmt='%-16s %6s %10s %8s %7s %8s %7s  %s\n'
total_findings=0
errors=0
json_targets=
echo
echo "fuzz summary (${wall}s wall${INJECT:+, mutant $INJECT}):"
[ $interrupted = 1 ] && echo "  (interrupted: the numbers below are partial)"
# shellcheck disable=SC2059 # row_fmt is a format string on purpose
printf "$row_fmt" target time execs exec/s cov ft corpus findings
for t in "${targets[@]}"; do
    log=$LOGS/$t.log st=$LOGS/$t.state
    start=$(state_get "$st" start) end=$(state_get "$st" end) rc=$(state_get "$st" rc)
    start=${start:-$t0} end=${end:-$(now_ms)} rc=${rc:-?}
    secs_ms=$((end - start))
    ex=- cov=- ft=- corp=- eps=-
    if s=$(last_stats "$log"); then read -r ex cov ft corp eps <<<"$s"; fi
    v=$(stat_of "$log" number_of_executed_units) && [ -n "$v" ] && ex=$v
    v=$(stat_of "$log" average_exec_per_sec) && [ -n "$v" ] && eps=$v
    [ "$corp" != - ] || corp=$(find "$WORK_CORPUS/$t" -maxdepth 1 -type f | wc -l)
    art=$(grep -a -o -E 'Test unit written to [^ ]+' "$log" 2>/dev/null | grep -v '/slow-unit-' |
        head -n 1 | sed 's/^Test unit written to //') || true
    note=0
    if [ -n "$art" ] || { [ "$rc" != 0 ] && [ "$rc" != "?" ] && [ $interrupted = 0 ]; }; then
        if [ -n "$art" ]; then
            f_oracle[$t]=$(classify "$log")
        elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            f_oracle[$t]=hang # stopped by the watchdog, not by libFuzzer
        else
            f_oracle[$t]=$(classify "$log")
            [ "${f_oracle[$t]}" != unknown ] || { f_oracle[$t]="fuzzer-error(rc=$rc)"; errors=$((errors + 1)); }
        fi
        f_artifact[$t]=${art:-$log}
        f_time[$t]=$(awk -v ms="$secs_ms" 'BEGIN{printf "%.1f", ms/1000}')
        f_execs[$t]=$ex
        note="1 ${f_oracle[$t]}"
        total_findings=$((total_findings + 1))
    fi
    # shellcheck disable=SC2059
    printf "$row_fmt" "$t" "$(((secs_ms + 500) / 1000))s" "$ex" "$eps" "$cov" "$ft" "$corp" "$note"
    jn=0
    [[ $ex =~ ^[0-9]+$ ]] && jn=$ex
    jeps=0
    [[ $eps =~ ^[0-9]+$ ]] && jeps=$eps
    jcov=0
    [[ $cov =~ ^[0-9]+$ ]] && jcov=$cov
    jft=0
    [[ $ft =~ ^[0-9]+$ ]] && jft=$ft
    jcorp=0
    [[ $corp =~ ^[0-9]+$ ]] && jcorp=$corp
    jf=
    if [ -n "${f_oracle[$t]:-}" ]; then
        jf="{\"oracle\": $(json_str "${f_oracle[$t]}"), \"artifact\": $(json_str "${f_artifact[$t]}"), \"time_s\": ${f_time[$t]}, \"execs\": $jn}"
    fi
    json_targets="$json_targets${json_targets:+,
}    {\"target\": $(json_str "$t"), \"time_s\": $(awk -v ms="$secs_ms" 'BEGIN{printf "%.1f", ms/1000}'), \"execs\": $jn, \"exec_per_s\": $jeps, \"cov\": $jcov, \"ft\": $jft, \"corpus\": $jcorp, \"exit_status\": $(json_str "$rc"), \"log\": $(json_str "$log"), \"findings\": [$jf]}"
done

if [ $total_findings -gt 0 ]; then
    echo
    echo "findings by oracle:"
    mapfile -t oracles < <(for t in "${!f_oracle[@]}"; do echo "${f_oracle[$t]}"; done | sort -u)
    for o in "${oracles[@]}"; do
        echo "  $o"
        for t in "${targets[@]}"; do
            [ "${f_oracle[$t]:-}" = "$o" ] || continue
            echo "    $t: first after ${f_time[$t]}s, ${f_execs[$t]} execs: ${f_artifact[$t]}"
        done
    done
    echo
    echo "reproduce: build/attnguard repro ARTIFACT${INJECT:+ --inject $INJECT}   (prints the case, reruns it under ASan)"
else
    echo
    echo "no findings."
fi

{
    printf '{\n  "fuzz_time": %s,\n  "wall_s": %s,\n  "inject": %s,\n  "seed": %s,\n' \
        "$FUZZ_TIME" "$wall" "$(json_str "$INJECT")" "$(json_str "$seed_desc")"
    printf '  "interrupted": %s,\n  "findings": %s,\n  "targets": [\n%s\n  ]\n}\n' \
        "$([ $interrupted = 1 ] && echo true || echo false)" "$total_findings" "$json_targets"
} >"$SUMMARY_JSON"
echo "summary: $SUMMARY_JSON"

[ $total_findings -eq 0 ] || exit 1
[ $errors -eq 0 ] || exit 2
[ $interrupted = 0 ] || exit 130
exit 0
