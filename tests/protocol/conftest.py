"""Shared helpers for the protocol tests."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.schema import generate
from tests.protocol.schema_check import SchemaChecker


@pytest.fixture(scope="session")
def checker() -> SchemaChecker:
    return SchemaChecker(generate())


def move(**changes: Any) -> dict[str, Any]:
    """A valid move request, with some fields changed (None removes one)."""
    message: dict[str, Any] = {"type": "move", "id": 7, "game": 42, "v": 3, "card": "TH", "to": 5}
    message.update(changes)
    return {key: value for key, value in message.items() if value is not None}
