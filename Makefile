# Two commands for a fresh machine: `make run` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/gpuadmin: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: run test test-slow lint bench
run: $(BIN)/gpuadmin
	$(BIN)/gpuadmin validate sample-inventories/*.yaml

test: $(BIN)/gpuadmin
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin
	$(BIN)/python -m pytest -n 2 -m "not slow" -q

test-slow: $(BIN)/gpuadmin
	$(BIN)/python -m pytest -n 2 -q

lint: $(BIN)/gpuadmin
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin

bench: $(BIN)/gpuadmin
	$(BIN)/python -m bench
