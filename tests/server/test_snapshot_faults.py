"""Snapshots a store holds that do not belong where they are (hostile or stale database
contents): the server serves the game its log says, or says it cannot, never another."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.server.conftest import Start
from tests.server.test_snapshots import _started


def _sql(database: Path, statement: str, *values: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute(statement, values).fetchall()
    conn.close()
    return rows


async def test_a_finished_game_holding_a_snapshot_is_opened_and_replayed_from_its_log(
    start: Start, tmp_path: Path
) -> None:
    """Ending a game drops its snapshot; a row that holds one all the same (a hand's
    change, a copy of an older row) must not keep the finished game from its replay."""
    server = await start()
    jo = await server.player("jo")
    played = await _started(jo, 11)
    await played.play(30)
    token = jo.token
    await server.stop()
    database = tmp_path / "scorpion.db"
    ((blob, snapshot_v),) = _sql(
        database, "SELECT snapshot, snapshot_v FROM games WHERE id = ?", played.game
    )
    assert blob is not None and snapshot_v == played.v
    server = await start()
    played.client = again = await server.connect()
    await again.hello(token)
    await again.request("open_game", game=played.game)
    await played.play(5)
    assert (await again.request("resign", game=played.game))["type"] == "ack"
    await server.stop()
    _sql(
        database,
        "UPDATE games SET snapshot = ?, snapshot_v = ? WHERE id = ?",
        blob,
        snapshot_v,
        played.game,
    )
    server = await start()
    third = await server.connect()
    await third.hello(token)
    opened = await third.request("open_game", game=played.game)
    assert opened["type"] == "game" and opened["view"]["status"] == "lost"
    replay = await third.request("replay", game=played.game)
    assert replay["type"] == "replay" and len(replay["replay"]["actions"]) == played.v
