# Two commands for a fresh machine: `make run` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/gpuadmin: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: run test test-slow lint bench system-deps
run: $(BIN)/gpuadmin
	$(BIN)/gpuadmin

# The console's end-to-end tests drive it in tmux; install it where we may (CI runs as root on Debian).
system-deps:
	@command -v tmux >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq tmux >/dev/null; \
	  else echo "note: tmux is missing; the console's end-to-end tests will skip (apt-get install tmux)"; fi; }

test: $(BIN)/gpuadmin system-deps
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin
	$(BIN)/python -m pytest -n 2 -m "not slow" -q

test-slow: $(BIN)/gpuadmin system-deps
	$(BIN)/python -m pytest -n 2 -q

lint: $(BIN)/gpuadmin
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin

bench: $(BIN)/gpuadmin
	$(BIN)/python -m bench
