# mk/fuzz.mk — the fuzz targets, their replay drivers and the byte corpus.
#
#   make fuzz-build [INJECT=<bug>]   libFuzzer binaries (clang, ASan+UBSan) in
#                                    build/fuzz[-inject-<bug>]/, laid out like
#                                    OSS-Fuzz's $OUT: <target>, <target>.options,
#                                    <target>.dict
#   make oss-fuzz                    the same rules with OSS-Fuzz's environment
#                                    ($CC $CFLAGS $CXX $CXXFLAGS $LIB_FUZZING_ENGINE
#                                    $OUT): what .clusterfuzzlite/build.sh runs;
#                                    adds <target>_seed_corpus.zip
#   make oss-fuzz FUZZ_LINK_ADAPTER=<archive or objects>
#                                    an engine's own fuzz build (the template
#                                    examples/clusterfuzzlite/): only the targets
#                                    that reach an engine through the ABI
#                                    (FUZZ_ABI), with that adapter and engine
#                                    linked in, the targets' default engine
#                                    (engines/registry.c)
#   make regress [CC=..] [SANITIZER=..]
#                                    replay drivers (no libFuzzer) built with the
#                                    current CC/SANITIZER, run over corpus/<target>/
#   make corpus                      corpus/<target>/<case>.bin from corpus/cases/*.case
#                                    (adds and overwrites, never deletes: crash
#                                    inputs kept in corpus/<target>/ stay)
#
# Sees the Makefile's variables ($(B), $(CFLAGS_ALL), $(LIB), $(HARLIB),
# $(LIB_SRC), $(HAR_SRC), $(CSTD), $(WARN), $(OPT)) and mk/isa.mk's; owns
# FUZZ_ALL and the FZ_* / RP_* ones.

# The one list of fuzz targets: every fuzz/fuzz_*.c.  Everything else (the
# launcher, coverage, cfl-test, nightly) gets it from here.  A target named
# fuzz_<engine>_contract drives that external engine's own API and is in
# the list when the engine is built in (mk/engines.mk: ENGINES_BUILTIN).
FUZZ_ALL := $(sort $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c)))
fz_engine_of = $(patsubst fuzz_%_contract,%,$1)
FUZZ_ALL := $(foreach t,$(FUZZ_ALL),$(if $(filter fuzz_%_contract,$t),$(if $(filter \
    $(call fz_engine_of,$t),$(subst $(comma), ,$(ENGINES_BUILTIN))),$t),$t))
# The targets that reach an engine through the ABI only, so that any
# adapter can drive them: all but attnguard's own API's and the built-in
# engines' contract targets.  The installed kit's (mk/install.mk), and an
# engine's own fuzz build's (FUZZ_LINK_ADAPTER below).
FUZZ_ABI := $(filter-out fuzz_api fuzz_%_contract,$(FUZZ_ALL))

# The names the CLI knows (harness/cli/known.c: `repro --target bogus`
# names the name instead of asking for a build): every fuzz/fuzz_*.c,
# built in or not, and the bugs of src/inject_list.h.  Only that object
# gets them on its command line, and it is rebuilt when either list
# changes ($(B)/.known holds what it was built with).
FUZZ_KNOWN := $(sort $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c)))
INJECT_KNOWN := $(shell sed -n 's/^ *X.\([A-Za-z0-9_]*\),.*/\1/p' src/inject_list.h)
KNOWN_DEFS := -DAG_FUZZ_TARGETS=\"$(subst $(space),$(comma),$(FUZZ_KNOWN))\" \
              -DAG_INJECT_BUGS=\"$(subst $(space),$(comma),$(strip $(INJECT_KNOWN)))\"
$(B)/obj/harness/cli/known.o: ISA_FLAGS += $(KNOWN_DEFS)
$(B)/obj/harness/cli/known.o: $(B)/.known
$(B)/.known: FORCE
	@mkdir -p $(@D)
	@echo '$(KNOWN_DEFS)' | cmp -s - $@ || echo '$(KNOWN_DEFS)' > $@

