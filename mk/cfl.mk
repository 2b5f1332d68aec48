# mk/cfl.mk — prove the ClusterFuzzLite / OSS-Fuzz build locally (no Docker).
#
#   make cfl-test    for each sanitizer of .clusterfuzzlite/project.yaml, runs
#                    .clusterfuzzlite/build.sh the way the base image's
#                    `compile` would (CC=clang, CXX=clang++, CFLAGS/CXXFLAGS
#                    with the sanitizer + -fsanitize=fuzzer-no-link,
#                    LIB_FUZZING_ENGINE=-fsanitize=fuzzer, OUT, WORK) into
#                    build/cfl/<sanitizer>/ (out/ starts empty; the objects
#                    in work/ are rebuilt as make sees fit), checks that every target of
#                    FUZZ_ALL came with its options, dict and seed corpus zip,
#                    then runs each binary once over its unzipped seeds with
#                    the flags of its .options file (-runs=0) and requires
#                    exit status 0.  scripts/cfl_test.sh does the work.
#   make cfl-example the template for an engine's own repository
#                    (examples/clusterfuzzlite/) on the example engine
#                    (examples/tinyattn/), for each sanitizer of the
#                    template's project.yaml, in the same emulated image:
#                    its build.sh builds the targets that reach an engine
#                    through the ABI with the engine linked in and
#                    instrumented; each runs clean on its seeds with no
#                    ATTNGUARD_ENGINE, and the planted build is caught.
#                    Shares cfl-test's work folders (the harness's objects
#                    are built once).  scripts/cfl_example.sh does the work.
#
# The sanitizer flags are OSS-Fuzz's (infra/base-images/base-clang); the
# sanitizers themselves are read from project.yaml.
CFL_B := build/cfl
CFL_COMMON := -O1 -fno-omit-frame-pointer -gline-tables-only \
              -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=fuzzer-no-link
CFL_UBSAN_CHECKS := array-bounds,bool,builtin,enum,function,integer-divide-by-zero,null,object-size,return,returns-nonnull-attribute,shift,signed-integer-overflow,unreachable,vla-bound,vptr
CFL_SAN_address := -fsanitize=address -fsanitize-address-use-after-scope
CFL_SAN_undefined := -fsanitize=$(CFL_UBSAN_CHECKS),unsigned-integer-overflow \
                     -fno-sanitize-recover=$(CFL_UBSAN_CHECKS)
cfl_sanitizers_of = $(shell sed -n 's/^[[:space:]]*-[[:space:]]*\([a-z]*\)[[:space:]]*$$/\1/p' $1)
CFL_SANITIZERS ?= $(call cfl_sanitizers_of,.clusterfuzzlite/project.yaml)
CFL_TEMPLATE := examples/clusterfuzzlite
CFL_EXAMPLE_SANITIZERS ?= $(call cfl_sanitizers_of,$(CFL_TEMPLATE)/.clusterfuzzlite/project.yaml)

.PHONY: cfl-test cfl-example
cfl-test: $(CLI)
	@CFL_B='$(CFL_B)' CFL_SANITIZERS='$(CFL_SANITIZERS)' CFL_TARGETS='$(FUZZ_ALL)' CLI='$(CLI)' \
	    CFL_COMMON='$(CFL_COMMON)' $(foreach s,$(CFL_SANITIZERS),CFL_SAN_$s='$(CFL_SAN_$s)') \
	    bash scripts/cfl_test.sh

cfl-example: $(CLI)
	@CFL_B='$(CFL_B)' CFL_SANITIZERS='$(CFL_EXAMPLE_SANITIZERS)' CFL_TARGETS='$(FUZZ_ABI)' CLI='$(CLI)' \
	    CFL_COMMON='$(CFL_COMMON)' $(foreach s,$(CFL_EXAMPLE_SANITIZERS),CFL_SAN_$s='$(CFL_SAN_$s)') \
	    EXAMPLE=examples/tinyattn TEMPLATE='$(CFL_TEMPLATE)' bash scripts/cfl_example.sh
