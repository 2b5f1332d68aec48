# mk/nightly.mk — the nightly job (scripts/nightly.sh; .github/workflows/nightly.yml).
#
#   make nightly                 build, fuzz every target (-fork) for NIGHTLY_TIME
#                                seconds in total, merge the corpora, triage the
#                                crashes into build/nightly/findings/, an
#                                empty-corpus discovery session with its reach gate
#                                and the mutants from nothing, mutant quick mode,
#                                coverage, report; build/nightly/artifacts/
#   make nightly NIGHTLY_TIME=60 NIGHTLY_INJECT=model_wide_heads
#                                rehearse the triage path on a mutant
#
# The targets and their time shares are make fuzz's (FUZZ_TARGETS, FUZZ_WEIGHTS);
# ENGINE=<name> fuzzes that engine, with its adapter.mk's libFuzzer flags
# (<name>_FUZZ_FLAGS) as make fuzz adds them.
NIGHTLY_TIME ?= 600
NIGHTLY_FORK ?= 2
NIGHTLY_REPRO ?= 3
NIGHTLY_MIN_TIME ?= 60
NIGHTLY_MUTANTS ?= 1
NIGHTLY_COVERAGE ?= 1
NIGHTLY_REPORT ?= 1
NIGHTLY_DISCOVERY ?= 1
NIGHTLY_DISCOVERY_TIME ?= 600
NIGHTLY_DISCOVERY_MUTANT_TIME ?= 120
NIGHTLY_INJECT ?=
NIGHTLY_SEED_CORPUS ?=

.PHONY: nightly

nightly:
	@NIGHTLY_TIME='$(NIGHTLY_TIME)' NIGHTLY_TARGETS='$(FUZZ_TARGETS)' \
	    NIGHTLY_WEIGHTS='$(FUZZ_WEIGHTS)' NIGHTLY_FORK='$(NIGHTLY_FORK)' \
	    NIGHTLY_REPRO='$(NIGHTLY_REPRO)' NIGHTLY_MIN_TIME='$(NIGHTLY_MIN_TIME)' \
	    NIGHTLY_MUTANTS='$(NIGHTLY_MUTANTS)' NIGHTLY_COVERAGE='$(NIGHTLY_COVERAGE)' \
	    NIGHTLY_REPORT='$(NIGHTLY_REPORT)' NIGHTLY_INJECT='$(NIGHTLY_INJECT)' \
	    NIGHTLY_DISCOVERY='$(NIGHTLY_DISCOVERY)' NIGHTLY_DISCOVERY_TIME='$(NIGHTLY_DISCOVERY_TIME)' \
	    NIGHTLY_DISCOVERY_MUTANT_TIME='$(NIGHTLY_DISCOVERY_MUTANT_TIME)' \
	    NIGHTLY_ENGINE='$(ENGINE)' NIGHTLY_SEED_CORPUS='$(NIGHTLY_SEED_CORPUS)' \
	    NIGHTLY_FLAGS='$($(ENGINE)_FUZZ_FLAGS)' \
	    CLI='$(CLI)' MAKE='$(MAKE)' bash scripts/nightly.sh
