# mk/mutants.mk — the mutant campaign (issue: harness power).
#
#   make mutants                 full: every injected bug, MUTANT_SEEDS seeds, corpus
#                                and (for model_wide_heads) empty corpus, MUTANT_TIME cap;
#                                then the normal build for false alarms; writes
#                                reports/mutants.{md,json}
#   make mutants-quick           the CI slice run by `make test`: a few bugs, one seed,
#                                short caps; writes build/mutants-quick.{md,json}
MUTANT_SEEDS ?= 5
MUTANT_TIME ?= 60
MUTANT_BUGS ?=
MUTANT_JOBS ?= 2
MUTANT_QUICK_BUGS ?= model_wide_heads,out_dtype_sizing,window_off_by_one
MUTANT_QUICK_TIME ?= 20

.PHONY: mutants mutants-quick
mutants: deps
	python3 scripts/mutants.py --seeds $(MUTANT_SEEDS) --time $(MUTANT_TIME) \
	    --jobs $(MUTANT_JOBS) $(if $(MUTANT_BUGS),--bugs $(MUTANT_BUGS))

mutants-quick: deps
	python3 scripts/mutants.py --bugs $(MUTANT_QUICK_BUGS) --seeds 1 \
	    --time $(MUTANT_QUICK_TIME) --modes corpus --jobs $(MUTANT_JOBS) \
	    --out build/mutants-quick
