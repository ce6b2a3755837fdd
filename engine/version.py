"""The project's version: one string, written once in ``pyproject.toml``.

Every program says it the same way (``scorpion-server --version`` and the
``welcome`` reply's ``server``, ``scorpion --version`` and its hello's
``client``, ``scorpion-engine --version``). An installed package (a wheel,
``pip install``, the editable install ``make`` does) reads it from its
metadata; run from a checkout that is not installed (``PYTHONPATH=.``), it
is read from the ``pyproject.toml`` beside the packages; failing both it is
``0+unknown``. ``protocol.version`` is the same function for the server and
the clients: the engine imports nothing of ours, nor protocol the engine.
"""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Final

__all__ = ["DISTRIBUTION", "UNKNOWN", "version"]

DISTRIBUTION: Final = "scorpion-server"
UNKNOWN: Final = "0+unknown"
_PYPROJECT: Final = Path(__file__).resolve().parents[1] / "pyproject.toml"


@cache
def version() -> str:
    """The version of the ``scorpion-server`` distribution, e.g. ``0.1.0``."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return _checkout_version(_PYPROJECT)


def _checkout_version(pyproject: Path) -> str:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    except (OSError, ValueError, KeyError):
        return UNKNOWN
    if project.get("name") != DISTRIBUTION or not isinstance(project.get("version"), str):
        return UNKNOWN
    return str(project["version"])
