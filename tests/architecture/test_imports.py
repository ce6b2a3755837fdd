"""The import direction of architecture.md, read from the source with ``ast``.

engine and protocol import nothing of ours; clients import protocol only;
the engine imports only the standard library (no asyncio, sockets, msgpack, SQL).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = {"engine", "protocol", "server", "clients", "tests", "bench"}
ALLOWED = {
    "engine": {"engine"},
    "protocol": {"protocol"},
    "clients": {"clients", "protocol"},
    "server": {"server", "engine", "protocol"},
}
# Standard-library modules the pure engine must not use (I/O, concurrency, networking).
ENGINE_FORBIDDEN_STDLIB = {"asyncio", "socket", "sqlite3", "threading", "subprocess", "selectors"}
# The command line (``scorpion-engine``) runs its command on a thread while the main one
# waits, so that Ctrl-C is seen during the compiled search (in C, where Python does not
# run its signal handlers). Nothing of the engine imports it: the library stays synchronous.
ENGINE_PROGRAM = ("engine/cli.py", "threading")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_import_direction(package: str) -> None:
    violations = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files(package)
        for module in imported_modules(path)
        if module.split(".")[0] in OURS and module.split(".")[0] not in ALLOWED[package]
    ]
    assert violations == []


def test_engine_uses_only_the_standard_library() -> None:
    stdlib = sys.stdlib_module_names
    violations = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files("engine")
        for module in imported_modules(path)
        if (top := module.split(".")[0]) != "engine"
        and (top not in stdlib or top in ENGINE_FORBIDDEN_STDLIB)
        and (path.relative_to(ROOT).as_posix(), module) != ENGINE_PROGRAM
    ]
    assert violations == []
    importers = [
        path.relative_to(ROOT).as_posix()
        for path in python_files("engine")
        if "engine.cli" in imported_modules(path)
    ]
    assert importers == ["engine/__main__.py"]  # the program only, nothing of the library


def test_the_check_sees_every_package() -> None:
    assert python_files("engine"), "the engine package is where the test looks"
    assert imported_modules(ROOT / "engine" / "game.py") >= {"engine.state"}
