"""Unfinished games stored with a snapshot come back exactly as they were (server.live).

Each test plays a game through the server while an engine ``Game`` (the mirror)
plays the same actions; after a restart the server's view must be the mirror's.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from engine.moves import legal_moves
from engine.state import RESERVE
from engine.view import public_view
from server import service as service_module
from server.connection import CLOSE_WAIT_S
from server.live import LiveGame
from server.service import SNAPSHOT_EVERY, SNAPSHOT_MIN_ACTIONS
from server.store import Store, StoredSnapshot
from tests.server.client import Client
from tests.server.conftest import Running, Start

MASKED = {"time_ms": 0, "score": 0, "running": False}


class Mirrored:
    """A game played through the server and, action for action, on an engine ``Game``."""

    def __init__(self, client: Client, game: int, deal: int, seed: int) -> None:
        self.client = client
        self.game = game
        self.mirror = Game(get_level("hard"), deal)
        self.v = 0
        self.rng = random.Random(seed)

    async def play(self, actions: int) -> None:
        """``actions`` random legal actions: moves mostly, deals, undos, now and then a
        restart."""
        for _ in range(actions):
            mirror, rng = self.mirror, self.rng
            choice = rng.random()
            moves = legal_moves(mirror.state, mirror.rules)
            if choice < 0.15 and mirror.undo_depth:
                await self.act("undo")
                mirror.undo()
            elif choice < 0.2:
                await self.act("restart")
                mirror.restart()
            elif (choice < 0.3 or not moves) and mirror.state.stock:
                await self.act("deal")
                mirror.deal()
            elif moves:
                move = rng.choice(moves)
                state = mirror.state
                src = state.reserve if move.src == RESERVE else state.cols[move.src]
                card = src[move.start]
                await self.act("move", card=card_str(card), to=move.dst + 1)
                mirror.move(card, move.dst + 1)
            else:
                await self.act("restart")
                mirror.restart()

    async def act(self, kind: str, **fields: Any) -> None:
        reply = await self.client.request(kind, game=self.game, v=self.v, **fields)
        assert reply.get("type") == "ack", reply
        self.v = reply["v"]

    def expected(self) -> dict[str, Any]:
        return {**public_view(self.mirror), **MASKED}


async def _started(client: Client, seed: int) -> Mirrored:
    start = await client.request("new_game", level="hard", deal=1)
    return Mirrored(client, start["game"], 1, seed)


async def _view(client: Client, game: int) -> dict[str, Any]:
    opened = await client.request("open_game", game=game)
    return {**opened["view"], **MASKED}


def _store(server: Running) -> Store:
    store = server.server.store
    assert store is not None
    return store


def _cached(server: Running, game: int) -> LiveGame:
    service = server.server.service
    assert service is not None
    live = service.cached(game)
    assert live is not None
    return live


@pytest.mark.parametrize("seed", [1, 2])
async def test_a_game_restored_from_its_snapshot_plays_on_as_the_original(
    server: Running, seed: int
) -> None:
    jo = await server.player("jo")
    played = await _started(jo, seed)
    await played.play(60)
    token = jo.token
    since = played.v - 5
    before = await jo.request("open_game", game=played.game, since=since)
    await server.restart()
    _record, snapshot, _tail = await _store(server).restore_game(played.game)
    assert snapshot is not None and snapshot.v == played.v  # written at shutdown

    played.client = again = await server.connect()
    await again.hello(token)
    assert await _view(again, played.game) == played.expected()
    live = _cached(server, played.game)
    assert live.log_missing == played.v  # restored: nothing of the log was read or replayed

    # A catch-up from before the restart reads the log once and gives what it gave before.
    caught = await again.request("open_game", game=played.game, since=since)
    assert live.log_missing == 0
    assert caught["type"] == before["type"] == "catch_up"
    assert caught["events"] == before["events"]

    await played.play(40)
    assert await _view(again, played.game) == played.expected()
    while played.mirror.undo_depth:  # the restored history reaches back as far
        await played.act("undo")
        played.mirror.undo()
    assert await _view(again, played.game) == played.expected()
    assert (await again.request("undo", game=played.game, v=played.v))["code"] == "nothing_to_undo"


async def test_a_hint_and_a_replay_of_a_restored_game_read_its_log(server: Running) -> None:
    jo = await server.player("jo")
    played = await _started(jo, 3)
    await played.play(SNAPSHOT_MIN_ACTIONS + 5)
    token = jo.token
    await server.restart()
    played.client = again = await server.connect()
    await again.hello(token)
    await again.request("open_game", game=played.game)
    assert _cached(server, played.game).log_missing == played.v
    hint = await again.request("hint", game=played.game)
    assert hint["type"] == "hint" and hint["v"] == played.v + 1
    assert _cached(server, played.game).log_missing == 0

    await server.restart()
    played.client = third = await server.connect()
    await third.hello(token)
    await third.request("open_game", game=played.game)
    # One action is too few for a new snapshot: the old one, and the hint replayed on it.
    assert _cached(server, played.game).log_missing == played.v
    resigned = await third.request("resign", game=played.game)
    assert resigned["type"] == "ack"
    replay = await third.request("replay", game=played.game)
    actions = replay["replay"]["actions"]
    assert len(actions) == played.v + 1 and actions[-1]["type"] == "hint"


async def test_a_short_game_is_stored_without_a_snapshot(server: Running) -> None:
    jo = await server.player("jo")
    played = await _started(jo, 4)
    await played.play(SNAPSHOT_MIN_ACTIONS - 1)
    await server.restart()
    _record, snapshot, actions = await _store(server).restore_game(played.game)
    assert snapshot is None and len(actions) == played.v


async def test_actions_after_the_snapshot_are_replayed_on_it(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot is of an older version when a node stopped without writing one (a
    crash): the load restores it and replays only the actions logged after it."""
    jo = await server.player("jo")
    played = await _started(jo, 5)
    await played.play(30)
    token = jo.token
    await server.restart()
    snapshot_v = played.v
    played.client = again = await server.connect()
    await again.hello(token)
    await again.request("open_game", game=played.game)
    await played.play(25)
    store = _store(server)

    async def lost(items: Any) -> int:  # as after kill -9: nothing written at the end
        return 0

    monkeypatch.setattr(store, "save_snapshots", lost)
    await server.restart()
    _record, snapshot, tail = await _store(server).restore_game(played.game)
    assert snapshot is not None and snapshot.v == snapshot_v
    assert len(tail) == played.v - snapshot_v
    played.client = third = await server.connect()
    await third.hello(token)
    assert await _view(third, played.game) == played.expected()
    assert _cached(server, played.game).log_missing == snapshot_v
    await played.play(10)
    assert await _view(third, played.game) == played.expected()


