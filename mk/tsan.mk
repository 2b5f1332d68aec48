# mk/tsan.mk — data races: the attention target's replay driver built with
# clang's ThreadSanitizer, run over the shipped corpus with LLVM's OpenMP
# tool "archer" (libomp-14-dev), which tells TSan what libomp's barriers,
# locks and task joins order; without it every parallel region reads as a
# race.  libomp itself is not instrumented, so TSan is told to ignore
# accesses made inside uninstrumented modules (archer asks for this).
#
#   make tsan              the shipped fuzz_attention corpus under TSan
#   make tsan INJECT=bug   the same with an injected bug (a removed barrier
#                          must show up as a race)
#
# Sees the Makefile's variables; owns only the TSAN_* ones.
TSAN_B := build/v-clang-san-thread$(if $(INJECT),-inject-$(INJECT))
TSAN_ARCHER := /usr/lib/llvm-14/lib/libarcher.so
TSAN_ENV := OMP_TOOL_LIBRARIES=$(TSAN_ARCHER) \
            TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1 second_deadlock_stack=1"
TSAN_CORPUS ?= corpus/fuzz_attention

.PHONY: tsan
tsan:
	@test -f $(TSAN_ARCHER) || { echo "tsan: $(TSAN_ARCHER) missing: make deps (libomp-14-dev)"; exit 1; }
	@$(MAKE) --no-print-directory CC=clang SANITIZER=thread $(TSAN_B)/replay/replay_fuzz_attention
	@log=$(TSAN_B)/tsan.log; \
	if $(TSAN_ENV) ATTN_FUZZ_MAX_MACS=$${ATTN_FUZZ_MAX_MACS:-16777216} \
	    $(TSAN_B)/replay/replay_fuzz_attention -timeout=300 $(TSAN_CORPUS) > $$log 2>&1; then \
	    echo "tsan: $$(tail -n 1 $$log) (no race)"; \
	else \
	    echo "tsan: FAILED (log: $$log)"; grep -m1 -B2 -A25 'WARNING: ThreadSanitizer' $$log || tail -n 30 $$log; exit 1; \
	fi
