"""The client's version: the distribution's, as every program of the project says it."""

from __future__ import annotations

from protocol.version import version

__all__ = ["VERSION"]

VERSION = version()
