# Two commands for a fresh machine: `make run` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/gpuadmin: pyproject.toml setup.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: run test test-wheel test-slow lint bench system-deps vcsim demo-metrics demo-cluster demo-vcenter probe-site
run: $(BIN)/gpuadmin
	$(BIN)/gpuadmin

# System tools the tests use, installed where we may (CI runs as root on Debian), else a note and they skip:
# tmux (the console's end-to-end tests), openssh-server and -client (the console over real SSH, tests/bastion),
# useradd/runuser (throwaway users: passwd, util-linux), kubectl (a real client read against the API server double,
# tests/kube), prometheus/promtool (a real Prometheus server the telemetry tests start, tests/telemetry) and Go with
# govmomi's source and yaml.v3 (VMware's vCenter simulator, built offline from them: tests/vsphere). A path is
# looked for as a file or folder, a name on PATH. While installing, a policy-rc.d keeps the package
# from starting the system's own sshd; the tests start a throwaway one of their own on 127.0.0.1.
SYSTEM_TOOLS := tmux:tmux /usr/sbin/sshd:openssh-server ssh:openssh-client useradd:passwd runuser:util-linux \
	kubectl:kubernetes-client prometheus:prometheus promtool:prometheus go:golang-go \
	/usr/share/gocode/src/github.com/vmware/govmomi/simulator:golang-github-vmware-govmomi-dev \
	/usr/share/gocode/src/gopkg.in/yaml.v3:golang-gopkg-yaml.v3-dev
system-deps:
	@missing=""; for pair in $(SYSTEM_TOOLS); do tool="$${pair%%:*}"; \
	  { command -v "$$tool" >/dev/null 2>&1 || [ -d "$$tool" ]; } || missing="$$missing $${pair#*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  policy=/usr/sbin/policy-rc.d; made=""; \
	  if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' > $$policy && chmod 755 $$policy && made=1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; status=$$?; \
	  if [ -n "$$made" ]; then rm -f $$policy; fi; exit $$status; \
	else echo "note: missing$$missing; the tests that need them will skip (as root: apt-get install$$missing)"; fi

test: $(BIN)/gpuadmin system-deps vcsim
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin
	$(BIN)/python -m pytest -n 2 -m "not slow" -q
	$(MAKE) --no-print-directory test-wheel

# The wheel as a user gets it: built (no new tool: pip's own `wheel`), installed WITH its dependencies from the
# registry into a fresh venv that sees no site-packages, so a missing dependency fails here (pip's cache, and the dev
# venv's pip driving the new venv through --python instead of installing a pip of its own, keep it quick). Then run
# from a folder outside the checkout with a throwaway state and config, so that nothing of the checkout's (themes/,
# sample-inventories/) nor the operator's own themes stands in for what the wheel lacks: the first `tui` builds the
# state from the sample bundled in the wheel, the screenshot opens the console headless, `get nodes` lists them.
# build/ is setuptools' own scratch: removed first, as a stale one would put deleted modules into the wheel.
test-wheel: $(BIN)/gpuadmin
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	rm -rf build; \
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir "$$tmp/dist" .; \
	$(PY) -m venv --without-pip "$$tmp/venv"; \
	$(BIN)/pip --python "$$tmp/venv/bin/python" install --quiet --disable-pip-version-check "$$tmp"/dist/gpuadmin-*.whl; \
	cd "$$tmp"; \
	run() { env -u GPUADMIN_STATE XDG_STATE_HOME="$$tmp/state" XDG_CONFIG_HOME="$$tmp/config" venv/bin/gpuadmin "$$@"; }; \
	run tui --screenshot console.svg; \
	grep -q '<svg' console.svg; \
	run get nodes > nodes.txt; \
	grep -q '^gpu-' nodes.txt || { cat nodes.txt; echo "test-wheel: no nodes listed"; exit 1; }; \
	echo "test-wheel: the installed wheel opened the console and listed $$(($$(wc -l < nodes.txt) - 1)) nodes"

test-slow: $(BIN)/gpuadmin system-deps vcsim
	$(BIN)/python -m pytest -n 2 -q

lint: $(BIN)/gpuadmin
	$(BIN)/ruff check .
	$(BIN)/mypy gpuadmin

bench: $(BIN)/gpuadmin
	$(BIN)/python -m bench

# A real Prometheus (Debian's prometheus package) on 127.0.0.1:$(DEMO_METRICS_PORT), backfilled with DCGM exporter
# series for the OCI sample's GPUs over the last hour; prints the `config set` line; Ctrl-C stops it
DEMO_METRICS_PORT ?= 9091
demo-metrics: $(BIN)/gpuadmin
	$(BIN)/python -m tests.telemetry.demo_metrics --port $(DEMO_METRICS_PORT)

# The README's "A live cluster" session runs against this: the Kubernetes API server double (test code, not a
# cluster: tests/kube/demo_cluster.py) seeded with the OCI sample's cluster, on 127.0.0.1:$(DEMO_PORT), its
# kubeconfig in .demo/kubeconfig (context demo); Ctrl-C stops it.
DEMO_PORT ?= 17443
DEMO_DIR ?= .demo
demo-cluster: $(BIN)/gpuadmin
	$(BIN)/python -m tests.kube.demo_cluster --port $(DEMO_PORT) --dir $(DEMO_DIR)

# What bench/device/nvml_probe.py and the CLI need beyond the checkout, for a GPU machine that reaches no registry
# (docs/telemetry.md): gpuadmin's runtime packages and nvidia-ml-py as wheels for THAT machine's Python
# ($(PROBE_PYTHON): the lent H200's image runs 3.12) and CPU (x86-64), unpacked into .probe-site/ (about 45 MB),
# carried with the checkout and put on PYTHONPATH there.
PROBE_PYTHON ?= 3.12
probe-site: $(BIN)/gpuadmin
	rm -rf .probe-site
	$(BIN)/pip install --quiet --target .probe-site --python-version $(PROBE_PYTHON) --implementation cp \
	  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
	  --only-binary=:all: 'nvidia-ml-py>=12' 'textual==8.2.8' 'rich>=13' 'pydantic>=2.7,<3' 'pyyaml>=6.0' \
	  'psutil>=5.9' 'wcwidth>=0.2.13'

# VMware's vCenter simulator (govmomi's vcsim) with GPU hosts seeded by tests/vsphere/seed.yaml, built offline from
# Debian's packages into .build/vcsim (cached by the source's hash); where it cannot be built it says why and the
# tests/vsphere tests skip with that reason
vcsim: $(BIN)/gpuadmin system-deps
	@$(BIN)/python -m tests.vsphere.vcsim --build

# The README's vSphere session runs against this: the simulator seeded with the vSphere sample's estate on
# https://127.0.0.1:$(DEMO_VCENTER_PORT) (a self-signed certificate: --insecure), its password printed; Ctrl-C stops it.
DEMO_VCENTER_PORT ?= 18443
demo-vcenter: vcsim
	$(BIN)/python -m tests.vsphere.vcsim --port $(DEMO_VCENTER_PORT)
