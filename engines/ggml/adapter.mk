# engines/ggml/adapter.mk — adapter 2, ggml's CPU flash attention as the
# npm package node-llama-cpp ships it: the pins, the one list of the
# adapter's sources, and how to fetch ggml (engines/ggml/fetch.sh).
# Read by mk/engines.mk, which builds every adapter the same way.
#
# GGML_DIR=/path uses your own ggml build instead of the fetched one: headers
# in $(GGML_DIR)/include, libraries (libggml-base.so, libggml-cpu*.so) in
# $(GGML_DIR)/lib, bin/ or build/bin.  At run time the adapter looks in
# $GGML_DIR the same way, so one built with -DGGML_BACKEND_DL=ON
# -DGGML_CPU_ALL_VARIANTS=ON or with AddressSanitizer can be swapped in
# without rebuilding attnguard.

ADAPTERS += ggml

# ---- the pins ----
GGML_NLC_VERSION := 3.22.1
GGML_SHA256_BIN := 0d953e1503d5ab4608d8ed5b739132308c81ac05ffeb760d2a7f30e08a9f90e0
GGML_SHA256_SRC := a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
GGML_BUNDLE_COMMIT := de3ff815ea7d559ee917f063901b8986f038abc6

GGML_FETCHED := build/engines/ggml
GGML_DIR ?=
ifeq ($(GGML_DIR),)
GGML_INC := $(GGML_FETCHED)/include
GGML_LIBDIR := $(abspath $(GGML_FETCHED)/lib)
ggml_READY := $(GGML_FETCHED)/.fetched-$(GGML_NLC_VERSION)
else
GGML_INC := $(GGML_DIR)/include
GGML_LIBDIR := $(abspath $(firstword $(dir $(wildcard $(addsuffix /libggml-base.so,\
    $(GGML_DIR)/lib $(GGML_DIR)/bin $(GGML_DIR)/build/bin $(GGML_DIR)))) $(GGML_DIR)/lib))
ggml_READY := $(GGML_INC)/ggml.h
endif

# ---- what mk/engines.mk builds ----
ggml_SRC := engines/ggml/ggml_adapter.c engines/ggml/ggml_cache.c engines/ggml/ggml_check.c \
            engines/ggml/ggml_streams.c engines/ggml/ggml_paths.c \
            engines/ggml/ggml_load.c
ggml_CFLAGS := -DAG_HAVE_GGML=1 -isystem $(GGML_INC) -DAG_GGML_DEFAULT_DIR=\"$(GGML_LIBDIR)\"
ggml_LDLIBS := -ldl -lm

GGML_FETCH_ENV := GGML_OUT=$(GGML_FETCHED) GGML_NLC_VERSION=$(GGML_NLC_VERSION) \
    GGML_SHA256_BIN=$(GGML_SHA256_BIN) GGML_SHA256_SRC=$(GGML_SHA256_SRC) \
    GGML_BUNDLE_COMMIT=$(GGML_BUNDLE_COMMIT)

$(GGML_FETCHED)/.fetched-$(GGML_NLC_VERSION): engines/ggml/fetch.sh engines/ggml/adapter.mk
	@$(GGML_FETCH_ENV) bash engines/ggml/fetch.sh
	@touch $@

ifneq ($(GGML_DIR),)
$(GGML_INC)/ggml.h:
	@echo "engines: GGML_DIR=$(GGML_DIR) has no include/ggml.h" >&2; exit 1
endif

.PHONY: engines-src
engines-src:   # ggml's sources too, in build/engines/ggml/src (reading and triage only)
	@$(GGML_FETCH_ENV) GGML_SRC=1 bash engines/ggml/fetch.sh

# ---- the reported findings, rebuilt against the packaged ggml ----
# Each reports/findings/ggml-NNN.c is a standalone program against ggml's
# public API (upstream builds it with -lggml-base -lggml-cpu).  A run
# "reproduces" when it dies on a signal (an out-of-bounds access hitting a
# guard page) or exits 1 (a wrong result); the target fails when a finding
# no longer reproduces, so an upstream fix shows.  GGML_REPRO_CPU picks the
# CPU variant linked (x64 runs on any x86-64).
GGML_REPRO_CPU ?= x64
GGML_REPRO_CASES ?= 001 002:a 002:b 003:a 003:b 004 005 006
.PHONY: ggml-repro
ENGINES_REPRO += ggml-repro
ggml-repro: $(ggml_READY)
	@mkdir -p build/engines/repro; fail=0; for c in $(GGML_REPRO_CASES); do n=$${c%%:*}; \
	    arg=$$(echo $$c | sed -n 's/^[^:]*:\(.*\)$$/\1/p'); \
	    $(CC) -O1 -g -isystem $(GGML_INC) reports/findings/ggml-$$n.c -o build/engines/repro/ggml-$$n \
	        -L$(GGML_LIBDIR) -l:libggml-cpu-$(GGML_REPRO_CPU).so -lggml-base \
	        -Wl,-rpath,$(GGML_LIBDIR) -lm || exit 1; \
	    (ulimit -c 0; build/engines/repro/ggml-$$n $$arg > build/engines/repro/ggml-$$n$$arg.log 2>&1) 2>/dev/null; rc=$$?; \
	    if [ $$rc -gt 128 ]; then echo "ggml-$$n $$arg: reproduced (signal $$((rc - 128)))"; \
	    elif [ $$rc -eq 1 ]; then echo "ggml-$$n $$arg: reproduced ($$(tail -n 1 build/engines/repro/ggml-$$n$$arg.log))"; \
	    else echo "ggml-$$n $$arg: NOT reproduced (exit $$rc)"; fail=1; fi; \
	done; exit $$fail
