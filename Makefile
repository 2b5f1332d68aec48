# attnguard — the one entry point.
#
#   make            library, CLI and test binaries (gcc, optimised)
#   make test       build, Criterion suites, shipped cases, corpus replays,
#                   death tests; one line per step, one verdict [JUNIT=file]
#   make deps       install the Debian packages of the build and the tests
#                   (make test and make fuzz do it on first use) [WITH=...]
#   make check-clang   the same sources warning-free with clang
#   make install    the kit for an engine's own tree [PREFIX= DESTDIR= FUZZ=0]
#                   (mk/install.mk); make uninstall
#   make ci         what .ci/run gates on (test, test-asan, test-malformed,
#                   mutants-quick, test-peer, the external engines' cases),
#                   with one verdict
#   make clean
#
# Knobs (each gets its own build folder, so flags never mix):
#   CC=gcc|clang            compiler (gcc is the default)
#   SANITIZER=address,undefined   sanitizer build (e.g. make test SANITIZER=address,undefined)
#   INJECT=<bug>            compile in one historical bug (harness measurement only)
#   DEBUG=1                 ATTN_DEBUG: engine invariants abort
#   V=1                     print every command (by default one line per step,
#                           and a failed step's command)

ifeq ($(origin CC),default)
CC := gcc
endif
SANITIZER ?=
INJECT ?=
DEBUG ?=

# ---- build folder per configuration ----
comma := ,
CC_NAME := $(notdir $(firstword $(CC)))
VARIANT :=
ifneq ($(CC_NAME),gcc)
VARIANT := $(VARIANT)-$(CC_NAME)
endif
ifneq ($(SANITIZER),)
VARIANT := $(VARIANT)-san-$(subst $(comma),-,$(SANITIZER))
endif
ifneq ($(INJECT),)
VARIANT := $(VARIANT)-inject-$(INJECT)
endif
ifneq ($(DEBUG),)
VARIANT := $(VARIANT)-debug
endif
ifeq ($(VARIANT),)
B := build
else
B := build/v$(VARIANT)
endif

# ---- flags ----
WARN := -Wall -Wextra -Wshadow -Wvla -Wstrict-prototypes -Wformat=2 -Wno-unknown-pragmas
# A DEBUG=1 build is for its invariants (the death tests), not for speed:
# -O0 compiles it in a third of -O2's time (15 s against 34 s on two cores)
ifneq ($(DEBUG),)
OPT ?= -O0
endif
OPT ?= -O2
CSTD := -std=c11 -D_GNU_SOURCE -ffp-contract=off
CFLAGS_ALL := $(CSTD) $(OPT) -g $(WARN) -fopenmp -fno-strict-aliasing $(EXTRA_CFLAGS)
LDLIBS_ALL := -fopenmp -lm -ldl
ifneq ($(SANITIZER),)
SANFLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
ifneq ($(findstring undefined,$(SANITIZER)),)
SANFLAGS += -fsanitize=float-divide-by-zero
endif
CFLAGS_ALL += $(SANFLAGS)
LDLIBS_ALL += $(SANFLAGS)
endif
ifneq ($(INJECT),)
CFLAGS_ALL += -DATTN_INJECT_$(INJECT)=1 -DATTN_INJECT_NAME=\"$(INJECT)\"
endif
ifneq ($(DEBUG),)
CFLAGS_ALL += -DATTN_DEBUG=1
endif
DEPFLAGS = -MMD -MP

# One line per build step ("  CC    src/plan.c"); the step's full command
# only when it fails, or for every step with V=1.  $(call quiet,TAG,COMMAND,WHAT)
# is a whole recipe line.
V ?=
ifeq ($(V),1)
quiet = $2
else
quiet = @printf '  %-5s %s\n' '$1' '$3'; $2 || { s=$$?; printf 'failed: %s\n' '$(subst ','\'',$2)' >&2; exit $$s; }
endif

