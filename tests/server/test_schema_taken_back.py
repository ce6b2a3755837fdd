"""A schema taken back under running servers (``alembic downgrade`` by an operator
rolling back): requests answer ``unavailable``, as ``/readyz`` says not ready, and
not ``internal``, which is for the server's own bugs; ``--migrate`` mends it."""

from __future__ import annotations

import logging

import pytest

from server.app import migrate
from server.store.database import create_engine
from server.store.schema import run_alembic
from tests.server.client import Client
from tests.server.conftest import Running


async def test_requests_on_a_schema_taken_back_answer_unavailable(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    una = await server.player("una")
    hello_token = una.token
    game = (await una.request("new_game", level="hard", deal=1))["game"]
    engine = create_engine(server.settings.store_url)
    try:
        await run_alembic(engine, "downgrade", "0007")  # no `paused`, no `issued_tokens`
    finally:
        await engine.dispose()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        moved = await una.request("move", game=game, v=0, card="7C", to=5)
        paused = await una.request("pause", game=game)
        opened = await una.request("open_game", game=game)  # caught up first, on PostgreSQL
        other = await Client.connect(server.url)
        server.clients.append(other)
        hello = await other.hello(hello_token)
    codes = [moved["code"], paused["code"], hello["code"]]
    assert codes == ["unavailable"] * 3, (moved, paused, hello)
    # one node holds the game as committed; several ask the store what others wrote
    assert opened.get("code", opened["type"]) == (
        "game" if server.settings.is_sqlite else "unavailable"
    )
    assert "internal error" not in caplog.text
    assert "--migrate" in caplog.text  # the operator is told what to do
    if not server.settings.is_sqlite:  # the catch-up's line says why too
        lines = [r for r in caplog.records if "cannot be read to catch up" in r.getMessage()]
        assert lines and all("no schema" in str(r.exc_info and r.exc_info[1]) for r in lines)
    if server.settings.is_sqlite:  # one node: it upgrades the schema as it starts
        await server.restart()
        una = await server.connect()
        assert (await una.hello(hello_token))["type"] == "welcome"
        assert (await una.request("open_game", game=game))["type"] == "game"
    else:
        assert await migrate(server.settings)
    again = await una.request("move", game=game, v=0, card="7C", to=5)
    assert again["type"] == "ack", again
