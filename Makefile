# Two environments: .venv (torch 2.13 CPU + JAX, the embedded default runtimes) and
# .venv-xla (torch 2.9 + torch_xla 2.9, which pins its own torch); and two at the other ends
# of the supported ranges (xlanb/capture/versions.py), running only the runtime-specific
# tests: .venv-jax-old (JAX 0.6.1, the oldest JAX; torch 2.15.0, the newest torch._lazy),
# .venv-jax-new (JAX 0.12.0.1, the newest JAX, on Python 3.12, which JAX 0.11 and newer need)
# and .venv-xla-old (torch_xla 2.7 + torch 2.7, the oldest torch_xla and torch._lazy).
PYTHON ?= python3
# Python 3.12 for .venv-jax-new: pyenv's 3.12.1 where pyenv has it, else python3.12 on PATH.
PYTHON312 ?= $(or $(wildcard $(shell pyenv root 2>/dev/null)/versions/3.12.1/bin/python3.12),$(wildcard $(HOME)/.pyenv/versions/3.12.1/bin/python3.12),python3.12)
VENV := .venv
VENV_XLA := .venv-xla
VENV_JAX_OLD := .venv-jax-old
VENV_JAX_NEW := .venv-jax-new
VENV_XLA_OLD := .venv-xla-old
PY := $(VENV)/bin/python
PY_XLA := $(VENV_XLA)/bin/python
PY_JAX_OLD := $(VENV_JAX_OLD)/bin/python
PY_JAX_NEW := $(VENV_JAX_NEW)/bin/python
PY_XLA_OLD := $(VENV_XLA_OLD)/bin/python
# What the runtime-specific tests need in the extra environments (no browser, no Jupyter server).
COMPAT_TEST_DEPS := pytest hypothesis nbclient nbformat ipykernel playwright
CHROMIUM := /usr/bin/chromium
# Node runs the viewer's JavaScript tests (tests/js, from tests/unit) and ESLint (tools/js).
NODE_READY := .stamp-node
ESLINT := tools/js/node_modules/.bin/eslint
# pip keeps no copy of what it downloads: PyPI's torch 2.7 and 2.9 are CUDA builds, about 3.3 GB
# of wheels each, which a cache would hold a second time on the disk.
export PIP_NO_CACHE_DIR := 1
# KEEP_ENVS=0 (what CI runs): each extra environment is removed once its tests have run, so the
# disk holds .venv and at most one other at a time (13.3 GB at the peak, measured, instead of
# 22 GB of environments plus pip's cache).
KEEP_ENVS ?= 1
PRUNE := $(if $(filter 0,$(KEEP_ENVS)),rm -rf,@true)

.PHONY: setup test test-unit test-fast test-main test-xla test-compat test-compat-jax test-compat-jax-new \
	test-compat-xla test-compat-lazy demo bench lint clean

setup: $(VENV)/.ready $(VENV_XLA)/.ready $(CHROMIUM) $(NODE_READY)

# Debian's Chromium drives the browser tests (Playwright with executable_path; browsers are
# never downloaded at run time).
$(CHROMIUM):
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium || \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

# Node and npm where the image lacks them (Debian's nodejs and npm).
$(NODE_READY):
	command -v node >/dev/null && command -v npm >/dev/null || \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm)
	touch $@

# ESLint at the versions tools/js/package-lock.json pins, in an ignored node_modules.
$(ESLINT): tools/js/package.json tools/js/package-lock.json $(NODE_READY)
	npm ci --prefix tools/js --no-audit --no-fund --loglevel=error
	touch $@

$(VENV)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0 jax==0.10.2 jaxlib==0.10.2
	$(PY) -m pip install -q -e '.[notebook,test]'
	touch $@

$(VENV_XLA)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV_XLA)
	$(PY_XLA) -m pip install -q torch==2.9.0 torch-xla==2.9.0
	$(PY_XLA) -m pip install -q -e '.[notebook,test]'
	touch $@

# Where /etc/xdg/pip caps torch (these machines' pip takes torch up to 2.14.1 from their disk),
# an empty constraints file lifts the cap for this one install: PyPI's torch 2.15.0, a CUDA build.
$(VENV_JAX_OLD)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV_JAX_OLD)
	PIP_CONSTRAINT=/dev/null $(PY_JAX_OLD) -m pip install -q jax==0.6.1 jaxlib==0.6.1 torch==2.15.0
	$(PY_JAX_OLD) -m pip install -q -e '.[notebook]' $(COMPAT_TEST_DEPS)
	touch $@