# ---- the fuzzing build, in OSS-Fuzz's terms ----
# FZ_CC/FZ_CFLAGS compile, FZ_LD/FZ_LDFLAGS + FZ_ENGINE link, FZ_OUT receives
# the binaries and their files, FZ_B the objects.  Local values by default;
# `make oss-fuzz` (FZ_OSS=1) takes them from the environment, so the
# ClusterFuzzLite build and the local one are the same rules.
# FUZZ_LINK_ADAPTER: an engine's adapter and engine, compiled by the
# engine's own build with the same $CC $CFLAGS, linked into FUZZ_ABI's
# targets (their AG_ENGINE_ENTRY pulled in from an archive); the other
# targets would not drive it.
FUZZ_LINK_ADAPTER ?=
FZ_TARGETS := $(if $(FUZZ_LINK_ADAPTER),$(FUZZ_ABI),$(FUZZ_ALL))
FZ_LINK_ADAPTER := $(if $(FUZZ_LINK_ADAPTER),-Wl$(comma)--undefined=attnguard_engine $(FUZZ_LINK_ADAPTER))

ifeq ($(FZ_OSS),1)
FZ_CC := $(CC)
FZ_SANCOV := $(CFLAGS)
FZ_LD := $(CXX)
FZ_LDFLAGS := $(CXXFLAGS)
FZ_ENGINE := $(LIB_FUZZING_ENGINE)
FZ_OUT := $(OUT)
FZ_B := $(if $(WORK),$(WORK)/attnguard-obj,build/oss-fuzz)
FZ_INJECT :=
else
FZ_CC := clang
FZ_SANCOV := -fsanitize=address,undefined -fsanitize=float-divide-by-zero \
             -fno-sanitize-recover=all -fno-omit-frame-pointer
