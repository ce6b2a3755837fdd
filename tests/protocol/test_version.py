"""One version string: pyproject.toml's, read from the package metadata by every program."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import cast

import pytest

import engine.version
import protocol.version
from clients.cli.options import build_parser
from clients.cli.version import VERSION as CLIENT_VERSION
from engine.cli import main as engine_main
from server.config import parser as server_parser
from server.service import SERVER_NAME

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
MODULES = (engine.version, protocol.version)
VERSIONS = (engine.version.version, protocol.version.version)
READERS = (engine.version._checkout_version, protocol.version._checkout_version)


def test_the_installed_version_is_pyprojects() -> None:
    assert metadata.version("scorpion-server") == PYPROJECT["version"]
    assert engine.version.version() == protocol.version.version() == PYPROJECT["version"]


def test_every_program_says_that_version(capsys: pytest.CaptureFixture[str]) -> None:
    expected = PYPROJECT["version"]
    assert f"scorpion-server {expected}" == SERVER_NAME
    assert expected == CLIENT_VERSION
    for parse, name in (
        (build_parser().parse_args, "scorpion-cli"),
        (server_parser().parse_args, "scorpion-server"),
    ):
        with pytest.raises(SystemExit) as exited:
            parse(["--version"])
        assert exited.value.code == 0
        assert capsys.readouterr().out.startswith(f"{name} {expected}")
    assert engine_main(["--version"]) == 0  # its main ends with the status, not SystemExit
    assert capsys.readouterr().out.startswith(f"scorpion-engine {expected}")


@pytest.mark.parametrize("version", VERSIONS, ids=["engine", "protocol"])
def test_without_metadata_a_checkout_reads_pyproject(
    version: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    cached = cast("functools._lru_cache_wrapper[str]", version)
    cached.cache_clear()
    try:
        assert version() == PYPROJECT["version"]
    finally:
        cached.cache_clear()


@pytest.mark.parametrize("read", READERS, ids=["engine", "protocol"])
def test_anything_else_is_unknown(read: Callable[[Path], str], tmp_path: Path) -> None:
    assert read(tmp_path / "missing.toml") == "0+unknown"
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "someone-else"\nversion = "9.9"\n', encoding="utf-8")
    assert read(other) == "0+unknown"
    other.write_text("not = [toml", encoding="utf-8")
    assert read(other) == "0+unknown"


def test_the_two_copies_are_the_same_code() -> None:
    """engine imports nothing of ours, so it has its own copy; it must not drift."""
    sources = [Path(module.__file__ or "").read_text(encoding="utf-8") for module in MODULES]
    bodies = [source[source.index('"""\n\n') :] for source in sources]
    assert bodies[0] == bodies[1]
