#!/usr/bin/env bash
# tests/kit/example.sh PREFIX TMP — make test's check of the example
# engine (examples/tinyattn/), run by tests/kit/run.sh on the kit it has
# just installed under PREFIX (no second install).  Copies the example
# out of the tree into TMP and builds it there from the kit alone, then,
# through the installed CLI over the installed cases:
#   - the fixed engine passes every shipped case it declares (all of
#     them, checked in two halves side by side), the Laguna ones included,
#     and accepts an empty group with a usable model_num_heads, refusing
#     one without;
#   - the planted build (-DPLANTED_MODEL_HEADS=1: the split-KV slots sized
#     from model_num_heads, vLLM PR 51852) fails both Laguna sliding cases
#     with the sizing oracle, at plan time (through the adapter's
#     `extents`), and still passes Laguna S's full layers, where the
#     model-wide count is the layers' own.
# The fuzzing half (an empty-corpus session with the installed fuzz
# target) is make example-fuzz (scripts/example_fuzz.sh): it needs the
# kit's libFuzzer targets, minutes to build.
set -euo pipefail

prefix=${1:?usage: example.sh PREFIX TMP}
tmp=${2:?usage: example.sh PREFIX TMP}
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "kit: example: FAILED: $*" >&2; exit 1; }
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset CPATH C_INCLUDE_PATH PKG_CONFIG_LIBDIR ATTNGUARD_ENGINE ATTNGUARD_ENGINE_OPTIONS || true
cli=$prefix/bin/attnguard
cases=$prefix/share/attnguard/cases

ex=$tmp/tinyattn
cp -r "$root/examples/tinyattn" "$ex"
rm -rf "$ex"/*.so "$ex"/obj*
for build in "" "PLANTED=1"; do
    (cd "$ex" && make --no-print-directory -s $build) > "$tmp/example-build.log" 2>&1 ||
        { cat "$tmp/example-build.log"; fail "building the example ($build) from the installed kit"; }
done
fixed=$ex/libag_tinyattn.so
planted=$ex/libag_tinyattn-planted.so
for so in "$fixed" "$planted"; do
    undef=$(nm -D --undefined-only "$so" | grep -E ' ag_' || true)
    [ -z "$undef" ] || fail "$so leaves ABI helpers undefined: $undef"
done

# The fixed engine: every shipped case, in two halves side by side.
mapfile -t all < <(ls "$cases"/*.case)
half=$(((${#all[@]} + 1) / 2))
"$cli" check --engine "$fixed" "${all[@]:0:half}" > "$tmp/fixed-1.log" 2>&1 & p1=$!
"$cli" check --engine "$fixed" "${all[@]:half}" > "$tmp/fixed-2.log" 2>&1 & p2=$!
rc1=0 rc2=0
wait $p1 || rc1=$?
wait $p2 || rc2=$?
passed=0
for i in 1 2; do
    log=$tmp/fixed-$i.log
    rc=rc$i
    [ "${!rc}" = 0 ] || { grep -E 'FAIL|NOT RUN' "$log" | head -n 20; tail -n 3 "$log";
                          fail "the fixed engine failed a shipped case (log above)"; }
    n=$(sed -n 's/^\([0-9]*\) passed, .*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${n:-0}))
done
for c in laguna-s-sliding laguna-xs-sliding laguna-s-full; do
    grep -qx "$c  PASS" "$tmp"/fixed-[12].log || fail "the fixed engine did not run and pass $c"
done
# the skip tally names the engine checked, not attnguard's own (which
# check also opens, for its second opinion on a refusal)
grep -q '^[0-9]* skipped (tinyattn lacks): ' "$tmp/fixed-1.log" ||
    { tail -n 2 "$tmp/fixed-1.log"; fail "check's skip tally does not name tinyattn"; }

# An empty group (docs/engines.md, "An empty group"): created and planned
# when model_num_heads is a count the layers could have, refused as
# `heads` when it is not.
printf 'name = empty-group\nmodel_num_heads = 48\nkv_heads = 8\nhead_dim = 64\nrequests = 1x700\nlayers = none\n' \
    > "$tmp/empty-group.case"
printf 'name = empty-group-bad\nexpect = heads\nmodel_num_heads = 44\nkv_heads = 8\nhead_dim = 64\nrequests = 1x1\nlayers = none\n' \
    > "$tmp/empty-group-bad.case"
"$cli" check --engine "$fixed" "$tmp/empty-group.case" "$tmp/empty-group-bad.case" > "$tmp/empty.log" 2>&1 || true
grep -q '^empty-group  NOT RUN: no output was compared: the group has no layers' "$tmp/empty.log" &&
    grep -qx 'empty-group-bad  PASS' "$tmp/empty.log" ||
    { cat "$tmp/empty.log"; fail "tinyattn's answers to an empty group"; }

# The planted bug: sizing, at plan time, on the layers with more heads
# than the model-wide count; none where the counts agree.
if "$cli" check --engine "$planted" "$cases/laguna-s-sliding.case" "$cases/laguna-xs-sliding.case" \
    "$cases/laguna-s-full.case" > "$tmp/planted.log" 2>&1; then
    cat "$tmp/planted.log"
    fail "the planted build passed the Laguna sliding cases"
fi
for c in laguna-s-sliding laguna-xs-sliding; do
    grep -q "^$c  FAIL: ORACLE sizing: layers.0 ([0-9]* heads) needs [0-9]* bytes in region scratch but the plan .*model_num_heads 48" \
        "$tmp/planted.log" || { cat "$tmp/planted.log"; fail "$c: no sizing finding on the planted build"; }
done
grep -qx "laguna-s-full  PASS" "$tmp/planted.log" ||
    { cat "$tmp/planted.log"; fail "the planted build failed laguna-s-full, whose heads are the model's"; }

# An engine built with the kit's fuzzing flags (COVERAGE=1) carries ASan
# and libFuzzer's counters: the CLI cannot load it, yet a fuzz session must
# record it (make fuzz ENGINE=<it> runs `attnguard engines --record` first),
# and check must say why it cannot run it, not die.
(cd "$ex" && make --no-print-directory -s COVERAGE=1) > "$tmp/example-build.log" 2>&1 ||
    { cat "$tmp/example-build.log"; fail "building the example with COVERAGE=1 from the installed kit"; }
cov=$ex/libag_tinyattn-cov.so
"$cli" engines --record "$cov" > "$tmp/cov-record.txt" 2> "$tmp/cov-record.err" ||
    { cat "$tmp/cov-record.err"; fail "attnguard engines --record refused the instrumented build"; }
grep -qx "name = ag_tinyattn-cov" "$tmp/cov-record.txt" && grep -qx "engine = $(realpath "$cov")" "$tmp/cov-record.txt" ||
    { cat "$tmp/cov-record.txt"; fail "the instrumented build's record does not name it"; }
grep -q "is built for the fuzz targets" "$tmp/cov-record.err" ||
    { cat "$tmp/cov-record.err"; fail "the record did not say why it goes by its file's name"; }
rc=0
"$cli" check --engine "$cov" "$cases/laguna-xs-sliding.case" > "$tmp/cov-check.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "undefined symbol: __sancov" "$tmp/cov-check.log" ||
    { cat "$tmp/cov-check.log"; fail "check on the instrumented build: exit $rc, not a usage error naming the loader's words"; }

echo "example: tinyattn from the kit passed $passed shipped cases; its planted build fails both" \
     "Laguna sliding cases on sizing at plan time; its instrumented build is recorded, and check says why it cannot load it"