FZ_LD := clang++
FZ_LDFLAGS := $(FZ_SANCOV)
FZ_ENGINE := -fsanitize=fuzzer
FZ_OUT := build/fuzz$(if $(INJECT),-inject-$(INJECT))
FZ_B := $(FZ_OUT)
FZ_INJECT := $(if $(INJECT),-DATTN_INJECT_$(INJECT)=1 -DATTN_INJECT_NAME=\"$(INJECT)\")
endif

# OpenMP where the compiler can link it (OSS-Fuzz's clang may lack libomp;
# the executor then runs the plan's threads one after the other).  Probed
# once, on first use.
FZ_HASH := \#
FZ_OPENMP = $(eval FZ_OPENMP := $(shell printf '$(FZ_HASH)include <omp.h>\nint main(void){return omp_get_max_threads() < 0;}\n' | \
    $(FZ_CC) -fopenmp -x c - -o /dev/null >/dev/null 2>&1 && echo -fopenmp))$(FZ_OPENMP)

# The kernel tables compiled in: locally those of the build this CPU runs
# (mk/isa.mk's NATIVE_TABLES; FUZZ_TABLES=... to choose), since a fuzzer
# reaches only what runs here and the AVX-512 kernels are the slowest files
# of a sanitized build; OSS-Fuzz's build (make oss-fuzz) compiles them all.
# The engines' flags (ENGINE_CFLAGS) are mk/engines.mk's.
ifeq ($(FZ_OSS),1)
FUZZ_TABLES := $(ISA_TABLES)
else
FUZZ_TABLES ?= $(filter $(ISA_TABLES),$(NATIVE_TABLES))
endif
FZ_OFF_SRC := $(foreach t,$(filter-out $(FUZZ_TABLES),$(KERNEL_TABLES)),$(call isa_files,$t))
FZ_LIB_SRC := $(filter-out $(FZ_OFF_SRC),$(LIB_SRC))
# The emulated tables (mk/isa.mk) are in every fuzzing build, OSS-Fuzz's
# too: on a host without AVX-512 they are the only way the fuzzers reach
# those kernels, and on one with it each is held to its native twin bit for
# bit.  FUZZ_EMU_TABLES= leaves them out (make mutants-quick).
FUZZ_EMU_TABLES ?= $(EMU_ALL)
FZ_EMU_SRC := $(call emu_src_of,$(FUZZ_EMU_TABLES))
# The kernel tables a fuzzing build reaches on this CPU, natively or through
# an emulated twin (scripts/mutants.py: a bug in a table missing here cannot
# be found here).  The portable table is in every build.
.PHONY: fuzz-tables
fuzz-tables:
	@echo ref $(sort $(FUZZ_TABLES) $(FUZZ_EMU_TABLES))
FZ_CFLAGS = $(CSTD) -g $(WARN) -fno-strict-aliasing \
            $(call isa_defines_of,$(FUZZ_TABLES) $(call emu_tables_of,$(FUZZ_EMU_TABLES))) $(ENGINE_CFLAGS) \
            $(FZ_OPENMP) $(if $(filter 1,$(FZ_OSS)),,$(OPT) $(EXTRA_CFLAGS)) $(FZ_INJECT) $(FZ_SANCOV)

# libFuzzer's edge counters without comparison tracing: what the kernels
# and the other per-element loops get below, and what the kit offers an
# engine's kernels (attnguard.pc's fuzz_cflags_edges, mk/install.mk).
FZ_EDGES := -fsanitize-coverage=inline-8bit-counters,pc-table

# Coverage feedback only where it guides (local build; OSS-Fuzz's $CFLAGS
# decide there): the engine's control code gets full libFuzzer
# instrumentation (edges + comparisons); the kernels' inner loops and the
# case decoder get edge counters only (comparison tracing costs ~5x there
# for nothing: the structure-aware mutator edits fields, and it runs the
# decoder's maps to encode); the rest of the harness (reference, value
# generator, guard) is not instrumented: its loops would dominate the run
# time and its branches say nothing about the engine.
ifneq ($(FZ_OSS),1)
FZ_COV := -fsanitize=fuzzer-no-link
$(FZ_B)/obj/harness/%.o: FZ_COV :=
$(FZ_B)/obj/harness/case/case_bytes.o: FZ_COV := $(FZ_EDGES)
$(FZ_B)/obj/src/kernels/%.o: FZ_COV := $(FZ_EDGES)
# Edges only, too, where the engine loops per element or per work item:
# ggml's mask builder (every cell of every query row), the cache writers
# (every element), the planner's partition and the layout (every item, a
# heap over threads), the executor (every item and piece).  Their
# comparisons were a third of fuzz_plan's time; the validation code that
# decides refusals (builder.c, plan_size.c) keeps them.
FZ_EDGES_ONLY := engines/ggml/ggml_cache.c src/reshape.c src/plan.c src/layout.c src/executor.c
$(FZ_EDGES_ONLY:%.c=$(FZ_B)/obj/%.o): FZ_COV := $(FZ_EDGES)
# The harness's hot loops (value generator, fp64 reference, comparison)
# build without sanitizers here: they are trusted code that the suites
# check under ASan+UBSan (make test-asan), and sanitized they took half
# of an exec.  The engine's reads of their buffers stay checked: ASan's
# allocator puts redzones around every malloc whoever calls it.
FZ_TRUSTED := harness/case/values.c harness/judge/ref.c harness/judge/ref_range.c \
              harness/judge/ref_problem.c harness/judge/compare.c
$(FZ_TRUSTED:%.c=$(FZ_B)/obj/%.o): FZ_COV := -fno-sanitize=all
endif

# A target's sources: fuzz/<target>.c, its entry points, and what it
# links from the targets' helper archive (libfixture.a; each target pulls
# only the objects it references).  fuzz_api drives attnguard's own API
# over harness problems with the engine tests' fixture (tests/fixture.c).
# A contract target fuzz_<engine>_contract has its rooms in fuzz/<engine>/
# (case, run, judge) and shares fuzz/contract/ with the other contract
# targets: every .c in those folders, so the folders are the one list
# (the fuzzing build, the replay drivers and mk/coverage.mk all read
# FZ_FIX_SRC).
fz_rooms_of = $(if $(filter fuzz_%_contract,$1),$(wildcard fuzz/contract/*.c fuzz/$(call fz_engine_of,$1)/*.c))
FZ_ROOM_SRC := $(sort $(foreach t,$(FUZZ_ALL),$(call fz_rooms_of,$t)))
FZ_FIX_SRC := tests/fixture.c $(FZ_ROOM_SRC)
FZ_LIB_OBJ := $(FZ_LIB_SRC:%.c=$(FZ_B)/obj/%.o)
FZ_HAR_OBJ := $(HAR_SRC:%.c=$(FZ_B)/obj/%.o)
FZ_FIX_OBJ := $(FZ_FIX_SRC:%.c=$(FZ_B)/obj/%.o)
FZ_TGT_OBJ := $(FZ_TARGETS:%=$(FZ_B)/obj/fuzz/%.o)
FZ_EMU_OBJ := $(call emu_objs,$(FZ_B)/obj,$(FZ_EMU_SRC))

# A mutant differs from the normal build only in the sources that mention
# its ATTN_INJECT_<bug>, themselves or through a header (the normal build's
# .d files list the headers): only those are compiled with the define, every
# other object is the normal build's (build/fuzz/, built first by the
# fuzz-build recipe below).  A mutant whose bug sits in one engine file
# builds in seconds instead of minutes.
FZ_NORMAL := build/fuzz
ifneq ($(FZ_INJECT),)
ifeq ($(FZ_INJECT_STAGE),2)
# $(call fz_affected,<sources>,<object subfolder: empty, or emu/>)
fz_affected = $(shell for s in $1; do d=$(FZ_NORMAL)/obj/$2$${s%.c}.d; \
    if [ ! -f "$$d" ] || grep -sqw 'ATTN_INJECT_$(INJECT)' $$s $$(grep -o '[^ :\\]*\.[ch]' "$$d"); \
    then echo $$s; fi; done)
fz_objs = $(foreach s,$1,$(if $(filter $s,$2),$(FZ_B),$(FZ_NORMAL))/obj/$(s:.c=.o))
FZ_INJECT_SRC := $(call fz_affected,$(FZ_LIB_SRC) $(HAR_SRC) $(FZ_FIX_SRC) $(FUZZ_ALL:%=fuzz/%.c))
FZ_LIB_OBJ := $(call fz_objs,$(FZ_LIB_SRC),$(FZ_INJECT_SRC))
FZ_HAR_OBJ := $(call fz_objs,$(HAR_SRC),$(FZ_INJECT_SRC))
FZ_FIX_OBJ := $(call fz_objs,$(FZ_FIX_SRC),$(FZ_INJECT_SRC))
FZ_TGT_OBJ := $(call fz_objs,$(FZ_TARGETS:%=fuzz/%.c),$(FZ_INJECT_SRC))
FZ_EMU_INJECT_SRC := $(call fz_affected,$(FZ_EMU_SRC),emu/)
FZ_EMU_OBJ := $(foreach s,$(FZ_EMU_SRC),$(if $(filter $s,$(FZ_EMU_INJECT_SRC)),$(FZ_B),$(FZ_NORMAL))/obj/emu/$(s:.c=.o))
FZ_INJECT_SRC += $(FZ_EMU_INJECT_SRC:%=emu:%)
endif
endif
FZ_FILES := $(foreach t,$(FZ_TARGETS),$(FZ_OUT)/$t $(FZ_OUT)/$t.options \
              $(if $(wildcard fuzz/$t.dict),$(FZ_OUT)/$t.dict))

# Per object, as mk/isa.mk does for the main build: an ISA file's -m flags
# (SIMD kernels: ASan without UBSan, see mk/isa.mk's ISA_NOUBSAN), and
# ATTN_KERNEL_SIDE for every file under src/kernels/.
$(foreach f,$(ISA_SRC),$(if $(call isa_flags_of,$f),$(eval $(FZ_B)/obj/$(f:.c=.o): ISA_FLAGS := $(call isa_flags_of,$f) -fno-sanitize=undefined$(comma)float-divide-by-zero)))
$(foreach f,$(filter src/kernels/%,$(LIB_SRC)),$(eval $(FZ_B)/obj/$(f:.c=.o): ISA_FLAGS += -DATTN_KERNEL_SIDE=1))

.PHONY: fuzz-build oss-fuzz regress corpus

ifneq ($(FZ_INJECT),)
ifneq ($(FZ_INJECT_STAGE),2)
fuzz-build:
	@$(MAKE) --no-print-directory fuzz-build INJECT=
	@$(MAKE) --no-print-directory fuzz-build FZ_INJECT_STAGE=2
else
fuzz-build: $(FZ_FILES)
	@echo "fuzz-build: mutant $(INJECT): recompiled $(or $(FZ_INJECT_SRC),nothing) with ATTN_INJECT_$(INJECT)"
endif
else
fuzz-build: $(FZ_FILES)
endif

# OSS-Fuzz's `compile` sets CC, CFLAGS, CXX, CXXFLAGS, LIB_FUZZING_ENGINE, OUT.
oss-fuzz:
	@test -n "$$OUT" && test -n "$$LIB_FUZZING_ENGINE" && test -n "$$CXX" || \
	    { echo 'oss-fuzz: needs OUT, CC, CFLAGS, CXX, CXXFLAGS and LIB_FUZZING_ENGINE (OSS-Fuzz environment)' >&2; exit 2; }
	@$(MAKE) --no-print-directory FZ_OSS=1 fuzz-build $(FZ_TARGETS:%=$$OUT/%_seed_corpus.zip)

$(FZ_B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(FZ_CC) $(FZ_CFLAGS) $(FZ_LD) $(FZ_LDFLAGS) $(FZ_ENGINE) cov3' | cmp -s - $@ || \
	    echo '$(FZ_CC) $(FZ_CFLAGS) $(FZ_LD) $(FZ_LDFLAGS) $(FZ_ENGINE) cov3' > $@

$(FZ_B)/obj/%.o: %.c $(FZ_B)/.flags
	@mkdir -p $(@D)
	$(call quiet,CC,$(FZ_CC) $(FZ_CFLAGS) $(FZ_COV) $(ISA_FLAGS) $(DEPFLAGS) -c $< -o $@,$<  [$(FZ_B)])

# The emulated objects: mk/isa.mk's rule with this build's compiler and
# flags, the kernels' coverage (edge counters only, locally) and ASan
# without UBSan, as for the native SIMD files.
FZ_EMU_CC = $(FZ_CC) $(FZ_CFLAGS) $(if $(filter 1,$(FZ_OSS)),,$(FZ_EDGES)) \
            -fno-sanitize=undefined,float-divide-by-zero
$(eval $(call emu_rule,$(FZ_B)/obj,FZ_EMU_CC,$(FZ_B)/.flags))

$(FZ_B)/libattn.a: $(FZ_LIB_OBJ) $(FZ_EMU_OBJ)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

$(FZ_B)/libattnharness.a: $(FZ_HAR_OBJ)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

$(FZ_B)/libfixture.a: $(FZ_FIX_OBJ)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

# Linked with the C++ driver: the fuzzing engine's runtime is C++.
FZ_LIBS := $(FZ_B)/libfixture.a $(FZ_B)/libattnharness.a $(FZ_B)/libattn.a
$(FZ_TARGETS:%=$(FZ_OUT)/%): $(FZ_OUT)/%: $(FZ_B)/libfixture.a $(FZ_B)/libattnharness.a \
    $(FZ_B)/libattn.a $(FZ_TGT_OBJ) $(FUZZ_LINK_ADAPTER)
	@mkdir -p $(@D)
	$(call quiet,LD,$(FZ_LD) $(FZ_LDFLAGS) $(FZ_OPENMP) -o $@ $(filter %/fuzz/$*.o,$(FZ_TGT_OBJ)) $(FZ_LINK_ADAPTER) $(FZ_LIBS) $(FZ_ENGINE) $(ENGINE_LDFLAGS) -lm,$@)

$(FZ_OUT)/%.options: fuzz/%.options
	@mkdir -p $(@D)
	@cp $< $@

$(FZ_OUT)/%.dict: fuzz/%.dict
	@mkdir -p $(@D)
	@cp $< $@

# A flat zip of the shipped corpus (python3's zipfile: `zip` is not in
# every image).
$(FZ_OUT)/%_seed_corpus.zip: $(FZ_OUT)/% FORCE
	rm -f $@ && python3 -m zipfile -c $@ $(wildcard corpus/$*/*)

# ---- replay drivers: the current CC/SANITIZER configuration ($(B)) ----
RP_BINS := $(FUZZ_ALL:%=$(B)/replay/replay_%)

$(RP_BINS): $(B)/replay/replay_%: $(B)/obj/fuzz/%.o $(B)/obj/fuzz/replay.o $(B)/libfixture.a \
    $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(call quiet,LD,$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL),$@)

$(B)/libfixture.a: $(FZ_FIX_SRC:%.c=$(B)/obj/%.o)
	@mkdir -p $(@D)
	$(call quiet,AR,rm -f $@ && ar rcs $@ $^,$@)

# Each target's whole corpus, with the limits of its .options file; a
# finding aborts its replay and fails make.  The per-input lines go to a
# log; on failure its end (the input's name, the oracle's line, the
# sanitizer report) is shown.
regress: $(RP_BINS) $(CLI)
	@for t in $(FUZZ_ALL); do \
	    log=$(B)/replay/regress_$$t.log; \
	    flags=$$($(CLI) fuzz-flags fuzz/$$t.options) || exit 1; \
	    if $(B)/replay/replay_$$t $$flags corpus/$$t > $$log 2>&1; then \
	        echo "regress $$t: $$(tail -n 1 $$log)"; \
	    else \
	        echo "regress $$t: FAILED (log: $$log)"; tail -n 40 $$log; exit 1; \
	    fi; \
	done

# ---- corpus: the shipped cases in byte form ----
$(B)/tools/encode_case: $(B)/obj/fuzz/encode_case.o $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(call quiet,LD,$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL),$@)

