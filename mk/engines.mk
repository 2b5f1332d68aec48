# mk/engines.mk — the external engines the harness can guard
# (docs/engines.md).  Each adapter folder carries an adapter.mk that
# declares, for its name N (appended to ADAPTERS): N_SRC (its one source
# list), N_CFLAGS, N_LDLIBS, optionally N_LDFLAGS (what a binary that links
# the adapter in needs at its link), N_FUZZ_FLAGS (libFuzzer flags a
# `make fuzz ENGINE=N` session adds), N_READY (a file that exists once the
# engine is fetched, with the rule that fetches it) and, if it has findings
# to rebuild, a target appended to ENGINES_REPRO.
#
#   make engines         fetch every external engine (pinned, checksummed)
#                        into build/engines/<name>/ (make deps WITH=engines),
#                        but those installed on demand (vllm) unless
#                        ENGINE= or ENGINES= names them
#   make engines-build   each fetched adapter as an object a harness opens by
#                        path: $(B)/engines/libag_<name>.so (refused if it
#                        leaves an ag_ symbol undefined)
#   make engines-repro   rebuild every reports/findings/<engine>-NNN.c against
#                        the packaged engine and say whether each reproduces
#
# An adapter whose engine is fetched is built into every harness binary
# (engines/engines.def lists it under its AG_HAVE_<NAME>); until then
# `--engine <name>` says how to fetch it.  Its contract fuzz target
# (fuzz/fuzz_<name>_contract.c) joins the fuzz targets the same way
# (mk/fuzz.mk).  Any make command naming an external engine in ENGINE= or
# ENGINES= (make fuzz ENGINE=ggml, make report ENGINES=attnguard,ggml)
# fetches it first, and nothing else does: a plain make test or make fuzz
# never downloads an engine.

# Included early by the Makefile (it adds to HAR_SRC); the guard keeps the
# closing include of mk/*.mk from reading it twice.
ifndef ENGINES_MK_INCLUDED
ENGINES_MK_INCLUDED := 1

ADAPTERS :=
ENGINES_REPRO :=
empty :=
space := $(empty) $(empty)
include $(sort $(wildcard engines/*/adapter.mk))

# The adapters whose engine is here, and what every build of the harness
# (this one, the fuzz, coverage and OSS-Fuzz builds) adds for them.
ENGINES_READY := $(foreach a,$(ADAPTERS),$(if $(wildcard $($a_READY)),$a))
ENGINE_SRC := $(foreach a,$(ENGINES_READY),$($a_SRC))
ENGINE_CFLAGS := $(if $(ENGINES_READY),-Iinclude) $(foreach a,$(ENGINES_READY),$($a_CFLAGS))
ENGINE_LDLIBS := $(sort $(foreach a,$(ENGINES_READY),$($a_LDLIBS)))
ENGINE_LDFLAGS := $(foreach a,$(ENGINES_READY),$($a_LDFLAGS))
CFLAGS_ALL += $(ENGINE_CFLAGS)
LDLIBS_ALL += $(ENGINE_LDFLAGS)
# The engines this build has, for the tools that take a list (ENGINES=).
ENGINES_BUILTIN := $(subst $(space),$(comma),attnguard $(ENGINES_READY))

.PHONY: engines engines-build engines-repro
# An adapter that sets N_ON_DEMAND (vLLM: 5 GB of wheels) is fetched only
# when ENGINE= or ENGINES= names it, so `make engines` (and CI's make deps
# WITH=engines) stays the light ones.
ENGINES_ON_DEMAND := $(foreach a,$(ADAPTERS),$(if $($a_ON_DEMAND),$a))
engines: $(foreach a,$(filter-out $(filter-out $(subst $(comma), ,$(ENGINE) $(ENGINES)),\
    $(ENGINES_ON_DEMAND)),$(ADAPTERS)),$($a_READY))

# Fetch on use: when ENGINE= or ENGINES= names an adapter whose engine is
# not here, make remakes this included stamp first, which fetches the
# engine, and then starts over reading the makefiles, so that this very
# command builds with the adapter (ENGINES_READY above).
ENGINES_WANTED := $(filter $(ADAPTERS),$(subst $(comma), ,$(ENGINE) $(ENGINES)))
ENGINES_MISSING := $(filter-out $(ENGINES_READY),$(ENGINES_WANTED))
ifneq ($(ENGINES_MISSING),)
-include build/engines/.fetch-on-use
build/engines/.fetch-on-use: $(foreach a,$(ENGINES_MISSING),$($a_READY))
	@mkdir -p $(@D) && touch $@
endif

# ---- each adapter as a shared object (ag_engine_find opens it by path) ----
ENG_B := $(B)/engines
$(ENG_B)/obj/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(call quiet,CC,$(CC) $(CFLAGS_ALL) -fPIC -DAG_ENGINE_SHARED_OBJECT=1 $(DEPFLAGS) -c $< -o $@,$<  [$(ENG_B)])

# An adapter .so needs nothing of the harness: the ABI's helpers are
# header-only (include/attnguard/dtype.h, engine.h), so a link that leaves
# an ag_ symbol undefined is refused here, as a host would refuse to load it.
define adapter_so
$(ENG_B)/libag_$1.so: $(patsubst %.c,$(ENG_B)/obj/%.o,$($1_SRC))
	$$(call quiet,LD,$$(CC) $$(CFLAGS_ALL) -shared -o $$@.tmp $$^ $($1_LDLIBS),$$@)
	@u=$$$$(nm -D --undefined-only $$@.tmp | awk '$$$$2 ~ /^ag_/ {printf " %s", $$$$2}'); \
	    if [ -n "$$$$u" ]; then rm -f $$@.tmp; echo "$$@: leaves ABI symbols undefined:$$$$u" >&2; exit 1; fi
	@mv $$@.tmp $$@
endef
$(foreach a,$(ENGINES_READY),$(eval $(call adapter_so,$a)))

engines-build: $(foreach a,$(ENGINES_READY),$(ENG_B)/libag_$a.so)

engines-repro: $(ENGINES_REPRO)

-include $(foreach a,$(ENGINES_READY),$(patsubst %.c,$(ENG_B)/obj/%.d,$($a_SRC)))

endif # ENGINES_MK_INCLUDED
