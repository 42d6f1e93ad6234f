# The README's commands: `make test` and `make run`. Both install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
RUN_DIR ?= .run
PYTEST_ARGS ?=

.PHONY: deps system-deps test unit integration run bench lint typecheck clean

deps: system-deps $(STAMP)

system-deps:
	@bash scripts/install-system-deps.sh

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[test,dev]'
	@rm -f $(VENV)/.installed-* && touch $@

## Run every test (unit, integration, e2e).
test: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests

unit: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests/unit

integration: deps
	$(PY) -m pytest $(PYTEST_ARGS) tests/integration

## Start the demo: devcluster with examples/, then print how to reach it.
run: deps
	@mkdir -p $(RUN_DIR)
	$(PY) -m ingressctl.devcluster --port 0 --kubeconfig-out $(RUN_DIR)/kubeconfig --manifests examples/

## Run the benchmark suite; it prints tables and writes JSON under $(RUN_DIR)/bench.
bench: deps
	@mkdir -p $(RUN_DIR)/bench
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b --out $(RUN_DIR)/bench || exit 1; done

lint: deps
	$(PY) -m ruff check ingressctl tests benchmarks

typecheck: deps
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(RUN_DIR) .pytest_cache .mypy_cache .ruff_cache
