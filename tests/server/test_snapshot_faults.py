"""Snapshots a store holds that do not belong where they are (hostile or stale database
contents): the server serves the game its log says, or says it cannot, never another."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from tests.server.conftest import Start
from tests.server.test_snapshots import _started, _view


def _sql(database: Path, statement: str, *values: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute(statement, values).fetchall()
    conn.close()
    return rows


def _snapshot(database: Path, game: int) -> tuple[object, object]:
    """The snapshot's data and version stored in ``game``'s row."""
    ((blob, snapshot_v),) = _sql(
        database, "SELECT snapshot, snapshot_v FROM games WHERE id = ?", game
    )
    return blob, snapshot_v


def _store_snapshot(database: Path, game: int, blob: object, snapshot_v: object) -> None:
    """Put a snapshot into ``game``'s row behind the server's back."""
    update = "UPDATE games SET snapshot = ?, snapshot_v = ? WHERE id = ?"
    _sql(database, update, blob, snapshot_v, game)


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
    blob, snapshot_v = _snapshot(database, played.game)
    assert blob is not None and snapshot_v == played.v
    server = await start()
    played.client = again = await server.connect()
    await again.hello(token)
    await again.request("open_game", game=played.game)
    await played.play(5)
    assert (await again.request("resign", game=played.game))["type"] == "ack"
    await server.stop()
    _store_snapshot(database, played.game, blob, snapshot_v)
    server = await start()
    third = await server.connect()
    await third.hello(token)
    opened = await third.request("open_game", game=played.game)
    assert opened["type"] == "game" and opened["view"]["status"] == "lost"
    replay = await third.request("replay", game=played.game)
    assert replay["type"] == "replay" and len(replay["replay"]["actions"]) == played.v


async def test_another_histories_snapshot_of_the_same_deal_is_ignored(
    start: Start, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot of the same deal played otherwise restores, but the log after it
    does not replay on it: the log is the truth, so the game is rebuilt from it."""
    server = await start(rate_registrations="off")
    jo, ann = await server.player("jo"), await server.player("ann")
    mine, other = await _started(jo, 12), await _started(ann, 13)
    await mine.play(40)
    await other.play(30)
    token = jo.token
    await server.stop()
    database = tmp_path / "scorpion.db"
    blob, snapshot_v = _snapshot(database, other.game)
    assert snapshot_v == other.v
    _store_snapshot(database, mine.game, blob, snapshot_v)
    server = await start()
    mine.client = again = await server.connect()
    await again.hello(token)
    with caplog.at_level(logging.WARNING, logger="server.service"):
        assert await _view(again, mine.game) == mine.expected()
    assert "snapshot does not fit the log after it" in caplog.text
    await mine.play(5)
    assert await _view(again, mine.game) == mine.expected()


async def test_another_histories_snapshot_at_the_games_version_is_found_out_by_its_log(
    start: Start, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With nothing logged after it, such a snapshot restores and is served: only the
    log could tell, and play reads none of it. What reads the log (a hint, a catch-up
    from before the restore) finds the log's position at that version is not the
    snapshot's, says so, and serves nothing made of the two."""
    server = await start(rate_registrations="off")
    jo, ann = await server.player("jo"), await server.player("ann")
    mine, other = await _started(jo, 14), await _started(ann, 15)
    await mine.play(30)
    await other.play(30)
    token = jo.token
    await server.stop()
    database = tmp_path / "scorpion.db"
    blob, snapshot_v = _snapshot(database, other.game)
    ((version,),) = _sql(database, "SELECT version FROM games WHERE id = ?", mine.game)
    assert snapshot_v == version == 30
    _sql(database, "UPDATE games SET snapshot = ? WHERE id = ?", blob, mine.game)
    server = await start()
    again = await server.connect()
    await again.hello(token)
    assert await _view(again, mine.game) == other.expected()  # cannot be told
    caught = await again.request("open_game", game=mine.game, since=1)
    assert caught["type"] == "game"  # not the log's events applied to another position
    with caplog.at_level(logging.ERROR, logger="server.service"):
        hint = await again.request("hint", game=mine.game)
    assert hint["type"] == "error" and hint["code"] == "internal"
    assert "snapshot is not the position its log reaches" in caplog.text
