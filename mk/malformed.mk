# mk/malformed.mk — the malformed-input gate (issue 61; make ci runs it).
#
#   make test-malformed   the ASan+UBSan CLI of make test-asan (its build
#                         folder, built if need be) and an adapter object
#                         broken on purpose (tests/malformed/broken_adapter.c),
#                         then scripts/malformed.py: a corpus generated from a
#                         fixed seed (text cases, byte inputs, broken tables;
#                         $(B)/malformed/run/, never committed) through show,
#                         check, check --engine and repro with leak detection
#                         on.  Fails when a run ends without a status: a
#                         signal, a sanitizer report, a file left unanswered.

MALFORMED_ADAPTER := $(B)/malformed/libag_broken.so
MALFORMED_SEED ?= 61

$(MALFORMED_ADAPTER): tests/malformed/broken_adapter.c $(B)/.flags
	@mkdir -p $(@D)
	$(call quiet,CCLD,$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $<,$@)

.PHONY: test-malformed malformed-run
test-malformed:
	@$(ASAN_MAKE) -j$(NPROC) malformed-run

malformed-run: $(CLI) $(MALFORMED_ADAPTER)
	@python3 scripts/malformed.py --cli $(CLI) --adapter $(MALFORMED_ADAPTER) \
	    --out $(B)/malformed/run --seed $(MALFORMED_SEED) --jobs $(NPROC) \
	    --lsan-options '$(LSAN_TLS)'
