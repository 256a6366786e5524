# Wurk's two entry points for people: `make demo` runs the product, `make test` the tests.
# Each target makes its own virtualenv under .venv/ and installs what it needs.

SHELL := /bin/bash
.DEFAULT_GOAL := help

# Find an interpreter by version: python3.X on PATH first, then pyenv's installs.
# Each candidate is run, because pyenv's shims exist even where the version is absent.
find_python = $(shell for v in $(1); do \
  for c in python$$v $$(pyenv root 2>/dev/null)/versions/$$v*/bin/python$$v; do \
    if $$c -c 'import sys' >/dev/null 2>&1; then command -v $$c || echo $$c; exit 0; fi; \
  done; done)

PY_OLD := $(call find_python,3.11)
PY_NEW := $(call find_python,3.13 3.12)

# Leg 1: Python 3.11 + Django 5.2 LTS (with the django-tasks backport).
# Leg 2: Python 3.12/3.13 + the newest Django.
LEG1_VENV := .venv/py311-django52
LEG2_VENV := .venv/pynew-django6
LEG1_DEPS := "Django>=5.2,<5.3" "django-tasks>=0.8"
LEG2_DEPS := "Django>=6.0"
DEMO_VENV := .venv/demo
PYTEST_ARGS ?=
# Under `make test` every skip is a failure (tests/support/require_all.py): this target
# installs what the tests need, so a skip could only hide a test that did not run.
PYTEST := -m pytest -p tests.support.require_all

.PHONY: help test test-leg1 test-leg2 demo clean assets check-assets system-deps lint bench bench-peers

help:
	@echo "make demo   run the example project (worker + web + demo jobs)"
	@echo "make test   run the test suite on every supported leg this machine has"
	@echo "make assets rebuild the dashboard bundle (Node 20+ and npm; contributors only)"
	@echo "make bench  benchmark Wurk (docs/benchmarks.md); make bench-peers adds Celery, RQ, Dramatiq, Huey"

$(LEG1_VENV)/.installed: setup.cfg pyproject.toml
	@test -n "$(PY_OLD)" || { echo "make test: no Python 3.11 found (python3.11 or pyenv)"; exit 1; }
	$(PY_OLD) -m venv $(LEG1_VENV)
	$(LEG1_VENV)/bin/pip install -q -e ".[test]" $(LEG1_DEPS)
	touch $@

$(LEG2_VENV)/.installed: setup.cfg pyproject.toml
	$(PY_NEW) -m venv $(LEG2_VENV)
	$(LEG2_VENV)/bin/pip install -q -e ".[test]" $(LEG2_DEPS)
	touch $@

test-leg1: $(LEG1_VENV)/.installed
	@echo "=== leg 1: $$($(LEG1_VENV)/bin/python -c 'import sys, django; print(f"Python {sys.version.split()[0]}, Django {django.get_version()}")') ==="
	$(LEG1_VENV)/bin/python $(PYTEST) $(PYTEST_ARGS)

test-leg2: $(LEG2_VENV)/.installed
	@echo "=== leg 2: $$($(LEG2_VENV)/bin/python -c 'import sys, django; print(f"Python {sys.version.split()[0]}, Django {django.get_version()}")') ==="
	$(LEG2_VENV)/bin/python $(PYTEST) $(PYTEST_ARGS)

# The two legs run at once (they share nothing: each suite starts its own Redis, browser
# and workers on free ports): leg 1 prints as it goes, leg 2 into a log printed after it.
# Every part runs whatever another part did, so one run shows everything; the exit status
# is non-zero when lint or either leg failed. NO_LINT=1 leaves lint out (for
# tests/test_harness.py, which checks how the legs run).
LEG2_LOG = $(LEG2_VENV)/test.log
test: check-assets system-deps $(LEG1_VENV)/.installed $(if $(PY_NEW),$(LEG2_VENV)/.installed)
	@status=0; \
	$(if $(NO_LINT),,$(MAKE) --no-print-directory lint || status=1;) \
	if [ -n "$(PY_NEW)" ]; then \
	  $(MAKE) --no-print-directory test-leg2 >$(LEG2_LOG) 2>&1 & leg2=$$!; fi; \
	$(MAKE) --no-print-directory test-leg1 || status=1; \
	if [ -n "$(PY_NEW)" ]; then wait $$leg2 || status=1; cat $(LEG2_LOG); \
	else echo "make test: no Python 3.12+ found; ran only the Python 3.11 + Django 5.2 leg."; fi; \
	if [ $$status != 0 ]; then echo "make test: FAILED (see above)"; fi; \
	exit $$status

