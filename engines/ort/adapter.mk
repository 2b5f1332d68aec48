# engines/ort/adapter.mk — the ONNX Runtime adapter's pins, sources and
# fetch rule, for the Makefile to include (mk/engines.mk does the same for
# ggml).
#
#   ORT_NODE_VERSION, ORT_SHA256   the pinned onnxruntime-node package and the
#                                  sha256 of its npm tarball
#   ORT_SRC                        the adapter's .c files (one list)
#   ORT_READY                      a file that exists once ORT is there: the
#                                  fetch stamp, or $(ORT_DIR)'s library
#   ORT_CFLAGS                     what a build compiling ORT_SRC adds
#   ORT_LDLIBS                     what a program linking them adds
#
# `$(ORT_READY)` fetches: npm pack of the pinned package into
# build/engines/ort/dl, sha256 checked, libonnxruntime.so.1 alone extracted
# into build/engines/ort/lib (engines/ort/fetch.sh).  No headers ship and
# none are needed: the adapter declares the C API entries it calls
# (engines/ort/ort_api.h), so ORT_SRC compiles whether or not ORT has been
# fetched; at run time the adapter dlopens the library and its open() says
# how to get it when it is missing.
#
# ORT_DIR=/path (make and run time) uses another copy: $(ORT_DIR)/lib or
# $(ORT_DIR) holding libonnxruntime.so.1 (an ORT release tarball's layout,
# or a build's output folder).  At run time the adapter reads $ORT_DIR the
# same way, and the engine option dir=<folder> overrides both.

ifndef ORT_ADAPTER_MK_INCLUDED
ORT_ADAPTER_MK_INCLUDED := 1

# ---- the pins: one place ----
ORT_NODE_VERSION := 1.30.0
ORT_SHA256 := 6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75

ORT_FETCHED := build/engines/ort
ORT_DIR ?=
ifeq ($(ORT_DIR),)
ORT_LIBDIR := $(abspath $(ORT_FETCHED)/lib)
ORT_READY := $(ORT_FETCHED)/.fetched-$(ORT_NODE_VERSION)
else
ORT_LIBDIR := $(abspath $(firstword $(dir $(wildcard $(addsuffix /libonnxruntime.so.1,\
    $(ORT_DIR)/lib $(ORT_DIR)))) $(ORT_DIR)/lib))
ORT_READY := $(ORT_LIBDIR)/libonnxruntime.so.1
endif

ORT_SRC := engines/ort/ort_adapter.c engines/ort/ort_check.c engines/ort/ort_cache.c \
           engines/ort/ort_plan.c engines/ort/ort_run.c engines/ort/ort_session.c \
           engines/ort/ort_alloc.c engines/ort/ort_needs.c engines/ort/ort_load.c \
           engines/ort/onnx_proto.c
ORT_CFLAGS := -DAG_HAVE_ORT=1 -Iinclude -DAG_ORT_DEFAULT_DIR=\"$(ORT_LIBDIR)\"
ORT_LDLIBS := -ldl -lpthread -lm

# ---- fetching ----
ORT_FETCH_ENV := ORT_OUT=$(ORT_FETCHED) ORT_NODE_VERSION=$(ORT_NODE_VERSION) \
    ORT_SHA256=$(ORT_SHA256)

.PHONY: engines
engines: $(ORT_READY)

$(ORT_FETCHED)/.fetched-$(ORT_NODE_VERSION): engines/ort/fetch.sh engines/ort/adapter.mk
	@$(ORT_FETCH_ENV) bash engines/ort/fetch.sh
	@touch $@

ifneq ($(ORT_DIR),)
$(ORT_READY):
	@echo "engines: ORT_DIR=$(ORT_DIR) has no libonnxruntime.so.1 (in lib/ or itself)" >&2; exit 1
endif

endif # ORT_ADAPTER_MK_INCLUDED
