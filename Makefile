# Every target bootstraps .venv on first use, so each is one command on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check lint typecheck bench clean native web web-deps

# The solver's compiled search (engine/solver/native.c, a plain shared library
# loaded with ctypes). Without a C compiler the solver runs in pure Python.
CC ?= cc
NATIVE := engine/solver/_native.so
NATIVE_CFLAGS ?= -O2 -std=c11 -Wall -Wextra -shared -fPIC

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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

web: $(WEB_BUILD)

# The client's packages when npm is here (its tests skip, saying why, when not).
web-deps:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(WEB_DEPS); \
	else echo "npm is not installed: the web client's tests will skip"; fi

run: $(STAMP) $(NATIVE)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory web; \
	else echo "npm is not installed: serving without the web client (/ says how to build it)"; fi
	$(BIN)/scorpion-server

test: $(STAMP) $(NATIVE) web-deps
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) $(NATIVE)
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis $(NATIVE)
	rm -rf server/web $(WEB)/node_modules $(WEB)/test-results
