#!/usr/bin/env bash
# build.sh — the OSS-Fuzz / ClusterFuzzLite build of attnguard's fuzz targets.
#
# The base image's `compile` runs this from the source checkout with CC,
# CFLAGS, CXX, CXXFLAGS, LIB_FUZZING_ENGINE and OUT set for the chosen
# sanitizer and engine (`make cfl-test` does the same locally).  All the
# work is `make oss-fuzz` (mk/fuzz.mk): the same rules, source lists and
# per-file ISA flags as the local `make fuzz-build`, so this build cannot
# drift from the one developers run.  It leaves, per target T:
#   $OUT/T  $OUT/T.options  $OUT/T.dict  $OUT/T_seed_corpus.zip
set -euo pipefail
: "${OUT:?OUT is not set}" "${CC:?CC is not set}" "${CXX:?CXX is not set}"
: "${LIB_FUZZING_ENGINE:?LIB_FUZZING_ENGINE is not set}"
make -j"$(nproc)" oss-fuzz