async def test_a_damaged_snapshot_is_ignored_and_the_game_rebuilt_from_its_log(
    start: Start, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = await start()
    jo = await server.player("jo")
    played = await _started(jo, 6)
    await played.play(20)
    token = jo.token
    await server.stop()
    database = tmp_path / "scorpion.db"
    with sqlite3.connect(database) as conn:  # [1, 2, 3]: format 1, then nonsense
        update = "UPDATE games SET snapshot = x'93010203' WHERE id = ?"
        assert conn.execute(update, (played.game,)).rowcount == 1
    conn.close()
    server = await start()
    played.client = again = await server.connect()
    await again.hello(token)
    with caplog.at_level(logging.WARNING, logger="server.service"):
        assert await _view(again, played.game) == played.expected()
    assert "snapshot cannot be restored" in caplog.text
    assert _cached(server, played.game).log_missing == 0  # rebuilt from the whole log
    await played.play(5)
    assert await _view(again, played.game) == played.expected()


async def test_a_game_evicted_from_memory_leaves_a_snapshot(start: Start) -> None:
    server = await start(cache_size=1, rate_registrations="off")
    jo = await server.player("jo")
    played = await _started(jo, 7)
    await played.play(SNAPSHOT_MIN_ACTIONS + 2)
    await jo.request("close_game", game=played.game)
    ann = await server.player("ann")
    await ann.request("new_game", level="hard", deal=2)  # the only place in memory
    snapshot = await _written(_store(server), played.game)
    assert snapshot is not None and snapshot.v == played.v
    assert await _view(jo, played.game) == played.expected()
    assert _cached(server, played.game).log_missing == played.v


async def test_every_snapshot_every_actions_the_snapshot_goes_with_the_action(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the action's own transaction, so that after a crash, too, no game replays more
    than SNAPSHOT_EVERY actions."""
    assert SNAPSHOT_EVERY <= 100
    monkeypatch.setattr(service_module, "SNAPSHOT_EVERY", 40)
    jo = await server.player("jo")
    played = await _started(jo, 8)
    store = _store(server)

    async def lost(items: Any) -> int:  # no write in the background, as after kill -9
        return 0

    monkeypatch.setattr(store, "save_snapshots", lost)
    await played.play(39)
    _record, snapshot, _tail = await store.restore_game(played.game)
    assert snapshot is None
    await played.play(1)
    _record, snapshot, _tail = await store.restore_game(played.game)  # at the ack already
    assert snapshot is not None and snapshot.v == 40
    assert _cached(server, played.game).snapshot_v == 40
    await played.play(45)
    token = jo.token
    await server.restart()
    _record, snapshot, tail = await _store(server).restore_game(played.game)
    assert snapshot is not None and snapshot.v == 80 and len(tail) == 5
    played.client = again = await server.connect()
    await again.hello(token)
    assert await _view(again, played.game) == played.expected()
    await played.play(5)
    assert await _view(again, played.game) == played.expected()


async def test_a_game_its_last_connection_closes_has_its_snapshot_written(
    server: Running,
) -> None:
    jo = await server.player("jo")
    played = await _started(jo, 10)
    await played.play(SNAPSHOT_MIN_ACTIONS)
    watcher = await server.connect()
    await watcher.hello(jo.token)
    await watcher.request("open_game", game=played.game)
    await jo.request("close_game", game=played.game)
    store = _store(server)
    _record, snapshot, _tail = await store.restore_game(played.game)
    assert snapshot is None  # still open on another connection
    await watcher.close()
    snapshot = await _written(store, played.game)
    assert snapshot is not None and snapshot.v == played.v


async def _written(store: Store, game: int) -> StoredSnapshot | None:
    """The game's snapshot once the background write stored it (None after 2 s)."""
    for _ in range(100):
        _record, snapshot, _tail = await store.restore_game(game)
        if snapshot is not None:
            return snapshot
        await asyncio.sleep(0.02)
    return None


async def test_a_damaged_old_action_behind_a_snapshot_spoils_only_what_reads_it(
    start: Start, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Play goes on from the snapshot; a catch-up from before it is answered with the
    position, and a hint (which reads every position seen) as for any log that does not
    replay."""
    server = await start()
    jo = await server.player("jo")
    played = await _started(jo, 9)
    await played.play(20)
    token = jo.token
    await server.stop()
    with sqlite3.connect(tmp_path / "scorpion.db") as conn:
        update = "UPDATE game_actions SET type = 'move', card = 'ZZ' WHERE game_id = ? AND seq = 3"
        assert conn.execute(update, (played.game,)).rowcount == 1
    conn.close()
    server = await start()
    played.client = again = await server.connect()
    await again.hello(token)
    assert await _view(again, played.game) == played.expected()
    caught = await again.request("open_game", game=played.game, since=1)
    assert caught["type"] == "game" and caught["v"] == played.v
    with caplog.at_level(logging.ERROR, logger="server.service"):
        hint = await again.request("hint", game=played.game)
    assert hint["code"] == "internal" and "cannot be restored" in hint["message"]
    assert "it plays on from its snapshot" in caplog.text
    await played.play(5)
    assert await _view(again, played.game) == played.expected()


async def test_shutdown_waits_for_snapshots_no_longer_than_its_bound(
    start: Start, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Those queued as connections close (every game a player had open) included."""
    monkeypatch.setattr(service_module, "SNAPSHOT_SHUTDOWN_S", 0.3)
    server = await start()
    jo = await server.player("jo")
    played = await _started(jo, 11)
    await played.play(SNAPSHOT_MIN_ACTIONS)
    store = _store(server)

    async def stuck(items: Any) -> int:  # a database that no longer answers
        await asyncio.sleep(60)
        return 0

    monkeypatch.setattr(store, "save_snapshots", stuck)
    began = asyncio.get_running_loop().time()
    with caplog.at_level(logging.WARNING, logger="server.service"):
        await server.stop()
    assert asyncio.get_running_loop().time() - began < 5
    assert "not every game's snapshot and play time was written in time" in caplog.text


async def test_a_client_that_stops_reading_holds_shutdown_up_no_longer_than_a_close_wait(
    start: Start,
) -> None:
    """A frozen device never answers the close: shutdown stops its game's clock at once,
    waits for its close no longer than any close the server makes, and writes the
    snapshot, all well inside a supervisor's usual 10 s."""
    loop = asyncio.get_running_loop()
    server = await start()
    jo = await server.player("jo")
    began = loop.time()
    played = await _started(jo, 13)
    await played.play(SNAPSHOT_MIN_ACTIONS)
    jo.ws.transport.pause_reading()  # the server's close frame is never read, nor answered
    stopping = loop.time()
    await server.server.stop()
    assert loop.time() - stopping < CLOSE_WAIT_S + 1.5
    jo.ws.transport.abort()
    played_ms = (stopping - began) * 1000
    server = await start()
    record, snapshot, _log = await _store(server).restore_game(played.game)
    assert record is not None and record.time_ms <= played_ms + 50, (record, played_ms)
    assert snapshot is not None and snapshot.v == played.v
