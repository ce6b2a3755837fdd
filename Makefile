# Every target bootstraps .venv on first use, so each is one command on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check lint typecheck bench clean native

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

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis $(NATIVE)
