# mk/coverage.mk — clang source-based coverage of the engine (issue: nightly
# reports).
#
#   make coverage      builds, with -fprofile-instr-generate -fcoverage-mapping,
#                      the engine + harness, the replay driver of every fuzz
#                      target, the CLI and the Criterion suites into
#                      build/coverage/; replays the corpora (and the work
#                      corpora fuzzing left in build/), checks the shipped
#                      cases, runs the suites; merges the profiles with
#                      llvm-profdata-14 and writes
#                        build/coverage/html/index.html   (llvm-cov-14 show)
#                        build/coverage/summary.json      (src/ totals, for the report)
#                      and prints the src/ line and branch coverage.
#
# Knobs: COVERAGE_CORPUS (extra corpus roots holding <target>/ folders,
# default: make fuzz's and the nightly job's when present),
# COVERAGE_TESTS=0 (skip the Criterion suites), COVERAGE_ISAS (kernel tables
# to replay the corpora on; default: the portable one and mk/isa.mk's
# KERNEL_TABLES, those this CPU runs).
COV_B := build/coverage
COV_CC := clang
COV_TOOLS_SUFFIX ?= -14
COV_FLAGS := -fprofile-instr-generate -fcoverage-mapping
COV_CFLAGS := $(CSTD) -O1 -g $(WARN) -fopenmp -fno-strict-aliasing $(COV_FLAGS) \
              $(ISA_DEFINES) $(ENGINE_CFLAGS)
COV_LDLIBS := $(COV_FLAGS) -fopenmp -lm $(ENGINE_LDFLAGS)
COVERAGE_CORPUS ?= $(wildcard build/fuzz-session/corpus build/nightly/corpus)
COVERAGE_TESTS ?= 1
COVERAGE_ISAS ?= ref $(KERNEL_TABLES)
COV_TARGETS := $(FUZZ_ALL)

COV_LIB_OBJ := $(LIB_SRC:%.c=$(COV_B)/obj/%.o)
COV_HAR_OBJ := $(HAR_SRC:%.c=$(COV_B)/obj/%.o)
COV_ENGINE_TEST_OBJ := $(ENGINE_TEST_SRC:%.c=$(COV_B)/obj/%.o)
COV_HARNESS_TEST_OBJ := $(HARNESS_TEST_SRC:%.c=$(COV_B)/obj/%.o)
COV_REPLAYS := $(COV_TARGETS:%=$(COV_B)/bin/replay_%)
COV_CLI := $(COV_B)/bin/attnguard
COV_TESTBINS := $(COV_B)/bin/engine_tests $(COV_B)/bin/harness_tests

$(foreach f,$(ISA_SRC),$(if $(call isa_flags_of,$f),$(eval $(COV_B)/obj/$(f:.c=.o): ISA_FLAGS := $(call isa_flags_of,$f))))
$(foreach f,$(filter src/kernels/%,$(LIB_SRC)),$(eval $(COV_B)/obj/$(f:.c=.o): ISA_FLAGS += -DATTN_KERNEL_SIDE=1))

.PHONY: coverage coverage-build

$(COV_B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(COV_CC) $(COV_CFLAGS)' | cmp -s - $@ || echo '$(COV_CC) $(COV_CFLAGS)' > $@

$(COV_B)/obj/%.o: %.c $(COV_B)/.flags
	@mkdir -p $(@D)
	$(COV_CC) $(COV_CFLAGS) $(ISA_FLAGS) $(DEPFLAGS) -c $< -o $@

$(COV_B)/libattn.a: $(COV_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(COV_B)/libattnharness.a: $(COV_HAR_OBJ)
	rm -f $@ && ar rcs $@ $^

$(COV_B)/libfixture.a: $(FZ_FIX_SRC:%.c=$(COV_B)/obj/%.o)
	rm -f $@ && ar rcs $@ $^

$(COV_REPLAYS): $(COV_B)/bin/replay_%: $(COV_B)/obj/fuzz/%.o $(COV_B)/obj/fuzz/replay.o \
                $(COV_B)/libfixture.a $(COV_B)/libattnharness.a $(COV_B)/libattn.a
	@mkdir -p $(@D)
	$(COV_CC) -o $@ $^ $(COV_LDLIBS)

$(COV_CLI): $(COV_B)/obj/harness/cli/main.o $(COV_B)/libattnharness.a $(COV_B)/libattn.a
	@mkdir -p $(@D)
	$(COV_CC) -o $@ $^ $(COV_LDLIBS)

$(COV_B)/bin/engine_tests: $(COV_ENGINE_TEST_OBJ) $(COV_B)/libattnharness.a $(COV_B)/libattn.a
	@mkdir -p $(@D)
	$(COV_CC) -o $@ $^ -lcriterion $(COV_LDLIBS)

$(COV_B)/bin/harness_tests: $(COV_HARNESS_TEST_OBJ) $(COV_B)/libattnharness.a $(COV_B)/libattn.a
	@mkdir -p $(@D)
	$(COV_CC) -o $@ $^ -lcriterion $(COV_LDLIBS)

coverage-build: $(COV_REPLAYS) $(COV_CLI) $(if $(filter 1,$(COVERAGE_TESTS)),$(COV_TESTBINS))

coverage:
	@$(MAKE) --no-print-directory coverage-build
	@COV_B='$(COV_B)' COV_TARGETS='$(COV_TARGETS)' COVERAGE_CORPUS='$(COVERAGE_CORPUS)' \
	    COVERAGE_TESTS='$(COVERAGE_TESTS)' COVERAGE_ISAS='$(COVERAGE_ISAS)' \
	    COV_TOOLS_SUFFIX='$(COV_TOOLS_SUFFIX)' bash scripts/coverage.sh

-include $(COV_LIB_OBJ:.o=.d) $(COV_HAR_OBJ:.o=.d) $(COV_ENGINE_TEST_OBJ:.o=.d) \
    $(COV_HARNESS_TEST_OBJ:.o=.d) \
    $(COV_TARGETS:%=$(COV_B)/obj/fuzz/%.d) $(COV_B)/obj/fuzz/replay.d $(COV_B)/obj/harness/cli/main.d
