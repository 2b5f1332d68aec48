# mk/example.mk — the example engine outside the tree's own engines
# (examples/tinyattn/), fuzzed as its maintainer would fuzz it.
#
#   make example-fuzz   scripts/example_fuzz.sh: the kit installed with its
#                       fuzz targets into a temporary prefix, the planted build
#                       fuzzed by the installed fuzz_attention from an empty
#                       corpus (at most EXAMPLE_FUZZ_TIME s, default 60), the
#                       finding reproduced and minimised with no environment
#                       variable.  Its check half (the fixed engine on the
#                       shipped cases, the planted one's sizing finding) is make
#                       test's kit step (tests/kit/example.sh); this half needs
#                       the libFuzzer targets (minutes to build, already built
#                       when CI runs it, after mutants-quick).
EXAMPLE_FUZZ_TIME ?= 60

.PHONY: example-fuzz
example-fuzz:
	@MAKE='$(MAKE)' ROOT='$(CURDIR)' EXAMPLE_FUZZ_TIME='$(EXAMPLE_FUZZ_TIME)' bash scripts/example_fuzz.sh
