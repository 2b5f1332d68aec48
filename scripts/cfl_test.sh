#!/usr/bin/env bash
# cfl_test.sh — the work of `make cfl-test` (mk/cfl.mk passes the variables):
# build the fuzz targets with .clusterfuzzlite/build.sh in OSS-Fuzz's
# environment for each sanitizer, check the $OUT layout, run every target
# once over its seed corpus with its .options flags.
#
#   CFL_B            work folder (build/cfl); each sanitizer gets CFL_B/<san>/
#   CFL_SANITIZERS   "address undefined" (project.yaml's list)
#   CFL_SAN_<san>    that sanitizer's compile flags
#   CFL_COMMON       flags every sanitizer gets (-O1 ... -fsanitize=fuzzer-no-link)
#   CFL_TARGETS      the fuzz targets (mk/fuzz.mk's FUZZ_ALL)
#   CLI              build/attnguard (reads the .options files)
set -euo pipefail
: "${CFL_B:?}" "${CFL_SANITIZERS:?}" "${CFL_TARGETS:?}" "${CLI:?}" "${CFL_COMMON:?}"

fail() {
    echo "cfl-test: $*" >&2
    exit 1
}

for san in $CFL_SANITIZERS; do
    var=CFL_SAN_$san
    [ -n "${!var:-}" ] || fail "no flags for sanitizer '$san' (add CFL_SAN_$san to mk/cfl.mk)"
    d=$CFL_B/$san
    # $OUT starts empty, as in OSS-Fuzz; the objects in $WORK are kept (make
    # rebuilds what changed, and whatever the flags changed).
    rm -rf "$d/out" "$d/seeds"
    mkdir -p "$d/out" "$d/work" "$d/seeds"
    flags="$CFL_COMMON ${!var}"
    t0=$(date +%s)
    if ! env CC=clang CXX=clang++ CFLAGS="$flags" CXXFLAGS="$flags" \
        LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT="$PWD/$d/out" WORK="$PWD/$d/work" \
        SANITIZER="$san" bash .clusterfuzzlite/build.sh >"$d/build.log" 2>&1; then
        tail -n 30 "$d/build.log" >&2
        fail "$san: .clusterfuzzlite/build.sh failed (log $d/build.log)"
    fi
    echo "cfl-test: $san: build.sh built $CFL_TARGETS in $(($(date +%s) - t0)) s"
    for t in $CFL_TARGETS; do
        out=$d/out
        for f in "$t" "${t}_seed_corpus.zip" "$t.options"; do
            [ -s "$out/$f" ] || fail "$san: missing $out/$f"
        done
        [ ! -f "fuzz/$t.dict" ] || [ -s "$out/$t.dict" ] || fail "$san: missing $out/$t.dict"
        mkdir -p "$d/seeds/$t"
        python3 -m zipfile -e "$out/${t}_seed_corpus.zip" "$d/seeds/$t"
        mapfile -t opts < <("$CLI" fuzz-flags "$out/$t.options")
        log=$d/run_$t.log
        if ASAN_OPTIONS=detect_leaks=1 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:silence_unsigned_overflow=1 \
            "$out/$t" "${opts[@]}" -runs=0 "$d/seeds/$t" >"$log" 2>&1; then
            echo "cfl-test: $san: $t: $(find "$d/seeds/$t" -type f | wc -l) seeds, exit 0" \
                "($(grep -a -o 'INITED.*' "$log" | head -n 1))"
        else
            tail -n 30 "$log" >&2
            fail "$san: $t FAILED on its seeds (log $log)"
        fi
    done
done
echo "cfl-test: PASS: $CFL_SANITIZERS builds by .clusterfuzzlite/build.sh, every target clean on its seeds"
