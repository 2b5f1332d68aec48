# mk/engines.mk — external engines the harness can guard (docs/engines.md).
#
#   make engines         fetch ggml as node-llama-cpp ships it (pinned, sha256
#                        checked) into build/engines/ggml/{lib,include}; also
#                        run by `make deps`
#   make engines-src     the same plus ggml's sources in build/engines/ggml/src
#                        (for reading and triage only)
#   make engines-build   the ggml adapter: $(B)/engines/libag_ggml.a (link it
#                        in, with -ldl) and $(B)/engines/libag_ggml.so (an
#                        adapter ag_engine_find() opens by path)
#   make engines-test    the adapter's own check against an fp64 loop
#                        (engines/ggml/ggml_test.c), on every CPU variant
#   make engines-fuzz    contract fuzzing of ggml's flash attention
#                        (engines/ggml/fuzz_ggml_contract.c) for
#                        ENGINES_FUZZ_TIME seconds (default 60); artifacts in
#                        build/engines-fuzz/
#
# GGML_DIR=/path uses your own ggml build instead of the fetched one: headers
# in $(GGML_DIR)/include, libraries (libggml-base.so, libggml-cpu*.so) in
# $(GGML_DIR)/lib, bin/ or build/bin.  At run time the adapter looks in
# $GGML_DIR the same way, so one built with -DGGML_BACKEND_DL=ON
# -DGGML_CPU_ALL_VARIANTS=ON or with AddressSanitizer can be swapped in
# without rebuilding attnguard.

# Included early by the Makefile (it adds to HAR_SRC); the guard keeps the
# closing include of mk/*.mk from reading it twice.
ifndef ENGINES_MK_INCLUDED
ENGINES_MK_INCLUDED := 1

# ---- the pins: one place ----
GGML_NLC_VERSION := 3.22.1
GGML_SHA256_BIN := 0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0
GGML_SHA256_SRC := a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
GGML_BUNDLE_COMMIT := de3ff815ea7d559ee917f063901b8986f038abc6

GGML_FETCHED := build/engines/ggml
GGML_DIR ?=
ifeq ($(GGML_DIR),)
GGML_INC := $(GGML_FETCHED)/include
GGML_LIBDIR := $(abspath $(GGML_FETCHED)/lib)
GGML_READY := $(GGML_FETCHED)/.fetched-$(GGML_NLC_VERSION)
else
GGML_INC := $(GGML_DIR)/include
GGML_LIBDIR := $(abspath $(firstword $(dir $(wildcard $(addsuffix /libggml-base.so,\
    $(GGML_DIR)/lib $(GGML_DIR)/bin $(GGML_DIR)/build/bin $(GGML_DIR)))) $(GGML_DIR)/lib))
GGML_READY := $(GGML_INC)/ggml.h
endif

GGML_FETCH_ENV := GGML_OUT=$(GGML_FETCHED) GGML_NLC_VERSION=$(GGML_NLC_VERSION) \
    GGML_SHA256_BIN=$(GGML_SHA256_BIN) GGML_SHA256_SRC=$(GGML_SHA256_SRC) \
    GGML_BUNDLE_COMMIT=$(GGML_BUNDLE_COMMIT)

# ggml is a built-in engine (engines/engines.def, AG_HAVE_GGML) of every
# harness binary once its headers are here; until then `--engine ggml` says
# how to fetch it.  Its adapter loads the libraries at run time (dlopen).
# ENGINE_CFLAGS: what every build of the harness (this one, the fuzz and
# OSS-Fuzz builds) adds for them.
ENGINE_SRC :=
ENGINE_CFLAGS :=
ifneq ($(wildcard $(GGML_READY)),)
ENGINE_SRC += engines/ggml/ggml_adapter.c engines/ggml/ggml_cache.c engines/ggml/ggml_check.c \
              engines/ggml/ggml_load.c
ENGINE_CFLAGS += -DAG_HAVE_GGML=1 -Iinclude -isystem $(GGML_INC) \
                 -DAG_GGML_DEFAULT_DIR=\"$(GGML_LIBDIR)\"
endif
CFLAGS_ALL += $(ENGINE_CFLAGS)

.PHONY: engines engines-src engines-build engines-test engines-fuzz engines-fuzz-build
engines: $(GGML_READY)

# `make deps` brings the engines too (the lead's deps target stays as is).
deps: engines

$(GGML_FETCHED)/.fetched-$(GGML_NLC_VERSION): engines/ggml/fetch.sh mk/engines.mk
	@$(GGML_FETCH_ENV) bash engines/ggml/fetch.sh
	@touch $@

engines-src:
	@$(GGML_FETCH_ENV) GGML_SRC=1 bash engines/ggml/fetch.sh

ifneq ($(GGML_DIR),)
$(GGML_INC)/ggml.h:
	@echo "engines: GGML_DIR=$(GGML_DIR) has no include/ggml.h" >&2; exit 1
endif

# ---- the adapter ----
GG_B := $(B)/engines
GG_SRC := engines/ggml/ggml_adapter.c engines/ggml/ggml_cache.c engines/ggml/ggml_check.c \
    engines/ggml/ggml_load.c
GG_OBJ := $(GG_SRC:%.c=$(GG_B)/obj/%.o)
GG_FLAGS := -Iinclude -isystem $(GGML_INC) -fPIC -DAG_GGML_DEFAULT_DIR=\"$(GGML_LIBDIR)\"
GG_LIBA := $(GG_B)/libag_ggml.a
GG_SO := $(GG_B)/libag_ggml.so
GG_TEST := $(GG_B)/ggml_test
GG_LDLIBS := -ldl -lm

$(GG_B)/obj/%.o: %.c $(B)/.flags | $(GGML_READY)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(GG_FLAGS) $(DEPFLAGS) -c $< -o $@

