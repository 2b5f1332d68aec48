# mk/report.mk — the differential correctness report (issue: nightly reports).
#
#   make report        build/report_grid runs the differential grid (engine vs
#                      fp64 reference vs same-precision naive baseline) into
#                      build/report/grid.json; reports/render.py then writes
#                      reports/<date>/ and reports/latest/ (report.md,
#                      report.json, report.html) from the grid plus whatever
#                      else exists: build/fuzz-summary.json, reports/mutants.json
#                      (or build/mutants-quick.json), reports/bench.json,
#                      build/coverage/summary.json.  Exit 1 if a cell failed
#                      (the report is written anyway).
#   make report-deps   Debian packages the report checks need
#   make report-test   validate report.json against reports/schema.json and
#                      render report.html in headless chromium (screenshot +
#                      DOM check); not part of `make test` (needs chromium)
#
# Knobs: REPORT_SEED (grid seed), REPORT_ENGINES (the engines side by side,
# default attnguard; e.g. attnguard,ggml), REPORT_GRID_ARGS (extra
# report_grid flags, e.g. --variants default,isa=avx2 or --check-baseline),
# REPORT_DATE (folder name, default today, UTC),
# REPORT_RENDER_ARGS (extra render.py flags, e.g. --fuzz FILE --nightly FILE).
REPORT_SEED ?= 20240601
REPORT_ENGINES ?= attnguard
REPORT_GRID_ARGS ?=
REPORT_DATE ?=
REPORT_RENDER_ARGS ?=
REPORT_GRID := $(B)/report_grid
REPORT_GRID_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard reports/*.c))
REPORT_GRID_JSON := build/report/grid.json
REPORT_DEPS_PKGS := python3-jsonschema chromium
# Debian's python3-jsonschema lives in the system interpreter, which a
# pyenv/venv python3 on PATH would not see.
REPORT_PY := $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: report report-grid report-render report-deps report-test

$(REPORT_GRID): $(REPORT_GRID_OBJ) $(HARLIB) $(LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $(REPORT_GRID_OBJ) $(HARLIB) $(LIB) $(LDLIBS_ALL)

report-grid: $(REPORT_GRID)
	@mkdir -p $(dir $(REPORT_GRID_JSON))
	$(REPORT_GRID) --seed $(REPORT_SEED) --engines $(REPORT_ENGINES) --out $(REPORT_GRID_JSON) \
	    $(REPORT_GRID_ARGS)

report-render:
	$(REPORT_PY) reports/render.py --grid $(REPORT_GRID_JSON) \
	    $(if $(REPORT_DATE),--date $(REPORT_DATE)) $(REPORT_RENDER_ARGS)

# The grid's exit status is kept until the report is written.
report: $(REPORT_GRID)
	@rc=0; $(MAKE) --no-print-directory report-grid || rc=$$?; \
	$(MAKE) --no-print-directory report-render || exit $$?; \
	if [ $$rc -ne 0 ]; then echo "report: some grid cells failed (see reports/latest/report.md)"; fi; \
	exit $$rc

report-deps:
	@bash .ci/deps.sh $(REPORT_DEPS_PKGS)

report-test: report-deps
	@test -f reports/latest/report.json || { echo "report-test: run 'make report' first"; exit 1; }
	REPORT_PY=$(REPORT_PY) bash reports/check_report.sh reports/latest
