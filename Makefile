# Every target bootstraps .venv on first use, so each is one command on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The pinned versions every install uses (`make lock` renews them).
CONSTRAINTS := constraints.txt

.PHONY: run test check lint typecheck bench clean native web web-deps lock python-check fuzz

# The solver's compiled search (engine/solver/native.c, a plain shared library
# loaded with ctypes). Without a C compiler the solver runs in pure Python.
CC ?= cc
NATIVE := engine/solver/_native.so
NATIVE_CFLAGS ?= -O2 -std=c11 -Wall -Wextra -shared -fPIC

# Python 3.11 or newer, for .venv and for the interpreter that makes it. A check
# that fails prints one line saying what to do, instead of a pip error later on.
PYTHON_OK := import sys; sys.exit(sys.version_info < (3, 11))
VERSION_OF = $$($(1) -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "not runnable")

# A .venv that is a dangling link, has no pip, or lost what make installed is broken too.
python-check:
	@if [ -e $(VENV) ] || [ -L $(VENV) ]; then \
	    $(BIN)/python -c '$(PYTHON_OK)' 2>/dev/null || { \
	    echo "make: $(VENV) is broken or too old (its python: $(call VERSION_OF,$(BIN)/python); 3.11+ needed): run \`make clean\`, then make again (with PYTHON=python3.11 or newer if $(PYTHON) is older)" >&2; \
	    exit 1; }; \
	    { $(BIN)/python -c 'import pip' 2>/dev/null && \
	      { [ ! -e $(STAMP) ] || [ -x $(BIN)/scorpion-server ]; }; } || { \
	    echo "make: $(VENV) is broken (no pip, or the packages make installed are gone): run \`make clean\`, then make again" >&2; \
	    exit 1; }; \
	else \
	    $(PYTHON) -c '$(PYTHON_OK)' 2>/dev/null || { \
	    echo "make: Python 3.11 or newer is needed, and $(PYTHON) is $(call VERSION_OF,$(PYTHON)): run make PYTHON=python3.11 (or the path of any Python 3.11+)" >&2; \
	    exit 1; }; \
	fi

$(STAMP): pyproject.toml setup.py $(CONSTRAINTS) | python-check
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e '.[dev]'
	touch $(STAMP)

$(NATIVE): engine/solver/native.c
	rm -f $@
	$(CC) $(NATIVE_CFLAGS) -o $@ $< || echo "could not compile $<: the solver runs in pure Python"

native: $(NATIVE)

# The web client (clients/web, Node.js 20 and npm), built into server/web/ where
# the server serves it and the wheel ships it. Without npm the server still runs,
# and its start page says how to build the client.
WEB := clients/web
WEB_DEPS := $(WEB)/node_modules/.installed
WEB_BUILD := server/web/index.html
WEB_SOURCES := $(wildcard $(WEB)/src/*) $(WEB)/index.html $(WEB)/vite.config.ts $(WEB)/package-lock.json

$(WEB_DEPS): $(WEB)/package-lock.json
	cd $(WEB) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
	touch $@

$(WEB_BUILD): $(WEB_DEPS) $(WEB_SOURCES)
	cd $(WEB) && npm run build

# Without npm, one line (make's own) saying so, not the shell's "npm: not found".
web:
	$(if $(shell command -v npm 2>/dev/null),,$(error npm is not installed: install Node.js 20 and npm to build the web client))
	@$(MAKE) --no-print-directory $(WEB_BUILD)

# The client's packages when npm is here (its tests skip, saying why, when not).
web-deps:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(WEB_DEPS); \
	else echo "npm is not installed: the web client's tests will skip"; fi

run: $(STAMP) $(NATIVE) | python-check
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	else echo "npm is not installed: serving without the web client (/ says how to build it)"; fi
	$(BIN)/scorpion-server

# Three workers, on two cores too: much of the suite waits (servers starting, timeouts,
# the browser), and two left the cores idle for minutes of it. The slowest tests are
# listed at the end, to keep the whole run (CI's included) within its time.
test: $(STAMP) $(NATIVE) web-deps | python-check
	$(BIN)/python -m pytest -n 3 --dist worksteal -q --durations=25

# The fuzz test of the suite (tests/server/test_fuzz.py) at ten times its size: 106,000 frames.
fuzz: $(STAMP) $(NATIVE) | python-check
	SCORPION_FUZZ_EXAMPLES=5300 $(BIN)/python -m pytest tests/server/test_fuzz.py -q -s

lint: $(STAMP) | python-check
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: $(STAMP) | python-check
	$(BIN)/mypy

check: lint typecheck test

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) $(NATIVE)
	$(BIN)/python -m bench.run

# Pin the newest versions pyproject.toml allows, resolved in a scratch venv.
lock: python-check
	rm -rf $(VENV)-lock
	$(PYTHON) -m venv $(VENV)-lock
	$(VENV)-lock/bin/python -m pip install --quiet '.[dev]'
	{ echo "# Pinned versions of every dependency (pip install -c $(CONSTRAINTS)): make lock renews them."; \
	  $(VENV)-lock/bin/python -m pip freeze --exclude scorpion-server; } > $(CONSTRAINTS)
	rm -rf $(VENV)-lock

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis $(NATIVE) build dist
	rm -rf server/web $(WEB)/node_modules $(WEB)/test-results
