# mk/fuzz.mk — the fuzz targets, their replay drivers and the byte corpus.
#
#   make fuzz-build [INJECT=<bug>]   libFuzzer binaries (clang, ASan+UBSan) in
#                                    build/fuzz[-inject-<bug>]/<target>
#   make regress [CC=..] [SANITIZER=..]
#                                    replay drivers (no libFuzzer) built with the
#                                    current CC/SANITIZER, run over corpus/<target>/
#   make corpus                      corpus/<target>/<case>.bin from corpus/cases/*.case
#                                    (adds and overwrites, never deletes: crash
#                                    inputs kept in corpus/<target>/ stay)
#
# Sees the Makefile's variables ($(B), $(CFLAGS_ALL), $(LIB), $(HARLIB),
# $(LIB_SRC), $(HAR_SRC), $(CSTD), $(WARN), $(OPT)); owns only the FZ_* ones.

FZ_TARGETS := fuzz_plan fuzz_attention fuzz_api

# ---- libFuzzer build: its own folder, clang, fuzzer instrumentation ----
FZ_CC := clang
FZ_B := build/fuzz$(if $(INJECT),-inject-$(INJECT))
FZ_SAN := -fsanitize=address,undefined -fsanitize=float-divide-by-zero \
          -fno-sanitize-recover=all -fno-omit-frame-pointer
# The ISA tables compiled in (ISA_DEFINES) are mk/isa.mk's.
FZ_CFLAGS := $(CSTD) $(OPT) -g $(WARN) -fopenmp -fno-strict-aliasing $(FZ_SAN) \
             $(ISA_DEFINES) $(ENGINE_CFLAGS) $(EXTRA_CFLAGS)
ifneq ($(INJECT),)
FZ_CFLAGS += -DATTN_INJECT_$(INJECT)=1 -DATTN_INJECT_NAME=\"$(INJECT)\"
endif
FZ_LDFLAGS := $(FZ_SAN) -fsanitize=fuzzer -fopenmp -lm

# Coverage feedback only where it guides: the engine's control code and the
# case decoder get full libFuzzer instrumentation (edges + comparisons); the
# kernels' inner loops get edge counters only (comparison tracing there
# costs ~5x for nothing); the rest of the harness (reference, value
# generator, guard) is sanitized but not instrumented: its loops would
# dominate the run time and its branches say nothing about the engine.
FZ_COV := -fsanitize=fuzzer-no-link
$(FZ_B)/obj/harness/%.o: FZ_COV :=
$(FZ_B)/obj/harness/case_bytes.o: FZ_COV := -fsanitize=fuzzer-no-link
$(FZ_B)/obj/src/kernels/%.o: FZ_COV := -fsanitize-coverage=inline-8bit-counters,pc-table

FZ_LIB_OBJ := $(LIB_SRC:%.c=$(FZ_B)/obj/%.o)
FZ_HAR_OBJ := $(HAR_SRC:%.c=$(FZ_B)/obj/%.o)
FZ_BINS := $(FZ_TARGETS:%=$(FZ_B)/%)

# SIMD kernels: ASan without UBSan, see the Makefile's ISA_NOUBSAN.
$(foreach f,$(ISA_SRC),$(eval $(FZ_B)/obj/$(f:.c=.o): ISA_FLAGS := $(call isa_flags_of,$(f)) -fno-sanitize=undefined$(comma)float-divide-by-zero))

.PHONY: fuzz-build regress corpus

fuzz-build: $(FZ_BINS)

$(FZ_B)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(FZ_CC) $(FZ_CFLAGS) cov2' | cmp -s - $@ || echo '$(FZ_CC) $(FZ_CFLAGS) cov2' > $@

$(FZ_B)/obj/%.o: %.c $(FZ_B)/.flags
	@mkdir -p $(@D)
	$(FZ_CC) $(FZ_CFLAGS) $(FZ_COV) $(ISA_FLAGS) $(DEPFLAGS) -c $< -o $@

$(FZ_B)/libattn.a: $(FZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FZ_B)/libattnharness.a: $(FZ_HAR_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FZ_BINS): $(FZ_B)/%: $(FZ_B)/obj/fuzz/%.o $(FZ_B)/libattnharness.a $(FZ_B)/libattn.a
	$(FZ_CC) -o $@ $^ $(FZ_LDFLAGS)

# ---- replay drivers: the current CC/SANITIZER configuration ($(B)) ----
RP_BINS := $(FZ_TARGETS:%=$(B)/replay/replay_%)
REGRESS_TIMEOUT ?= 25

$(RP_BINS): $(B)/replay/replay_%: $(B)/obj/fuzz/%.o $(B)/obj/fuzz/replay.o $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# Each target's whole corpus; a finding aborts its replay and fails make.
# The per-input lines go to a log; on failure its end (the input's name,
# the oracle's line, the sanitizer report) is shown.
regress: $(RP_BINS)
	@for t in $(FZ_TARGETS); do \
	    log=$(B)/replay/regress_$$t.log; \
	    if $(B)/replay/replay_$$t -timeout=$(REGRESS_TIMEOUT) corpus/$$t > $$log 2>&1; then \
	        echo "regress $$t: $$(tail -n 1 $$log)"; \
	    else \
	        echo "regress $$t: FAILED (log: $$log)"; tail -n 40 $$log; exit 1; \
	    fi; \
	done

# ---- corpus: the shipped cases in byte form ----
$(B)/tools/encode_case: $(B)/obj/fuzz/encode_case.o $(HARLIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# fuzz_api inputs are [op arg n_lo n_hi] + case bytes: each case gets op 0
# (allocation failure at allocation 5); the handcrafted api-*.bin inputs
# below cover every other op on the default small case (empty case bytes).
FZ_API_PREFIX := 00000500
FZ_API_HAND := 0000010000 0000090000 0000300000 01000000 01110000 01170000 \
               01220000 01250000 01230000 012b0000 02000000 02050000 020d0000 \
               02070000 020f0900 020f2100 020f5100 0301 0300 0408 0401 0500 \
               0507 0600 0603 0604 07
corpus: $(B)/tools/encode_case
	@for t in $(FZ_TARGETS); do mkdir -p corpus/$$t; done
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
	@echo "corpus: $$(ls corpus/cases/*.case | wc -l) cases -> $(FZ_TARGETS:%=corpus/%/)"

-include $(FZ_LIB_OBJ:.o=.d) $(FZ_HAR_OBJ:.o=.d) $(FZ_TARGETS:%=$(FZ_B)/obj/fuzz/%.d) \
    $(FZ_TARGETS:%=$(B)/obj/fuzz/%.d) $(B)/obj/fuzz/replay.d $(B)/obj/fuzz/encode_case.d
