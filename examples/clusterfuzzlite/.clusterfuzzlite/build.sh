#!/usr/bin/env bash
# build.sh — the ClusterFuzzLite / OSS-Fuzz build of attnguard's fuzz
# targets for this engine (the template of attnguard's
# examples/clusterfuzzlite/, filled in for its example engine
# examples/tinyattn/).  The base image's `compile` runs it from this
# repository's root with CC, CFLAGS, CXX, CXXFLAGS, LIB_FUZZING_ENGINE,
# OUT and WORK set for the chosen sanitizer; attnguard's source is in
# $AG_SRC (the Dockerfile puts it in $SRC/attnguard).
#
#   1. attnguard's headers and attnguard.pc into $WORK (make install-headers);
#   2. this engine and its adapter compiled with $CC $CFLAGS: OSS-Fuzz's
#      CFLAGS carry the sanitizer and -fsanitize=fuzzer-no-link, so
#      libFuzzer counts the engine's own branches and the sanitizer watches
#      its memory; one archive;
#   3. `make oss-fuzz FUZZ_LINK_ADAPTER=<archive>` in attnguard's tree: the
#      targets that reach an engine through the ABI (fuzz_attention,
#      fuzz_plan), the adapter linked in as their engine (no
#      ATTNGUARD_ENGINE needed), with their .options, .dict and seed
#      corpus zips in $OUT.
set -euo pipefail
: "${OUT:?OUT is not set}" "${WORK:?WORK is not set}" "${CC:?CC is not set}"
: "${CXX:?CXX is not set}" "${LIB_FUZZING_ENGINE:?LIB_FUZZING_ENGINE is not set}"
AG_SRC=${AG_SRC:-$SRC/attnguard}

# ---- this engine: edit these two lines for yours ----
# Its sources and its adapter's, from this repository's root.
ENGINE_SOURCES=(tinyattn.c tinyattn_kernels.c ta_adapter.c)
# Its own compile flags (ENGINE_DEFINES from the environment adds to them).
# shellcheck disable=SC2206 # ENGINE_DEFINES: words, e.g. "-DPLANTED_MODEL_HEADS=1"
ENGINE_FLAGS=(-std=c11 ${ENGINE_DEFINES:-})

kit=$WORK/attnguard-kit
make -C "$AG_SRC" --no-print-directory install-headers PREFIX="$kit"
export PKG_CONFIG_PATH=$kit/lib/pkgconfig
read -r -a ag_cflags <<< "$(pkg-config --cflags attnguard)"

obj=$WORK/engine-obj
rm -rf "$obj" "$WORK/libengine_fuzz.a"
mkdir -p "$obj"
for f in "${ENGINE_SOURCES[@]}"; do
    o=$obj/$(basename "${f%.*}").o
    # shellcheck disable=SC2086 # CFLAGS is a list of flags
    "$CC" $CFLAGS "${ENGINE_FLAGS[@]}" "${ag_cflags[@]}" -c "$f" -o "$o"
done
ar rcs "$WORK/libengine_fuzz.a" "$obj"/*.o

make -C "$AG_SRC" -j"$(nproc)" --no-print-directory oss-fuzz FUZZ_LINK_ADAPTER="$WORK/libengine_fuzz.a"