$(DEMO_VENV)/.installed: setup.cfg pyproject.toml
	@test -n "$(PY_OLD)$(PY_NEW)" || { echo "make demo: needs Python 3.11 or newer"; exit 1; }
	$(or $(PY_NEW),$(PY_OLD)) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install -q -e ".[fast,test]"
	touch $@

demo: $(DEMO_VENV)/.installed
	$(DEMO_VENV)/bin/python example_project/demo.py

# Lint: ruff (the rules in pyproject.toml) and mypy (the package), at the versions pinned
# in setup.cfg's `lint` extra, installed once into leg 1's virtualenv (again when setup.cfg
# changes). Both run whatever the other found, so one run shows every finding.
$(LEG1_VENV)/.lint-installed: $(LEG1_VENV)/.installed setup.cfg
	$(LEG1_VENV)/bin/pip install -q -e ".[lint]"
	touch $@

lint: $(LEG1_VENV)/.lint-installed
	@status=0; \
	$(LEG1_VENV)/bin/ruff check wurk_django tests benchmarks example_project || status=1; \
	$(LEG1_VENV)/bin/mypy wurk_django || status=1; \
	exit $$status

# Benchmarks (docs/benchmarks.md). Both virtualenvs use one interpreter, so every system
# runs on the same Python. BENCH_ARGS passes options, e.g. BENCH_ARGS="--repeat 5" or
# BENCH_ARGS="--vs HEAD~1" (pairs the working tree with that revision, run by run).
BENCH_VENV := .venv/bench
PEERS_VENV := .venv/bench-peers
BENCH_PY := $(or $(PY_NEW),$(PY_OLD))
BENCH_ARGS ?=

$(BENCH_VENV)/.installed: setup.cfg pyproject.toml
	@test -n "$(BENCH_PY)" || { echo "make bench: needs Python 3.11 or newer"; exit 1; }
	$(BENCH_PY) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q -e ".[bench]"
	touch $@

$(PEERS_VENV)/.installed: benchmarks/requirements-peers.txt
	@test -n "$(BENCH_PY)" || { echo "make bench-peers: needs Python 3.11 or newer"; exit 1; }
	$(BENCH_PY) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q -r benchmarks/requirements-peers.txt
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks --json $(BENCH_VENV)/results.json $(BENCH_ARGS)

bench-peers: $(BENCH_VENV)/.installed $(PEERS_VENV)/.installed
	$(BENCH_VENV)/bin/python -m benchmarks --peers --peers-python $(PEERS_VENV)/bin/python \
	  --json $(PEERS_VENV)/results.json $(BENCH_ARGS)

# The dashboard bundle is built from static_src/ and committed, so users never need Node.
# `make assets` rebuilds it from the lock file; `check-assets` (part of `make test`)
# rebuilds it in a temporary folder and fails if the result differs from what is committed.
ASSETS_OUT := wurk_django/static/wurk
NPM_CI := npm ci --no-audit --no-fund --loglevel=error

assets:
	cd static_src && $(NPM_CI) && npm run build

check-assets:
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "check-assets: SKIPPED: node/npm not found, so the committed bundle in $(ASSETS_OUT) was not compared with a fresh build (install Node 20+ and npm to check it)"; \
	  exit 0; fi; \
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cd static_src; $(NPM_CI); node scripts/check-safety.mjs; npx tsc --noEmit -p .; \
	npx vite build --logLevel error --emptyOutDir --outDir "$$tmp/wurk"; \
	node scripts/verify-bundle.mjs "$$tmp/wurk"; \
	if diff -r "$$tmp/wurk" ../$(ASSETS_OUT) >"$$tmp/diff" 2>&1; then \
	  echo "check-assets: the committed bundle matches a fresh build"; \
	else head -n 40 "$$tmp/diff"; \
	  echo "check-assets: $(ASSETS_OUT) differs from a fresh build of static_src/: run 'make assets' and commit the result"; \
	  exit 1; fi

# Debian packages the tests use: chromium (the browser tests drive it, never a downloaded
# browser build), ruby-sidekiq (a real Sidekiq 6.4 for tests/compat and the bench's
# Sidekiq peer), redis-sentinel (fail-over tests) and openssl (certificates for the
# Sentinel TLS test). As root, the missing ones are installed, quietly; an installed one is
# left alone. Otherwise the command is printed, and the tests that need them fail.
SYSTEM_PACKAGES := chromium ruby-sidekiq redis-sentinel openssl
system-deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "make test: not a Debian system: install $(SYSTEM_PACKAGES) (or their equivalents) yourself"; \
	  exit 0; fi; \
	missing=$$(for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	missing=$$(echo $$missing); \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make test: installing Debian packages for the tests: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else \
	  echo "make test: missing $$missing; the tests that need them will fail. Install: sudo apt-get install -y $$missing"; \
	fi

clean:
	rm -rf .venv .wurk build *.egg-info
