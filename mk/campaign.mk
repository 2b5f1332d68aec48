# mk/campaign.mk — `make fuzz` and `make corpus-merge` (scripts/fuzzkit.py).
#
#   make fuzz                     fuzz the targets on the shipped corpus for
#                                 FUZZ_TIME seconds in total (both cores), print
#                                 progress and a summary (execs, exec/s, cov,
#                                 findings by oracle), write
#                                 build/fuzz-session/summary.json; exit status 1
#                                 on any finding
#   make fuzz INJECT=<bug>        the same on the mutant build (harness check)
#   make fuzz ENGINE=<name|path>  a session of that engine: the targets that exercise
#                                 it (drive it through ATTNGUARD_ENGINE, or call its
#                                 own API), in a folder keyed by the engine's name
#                                 (and an adapter object's build), which records it
#   make fuzz FUZZ_FROM=empty     from nothing: no shipped corpus, a fresh session
#                                 (build/fuzz-session-empty/): what the fuzzer finds
#                                 and reaches on its own (docs/fuzzing.md)
#   make corpus-merge             fold build/fuzz-session/corpus/<target>/ into
#                                 corpus/<target>/ (libFuzzer -merge=1)
#   make repro FILE=<crash> [TARGET=fuzz_plan] [MINIMIZE=1]
#                                 `attnguard repro` with the binaries built first
#
# Knobs: FUZZ_TIME (s, default 60), FUZZ_TARGETS (default: all, mk/fuzz.mk's
# FUZZ_ALL; under ENGINE=X the targets that exercise X, below), FUZZ_SEED
# (libFuzzer -seed; empty = random), FUZZ_JOBS (targets at a time, default
# 2), FUZZ_WEIGHTS (time shares, default fuzz_attention=2, others 1, and
# under ENGINE=<external> its contract target the others' sum; the nightly
# job uses the same), ENGINE, FUZZ_FROM (empty or unset).  The per-target limits
# (timeout, rss_limit_mb, max_len) are those of fuzz/<target>.options; an
# engine's own additions are its adapter.mk's <engine>_FUZZ_FLAGS (vLLM's:
# -detect_leaks=0, engines/vllm/adapter.mk says why).
FUZZ_TIME ?= 60
FUZZ_SEED ?=
FUZZ_JOBS ?= 2
FUZZ_FROM ?=
ENGINE ?=
# ENGINE=<external engine>: that engine's own contract target is the
# session's main subject, so it gets half of all core-seconds (a weight
# equal to the other targets' together: one whole lane of two, half of the
# one lane of FUZZ_JOBS=1), and other engines' contract targets, which do
# not drive it, stay out.  Alone (FUZZ_TARGETS=fuzz_<e>_contract) it
# weighs 1, not the others' sum of 0.
FZ_CONTRACT := $(filter fuzz_$(ENGINE)_contract,$(FUZZ_ALL))
# One engine per session.  Which engine a target exercises is its .options
# file's `drives` ([attnguard] section, read by `attnguard repro` too): a
# name is the engine whose own API the target calls (fuzz_api: attnguard's,
# a contract target: its engine's); none, the session's engine through the
# ABI (fuzz_attention, fuzz_plan).  ENGINE=X gets the latter and those
# that name X: fuzz_api only for ENGINE=attnguard, or on request
# (FUZZ_TARGETS=...); an adapter object's path names no built-in target.
fz_drives = $(shell sed -n 's/^[[:space:]]*drives[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' fuzz/$1.options)
ifeq ($(origin FUZZ_TARGETS),undefined)
FUZZ_TARGETS := $(if $(ENGINE),$(foreach t,$(FUZZ_ALL),$(if $(filter $(or $(call fz_drives,$t),$(ENGINE)),$(ENGINE)),$t)),$(FUZZ_ALL))
endif
FZ_OTHERS = $(filter-out $(FZ_CONTRACT),$(FUZZ_TARGETS))
FUZZ_WEIGHTS ?= fuzz_attention=2$(if $(filter $(FZ_CONTRACT),$(FUZZ_TARGETS)), \
    $(FZ_CONTRACT)=$(if $(FZ_OTHERS),$(words $(FZ_OTHERS) $(filter fuzz_attention,$(FZ_OTHERS))),1))

