# mk/cfl.mk — prove the ClusterFuzzLite / OSS-Fuzz build locally (no Docker).
#
#   make cfl-test    runs .clusterfuzzlite/build.sh the way the base image's
#                    `compile` would (CC=clang, CFLAGS with ASan +
#                    fuzzer-no-link, LIB_FUZZING_ENGINE=-fsanitize=fuzzer,
#                    OUT/SRC set) into build/cfl/out, checks that every
#                    target came with its seed corpus zip, dict and options,
#                    then runs each binary over its unzipped seed corpus
#                    (-runs=0: every seed executed once, with the dictionary
#                    and the .options values) and requires exit status 0.
CFL_B := build/cfl
CFL_CFLAGS ?= -O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address -fsanitize=fuzzer-no-link
CFL_ENGINE ?= -fsanitize=fuzzer

.PHONY: cfl-test

cfl-test: deps
	@rm -rf $(CFL_B) && mkdir -p $(CFL_B)/out $(CFL_B)/seeds
	CC=clang CFLAGS='$(CFL_CFLAGS)' LIB_FUZZING_ENGINE='$(CFL_ENGINE)' \
	    OUT=$(CURDIR)/$(CFL_B)/out SRC=$(CURDIR)/$(CFL_B) ATTNGUARD_SRC=$(CURDIR) \
	    WORK=$(CURDIR)/$(CFL_B) bash .clusterfuzzlite/build.sh > $(CFL_B)/build.log 2>&1 \
	    || { tail -n 30 $(CFL_B)/build.log; exit 1; }
	@set -e; n=0; for src in fuzz/fuzz_*.c; do \
	    t=$$(basename $$src .c); out=$(CFL_B)/out; \
	    for f in $$t $${t}_seed_corpus.zip $$t.dict $$t.options; do \
	        test -s $$out/$$f || { echo "cfl-test: missing $$out/$$f"; exit 1; }; \
	    done; \
	    mkdir -p $(CFL_B)/seeds/$$t; \
	    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
	        $$out/$${t}_seed_corpus.zip $(CFL_B)/seeds/$$t; \
	    opts=$$(sed -n 's/^[[:space:]]*\([a-z_]*\)[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/-\1=\2/p' $$out/$$t.options); \
	    if ASAN_OPTIONS=detect_leaks=1 $$out/$$t $$opts -dict=$$out/$$t.dict -runs=0 \
	        $(CFL_B)/seeds/$$t > $(CFL_B)/run_$$t.log 2>&1; then \
	        echo "cfl-test: $$t: $$(ls $(CFL_B)/seeds/$$t | wc -l) seeds, exit 0 ($$(grep -o 'INITED.*' $(CFL_B)/run_$$t.log | head -n 1))"; \
	    else \
	        echo "cfl-test: $$t FAILED (log $(CFL_B)/run_$$t.log)"; tail -n 30 $(CFL_B)/run_$$t.log; exit 1; \
	    fi; n=$$((n + 1)); \
	done; echo "cfl-test: $$n targets built by .clusterfuzzlite/build.sh and clean on their seeds"
