"""The abuse rule PROTOCOL.md states is the server's default."""

from __future__ import annotations

from protocol import ABUSE_LIMIT, ABUSE_WINDOW_SECONDS
from server.config import Settings, limit_settings


def test_the_published_abuse_rule_is_the_servers_default() -> None:
    limits = limit_settings(Settings())
    assert (limits.abuse_limit, limits.abuse_window) == (ABUSE_LIMIT, ABUSE_WINDOW_SECONDS)
