# kapply: `make demo` and `make test` work from a fresh clone; everything they
# need is set up here (virtualenv, control-plane binaries, cluster).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER := $(PYTHON) hack/cluster.py
TOOLS := $(PYTHON) hack/tools.py

.PHONY: venv test unit e2e fuzz bench bench-quick bench-controller demo cluster-build cluster-up cluster-down cluster-status tools-build browser image mmdebstrap lint clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

cluster-build:
	$(CLUSTER) build

# helm, kustomize, kbld, cue and sops, which the controller templates with, and crane (the tests' OCI registry),
# age-keygen (the tests' sops keys), imgpkg and vendir (the real kctrl's, in the authoring and dev compat tests);
# built once, like the control plane.
tools-build:
	$(TOOLS) build

# Chromium from Debian's packages, which the diff UI's browser tests drive with Playwright (tests/e2e/test_diff_ui.py);
# installed when missing (as root). Never `playwright install`: it downloads a browser build of its own.
CHROMIUM := /usr/bin/chromium
browser:
	@test -x $(CHROMIUM) || (apt-get update && apt-get install -y chromium)

# The controller's image (hack/image.py; docs/reconciler.md, "Installing"): Debian's packages by mmdebstrap, the
# project's wheel, helm and kustomize (and ytt, from $$KAPPLY_YTT), as an OCI image layout in ~/.cache/kapply/image/.
# A few minutes the first time; then reused until its inputs change, and the Debian and tools layers are reused
# for a new commit (about 10 s). tests/e2e/test_controller_image.py builds it when it is not.
image: venv tools-build mmdebstrap
	$(BIN)/python hack/image.py build

# mmdebstrap, from Debian's packages, builds the image's root file system; installed when missing (as root).
mmdebstrap:
	@command -v mmdebstrap >/dev/null || (apt-get update && apt-get install -y mmdebstrap)

cluster-up:
	$(CLUSTER) up

cluster-down:
	$(CLUSTER) down

cluster-status:
	$(CLUSTER) status

# Every test. The e2e tests start the local control plane (or reuse a running
# one, or the cluster $KUBECONFIG names) and stop it afterwards if they started it.
# Every test's time goes to test-durations.json (the 25 slowest are printed at the end).
test: venv cluster-build tools-build browser mmdebstrap
	env $$($(TOOLS) env) KAPPLY_CHROMIUM=$(CHROMIUM) KAPPLY_DURATIONS=test-durations.json $(BIN)/pytest

unit: venv
	$(BIN)/pytest tests/unit tests/fuzz

# The fuzz tests at length: 1,000 inputs per target (about 3-4 minutes); new failures are added to
# tests/fuzz/corpus/ (commit them with their fix). `make test` runs the short profile and only reads the corpus.
fuzz: venv
	KAPPLY_FUZZ_PROFILE=fuzz $(BIN)/pytest tests/fuzz

# kapp and kapply side by side on the local control plane (not part of `make test`); writes bench/results.{md,json,png}.
# kapp comes from $$KAPPLY_KAPP or PATH. Every workload over loopback and at 20 and 50 ms RTT (through
# bench/delay_proxy.py), with each step's round trips on its critical path: the mix at N = 100 and 1,000, 50
# Deployments, 1,000 custom resources (about 40 min). N = 5,000 and 500 Deployments too (hours):
# make bench BENCH_ARGS="--rtt 0,20,50". The quick preset, N = 100 only (about 5 min): make bench-quick.
BENCH_ARGS ?= --rtt 0,20,50 --sizes 100,1000 --deployments 50 --crs 1000
$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $@

bench: $(VENV)/.bench-installed cluster-build cluster-up
	$(BIN)/python -m bench.sidebyside $(BENCH_ARGS)

bench-quick: $(VENV)/.bench-installed cluster-build cluster-up
	$(BIN)/python -m bench.sidebyside --rtt 0,20,50 --sizes 100 --deployments= --crs= --note "make bench-quick: N = 100 only"

# The controller at scale (not part of `make test`): 1000 Apps x 20 resources reconciled by one `kapply controller` on
# the local control plane, in namespaces kapply-cbench-*; writes bench/controller_results.{md,json,png}. Three sharded
# replicas: CBENCH_ARGS="--replicas 3" (bench/controller_results_replicas3.*). The Apps template with ytt ($$KAPPLY_YTT
# or PATH). A quick run: make bench-controller CBENCH_ARGS="--apps 20 --resources 5 --sync-period 10s
# --steady-periods 3 --drift-trials 3 --out /tmp/cbench"
CBENCH_ARGS ?=
bench-controller: $(VENV)/.bench-installed cluster-build cluster-up
	$(BIN)/python -m bench.controller_bench $(CBENCH_ARGS)

e2e: venv cluster-build tools-build browser mmdebstrap
	env $$($(TOOLS) env) KAPPLY_CHROMIUM=$(CHROMIUM) $(BIN)/pytest tests/e2e

# The controller part of the demo templates with helm and kustomize (and has kbld): built here, as tools-build does
# (once; crane, which only the tests use, is left out). hack/demo.py says which tools it found and which it lacks.
demo: venv cluster-up
	$(TOOLS) build helm kustomize kbld
	$(BIN)/python hack/demo.py

# Format, lint, types (strict), the layer contract (pyproject.toml) and no function of the apply, diff and controller
# stages over complexity grade C (a cyclomatic complexity over 20): what CI runs before the tests.
lint: venv
	$(BIN)/ruff format --check src tests hack bench examples
	$(BIN)/ruff check src tests hack bench examples
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/xenon --max-absolute C src/kapply/apply src/kapply/diff src/kapply/controller

clean:
	rm -rf $(VENV) .pytest_cache
