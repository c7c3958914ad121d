# pyspark_flinkish developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

PYTHON ?= python3
# The conformance material `make conformance` runs: the repository's vendored copy, or SHARED/conformance when
# SHARED is given (e.g. `make conformance SHARED=../shared`).
SHARED ?=
CONFORMANCE ?= $(if $(SHARED),$(SHARED)/conformance,conformance)
VENV := .venv
VPY := $(CURDIR)/$(VENV)/bin/python
# Reinstall whenever setup.cfg (dependencies, extras, entry points) changes.
SETUP_SHA := $(shell sha256sum setup.cfg | cut -c1-16)
STAMP := $(VENV)/.installed-$(SETUP_SHA)

export PIP_DISABLE_PIP_VERSION_CHECK := 1


.PHONY: jars setup test test-jvm-free docs test-notebooks test-integration conformance demo demo-local lint bench soak

setup: $(STAMP)

$(STAMP):
	@[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# Delta, the Kafka connector, a Kafka broker, a test HDFS, a test S3 server (S3Proxy) and Spark's s3a (hadoop-aws and
# the AWS SDK bundle, about 690 MB) from Maven (`mvn`), into the git-ignored .jars/ (once).
jars: setup
	$(VPY) -m pyspark_flinkish.spark.jars

# Run every test, first the JVM-free suite, then the docs build, the notebooks, then the integration suite; stop at the
# first failure.
test: setup
	@$(MAKE) --no-print-directory test-jvm-free
	@$(MAKE) --no-print-directory docs
	@$(MAKE) --no-print-directory test-notebooks
	@$(MAKE) --no-print-directory test-integration

# The documentation site (mkdocs.yml over docs/, API pages from the docstrings) into the git-ignored site/;
# --strict (and never --quiet, which hides the warnings --strict counts): a broken link, a missing page or a docstring mkdocstrings cannot render fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# No java reachable: JAVA_HOME unset and PATH reduced to the venv's bin directory.
# pytest exit code 5 (nothing collected) is a failure here: these tests must exist.
# One pytest-xdist worker per core (setup.cfg's addopts, so also a plain `pytest jvm-free-tests`): the suite is CPU-bound and its tests independent (about 60 s
# of CPU time from a fresh clone, about 52 s once the bytecode is written; about 56 s of wall time on the 2-core machine
# lightly loaded). jvm-free-tests/conftest.py's LONGEST_FIRST starts the longest tests first.
# Bytecode is written (PYTHONDONTWRITEBYTECODE unset; __pycache__/ is git-ignored): the package's modules and pytest's
# rewritten test modules are compiled once, not again in each xdist worker and each subprocess a test starts.
test-jvm-free: setup
	env -u JAVA_HOME -u PYTHONDONTWRITEBYTECODE PATH="$(CURDIR)/$(VENV)/bin" PYSPARK_FLINKISH_ASSERT_NO_JAVA=1 \
		$(VPY) -m pytest -q --timeout=120 jvm-free-tests

# The notebooks in notebooks/, top to bottom in a fresh kernel each (notebooks/conftest.py: nbmake runs them, outputs
# are not written back, and a notebook whose outputs hold no image fails). Notebooks 1-4
# and 7 run on the JVM-free engine, 5 and 6 start a local SparkSession (Delta from `make jars`). A cell may take 5 minutes
# and a notebook 10 (pytest-timeout): a wedged Spark query fails the run instead of hanging it.
test-notebooks: setup jars
	$(VPY) -m pytest -q -n 0 -p no:cacheprovider --nbmake-timeout=300 --timeout=600 notebooks

# Spark/Kafka/Delta integration tests; absent or fully deselected suites are not an error. Two pytest-xdist workers,
# a whole module each at a time (`--dist loadfile`: a module's fixtures and order stay together): much of a test's
# time is spent waiting on JVMs and drivers starting, Spark's scheduling and Kafka, so two workers overlap on two
# cores (28 minutes against about 32 in one, on a fresh clone of the 2-core machine). Every Spark session the suite
# starts reconstructs a Delta table's snapshot in 2 partitions, not Delta's 50 (tests/conftest.py's
# DELTA_SNAPSHOT_PARTITIONS; tests/delta/test_delta.py alone: 826 s against 1,943 s before, side by side under load).
test-integration: setup jars
	@if [ -z "$$(find tests -type f \( -name 'test_*.py' -o -name '*_test.py' \) 2>/dev/null | head -1)" ]; then \
		echo "no integration tests yet"; \
	else \
		rc=0; $(VPY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --timeout=900 --durations=20 tests || rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "no integration tests collected"; rc=0; fi; \
		exit $$rc; \
	fi

conformance: setup
	$(VPY) -m pyspark_flinkish.conformance $(CONFORMANCE)/scenarios --engine local \
		--out out/conformance --expected $(CONFORMANCE)/expected

# The live demo: a local Kafka broker, a real-time producer, the pipeline on Spark, exactly-once Delta output, a
# chart in out/demo/demo.png; a re-run resumes from out/demo/checkpoint. `make demo-local`: the JVM-free demo.
demo: setup jars
	$(VPY) -m pyspark_flinkish.demo

demo-local: setup
	$(VPY) -m pyspark_flinkish.demo --local

lint: setup
	@[ -x $(VENV)/bin/ruff ] || $(VENV)/bin/pip install -q ruff
	$(VENV)/bin/ruff check pyspark_flinkish jvm-free-tests tests benchmarks examples conftest.py

# The soak test (tests/soak, docs/operations.md): a constant Kafka input rate for SOAK_SECONDS (CI runs it with the
# default 60 as part of test-integration); e.g. `make soak SOAK_SECONDS=3600` for an hour. SOAK_RATE: events per second.
SOAK_SECONDS ?= 600
SOAK_RATE ?= 100
soak: setup jars
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_RATE=$(SOAK_RATE) $(VPY) -m pytest -q -n 0 -s -p no:cacheprovider -m soak \
		--timeout=$$(( $(SOAK_SECONDS) + 900 )) tests/soak

# The benchmark suite (docs/benchmarks.md): figures, never pass/fail. BENCH_ARGS=--quick for a smoke run.
bench: setup jars
	$(VENV)/bin/pip install -q -e '.[bench]'
	$(VPY) benchmarks/run_all.py --json out/bench-all.json --png out/bench-all.png $(BENCH_ARGS)
