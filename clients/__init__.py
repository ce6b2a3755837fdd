"""Clients of the Scorpion server; they speak only the protocol (architecture.md)."""

from __future__ import annotations

__all__: list[str] = []
