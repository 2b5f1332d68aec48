# mk/mutants.mk — the mutant campaign (issue: harness power; scripts/mutants.py,
# which fuzzes through scripts/fuzzkit.py).
#
#   make mutants                 full: every injected bug (src/inject_list.h), each
#                                through its own engine (those built in; ENGINE=<name>:
#                                only its bugs), MUTANT_SEEDS seeds from the shipped
#                                corpus and from an empty one, one core per run, a
#                                MUTANT_TIME cap; then the normal build for false alarms
#                                (MUTANT_SEEDS x modes runs of MUTANT_TIME); writes
#                                build/mutants.{md,json} (time to detect per run, which
#                                input killed it: a shipped one or a new one).  Fails
#                                when a bug escapes any run or the normal build reports
#                                anything.  A bug in a kernel table this CPU lacks is
#                                reported as not measured.
#   make mutants-quick           the CI slice (.ci/run): a few bugs, one seed, short
#                                caps; writes build/mutants-quick.{md,json}
#
# MUTANT_MODES=corpus,empty (either alone to halve the campaign).
MUTANT_SEEDS ?= 3
MUTANT_TIME ?= 600
MUTANT_MODES ?= corpus,empty
MUTANT_BUGS ?=
MUTANT_JOBS ?= 2
# The quick slice: two sizing bugs (the seed bug, the partials' element
# size) and one differential (the causal offset).  Each sits in one or two
# engine files, so its build takes seconds; window_off_by_one (mask.h, six
# kernel files: 211 s of a cold CI run) stays in the full campaign.
# These bugs are the engine's, not a table's, so its fuzzing build has the
# AVX2 table alone, the pool's least (FUZZ_TABLES=avx2: the same build on
# every host; the AVX-512 files were most of it, clang's ASan took 81 s on
# avx512_decode.c alone) and no emulated tables (FUZZ_EMU_TABLES=: SIMDe's
# kernels were a third of the build, 106 s against 157 s, 2026-12-07); the
# full campaign, make fuzz and the nightly job keep every table.
MUTANT_QUICK_BUGS ?= model_wide_heads,out_dtype_sizing,causal_offset
MUTANT_QUICK_TIME ?= 20
MUTANTS := ATTNGUARD_CLI='$(CLI)' python3 scripts/mutants.py \
           $(if $(ENGINE),--engine '$(ENGINE)')

.PHONY: mutants mutants-quick
# The classifier and the options reader are the CLI's (attnguard classify, fuzz-flags).
mutants: $(CLI)
	$(MUTANTS) --seeds $(MUTANT_SEEDS) --time $(MUTANT_TIME) --modes $(MUTANT_MODES) \
	    --jobs $(MUTANT_JOBS) $(if $(MUTANT_BUGS),--bugs $(MUTANT_BUGS))

mutants-quick: $(CLI)
	FUZZ_TABLES=avx2 FUZZ_EMU_TABLES= $(MUTANTS) --bugs $(MUTANT_QUICK_BUGS) --seeds 1 \
	    --time $(MUTANT_QUICK_TIME) --modes corpus,empty --jobs $(MUTANT_JOBS) \
	    --out build/mutants-quick