# fuzz_api inputs are [op arg n_lo n_hi] + case bytes: each case gets op 0
# (allocation failure at allocation 5); the handcrafted api-*.bin inputs
# below cover every other op on the default small case (empty case bytes).
FZ_API_PREFIX := 00000500
FZ_API_HAND := 0000010000 0000090000 0000300000 01000000 01110000 01170000 \
               01220000 01250000 01230000 012b0000 02000000 02050000 020d0000 \
               02070000 020f0900 020f2100 020f5100 0301 0300 0408 0401 0500 \
               0507 0600 0603 0604 07
corpus: $(B)/tools/encode_case
	@for t in $(FUZZ_ALL); do mkdir -p corpus/$$t; done
	@set -e; for f in corpus/cases/*.case; do \
	    n=$$(basename "$$f" .case); \
	    $(B)/tools/encode_case "$$f" "corpus/fuzz_plan/$$n.bin"; \
	    cp "corpus/fuzz_plan/$$n.bin" "corpus/fuzz_attention/$$n.bin"; \
	    $(B)/tools/encode_case -p $(FZ_API_PREFIX) "$$f" "corpus/fuzz_api/$$n.bin"; \
	done
	@set -e; for h in $(FZ_API_HAND); do \
	    python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(sys.argv[1]))' \
	        $$h corpus/fuzz_api/api-$$h.bin; \
	done
	@echo "corpus: $$(ls corpus/cases/*.case | wc -l) cases -> $(FUZZ_ALL:%=corpus/%/)"

-include $(FZ_LIB_OBJ:.o=.d) $(FZ_EMU_OBJ:.o=.d) $(FZ_HAR_OBJ:.o=.d) $(FZ_FIX_OBJ:.o=.d) $(FUZZ_ALL:%=$(FZ_B)/obj/fuzz/%.d) \
    $(FUZZ_ALL:%=$(B)/obj/fuzz/%.d) $(FZ_ROOM_SRC:%.c=$(B)/obj/%.d) $(B)/obj/fuzz/replay.d \
    $(B)/obj/fuzz/encode_case.d
