# pyspark_flinkish developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
SHARED ?= ../shared
VENV := .venv
VPY := $(CURDIR)/$(VENV)/bin/python
# Reinstall whenever setup.cfg (dependencies, extras, entry points) changes.
SETUP_SHA := $(shell sha256sum setup.cfg | cut -c1-16)
STAMP := $(VENV)/.installed-$(SETUP_SHA)

export PIP_DISABLE_PIP_VERSION_CHECK := 1


.PHONY: jars setup test test-jvm-free docs test-integration conformance demo lint bench

setup: $(STAMP)

$(STAMP):
	@[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# Delta, the Kafka connector and a Kafka broker from Maven (`mvn`), into the git-ignored .jars/ (once).
jars: setup
	$(VPY) -m pyspark_flinkish.spark.jars

# Run every test, first the JVM-free suite, then the docs build, then the integration suite; stop at the first failure.
test: setup
	@$(MAKE) --no-print-directory test-jvm-free
	@$(MAKE) --no-print-directory docs
	@$(MAKE) --no-print-directory test-integration

# The documentation site (mkdocs.yml over docs/, API pages from the docstrings) into the git-ignored site/;
# --strict (and never --quiet, which hides the warnings --strict counts): a broken link, a missing page or a docstring mkdocstrings cannot render fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# No java reachable: JAVA_HOME unset and PATH reduced to the venv's bin directory.
# pytest exit code 5 (nothing collected) is a failure here: these tests must exist.
test-jvm-free: setup
	env -u JAVA_HOME PATH="$(CURDIR)/$(VENV)/bin" PYSPARK_FLINKISH_ASSERT_NO_JAVA=1 \
		$(VPY) -m pytest -q --timeout=120 jvm-free-tests

# Spark/Kafka/Delta integration tests; absent or fully deselected suites are not an error.
test-integration: setup jars
	@if [ -z "$$(find tests -type f \( -name 'test_*.py' -o -name '*_test.py' \) 2>/dev/null | head -1)" ]; then \
		echo "no integration tests yet"; \
	else \
		rc=0; $(VPY) -m pytest -q --timeout=900 tests || rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "no integration tests collected"; rc=0; fi; \
		exit $$rc; \
	fi

conformance: setup
	$(VPY) -m pyspark_flinkish.conformance $(SHARED)/conformance/scenarios --engine local \
		--out out/conformance --expected $(SHARED)/conformance/expected

demo: setup
	$(VPY) -m pyspark_flinkish.demo

lint: setup
	@[ -x $(VENV)/bin/ruff ] || $(VENV)/bin/pip install -q ruff
	$(VENV)/bin/ruff check pyspark_flinkish jvm-free-tests conftest.py

# The benchmark suite (docs/benchmarks.md): figures, never pass/fail. BENCH_ARGS=--quick for a smoke run.
bench: setup jars
	$(VENV)/bin/pip install -q -e '.[bench]'
	$(VPY) benchmarks/run_all.py --json out/bench-all.json --png out/bench-all.png $(BENCH_ARGS)
