# engines/ort/adapter.mk — adapter 3, ONNX Runtime's CPU attention
# (com.microsoft.GroupQueryAttention and the ONNX Attention op) as the npm
# package onnxruntime-node ships it: the pins, the one list of the
# adapter's sources, and how to fetch the library (engines/ort/fetch.sh).
# Read by mk/engines.mk, which builds every adapter the same way.
#
# No headers ship and none are needed: the adapter declares the C API
# entries it calls (engines/ort/ort_api.h) and dlopens the library at run
# time; its open() says how to get it when it is missing.  The fetch: npm
# pack of the pinned package into build/engines/ort/dl, sha256 checked,
# libonnxruntime.so.1 alone extracted into build/engines/ort/lib.
#
# ORT_DIR=/path (make and run time) uses another copy: $(ORT_DIR)/lib or
# $(ORT_DIR) holding libonnxruntime.so.1 (an ORT release tarball's layout,
# or a build's output folder).  The engine option dir=<folder> overrides.

ADAPTERS += ort

# ---- the pins: one place ----
ORT_NODE_VERSION := 1.30.0
ORT_SHA256 := 6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75

ORT_FETCHED := build/engines/ort
ORT_DIR ?=
ifeq ($(ORT_DIR),)
ORT_LIBDIR := $(abspath $(ORT_FETCHED)/lib)
ort_READY := $(ORT_FETCHED)/.fetched-$(ORT_NODE_VERSION)
else
ORT_LIBDIR := $(abspath $(firstword $(dir $(wildcard $(addsuffix /libonnxruntime.so.1,\
    $(ORT_DIR)/lib $(ORT_DIR)))) $(ORT_DIR)/lib))
ort_READY := $(ORT_LIBDIR)/libonnxruntime.so.1
endif

ort_SRC := engines/ort/ort_adapter.c engines/ort/ort_check.c engines/ort/ort_cache.c \
          engines/ort/ort_plan.c engines/ort/ort_run.c engines/ort/ort_session.c \
          engines/ort/ort_alloc.c engines/ort/ort_needs.c engines/ort/ort_load.c \
          engines/ort/ort_paths.c engines/ort/ort_rotary.c \
          engines/ort/onnx_proto.c
ort_CFLAGS := -DAG_HAVE_ORT=1 -DAG_ORT_DEFAULT_DIR=\"$(ORT_LIBDIR)\"
ort_LDLIBS := -ldl -lpthread -lm

# ---- fetching ----
ORT_FETCH_ENV := ORT_OUT=$(ORT_FETCHED) ORT_NODE_VERSION=$(ORT_NODE_VERSION) \
    ORT_SHA256=$(ORT_SHA256)

$(ORT_FETCHED)/.fetched-$(ORT_NODE_VERSION): engines/ort/fetch.sh engines/ort/adapter.mk
	@$(ORT_FETCH_ENV) bash engines/ort/fetch.sh
	@touch $@

ifneq ($(ORT_DIR),)
$(ort_READY):
	@echo "engines: ORT_DIR=$(ORT_DIR) has no libonnxruntime.so.1 (in lib/ or itself)" >&2; exit 1
endif


# ---- the reported findings, rebuilt against the pinned ORT ----
# Each reports/findings/ort-NNN.c is a standalone program on ORT's public C
# API (the table positions of engines/ort/ort_api.h, the model encoder of
# engines/ort/onnx_proto.c compiled in, reports/findings/ort-repro.h); it
# dlopens the library as the adapter does.  A run "reproduces" when it dies
# on a signal (a fault, a NULL written through, a division by zero) or
# exits 1 (a wrong result); the target fails when a finding no longer
# reproduces, so an upstream fix shows.
ORT_REPRO_CASES ?= 001 002 003 004 005 006
.PHONY: ort-repro
ENGINES_REPRO += ort-repro
ort-repro: $(ort_READY)
	@mkdir -p build/engines/repro; fail=0; for n in $(ORT_REPRO_CASES); do \
	    $(CC) -O1 -g -Wall -Wextra reports/findings/ort-$$n.c -o build/engines/repro/ort-$$n -ldl || exit 1; \
	    (ulimit -c 0; build/engines/repro/ort-$$n $(ORT_LIBDIR)/libonnxruntime.so.1 \
	        > build/engines/repro/ort-$$n.log 2>&1; exit $$?) 2>/dev/null; rc=$$?; \
	    if [ $$rc -gt 128 ]; then echo "ort-$$n: reproduced (signal $$((rc - 128)))"; \
	    elif [ $$rc -eq 1 ]; then echo "ort-$$n: reproduced ($$(tail -n 1 build/engines/repro/ort-$$n.log))"; \
	    else echo "ort-$$n: NOT reproduced (exit $$rc: $$(tail -n 1 build/engines/repro/ort-$$n.log))"; fail=1; fi; \
	done; exit $$fail
