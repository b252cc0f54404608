# kapply: `make demo` and `make test` work from a fresh clone; everything they
# need is set up here (virtualenv, control-plane binaries, cluster).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER := $(PYTHON) hack/cluster.py
TOOLS := $(PYTHON) hack/tools.py

.PHONY: venv test unit e2e demo cluster-build cluster-up cluster-down cluster-status tools-build lint clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

cluster-build:
	$(CLUSTER) build

# helm and kustomize, which the controller templates with; built once, like the control plane.
tools-build:
	$(TOOLS) build

cluster-up:
	$(CLUSTER) up

cluster-down:
	$(CLUSTER) down

cluster-status:
	$(CLUSTER) status

# Every test. The e2e tests start the local control plane (or reuse a running
# one, or the cluster $KUBECONFIG names) and stop it afterwards if they started it.
test: venv cluster-build tools-build
	env $$($(TOOLS) env) $(BIN)/pytest

unit: venv
	$(BIN)/pytest tests/unit

e2e: venv cluster-build tools-build
	env $$($(TOOLS) env) $(BIN)/pytest tests/e2e

demo: venv cluster-up
	$(BIN)/python hack/demo.py

# Format, lint, types (strict) and the layer contract (pyproject.toml): what CI runs before the tests.
lint: venv
	$(BIN)/ruff format --check src tests hack bench examples
	$(BIN)/ruff check src tests hack bench examples
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

clean:
	rm -rf $(VENV) .pytest_cache