# A mutant's or another engine's session never mixes with the normal one
# (make report reads build/fuzz-session/summary.json as the normal build's).
# {engine} is the launcher's to fill: the engine record's key, the engine's
# own name (an adapter object's, with a hash of its bytes: two builds at
# one path keep their corpora apart), never the raw path.
FUZZ_SESSION := build/fuzz-session$(if $(INJECT),-inject-$(INJECT))$(if $(ENGINE),-engine-{engine})$(if $(filter empty,$(FUZZ_FROM)),-empty)
FUZZKIT := ATTNGUARD_CLI='$(CLI)' python3 scripts/fuzzkit.py

ifneq ($(filter corpus-merge,$(MAKECMDGOALS)),)
ifneq ($(INJECT),)
$(error corpus-merge takes no INJECT: a mutant's corpus never goes into corpus/)
endif
endif

.PHONY: fuzz fuzz-ready corpus-merge repro fuzz-targets test-fuzz-targets
# First use installs the build's packages (and ENGINE=<external> fetches
# that engine: mk/engines.mk); the binaries build on every core, one line
# per step, and an unchanged tree rebuilds nothing.
fuzz:
	@$(DEPS_FIRST_USE)
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-ready
	@$(FUZZKIT) run --targets '$(strip $(FUZZ_TARGETS))' --time '$(FUZZ_TIME)' \
	    --jobs '$(FUZZ_JOBS)' --weights '$(FUZZ_WEIGHTS)' $(if $(FUZZ_SEED),--seed '$(FUZZ_SEED)') \
	    --bin-dir '$(FZ_OUT)' --root '$(FUZZ_SESSION)' $(if $(INJECT),--inject '$(INJECT)') \
	    $(if $(ENGINE),--engine '$(ENGINE)') $(if $(filter empty,$(FUZZ_FROM)),--empty) \
	    $(if $($(ENGINE)_FUZZ_FLAGS),--flags='$($(ENGINE)_FUZZ_FLAGS)')

fuzz-ready: fuzz-build $(CLI)

corpus-merge: fuzz-build $(CLI)
	@$(FUZZKIT) merge --targets '$(strip $(FUZZ_TARGETS))' --bin-dir '$(FZ_OUT)' \
	    --into corpus --from '$(FUZZ_SESSION)/corpus' --log-dir '$(FUZZ_SESSION)/logs' \
	    $(if $(ENGINE),--engine '$(ENGINE)')

# INJECT passes through so a mutant's crash reruns on the mutant's binary.
repro: fuzz-build $(CLI)
	@test -n '$(FILE)' || { echo 'usage: make repro FILE=<crash or .case> [TARGET=..] [MINIMIZE=1]' >&2; exit 2; }
	$(CLI) repro '$(FILE)' $(if $(ENGINE),--engine '$(ENGINE)') $(if $(TARGET),--target '$(TARGET)') \
	    $(if $(INJECT),--inject '$(INJECT)') $(if $(MINIMIZE),--minimize)

# The targets `make fuzz` runs with the knobs given (ENGINE=, FUZZ_TARGETS=).
fuzz-targets:
	@echo $(FUZZ_TARGETS)

# A step of make test: the choice above, one engine per session.  A session
# of an adapter object (a path that need not exist: nothing is opened) runs
# the targets that drive it, and not fuzz_api, which tests attnguard's own
# C API; ENGINE=attnguard's and the default session run fuzz_api too.
FZ_MUST_DRIVE := fuzz_attention fuzz_plan
test-fuzz-targets:
	@set -e; chk() { got=" $$($(MAKE) -s --no-print-directory fuzz-targets $$1) "; \
	    for t in $$2; do case "$$got" in *" $$t "*) ;; *) echo "make fuzz $$1: $$t missing from:$$got"; exit 1;; esac; done; \
	    for t in $$3; do case "$$got" in *" $$t "*) echo "make fuzz $$1 runs $$t:$$got"; exit 1;; esac; done; }; \
	    chk ENGINE=/nonexistent/libmine.so '$(FZ_MUST_DRIVE)' fuzz_api; \
	    chk ENGINE=attnguard '$(FZ_MUST_DRIVE) fuzz_api' ''; \
	    chk '' '$(FUZZ_ALL)' ''; \
	    echo "fuzz targets: ENGINE=<adapter path> runs $(FZ_MUST_DRIVE) without fuzz_api; ENGINE=attnguard and the default add it"