# ---- sources ----
# The kernel tables (ISA_SRC, ISA_OFF_SRC, isa_flags_of, ISA_DEFINES and the
# per-object -m flags) are defined once, in mk/isa.mk.
include mk/isa.mk
LIB_SRC := $(filter-out $(ISA_SRC) $(ISA_OFF_SRC),$(wildcard src/*.c src/kernels/*.c)) $(ISA_SRC)
# dispatch.c lists the tables compiled in (src/kernels/kernels_decl.h).
CFLAGS_ALL += $(ISA_DEFINES)
# The harness and the adapters it drives engines through (engines/engines.def);
# mk/engines.mk adds every adapter whose engine is fetched (ENGINE_SRC).
include mk/engines.mk
HAR_SRC := $(wildcard harness/util/*.c harness/case/*.c harness/judge/*.c harness/host/*.c) \
           $(filter-out harness/cli/main.c,$(wildcard harness/cli/*.c)) engines/registry.c \
           $(wildcard engines/attnguard/*.c) $(ENGINE_SRC)
CLI_SRC := harness/cli/main.c
# Two suites: the engine's (tests/engine/, with the fixture that drives
# src/ over a harness problem) and the harness's (tests/harness/).
ENGINE_TEST_SRC := $(wildcard tests/engine/*.c) tests/fixture.c
HARNESS_TEST_SRC := $(wildcard tests/harness/*.c)
TEST_SRC := $(ENGINE_TEST_SRC) $(HARNESS_TEST_SRC)

LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o) $(call emu_objs,$(B)/obj,$(EMU_SRC))
HAR_OBJ := $(HAR_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/obj/%.o)
ENGINE_TEST_OBJ := $(ENGINE_TEST_SRC:%.c=$(B)/obj/%.o)
HARNESS_TEST_OBJ := $(HARNESS_TEST_SRC:%.c=$(B)/obj/%.o)

LIB := $(B)/libattn.a
HARLIB := $(B)/libattnharness.a
CLI := $(B)/attnguard
ENGINE_TESTBIN := $(B)/tests/engine_tests
HARNESS_TESTBIN := $(B)/tests/harness_tests
TESTBINS := $(ENGINE_TESTBIN) $(HARNESS_TESTBIN)

.PHONY: all test clean deps check-clang test-suites test-asan test-engine test-harness test-cases test-debug \
        test-debug-run
.DEFAULT_GOAL := all

all: $(LIB) $(HARLIB) $(CLI) $(TESTBINS)

# Rebuild everything of a configuration when its flags change.
$(B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL)' > $@
FORCE:

# B_TAG follows each step's line in a build folder other than build/.
B_TAG := $(if $(VARIANT),  [$(B)])
$(B)/obj/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(call quiet,CC,$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) $(DEPFLAGS) -c $< -o $@,$<$(B_TAG))

# The emulated tables' objects (mk/isa.mk): the same files, another rule.
# In a sanitized build, the twin of a table this CPU runs natively is built
# without ASan (EMU_NOASAN): the native objects, from the same source, are
# instrumented, and the twin is held to their bytes.  Instrumented, those
# twins cost make test-asan 14 s of its engine suite (121 s against 107)
# and a third more compile time on each of their files (avx512_decode.c 72
# s against 51).  The twins of tables the CPU lacks keep ASan: there they
# are the only instrumented run of those kernels.
EMU_NOASAN_SRC := $(if $(findstring address,$(SANITIZER)),$(call emu_src_of,$(filter $(NATIVE_TABLES),$(EMU_TABLES))))
$(foreach f,$(EMU_NOASAN_SRC),$(eval $(B)/obj/emu/$(f:.c=.o): EMU_NOASAN := -fno-sanitize=address))
EMU_CC = $(CC) $(CFLAGS_ALL) $(ISA_NOUBSAN) $(EMU_NOASAN)
$(eval $(call emu_rule,$(B)/obj,EMU_CC,$(B)/.flags))

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

$(HARLIB): $(HAR_OBJ)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

$(CLI): $(CLI_OBJ) $(HARLIB) $(LIB)
	$(call quiet,LD,$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(HARLIB) $(LIB) $(LDLIBS_ALL),$@)

$(ENGINE_TESTBIN): $(ENGINE_TEST_OBJ) $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(call quiet,LD,$(CC) $(CFLAGS_ALL) -o $@ $(ENGINE_TEST_OBJ) $(HARLIB) $(LIB) -lcriterion $(LDLIBS_ALL),$@)

$(HARNESS_TESTBIN): $(HARNESS_TEST_OBJ) $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(call quiet,LD,$(CC) $(CFLAGS_ALL) -o $@ $(HARNESS_TEST_OBJ) $(HARLIB) $(LIB) -lcriterion $(LDLIBS_ALL),$@)

# ---- dependencies (Debian 12 package names) ----
# .ci/deps.sh is the one installer (apt-get as root or through sudo -n, else
# the command to run; it waits while another process holds the package
# lock).  DEPS_PKGS is what the build and the tests need: `make test` and
# `make fuzz` install it on first use.  The optional parts install where they
# are used: DEPS_peer (PyTorch, mk/bench.mk) by make test-peer and
# bench-peer, DEPS_report (Chromium, mk/report.mk) by make report-test, an
# engine (mk/engines.mk) by ENGINE=<name>, ENGINES=... or make engines.
# `make deps` installs DEPS_PKGS ahead of time; WITH=<group>... adds the
# optional ones (make deps WITH="peer report engines": everything, as CI).
DEPS_PKGS := gcc clang libclang-rt-14-dev libcriterion-dev libomp-dev libsimde-dev llvm python3 pkgconf
DEPS_FOR := the build and the tests: compilers, sanitizer and libFuzzer runtimes, Criterion, OpenMP, SIMDe (the emulated AVX-512 tables), llvm-symbolizer, pkg-config (the test of the installed kit)
DEPS_GROUPS := peer report engines
WITH ?=
$(foreach g,$(WITH),$(if $(filter $g,$(DEPS_GROUPS)),,$(error WITH=$g: no such group (one of: $(DEPS_GROUPS)))))
deps:
	@bash .ci/deps.sh --for '$(DEPS_FOR)' $(DEPS_PKGS)
	@$(foreach g,$(filter-out engines,$(WITH)),bash .ci/deps.sh --for '$(DEPS_FOR_$g)' $(DEPS_$g) &&) true
	$(if $(filter engines,$(WITH)),@$(MAKE) --no-print-directory engines)
# What make test and make fuzz run first: silent when all is there.
DEPS_FIRST_USE = bash .ci/deps.sh --quiet --for '$(DEPS_FOR)' $(DEPS_PKGS)

# ---- tests ----
# `make test`: build, the Criterion suites, the shipped cases, the corpus
# replays, the installed kit (an adapter built out of tree from it:
# mk/install.mk) and the death tests against an ATTN_DEBUG engine, each step's
# output in $(B)/test-logs/ and one line per step plus one verdict on the
# terminal (scripts/steps.py).  After the build the four run side by side
# (the suites alone leave a core idle behind their longest tests).  JUNIT=<file> also writes JUnit XML: one
# test case per step plus Criterion's own per-test reports.  The mutant
# slice (make mutants-quick), the peer's selftest (make test-peer) and the
# ClusterFuzzLite build (make cfl-test) are targets of their own; .ci/run
# runs them all.
# Criterion runs every test in its own process; --jobs keeps both cores busy.
CRITERION_JOBS ?= 2
JUNIT ?=
# The steps' builds use every core whether or not make itself got -j (the
# runner is not a make recipe, so no jobserver reaches the sub-makes).
NPROC := $(shell nproc 2>/dev/null || echo 1)
TEST_STEPS = 'build!=$(MAKE) --no-print-directory -j$(NPROC) all $(RP_BINS) && echo "library, CLI, suites and replay drivers up to date in $(B)/"' \
    'layers=python3 scripts/check_layers.py' \
    'engine-suite&=$(MAKE) --no-print-directory test-engine' \
    'harness-suite&=$(MAKE) --no-print-directory test-harness' \
    'cases&=$(MAKE) --no-print-directory test-cases' \
    'regress=$(MAKE) --no-print-directory regress' \
    'fuzz-targets=$(MAKE) --no-print-directory test-fuzz-targets' \
    'readme=$(MAKE) --no-print-directory readme-example' \
    'kit=$(MAKE) --no-print-directory test-kit' \
    'debug=$(MAKE) --no-print-directory -j$(NPROC) test-debug'
test:
	@$(DEPS_FIRST_USE)
	@python3 scripts/steps.py --title 'make test' --logs $(B)/test-logs \
	    $(if $(JUNIT),--junit '$(JUNIT)') $(TEST_STEPS)

# Under sanitizers, LeakSanitizer ignores Criterion 2.4.1's own runner leak
# (tests/lsan.supp); every leak through our code still fails.  LSAN_TLS is
# for clang 14's runtime (Debian 12): its __tls_get_addr interceptor reads
# a malloc'd dynamic TLS block that happens to start 16 bytes into a page
# as a glibc 2.18 header, and LeakSanitizer's tracer then dies at exit on
# the bogus range it scans ("Tracer caught signal 11", after a PASS: issue
# 61).  The block is the OpenMP tool's libomp loads (libarcher, with its
# libstdc++; OMP_TOOL=disabled avoids it too), taken at exit, so whether a
# run meets it depends only on how many small allocations came before.
# Off, dynamic TLS is not scanned: that can only report a leak, not hide one.
LSAN_TLS := intercept_tls_get_addr=0
TEST_ENV := $(if $(SANITIZER),LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0:$(LSAN_TLS))
# Under scripts/steps.py (STEP_XML names the step's JUnit file) the log is
# verbose: every test's line, and each skip with its reason.
CRITERION_ARGS = --jobs $(CRITERION_JOBS) --short-filename \
    $(if $(STEP_XML),--verbose --xml='$(STEP_XML)')

test-suites: test-engine test-harness
# The suites and every shipped case again under ASan+UBSan, in one clang
# build of its own folder (build/v-clang-san) with every table this CPU
# runs natively and every emulated twin, so that AddressSanitizer watches
# the AVX-512 kernels' accesses on any CPU: natively where the CPU has the
# table, else lane by lane through its emulation (EMU_NOASAN above).  The same
# build is CI's clang gate: `all` with -Werror (make check-clang is that
# gate alone, without sanitizers).  Left out: the exhaustive conversion
# sweeps (convert/narrow: every fp32 bit pattern through every conversion
# path, into the test's own arrays, with sentinels for writes past the
# end); sanitized they took a third of the step.  Also the two longest
# grids, kernels/fp8_caches (88 s sanitized, one test, the step's long
# pole) and isa/laguna_mixed_batch (18 s): their inputs' kinds run
# sanitized as shipped cases below, and the grids unsanitized in make test.  clang, because gcc 12's
# ASan compiles the emulated files several times slower, and one build for
# all three because the earlier gcc suites build, clang emulated-table build
# and check-clang build compiled the same sources three times
# (docs/perf-notes.md, "The emulated tables' build cost").
ASAN_MAKE = $(MAKE) --no-print-directory CC=clang SANITIZER=address,undefined \
    EXTRA_CFLAGS=-Werror ISA_TABLES='$(NATIVE_TABLES)' EMU_TABLES='$(EMU_ALL)'
test-asan:
	@$(ASAN_MAKE) -j$(NPROC) all
	@$(ASAN_MAKE) ENGINE_FILTER='!(convert/narrow|kernels/fp8_caches|isa/laguna_mixed_batch)' test-suites
	@$(ASAN_MAKE) test-cases
	@echo "test-asan: the clang build (-Werror) of make all is warning-free; suites and cases pass under ASan+UBSan"
ENGINE_FILTER ?=
test-engine: $(ENGINE_TESTBIN)
	$(TEST_ENV) $(ENGINE_TESTBIN) $(CRITERION_ARGS) $(if $(ENGINE_FILTER),--filter '$(ENGINE_FILTER)')
test-harness: $(HARNESS_TESTBIN)
	$(TEST_ENV) $(HARNESS_TESTBIN) $(CRITERION_ARGS)

# The death tests (tests/engine/test_debug.c, suite debug) again against an
# ATTN_DEBUG engine: invariants must abort.  Their own binary, so the debug
# build compiles no other test file.
DEATH_TESTBIN := $(B)/tests/attn_death_tests
# The death tests abort on the engine's invariants (ATTN_DEBUG), whatever
# the table: no emulated tables in that build (EMU_TABLES=), whose objects
# would be compiled once more for it.
test-debug:
	@$(MAKE) --no-print-directory DEBUG=1 EMU_TABLES= test-debug-run

$(DEATH_TESTBIN): $(B)/obj/tests/engine/test_debug.o $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(HARLIB) $(LIB) -lcriterion $(LDLIBS_ALL)

test-debug-run: $(DEATH_TESTBIN)
	$(TEST_ENV) $(DEATH_TESTBIN) $(CRITERION_ARGS) --filter 'debug/*'

# Every shipped case must pass, except those whose `expect` names a refusal
# (the CLI checks the refusal status itself and passes them).  ENGINE=<name>
# checks them on that engine (fetched first if it is an external one).
test-cases: $(CLI)
	$(TEST_ENV) $(CLI) check $(if $(ENGINE),--engine '$(ENGINE)') corpus/cases/*.case

check-clang:
	@$(MAKE) --no-print-directory all CC=clang EXTRA_CFLAGS=-Werror
	@echo "check-clang: every target of make all builds warning-free with clang -Werror"

# What CI gates on (.ci/run, after make deps): every step runs, one line
# each, one verdict; JUNIT=<file> as for make test.  It fits 15 minutes on
# two cores by leaving to their own jobs what needs minutes of a build of
# its own and guards no engine behaviour: the OSS-Fuzz build tests
# (cfl-test, cfl-example: pr.yml's cfl job, beside this one) and the
# example engine's fuzz walk (example-fuzz: the nightly job; make test's
# kit step checks the same example through the installed kit).
# docs/perf-notes.md, "CI's budget", has each step's time.
CI_STEPS = 'test=$(MAKE) --no-print-directory test $(if $(JUNIT),JUNIT="$$STEP_XML")' \
    'test-asan=$(MAKE) --no-print-directory test-asan' \
    'malformed=$(MAKE) --no-print-directory test-malformed' \
    'mutants-quick=$(MAKE) --no-print-directory -j$(NPROC) mutants-quick' \
    'test-peer=$(MAKE) --no-print-directory test-peer' \
    'ggml-cases=$(MAKE) --no-print-directory test-cases ENGINE=ggml' \
    'ort-cases=$(MAKE) --no-print-directory test-cases ENGINE=ort' \
    'vllm-compiles=$(MAKE) --no-print-directory vllm-compiles' \
    'lint-workflows=$(MAKE) --no-print-directory lint-workflows'
.PHONY: ci
ci:
	@python3 scripts/steps.py --title ci --logs build/ci-logs \
	    $(if $(JUNIT),--junit '$(JUNIT)') $(CI_STEPS)

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(HAR_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# Feature fragments (fuzzing, campaigns, reports) each own one mk/*.mk file;
# they see every variable above ($(B), $(CFLAGS_ALL), $(LIB), $(HARLIB) ...).
# mk/fuzz.mk comes first: its FUZZ_ALL (the fuzz targets) appears in the
# others' rules, which make expands as it reads them.
include mk/fuzz.mk $(filter-out mk/fuzz.mk,$(sort $(wildcard mk/*.mk)))
