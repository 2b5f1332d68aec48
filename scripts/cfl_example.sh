#!/usr/bin/env bash
# cfl_example.sh — the work of `make cfl-example` (mk/cfl.mk passes the
# variables): the ClusterFuzzLite template for an engine's own repository
# (examples/clusterfuzzlite/) exercised on the example engine
# (examples/tinyattn/), in OSS-Fuzz's environment as cfl-test emulates it
# for attnguard itself, for each sanitizer of the template's project.yaml.
#
# The engine's repository is assembled under CFL_B/<san>/example/src/engine
# (the example's files, the template's .clusterfuzzlite/ and .github/), with
# $SRC/attnguard pointing at this tree, and the template's build.sh is run
# from there as the base image's `compile` would.  Checked, per sanitizer:
#   - $OUT holds the targets that reach an engine through the ABI (CFL_TARGETS)
#     with their options, dict and seed zip, and no other target;
#   - every engine object carries libFuzzer's counters (__sancov_cntrs) and
#     the targets carry the engine (ta_forward);
#   - each target runs clean over its seeds, with no ATTNGUARD_ENGINE, and
#     says it drove tinyattn;
#   - the same template with ENGINE_DEFINES=-DPLANTED_MODEL_HEADS=1 (the
#     planted bug): fuzz_attention fails the Laguna XS sliding seed with the
#     sizing oracle, so the engine linked in is the one fuzzed.
#
#   CFL_B, CFL_SANITIZERS, CFL_SAN_<san>, CFL_COMMON, CFL_TARGETS, CLI: as
#   for scripts/cfl_test.sh (the work folders are cfl-test's, so the
#   harness's objects are shared); EXAMPLE, TEMPLATE: the two folders.
set -euo pipefail
: "${CFL_B:?}" "${CFL_SANITIZERS:?}" "${CFL_TARGETS:?}" "${CLI:?}" "${CFL_COMMON:?}"
: "${EXAMPLE:?}" "${TEMPLATE:?}"
root=$PWD
fail() {
    echo "cfl-example: $*" >&2
    exit 1
}

# build SAN OUT [ENGINE_DEFINES]: the template's build.sh in the emulated image
build() {
    local san=$1 out=$2 defines=${3:-} var=CFL_SAN_$1
    local d=$root/$CFL_B/$san src=$root/$CFL_B/$san/example/src
    rm -rf "$src" "$out"
    mkdir -p "$src/engine" "$out" "$d/work"
    cp "$EXAMPLE"/*.c "$EXAMPLE"/*.h "$src/engine/"
    cp -r "$TEMPLATE/.clusterfuzzlite" "$TEMPLATE/.github" "$src/engine/"
    ln -s "$root" "$src/attnguard"
    local flags="$CFL_COMMON ${!var}"
    (cd "$src/engine" && env -u ATTNGUARD_ENGINE CC=clang CXX=clang++ CFLAGS="$flags" \
        CXXFLAGS="$flags" LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT="$out" WORK="$d/work" \
        SRC="$src" SANITIZER="$san" ENGINE_DEFINES="$defines" bash .clusterfuzzlite/build.sh)
}

for san in $CFL_SANITIZERS; do
    var=CFL_SAN_$san
    [ -n "${!var:-}" ] || fail "no flags for sanitizer '$san' (add CFL_SAN_$san to mk/cfl.mk)"
    d=$CFL_B/$san
    mkdir -p "$d"
    out=$root/$d/example-out
    t0=$(date +%s)
    build "$san" "$out" > "$d/example-build.log" 2>&1 ||
        { tail -n 30 "$d/example-build.log" >&2; fail "$san: the template's build.sh failed (log $d/example-build.log)"; }
    echo "cfl-example: $san: the template built $CFL_TARGETS with tinyattn linked in, $(($(date +%s) - t0)) s"

    for o in "$d"/work/engine-obj/*.o; do
        case "$(readelf -S --wide "$o")" in *__sancov_cntrs*) ;;
        *) fail "$san: $o has no libFuzzer counters: the engine was compiled without \$CFLAGS" ;;
        esac
    done
    made=$(cd "$out" && find . -maxdepth 1 -type f -perm -u+x ! -name '*.*' | sed 's|^\./||' | sort | tr '\n' ' ')
    [ "$made" = "$(echo $CFL_TARGETS | tr ' ' '\n' | sort | tr '\n' ' ')" ] ||
        fail "$san: \$OUT holds the targets '$made', expected '$CFL_TARGETS'"
    for t in $CFL_TARGETS; do
        for f in "$t" "${t}_seed_corpus.zip" "$t.options"; do
            [ -s "$out/$f" ] || fail "$san: missing $out/$f"
        done
        case "$(nm "$out/$t")" in *" T ta_forward"*) ;;
        *) fail "$san: $t does not carry the engine (no ta_forward)" ;;
        esac
        seeds=$d/example-seeds/$t
        rm -rf "$seeds" && mkdir -p "$seeds"
        python3 -m zipfile -e "$out/${t}_seed_corpus.zip" "$seeds"
        mapfile -t opts < <("$CLI" fuzz-flags "$out/$t.options")
        log=$d/example-run_$t.log
        env -u ATTNGUARD_ENGINE ASAN_OPTIONS=detect_leaks=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:silence_unsigned_overflow=1 \
            "$out/$t" "${opts[@]}" -runs=0 "$seeds" > "$log" 2>&1 ||
            { tail -n 30 "$log" >&2; fail "$san: $t FAILED on its seeds (log $log)"; }
        grep -q 'skipped (tinyattn lacks)' "$log" ||
            { tail -n 20 "$log" >&2; fail "$san: $t did not drive tinyattn (log $log)"; }
        echo "cfl-example: $san: $t: $(find "$seeds" -type f | wc -l) seeds on tinyattn, exit 0" \
            "($(grep -a -o 'INITED.*' "$log" | head -n 1))"
    done

    pout=$root/$d/example-planted-out
    build "$san" "$pout" -DPLANTED_MODEL_HEADS=1 > "$d/example-planted-build.log" 2>&1 ||
        { tail -n 30 "$d/example-planted-build.log" >&2; fail "$san: the planted build failed"; }
    mapfile -t opts < <("$CLI" fuzz-flags "$pout/fuzz_attention.options")
    log=$d/example-planted.log
    if env -u ATTNGUARD_ENGINE "$pout/fuzz_attention" "${opts[@]}" \
        "$root/corpus/fuzz_attention/laguna-xs-sliding.bin" > "$log" 2>&1; then
        fail "$san: the planted build passed laguna-xs-sliding (log $log)"
    fi
    grep -q 'ORACLE sizing' "$log" || { tail -n 20 "$log" >&2; fail "$san: no sizing finding on the planted build (log $log)"; }
    echo "cfl-example: $san: the planted build fails laguna-xs-sliding: $(grep -m1 -o 'ORACLE sizing.*' "$log" | cut -c1-100)"
done
echo "cfl-example: PASS: the template builds tinyattn's targets under $CFL_SANITIZERS, instrumented," \
     "clean on their seeds; the planted bug is found"
