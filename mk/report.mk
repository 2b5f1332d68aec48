# mk/report.mk — the differential correctness report (issue: nightly reports).
#
#   make report        build/report_grid runs the differential grid (engine vs
#                      fp64 reference vs same-precision naive baseline) into
#                      build/report/grid.json; reports/render.py then writes
#                      build/report/ (report.md, report.json, report.html)
#                      from the grid plus whatever else exists:
#                      build/fuzz-session/summary.json, build/mutants.json (or
#                      build/mutants-quick.json), build/bench/bench.json,
#                      build/coverage/summary.json.  Exit 1 if a cell failed
#                      (the report is written anyway).  Writes nothing tracked.
#   make report-test   validate report.json against reports/schema.json and
#                      render report.html in headless chromium (screenshot +
#                      DOM check); not part of `make test` (installs chromium
#                      on first use, or make deps WITH=report)
#   make report-screenshot   look at build/report/report.html as a laptop shows
#                      it: headless chromium at 1349, 1366 and 1920 px wide
#                      (reports/screenshot.py); fails when the page scrolls
#                      sideways or a chart colour has no legend entry;
#                      PNGs (first screen, whole page, each chart) and
#                      layout.json in build/report-shot/.  Installs Debian's
#                      chromium on first use.
#   make snapshot      copy the newest generated reports into reports/snapshot/
#                      (report.md, bench.md, bench-peer.md, mutants.md), the
#                      one versioned copy, and regenerate the speed table
#                      (speed.md from bench.json and bench-peer.json) and the
#                      README's copy of it; run on purpose, commit by hand
#
# Knobs: REPORT_SEED (grid seed), ENGINES / REPORT_ENGINES (the engines side
# by side, default attnguard; e.g. ENGINES=attnguard,ggml,ort after make
# engines), REPORT_GRID_ARGS (extra report_grid flags, e.g. --variants
# default,isa=avx2 or --check-baseline),
# REPORT_DATE (the report's date, default today, UTC),
# REPORT_RENDER_ARGS (extra render.py flags, e.g. --fuzz FILE --nightly FILE).
REPORT_SEED ?= 20240601
REPORT_ENGINES ?= $(or $(ENGINES),attnguard)
REPORT_GRID_ARGS ?=
REPORT_DATE ?=
REPORT_RENDER_ARGS ?=
REPORT_GRID := $(B)/report_grid
REPORT_GRID_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard reports/*.c))
REPORT_GRID_JSON := build/report/grid.json
# installed on first use by report-test, or by `make deps WITH=report`
DEPS_report := python3-jsonschema chromium
DEPS_FOR_report := the report check: Chromium for the screenshot, jsonschema
# Debian's python3-jsonschema lives in the system interpreter, which a
# pyenv/venv python3 on PATH would not see.
REPORT_PY := $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: report report-grid report-render report-test report-screenshot

$(REPORT_GRID): $(REPORT_GRID_OBJ) $(HARLIB) $(LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $(REPORT_GRID_OBJ) $(HARLIB) $(LIB) $(LDLIBS_ALL)

# The grid's objects follow the headers they include (engine_host.h, the ABI)
# as the main build's do; without this a changed struct went unnoticed.
-include $(REPORT_GRID_OBJ:.o=.d)

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
	if [ $$rc -ne 0 ]; then echo "report: some grid cells failed (see build/report/report.md)"; fi; \
	exit $$rc

report-test:
	@bash .ci/deps.sh --quiet --for '$(DEPS_FOR_report)' $(DEPS_report)
	@test -f build/report/report.json || { echo "report-test: run 'make report' first"; exit 1; }
	REPORT_PY=$(REPORT_PY) bash reports/check_report.sh build/report

REPORT_SHOT_DIR := build/report-shot
report-screenshot:
	@test -f build/report/report.html || { echo "report-screenshot: run 'make report' first"; exit 1; }
	@command -v chromium >/dev/null || bash .ci/deps.sh chromium
	$(REPORT_PY) reports/screenshot.py build/report/report.html $(REPORT_SHOT_DIR) --charts

# The snapshot: each file from its producer's output folder, when present.
SNAPSHOT_DIR := reports/snapshot
SNAPSHOT_FROM := build/report/report.md build/bench/bench.md build/bench/bench-peer.md \
                 build/mutants.md
.PHONY: snapshot
snapshot:
	@mkdir -p $(SNAPSHOT_DIR); n=0; \
	for f in $(SNAPSHOT_FROM); do \
	    if [ -f $$f ]; then cp $$f $(SNAPSHOT_DIR)/ && n=$$((n + 1)) && \
	        echo "snapshot: $$f ($$(date -r $$f '+%Y-%m-%d %H:%M')) -> $(SNAPSHOT_DIR)/"; \
	    else echo "snapshot: no $$f (make report / bench / bench-peer / mutants), kept the old copy"; fi; \
	done; \
	if [ -f build/bench/avx2/bench.md ]; then cp build/bench/avx2/bench.md $(SNAPSHOT_DIR)/bench-avx2.md && \
	    n=$$((n + 1)) && echo "snapshot: build/bench/avx2/bench.md -> $(SNAPSHOT_DIR)/bench-avx2.md"; fi; \
	if [ -f build/bench/bench.json ]; then \
	    python3 scripts/speed_table.py write build/bench/bench.json build/bench/bench-peer.json \
	        $(SNAPSHOT_DIR)/speed.md $$(ls build/bench/avx2/bench.json 2>/dev/null) && \
	    python3 scripts/speed_table.py splice $(SNAPSHOT_DIR)/speed.md README.md; \
	else echo "snapshot: no build/bench/bench.json (make bench), kept the speed table"; fi; \
	echo "snapshot: $$n file(s) refreshed; review and commit $(SNAPSHOT_DIR)/ and README.md"
