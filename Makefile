# The two README commands: `make run` and `make test`. Both call `make install` first, which is
# idempotent: it installs only what is missing (Debian packages, the pinned Toxiproxy server,
# the project virtualenv).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
LOCAL := .local
TOXIPROXY_VERSION := v2.12.0
TOXIPROXY := $(LOCAL)/bin/toxiproxy-server
APT_PACKAGES := zookeeper openssh-server libslf4j-java default-jre-headless iproute2 procps nftables maven chromium chromium-driver
PYTEST_ARGS ?=
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)

.PHONY: install run test nightly lint clean teardown apt toxiproxy venv udfs cds

install: apt toxiproxy venv udfs cds

apt:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

toxiproxy: $(TOXIPROXY)
$(TOXIPROXY):
	@mkdir -p $(LOCAL)/bin $(LOCAL)/gobin
	@test -x "$(GO)" || { echo "Go is required to build Toxiproxy (set GO=/path/to/go)"; exit 1; }
	GOBIN=$(CURDIR)/$(LOCAL)/gobin $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	cp $(LOCAL)/gobin/server $(TOXIPROXY)

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	@touch $@

# The project's JVM functions for Spark (checkers/udfs.py): a jar compiled from checkers/java/ when the
# one for these sources and this pyspark is missing. Only an optimization: without javac, sessions
# run the Spark expressions they stand for.
udfs: venv
	-@$(VENV)/bin/python -m checkers.udfs

# The Spark driver's class-data-sharing archive (checkers/cds.py, built by harness/cds.py): sessions start in half the time.
# Built when the one for this Java and pyspark is missing; only an optimization: without it (a
# failure) sessions start as before.
cds: apt venv udfs
	-@$(VENV)/bin/python -m harness.cds --if-missing

# The default test with the queue workload: thousands of client operations, recorded and checked.
run: install
	$(VENV)/bin/harness run --workload queue

# The whole suite on two pytest-xdist workers, one per core (PYTEST_WORKERS=0: one process; see
# README); the 25 slowest tests are listed at the end, so CI's output says where the time goes.
PYTEST_WORKERS ?= 2
test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q -ra -n $(PYTEST_WORKERS) --dist loadgroup --durations=25 -m "not nightly" $(PYTEST_ARGS)

# What a commit need not wait for: each JIRA reproduction three times per variant (make test runs
# each once), so a reproduction that holds less than 3/3, or a fix that is not clean 3/3, shows;
# and the tests marked ``nightly`` (each JIRA story's pair on released brokers beyond the one
# make test runs).
NIGHTLY_TESTS := tests/integration/test_repro_scenarios.py tests/integration/test_repro_kafka_14845.py
nightly: install
	ZKFENCE_REPRO_RUNS=3 $(VENV)/bin/pytest -q -ra -n $(PYTEST_WORKERS) --dist loadgroup --durations=25 $(NIGHTLY_TESTS) $(PYTEST_ARGS)
	$(VENV)/bin/pytest -q -ra -n $(PYTEST_WORKERS) --dist loadgroup --durations=25 -m nightly tests $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

teardown: venv
	$(VENV)/bin/harness teardown

clean: teardown
	rm -rf $(VENV) $(LOCAL)
