# mk/campaign.mk — `make fuzz` and `make corpus-merge` (scripts/fuzzkit.py).
#
#   make fuzz                     fuzz the targets on the shipped corpus for
#                                 FUZZ_TIME seconds in total (both cores), print
#                                 progress and a summary (execs, exec/s, cov,
#                                 findings by oracle), write
#                                 build/fuzz-session/summary.json; exit status 1
#                                 on any finding
#   make fuzz INJECT=<bug>        the same on the mutant build (harness check)
#   make fuzz ENGINE=<name>       the targets drive that engine (ATTNGUARD_ENGINE)
#   make fuzz FUZZ_FROM=empty     from nothing: no shipped corpus, a fresh session
#                                 (build/fuzz-session-empty/): what the fuzzer finds
#                                 and reaches on its own (docs/fuzzing.md)
#   make corpus-merge             fold build/fuzz-session/corpus/<target>/ into
#                                 corpus/<target>/ (libFuzzer -merge=1)
#   make repro FILE=<crash> [TARGET=fuzz_plan] [MINIMIZE=1]
#                                 `attnguard repro` with the binaries built first
#
# Knobs: FUZZ_TIME (s, default 60), FUZZ_TARGETS (default: all, mk/fuzz.mk's
# FUZZ_ALL, less other engines' contract targets under ENGINE=), FUZZ_SEED
# (libFuzzer -seed; empty = random), FUZZ_JOBS (targets at a time, default
# 2), FUZZ_WEIGHTS (time shares, default fuzz_attention=2, others 1, and
# under ENGINE=<external> its contract target the others' sum; the nightly
# job uses the same), ENGINE, FUZZ_FROM (empty or unset).  The per-target limits
# (timeout, rss_limit_mb, max_len) are those of fuzz/<target>.options.
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
FUZZ_TARGETS ?= $(if $(ENGINE),$(filter-out $(filter-out $(FZ_CONTRACT),$(filter fuzz_%_contract,$(FUZZ_ALL))),$(FUZZ_ALL)),$(FUZZ_ALL))
FZ_OTHERS = $(filter-out $(FZ_CONTRACT),$(FUZZ_TARGETS))
FUZZ_WEIGHTS ?= fuzz_attention=2$(if $(filter $(FZ_CONTRACT),$(FUZZ_TARGETS)), \
    $(FZ_CONTRACT)=$(if $(FZ_OTHERS),$(words $(FZ_OTHERS) $(filter fuzz_attention,$(FZ_OTHERS))),1))

# A mutant's or another engine's session never mixes with the normal one
# (make report reads build/fuzz-session/summary.json as the normal build's).
FUZZ_SESSION := build/fuzz-session$(if $(INJECT),-inject-$(INJECT))$(if $(ENGINE),-engine-$(ENGINE))$(if $(filter empty,$(FUZZ_FROM)),-empty)
FUZZKIT := ATTNGUARD_CLI='$(CLI)' python3 scripts/fuzzkit.py

ifneq ($(filter corpus-merge,$(MAKECMDGOALS)),)
ifneq ($(INJECT),)
$(error corpus-merge takes no INJECT: a mutant's corpus never goes into corpus/)
endif
endif

.PHONY: fuzz fuzz-ready corpus-merge repro
# First use installs the build's packages (and ENGINE=<external> fetches
# that engine: mk/engines.mk); the binaries build on every core, one line
# per step, and an unchanged tree rebuilds nothing.
fuzz:
	@$(DEPS_FIRST_USE)
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-ready
	@$(FUZZKIT) run --targets '$(strip $(FUZZ_TARGETS))' --time '$(FUZZ_TIME)' \
	    --jobs '$(FUZZ_JOBS)' --weights '$(FUZZ_WEIGHTS)' $(if $(FUZZ_SEED),--seed '$(FUZZ_SEED)') \
	    --bin-dir '$(FZ_OUT)' --root '$(FUZZ_SESSION)' $(if $(INJECT),--inject '$(INJECT)') \
	    $(if $(ENGINE),--engine '$(ENGINE)') $(if $(filter empty,$(FUZZ_FROM)),--empty)

fuzz-ready: fuzz-build $(CLI)

corpus-merge: fuzz-build $(CLI)
	@$(FUZZKIT) merge --targets '$(strip $(FUZZ_TARGETS))' --bin-dir '$(FZ_OUT)' \
	    --into corpus --from '$(FUZZ_SESSION)/corpus' --log-dir '$(FUZZ_SESSION)/logs' \
	    $(if $(ENGINE),--engine '$(ENGINE)')

# INJECT passes through so a mutant's crash reruns on the mutant's binary.
repro: fuzz-build $(CLI)
	@test -n '$(FILE)' || { echo 'usage: make repro FILE=<crash or .case> [TARGET=..] [MINIMIZE=1]' >&2; exit 2; }
	$(if $(ENGINE),ATTNGUARD_ENGINE='$(ENGINE)') $(CLI) repro '$(FILE)' $(if $(TARGET),--target '$(TARGET)') \
	    $(if $(INJECT),--inject '$(INJECT)') $(if $(MINIMIZE),--minimize)
