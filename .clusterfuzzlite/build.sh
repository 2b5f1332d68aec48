#!/usr/bin/env bash
# build.sh — the OSS-Fuzz / ClusterFuzzLite build of attnguard's fuzz targets.
#
# Contract (set by the base image's `compile`, or by `make cfl-test` locally):
#   CC, CFLAGS          compiler and flags for the chosen sanitizer + engine
#                       instrumentation (e.g. -fsanitize=address,fuzzer-no-link)
#   LIB_FUZZING_ENGINE  what links the fuzzing engine (e.g. -fsanitize=fuzzer)
#   OUT                 where the targets and their files go
#   SRC                 where the sources are ($SRC/attnguard unless ATTNGUARD_SRC)
# Produces, per target T in fuzz/fuzz_*.c:
#   $OUT/T  $OUT/T_seed_corpus.zip (corpus/T/, flat)  $OUT/T.dict  $OUT/T.options
#
# The engine and harness are compiled with $CC $CFLAGS like the targets, so
# sanitizers and coverage see all of them.  OpenMP is used when the compiler
# can link it; otherwise the executor runs the plan's threads one after the
# other (same results, documented in src/executor.c).
set -euo pipefail

: "${CC:?CC is not set}" "${OUT:?OUT is not set}"
CFLAGS=${CFLAGS:-}
LIB_FUZZING_ENGINE=${LIB_FUZZING_ENGINE:?LIB_FUZZING_ENGINE is not set}
top=${ATTNGUARD_SRC:-${SRC:?SRC is not set}/attnguard}
cd "$top"
mkdir -p "$OUT"
work=$(mktemp -d "${WORK:-/tmp}/attnguard-cfl.XXXXXX")
trap 'rm -rf "$work"' EXIT

# -- flags: C11, the same warnings as the Makefile, the kernel tables of mk/isa.mk --
read -r -a cflags <<<"$CFLAGS"
base=(-std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Wshadow -Wvla -Wstrict-prototypes
      -Wno-unknown-pragmas -fno-strict-aliasing)
isa_list=$(make -s --no-print-directory isa-list)
read -r -a isa_defines <<<"$(head -n 1 <<<"$isa_list")"
base+=("${isa_defines[@]}")
omp=()
printf 'int main(void){return 0;}\n' >"$work/omp.c"
if "$CC" -fopenmp "$work/omp.c" -o "$work/omp" >/dev/null 2>&1; then
    omp=(-fopenmp)
fi
echo "build.sh: CC=$CC CFLAGS=$CFLAGS openmp=${omp[*]:-no}"

isa_flags() { # the -m flags mk/isa.mk gives file $1 (none for other files)
    awk -v f="$1" 'NR > 1 && $1 == f { $1 = ""; print }' <<<"$isa_list"
}

# -- the engine and the harness (not the CLI, the tests or the replay driver) --
objs=()
for f in src/*.c src/kernels/*.c harness/*.c; do
    [ "$f" = harness/main.c ] && continue
    o=$work/$(echo "${f%.c}" | tr '/' '_').o
    read -r -a extra <<<"$(isa_flags "$f")"
    "$CC" "${cflags[@]}" "${base[@]}" "${omp[@]}" "${extra[@]}" -c "$f" -o "$o"
    objs+=("$o")
done

# -- the targets: every fuzz/fuzz_*.c --
targets=()
for f in fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    targets+=("$t")
    "$CC" "${cflags[@]}" "${base[@]}" "${omp[@]}" -c "$f" -o "$work/$t.o"
    # The sanitizer runtimes come with $CFLAGS at link time; $LIB_FUZZING_ENGINE
    # brings main().  -lm for the kernels' expf/tanhf.
    read -r -a engine <<<"$LIB_FUZZING_ENGINE"
    "$CC" "${cflags[@]}" "${omp[@]}" "$work/$t.o" "${objs[@]}" "${engine[@]}" -lm -o "$OUT/$t"
    [ -f "fuzz/$t.dict" ] && cp "fuzz/$t.dict" "$OUT/$t.dict"
    [ -f "fuzz/$t.options" ] && cp "fuzz/$t.options" "$OUT/$t.options"
    if [ -d "corpus/$t" ]; then
        rm -f "$OUT/${t}_seed_corpus.zip"
        # flat zip of the seed inputs (python3: `zip` is not in every image)
        python3 - "$OUT/${t}_seed_corpus.zip" "corpus/$t" <<'PY'
import os, sys, zipfile
out, src = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if os.path.isfile(p) and not name.startswith("."):
            z.write(p, arcname=name)
PY
    fi
done
echo "build.sh: built ${targets[*]} into $OUT"
