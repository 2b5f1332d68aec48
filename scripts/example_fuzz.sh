#!/usr/bin/env bash
# example_fuzz.sh — the work of `make example-fuzz`: the planted bug of the
# example engine (examples/tinyattn/, PLANTED=1: the split-KV slots sized
# from model_num_heads) found the way a maintainer fuzzes their own engine,
# with the installed kit only:
#   1. the kit installed with its fuzz targets into a temporary prefix
#      (mk/fuzz.mk builds them if they are not built: minutes; in CI they
#      are, by mutants-quick), the example copied out of the tree and built
#      there with the kit's fuzzing flags (COVERAGE=1: its branches count);
#   2. the session's engine record (`attnguard engines --record`), then the
#      installed fuzz_attention, the planted adapter loaded by path
#      (ATTNGUARD_ENGINE), from an EMPTY corpus, at most EXAMPLE_FUZZ_TIME
#      seconds, stopping at the first finding: it must be sizing or
#      scratch-bounds; the time to it is printed (wall, from the target's
#      start) with its executions;
#   3. `attnguard repro CRASH` with no environment variable reproduces it
#      on tinyattn (the record), and `--minimize` shrinks it to a .case
#      that `attnguard check --engine <the plain planted build>` fails with
#      the same oracle (the CLI cannot load the instrumented object).
# MAKE and ROOT come from mk/example.mk.
set -euo pipefail

root=${ROOT:?ROOT: the attnguard source tree}
make=${MAKE:-make}
budget=${EXAMPLE_FUZZ_TIME:-60}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnguard-example-fuzz-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "example-fuzz: FAILED: $*" >&2; exit 1; }
now() { date +%s%N; }
secs() { python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1e9:.{sys.argv[3]}f}')" "$@"; }

prefix=$tmp/prefix
t0=$(now)
"$make" -C "$root" --no-print-directory install PREFIX="$prefix" > "$tmp/install.log" 2>&1 ||
    { tail -n 30 "$tmp/install.log"; fail "make install PREFIX=$prefix"; }
t_install=$(now)
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset CPATH C_INCLUDE_PATH PKG_CONFIG_LIBDIR ATTNGUARD_ENGINE ATTNGUARD_ENGINE_OPTIONS || true
cli=$prefix/bin/attnguard
fz=$(pkg-config --variable=fuzzdir attnguard)
[ -x "$fz/fuzz_attention" ] || fail "the kit installed no $fz/fuzz_attention"

cp -r "$root/examples/tinyattn" "$tmp/tinyattn"
rm -rf "$tmp"/tinyattn/*.so "$tmp"/tinyattn/obj*
(cd "$tmp/tinyattn" && "$make" --no-print-directory -s PLANTED=1 COVERAGE=1) > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "building the planted example with the kit's fuzzing flags"; }
so=$tmp/tinyattn/libag_tinyattn-planted-cov.so
# the plain build of the same sources: what the CLI's check loads (an
# instrumented object carries ASan and loads only into the fuzz targets)
(cd "$tmp/tinyattn" && "$make" --no-print-directory -s PLANTED=1) >> "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; fail "building the planted example plain"; }
plain=$tmp/tinyattn/libag_tinyattn-planted.so
[ -f "$plain" ] || fail "the example's Makefile built no $plain"
case "$(readelf -S --wide "$so")" in *__sancov_cntrs*) ;; *) fail "$so carries no libFuzzer counters" ;; esac

sess=$tmp/session
mkdir -p "$sess/corpus" "$sess/artifacts"
"$cli" engines --record "$so" > "$sess/attnguard-engine.txt" ||
    fail "attnguard engines --record $so"
mapfile -t flags < <("$cli" fuzz-flags "$fz/fuzz_attention.options")
t1=$(now)
rc=0
ATTNGUARD_ENGINE=$so "$fz/fuzz_attention" "${flags[@]}" -max_total_time="$budget" \
    -artifact_prefix="$sess/artifacts/" "$sess/corpus" > "$sess/fuzz.log" 2>&1 || rc=$?
t2=$(now)
crash=$(find "$sess/artifacts" -name 'crash-*' | head -n 1)
[ "$rc" != 0 ] && [ -n "$crash" ] ||
    { tail -n 20 "$sess/fuzz.log"; fail "no finding in ${budget} s from an empty corpus (exit $rc)"; }
kind=$("$cli" classify --status "$rc" "$sess/fuzz.log" |
       python3 -c 'import json, sys; print(json.loads(sys.stdin.readline()).get("kind", ""))')
case "$kind" in sizing | scratch-bounds) ;;
*) tail -n 30 "$sess/fuzz.log"; fail "the finding is '$kind', not the planted sizing bug" ;;
esac
execs=$(grep -aoE '^#[0-9]+' "$sess/fuzz.log" | tail -n 1 | tr -d '#')
detect=$(secs "$t1" "$t2" 2)

# repro with nothing in the environment: the record says which engine
env -u ATTNGUARD_ENGINE "$cli" repro "$crash" > "$sess/repro.log" 2>&1 && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q "^repro: ORACLE $kind" "$sess/repro.log" ||
    { tail -n 30 "$sess/repro.log"; fail "attnguard repro did not reproduce $kind (exit $rc)"; }
grep -q tinyattn "$sess/repro.log" || { tail -n 30 "$sess/repro.log"; fail "repro did not say it ran tinyattn"; }
env -u ATTNGUARD_ENGINE "$cli" repro "$crash" --minimize > "$sess/minimize.log" 2>&1 && rc=0 || rc=$?
min=$crash.min.case
[ "$rc" = 1 ] && [ -s "$min" ] || { tail -n 30 "$sess/minimize.log"; fail "repro --minimize wrote no $min (exit $rc)"; }
env -u ATTNGUARD_ENGINE "$cli" check --engine "$plain" "$min" > "$sess/check.log" 2>&1 && rc=0 || rc=$?
[ "$rc" = 1 ] && grep -q "FAIL: ORACLE $kind" "$sess/check.log" ||
    { cat "$sess/check.log"; fail "attnguard check does not fail the minimised case with $kind"; }
t3=$(now)

echo "example-fuzz: the planted bug found by the installed fuzz_attention from an empty corpus:" \
     "$kind after $detect s, ${execs:-?} executions"
printf 'example-fuzz: reproduced and minimised with no environment variable (%s: %s)\n' \
    "$(basename "$min")" "$(grep -E '^(requests|layer\.[0-9]+) = ' "$min" | tr '\n' ' ')"
echo "example-fuzz: install $(secs "$t0" "$t_install" 0) s, build $(secs "$t_install" "$t1" 0) s," \
     "fuzzing $detect s, repro and minimise $(secs "$t2" "$t3" 1) s"
