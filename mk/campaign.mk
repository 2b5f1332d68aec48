# mk/campaign.mk — `make fuzz` and `make corpus-merge` (scripts/fuzz.sh).
#
#   make fuzz                     fuzz the targets on the shipped corpus for
#                                 FUZZ_TIME seconds in total (both cores), print
#                                 a summary, write build/fuzz-summary.json;
#                                 exit status 1 on any finding
#   make fuzz INJECT=<bug>        the same on the mutant build (harness check)
#   make corpus-merge             fold build/fuzz-corpus/<target>/ into
#                                 corpus/<target>/ (libFuzzer -merge=1)
#   make repro FILE=<crash> [TARGET=fuzz_plan] [MINIMIZE=1]
#                                 `attnguard repro` with the binaries built first
#
# Knobs: FUZZ_TIME (s, default 60), FUZZ_TARGETS, FUZZ_SEED (libFuzzer -seed;
# empty = random), FUZZ_JOBS (targets at a time, default 2), FUZZ_WEIGHTS
# (time shares, default fuzz_attention=2, others 1).  The binaries come from
# `make fuzz-build` (mk/fuzz.mk).
FUZZ_TIME ?= 60
FUZZ_TARGETS ?= fuzz_plan fuzz_attention fuzz_api
FUZZ_SEED ?=
FUZZ_JOBS ?= 2
FUZZ_WEIGHTS ?= fuzz_attention=2

FUZZ_ENV = FUZZ_TIME='$(FUZZ_TIME)' FUZZ_TARGETS='$(strip $(FUZZ_TARGETS))' \
    FUZZ_SEED='$(FUZZ_SEED)' FUZZ_JOBS='$(FUZZ_JOBS)' FUZZ_WEIGHTS='$(FUZZ_WEIGHTS)' \
    INJECT='$(INJECT)'

ifneq ($(filter corpus-merge,$(MAKECMDGOALS)),)
ifneq ($(INJECT),)
$(error corpus-merge takes no INJECT: a mutant's corpus never goes into corpus/)
endif
endif

.PHONY: fuzz corpus-merge repro
fuzz: fuzz-build
	@$(FUZZ_ENV) bash scripts/fuzz.sh run

corpus-merge: fuzz-build
	@$(FUZZ_ENV) bash scripts/fuzz.sh merge

# INJECT passes through so a mutant's crash reruns on the mutant's binary.
repro: fuzz-build $(CLI)
	@test -n '$(FILE)' || { echo 'usage: make repro FILE=<crash or .case> [TARGET=..] [MINIMIZE=1]' >&2; exit 2; }
	$(CLI) repro '$(FILE)' $(if $(TARGET),--target '$(TARGET)') \
	    $(if $(INJECT),--inject '$(INJECT)') $(if $(MINIMIZE),--minimize)