# JAX 0.11 and newer need Python 3.12; no torch here (torch 2.15 is tested in .venv-jax-old).
$(VENV_JAX_NEW)/.ready: pyproject.toml
	$(PYTHON312) -m venv $(VENV_JAX_NEW)
	$(PY_JAX_NEW) -m pip install -q jax==0.12.0.1 jaxlib==0.12.0.1
	$(PY_JAX_NEW) -m pip install -q -e '.[notebook]' $(COMPAT_TEST_DEPS)
	touch $@

$(VENV_XLA_OLD)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV_XLA_OLD)
	$(PY_XLA_OLD) -m pip install -q torch==2.7.0 torch-xla==2.7.0
	$(PY_XLA_OLD) -m pip install -q -e '.[notebook]' $(COMPAT_TEST_DEPS)
	touch $@

# ruff, the import contract (.importlinter: layers import only downwards) and
# tools/architecture.py (no import cycle, views read frames, sizes); ESLint on the viewer's
# JavaScript and its tests.
lint: $(VENV)/.ready $(ESLINT)
	$(VENV)/bin/ruff check xlanb tests bench notebooks tools
	$(VENV)/bin/ruff format --check xlanb tests bench notebooks tools
	$(VENV)/bin/lint-imports --no-cache
	$(PY) tools/architecture.py
	$(VENV)/bin/mypy
	$(ESLINT) --config tools/js/eslint.config.js xlanb/views/graph_viewer/static tests/js tools/js

# The unit tier (tests/unit, marker `unit`): formats, graphs, analysis, views and the schema on
# recorded fixtures and saved profiles, and the viewer's JavaScript in node; no runtime, no
# kernel, no browser (under a minute). test-fast is its older name.
test-unit: $(VENV)/.ready $(NODE_READY)
	$(PY) -m pytest -q tests/unit

test-fast: test-unit

# The runtime (tests/runtime) and end-to-end (tests/e2e: kernel, nbclient, browser) tiers.
test-main: $(VENV)/.ready $(CHROMIUM)
	$(PY) -m pytest -q tests --ignore=tests/xla --ignore=tests/unit

test-xla: $(VENV_XLA)/.ready
	PJRT_DEVICE=CPU $(PY_XLA) -m pytest -q tests/xla
	$(PRUNE) $(VENV_XLA)

# The other ends of the supported ranges: JAX 0.6.1 (+ torch._lazy on torch 2.15.0), JAX
# 0.12.0.1 on Python 3.12, then torch_xla 2.7 and torch._lazy on torch 2.7 (two processes:
# torch_xla replaces the lazy TorchScript backend once imported).
test-compat: test-compat-jax test-compat-jax-new test-compat-xla test-compat-lazy

test-compat-jax: $(VENV_JAX_OLD)/.ready
	$(PY_JAX_OLD) -m pytest -q tests/runtime/test_jax_compat.py tests/runtime/test_jax.py tests/runtime/test_torch_lazy.py \
	  tests/runtime/test_time_account.py
	$(PRUNE) $(VENV_JAX_OLD)

test-compat-jax-new: $(VENV_JAX_NEW)/.ready
	$(PY_JAX_NEW) -m pytest -q tests/runtime/test_jax_compat.py tests/runtime/test_jax.py tests/runtime/test_time_account.py \
	  tests/runtime/test_memory.py tests/runtime/test_jax_devices.py
	$(PRUNE) $(VENV_JAX_NEW)

test-compat-xla: $(VENV_XLA_OLD)/.ready
	PJRT_DEVICE=CPU $(PY_XLA_OLD) -m pytest -q tests/xla

test-compat-lazy: $(VENV_XLA_OLD)/.ready
	$(PY_XLA_OLD) -m pytest -q tests/runtime/test_torch_lazy.py
	$(PRUNE) $(VENV_XLA_OLD)

test: setup lint test-fast test-main test-xla test-compat

demo: $(VENV)/.ready
	$(VENV)/bin/xlanb kernel install --sys-prefix --name xlanb
	JUPYTER_PATH=$(VENV)/share/jupyter $(PY) notebooks/run.py notebooks/01_quickstart.ipynb \
	  --kernel xlanb --out out
	JUPYTER_PATH=$(VENV)/share/jupyter $(PY) notebooks/run.py notebooks/03_jax.ipynb \
	  --kernel xlanb --out out

bench: setup
	PJRT_DEVICE=CPU $(PY_XLA) bench/overhead.py
	$(PY) bench/overhead.py
	$(PY) bench/display.py
	PJRT_DEVICE=CPU $(PY_XLA) bench/parse.py
	PJRT_DEVICE=CPU $(PY_XLA) bench/torch_reads.py
	$(PY) bench/merge.py
	$(PY) bench/graph_viewer.py
	$(PY) bench/gpu_roofline.py
	$(PY) bench/read_ahead.py

clean:
	rm -rf $(VENV) $(VENV_XLA) $(VENV_JAX_OLD) $(VENV_JAX_NEW) $(VENV_XLA_OLD)