$(GG_B)/obj/engines/ggml/ggml_adapter_so.o: engines/ggml/ggml_adapter.c $(B)/.flags | $(GGML_READY)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(GG_FLAGS) -DAG_GGML_SHARED_OBJECT=1 $(DEPFLAGS) -c $< -o $@

$(GG_LIBA): $(GG_OBJ)
	rm -f $@ && ar rcs $@ $^

$(GG_SO): $(GG_B)/obj/engines/ggml/ggml_adapter_so.o $(filter-out %/ggml_adapter.o,$(GG_OBJ))
	$(CC) $(CFLAGS_ALL) -shared -o $@ $^ $(GG_LDLIBS)

$(GG_TEST): $(GG_B)/obj/engines/ggml/ggml_test.o $(GG_LIBA)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(GG_LDLIBS)

engines-build: $(GG_LIBA) $(GG_SO) $(GG_TEST)

engines-test: $(GG_TEST)
	$(GG_TEST)

# ---- contract fuzzing of ggml itself ----
GGF_B := build/engines-fuzz
GGF_BIN := $(GGF_B)/fuzz_ggml_contract
GGF_SAN := -fsanitize=fuzzer,address,undefined -fsanitize=float-divide-by-zero \
    -fno-sanitize-recover=all -fno-omit-frame-pointer
ENGINES_FUZZ_TIME ?= 60
# Contract classes already reported (reports/findings/ggml-001..003): not run,
# so a campaign finds what is new.  FUZZ_GGML_SKIP= (empty) runs them all.
FUZZ_GGML_SKIP ?= q-not-f32,v-rows-differ-from-k,hq-not-multiple-of-v-heads,mask-row-shorter-than-n-kv,mask-fewer-rows-than-queries
ENGINES_FUZZ_ARGS ?= -max_len=64 -len_control=0 -use_value_profile=1

$(GGF_BIN): engines/ggml/fuzz_ggml_contract.c engines/ggml/ggml_load.c engines/ggml/ggml_load.h \
    mk/engines.mk | $(GGML_READY)
	@mkdir -p $(@D)
	clang $(CSTD) -O1 -g $(WARN) $(GG_FLAGS) $(GGF_SAN) -o $@ \
	    engines/ggml/fuzz_ggml_contract.c engines/ggml/ggml_load.c $(GG_LDLIBS)

engines-fuzz-build: $(GGF_BIN)

# detect_leaks=0: a GGML_ASSERT caught by longjmp leaves ggml's disposable
# threadpool behind by design (the fuzzer counts those aborts, not leaks).
engines-fuzz: $(GGF_BIN)
	@mkdir -p $(GGF_B)/corpus $(GGF_B)/artifacts
	cd $(GGF_B) && FUZZ_GGML_SKIP='$(FUZZ_GGML_SKIP)' ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	    ./fuzz_ggml_contract -timeout=25 -rss_limit_mb=2560 \
	    -max_total_time=$(ENGINES_FUZZ_TIME) -artifact_prefix=artifacts/ \
	    -print_final_stats=1 $(ENGINES_FUZZ_ARGS) corpus

-include $(GG_OBJ:.o=.d) $(GG_B)/obj/engines/ggml/ggml_test.d

# ---- the reported findings, rebuilt against the packaged ggml ----
# Each reports/findings/ggml-NNN.c is a standalone program against ggml's
# public API (upstream builds it with -lggml-base -lggml-cpu).  A run
# "reproduces" when it dies on a signal (an out-of-bounds access hitting a
# guard page) or exits 1 (a wrong result); the target fails when a finding
# no longer reproduces, so an upstream fix shows.  GGML_REPRO_CPU picks the
# CPU variant linked (x64 runs on any x86-64).
GGML_REPRO_CPU ?= x64
GGML_REPRO_CASES ?= 001 002:a 002:b 003:a 003:b 004 005
.PHONY: engines-repro
engines-repro: $(GGML_READY)
	@mkdir -p $(GG_B)/repro; fail=0; for c in $(GGML_REPRO_CASES); do n=$${c%%:*}; \
	    arg=$$(echo $$c | sed -n 's/^[^:]*:\(.*\)$$/\1/p'); \
	    $(CC) -O1 -g -isystem $(GGML_INC) reports/findings/ggml-$$n.c -o $(GG_B)/repro/ggml-$$n \
	        -L$(GGML_LIBDIR) -l:libggml-cpu-$(GGML_REPRO_CPU).so -lggml-base \
	        -Wl,-rpath,$(GGML_LIBDIR) -lm || exit 1; \
	    (ulimit -c 0; $(GG_B)/repro/ggml-$$n $$arg > $(GG_B)/repro/ggml-$$n$$arg.log 2>&1) 2>/dev/null; rc=$$?; \
	    if [ $$rc -gt 128 ]; then echo "ggml-$$n $$arg: reproduced (signal $$((rc - 128)))"; \
	    elif [ $$rc -eq 1 ]; then echo "ggml-$$n $$arg: reproduced ($$(tail -n 1 $(GG_B)/repro/ggml-$$n$$arg.log))"; \
	    else echo "ggml-$$n $$arg: NOT reproduced (exit $$rc)"; fail=1; fi; \
	done; exit $$fail

# ---- one indicative timing through the ABI (the benchmark proper is bench/) ----
GG_TIME := $(GG_B)/ggml_timing
$(GG_TIME): $(GG_B)/obj/engines/ggml/ggml_timing.o $(GG_LIBA)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(GG_LDLIBS)

.PHONY: engines-time
engines-time: $(GG_TIME)
	$(GG_TIME) $(ENGINES_TIME_ARGS)

endif # ENGINES_MK_INCLUDED
