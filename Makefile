# attnguard — the one entry point.
#
#   make            library, CLI and test binaries (gcc, optimised)
#   make test       dependency check, build, Criterion suites, case check
#   make check-clang   the same sources warning-free with clang
#   make clean
#
# Knobs (each gets its own build folder, so flags never mix):
#   CC=gcc|clang            compiler (gcc is the default)
#   SANITIZER=address,undefined   sanitizer build (e.g. make test SANITIZER=address,undefined)
#   INJECT=<bug>            compile in one historical bug (harness measurement only)
#   DEBUG=1                 ATTN_DEBUG: engine invariants abort

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
OPT ?= -O2
CSTD := -std=c11 -D_GNU_SOURCE
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

# ---- sources ----
# The kernel tables (ISA_SRC, ISA_OFF_SRC, isa_flags_of, ISA_DEFINES and the
# per-object -m flags) are defined once, in mk/isa.mk.
include mk/isa.mk
LIB_SRC := $(filter-out $(ISA_SRC) $(ISA_OFF_SRC),$(wildcard src/*.c src/kernels/*.c)) $(ISA_SRC)
# dispatch.c lists the tables compiled in (src/kernels/kernels_decl.h).
CFLAGS_ALL += $(ISA_DEFINES)
# The harness and the adapters it drives engines through (engines/engines.def);
# mk/engines.mk adds ggml's adapter (ENGINE_SRC) once its headers are fetched.
include mk/engines.mk
HAR_SRC := $(filter-out harness/main.c,$(wildcard harness/*.c)) engines/registry.c \
           $(wildcard engines/attnguard/*.c) $(ENGINE_SRC)
CLI_SRC := harness/main.c
TEST_SRC := $(wildcard tests/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
HAR_OBJ := $(HAR_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/obj/%.o)

LIB := $(B)/libattn.a
HARLIB := $(B)/libattnharness.a
CLI := $(B)/attnguard
TESTBIN := $(B)/tests/attn_tests

.PHONY: all test clean deps check-clang test-suites test-cases test-debug test-debug-run
.DEFAULT_GOAL := all

all: $(LIB) $(HARLIB) $(CLI) $(TESTBIN)

# Rebuild everything of a configuration when its flags change.
$(B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL)' > $@
FORCE:

$(B)/obj/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(ISA_FLAGS) $(DEPFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(HARLIB): $(HAR_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(HARLIB) $(LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(HARLIB) $(LIB) $(LDLIBS_ALL)

$(TESTBIN): $(TEST_OBJ) $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $(TEST_OBJ) $(HARLIB) $(LIB) -lcriterion $(LDLIBS_ALL)

# ---- dependencies (Debian 12 package names) ----
DEPS_PKGS := clang libclang-rt-14-dev libcriterion-dev libomp-dev llvm python3
deps:
	@bash .ci/deps.sh $(DEPS_PKGS)

# ---- tests ----
# Criterion runs every test in its own process; --jobs keeps both cores busy.
CRITERION_JOBS ?= 2
# The main Criterion run comes last so that its synthesis line closes the output.
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory test-cases
	@$(MAKE) --no-print-directory regress
	@$(MAKE) --no-print-directory test-debug
	@$(MAKE) --no-print-directory mutants-quick
	@$(MAKE) --no-print-directory test-peer
	@$(MAKE) --no-print-directory test-suites

# Under sanitizers, LeakSanitizer ignores Criterion 2.4.1's own runner leak
# (tests/lsan.supp); every leak through our code still fails.
TEST_ENV := $(if $(SANITIZER),LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0)

test-suites: $(TESTBIN)
	$(TEST_ENV) $(TESTBIN) --jobs $(CRITERION_JOBS) --short-filename

# The death tests again against an ATTN_DEBUG engine: invariants must abort.
test-debug:
	@$(MAKE) --no-print-directory DEBUG=1 test-debug-run

test-debug-run: $(TESTBIN)
	$(TEST_ENV) $(TESTBIN) --jobs $(CRITERION_JOBS) --short-filename --filter 'debug/*'

# Every shipped case must pass, except those whose `expect` names a refusal
# (the CLI checks the refusal status itself and passes them).
test-cases: $(CLI)
	$(CLI) check corpus/cases/*.case

check-clang:
	@$(MAKE) --no-print-directory all CC=clang EXTRA_CFLAGS=-Werror

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(HAR_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# Feature fragments (fuzzing, campaigns, reports) each own one mk/*.mk file;
# they see every variable above ($(B), $(CFLAGS_ALL), $(LIB), $(HARLIB) ...).
include $(sort $(wildcard mk/*.mk))
