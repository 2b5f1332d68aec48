# mk/install.mk — the installable kit: what a maintainer needs to guard an
# engine that lives in their own tree (docs/engines.md, "An adapter out of
# tree").  scripts/kit.sh does the copying and keeps the manifest.
#
#   make install [PREFIX=/usr/local] [DESTDIR=] [FUZZ=0]
#   make install-headers [PREFIX=...] [DESTDIR=]
#                      the ABI's headers and attnguard.pc only (an engine's own
#                      fuzz build: examples/clusterfuzzlite/; builds nothing)
#   make uninstall [PREFIX=...] [DESTDIR=]
#   make test-kit      make test's `kit` step (tests/kit/run.sh)
#
# Installs, under PREFIX:
#   bin/attnguard                         the CLI ($(CLI), this configuration's)
#   include/attnguard/*.h                 the ABI, header-only: an adapter links
#                                         nothing of attnguard (libm only)
#   lib/pkgconfig/attnguard.pc            -I for the headers, -lm; its Version and
#                                         abi_version are AG_ENGINE_ABI_VERSION;
#                                         fuzz_cc, fuzz_cflags and fuzz_cflags_edges
#                                         compile an engine for the fuzz targets
#                                         with its coverage counted (KIT_FUZZ_*)
#   share/attnguard/cases/*.case          the shipped cases (`attnguard check`)
#   share/doc/attnguard/                  the pages an adapter's author reads
#   libexec/attnguard/fuzz/<target>       the libFuzzer targets that reach an engine
#                                         through the ABI only (KIT_FUZZ: every fuzz
#                                         target but attnguard's own API's and the
#                                         built-in engines' contract targets), with
#                                         .options and .dict, loading the adapter
#                                         named by ATTNGUARD_ENGINE; their seed
#                                         corpus in share/attnguard/corpus/<target>/
#
# The fuzz targets are mk/fuzz.mk's build (clang, libFuzzer, ASan+UBSan:
# minutes on two cores); FUZZ=0 leaves them out (make test's kit step
# does, to stay within seconds).  `attnguard repro` finds them there
# (PREFIX/libexec/attnguard/fuzz, from the CLI's own place).

PREFIX ?= /usr/local
DESTDIR ?=
FUZZ ?= 1
KIT_FUZZ := $(FUZZ_ABI)
# How an engine (and its adapter) is compiled to be loaded into the kit's
# fuzz targets with its own branches counted: libFuzzer's coverage
# instrumentation without its runtime, and the targets' sanitizers (an
# ASan-instrumented object loads only into a process with ASan's runtime,
# which the targets carry).  mk/fuzz.mk's local flags: one source.
KIT_FUZZ_CC := $(FZ_CC)
KIT_FUZZ_CFLAGS := -fsanitize=fuzzer-no-link $(FZ_SANCOV)
# The same with libFuzzer's edge counters alone, for an engine's kernels:
# comparison tracing in per-element loops costs far more than it guides
# (mk/fuzz.mk instruments attnguard's own kernels so).
KIT_FUZZ_CFLAGS_EDGES := $(FZ_EDGES) $(FZ_SANCOV)
# The ABI's version, read from the header that defines it.
AG_ABI_VERSION := $(shell sed -n 's/^\#define AG_ENGINE_ABI_VERSION \([0-9]*\).*/\1/p' include/attnguard/engine.h)

.PHONY: install install-headers uninstall test-kit
install: $(CLI) $(if $(filter 1,$(FUZZ)),$(KIT_FUZZ:%=$(FZ_OUT)/%) $(foreach t,$(KIT_FUZZ),\
    $(FZ_OUT)/$t.options $(if $(wildcard fuzz/$t.dict),$(FZ_OUT)/$t.dict)))
	$(if $(INJECT),$(error install: INJECT=$(INJECT) is a mutant build, never installed))
	@bash scripts/kit.sh install '$(DESTDIR)' '$(PREFIX)' '$(CLI)' '$(AG_ABI_VERSION)' \
	    '$(FZ_OUT)' '$(KIT_FUZZ_CC)' '$(KIT_FUZZ_CFLAGS)' '$(KIT_FUZZ_CFLAGS_EDGES)' \
	    $(if $(filter 1,$(FUZZ)),$(KIT_FUZZ))

install-headers:
	@bash scripts/kit.sh headers '$(DESTDIR)' '$(PREFIX)' '$(AG_ABI_VERSION)' \
	    '$(KIT_FUZZ_CC)' '$(KIT_FUZZ_CFLAGS)' '$(KIT_FUZZ_CFLAGS_EDGES)'

uninstall:
	@bash scripts/kit.sh uninstall '$(DESTDIR)' '$(PREFIX)'

test-kit: $(CLI)
	@MAKE='$(MAKE)' ABI='$(AG_ABI_VERSION)' bash tests/kit/run.sh
