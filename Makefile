# Every target bootstraps .venv on first use, so each is one command on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The pinned versions every install uses (`make lock` renews them).
CONSTRAINTS := constraints.txt

.PHONY: run test check lint typecheck bench clean native lock python-check

# The solver's compiled search (engine/solver/native.c, a plain shared library
# loaded with ctypes). Without a C compiler the solver runs in pure Python.
CC ?= cc
NATIVE := engine/solver/_native.so
NATIVE_CFLAGS ?= -O2 -std=c11 -Wall -Wextra -shared -fPIC

# Python 3.11 or newer, for .venv and for the interpreter that makes it. A check
# that fails prints one line saying what to do, instead of a pip error later on.
PYTHON_OK := import sys; sys.exit(sys.version_info < (3, 11))
VERSION_OF = $$($(1) -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "not runnable")

python-check:
	@if [ -e $(VENV) ]; then \
	    $(BIN)/python -c '$(PYTHON_OK)' 2>/dev/null || { \
	    echo "make: $(VENV) is broken or too old (its python: $(call VERSION_OF,$(BIN)/python); 3.11+ needed): run \`make clean\`, then make again (with PYTHON=python3.11 or newer if $(PYTHON) is older)" >&2; \
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

run: $(STAMP) $(NATIVE)
	$(BIN)/scorpion-server

test: $(STAMP) $(NATIVE)
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

bench: $(STAMP) $(NATIVE)
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
