"""Two nodes on one PostgreSQL database, each holding one game at most, so a player's
game is evicted, snapshotted and restored over and over while two devices play it.

One player plays one game through two connections, one on each node, at the version
each device's board stands at (now and then an older one); the connections close and
open the game again (with ``since`` their board's version, or without), another player
starts games on either node (pushing the game out of memory where it is not open), and
the nodes restart. After every step:

- every device's board, built only from the frames it received, is the position a
  fresh ``open_game`` gives;
- each node's game in memory is the engine's replay of the whole stored log;
- the stored snapshot, if any, is of a version the game has reached, and restoring it
  and replaying the log after it is that replay again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from sqlalchemy import text

from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from engine.moves import legal_moves
from engine.state import RESERVE
from server.live import event_dicts, to_action
from server.service import GameService
from server.store import Store
from tests.server.board import Board
from tests.server.client import TIMEOUT, Client
from tests.server.conftest import OPEN, Running, quiet_settings
from tests.server.store.conftest import PG_EXAMPLE, PG_VARIABLE, _admin

Message = dict[str, Any]
COMPARED = ("columns", "stock", "reserve", "foundations", "moves", "undos", "hints", "status")


@dataclasses.dataclass
class Device:
    node: int
    client: Client
    board: Board
    open: bool = True
    fed: int = 0

    def absorb(self) -> None:
        new = self.client.frames[self.fed :]
        self.fed = len(self.client.frames)
        for frame in new:
            self.board.receive(frame)


@pytest.fixture
async def tiny_nodes(
    server_postgres_url: str | None, tmp_path: Path
) -> AsyncIterator[list[Running]]:
    if server_postgres_url is None:
        pytest.skip(f"multi-node tests need PostgreSQL: set {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    await _admin(server_postgres_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    settings = quiet_settings(
        tmp_path,
        database_url=server_postgres_url,
        cache_size=1,
        rate_registrations="off",
        **OPEN,
    )
    nodes = [Running(settings), Running(settings)]
    for node in nodes:
        await node.start()
    yield nodes
    for node in nodes:
        await node.stop()


def _service(node: Running) -> GameService:
    service = node.server.service
    assert service is not None
    return service


def _truth(level: str, deal: int, actions: list[Any]) -> Game:
    game = Game(get_level(level), deal)
    game.replay(map(to_action, actions))
    return game


def _state(game: Game) -> list[Any]:
    """Everything of ``game`` but its log's actions (and their count)."""
    return game.snapshot()


async def _connect(node: Running, token: str) -> Client:
    client = await node.connect()
    await client.hello(token)
    return client


async def _open(device: Device, game: int, rng: random.Random) -> None:
    since = {"since": device.board.v} if device.board.v >= 0 and rng.random() < 0.7 else {}
    reply = await device.client.request("open_game", game=game, **since)
    assert reply["type"] in ("game", "catch_up"), reply
    device.open = True


class Play:
    def __init__(self, nodes: list[Running], store: Store, rng: random.Random) -> None:
        self.nodes, self.store, self.rng = nodes, store, rng
        self.devices: list[Device] = []
        self.fillers: list[Client] = []
        self.token = ""
        self.filler_token = ""
        self.game = 0
        self.ids = 0

    async def start(self) -> None:
        jo = await self.nodes[0].player("jo")
        ann = await self.nodes[0].player("ann")
        assert jo.token and ann.token
        self.token, self.filler_token = jo.token, ann.token
        started = await jo.request("new_game", level="classic", deal=3)
        self.game = started["game"]
        first = Device(0, jo, Board(self.game))
        second = Device(1, await _connect(self.nodes[1], self.token), Board(self.game))
        await _open(second, self.game, self.rng)
        self.devices = [first, second]
        self.fillers = [ann, await _connect(self.nodes[1], self.filler_token)]

    async def truth(self) -> tuple[Any, Game]:
        record, actions = await self.store.load_game(self.game)
        assert record is not None
        return record, _truth(record.level, record.deal, actions)

    async def step(self) -> str:
        rng = self.rng
        device = rng.choice(self.devices)
        choice = rng.random()
        if choice < 0.06:
            await self.restart(device.node)
            return f"restart {device.node}"
        if choice < 0.16:
            await self.fillers[device.node].request("new_game", level="classic", deal=4)
            return f"filler {device.node}"
        if choice < 0.24:
            if device.open:
                await device.client.request("close_game", game=self.game)
                device.open = False
                return f"close {device.node}"
            await _open(device, self.game, rng)
            return f"open {device.node}"
        if not device.open:
            await _open(device, self.game, rng)
        device.absorb()
        record, truth = await self.truth()
        v = max(0, device.board.v - (rng.randrange(1, 3) if rng.random() < 0.1 else 0))
        kind, fields = self.choose(truth)
        self.ids += 1  # ids unique across connections: a stale resend is not a retry
        versioned = {} if kind == "hint" else {"v": v}
        reply = await device.client.request(
            kind, id_=f"a{self.ids}", game=self.game, **versioned, **fields
        )
        assert reply["type"] in ("ack", "hint", "error"), reply
        if reply["type"] == "error":
            assert reply["code"] in ("stale", "nothing_to_undo", "illegal_move"), reply
            if reply["code"] == "nothing_to_undo" and v == record.version:
                # A restored game undoes as far as one never restored (the undo limit).
                assert not truth.undo_depth, "an undo the log's game allows was refused"
        return f"{kind} {device.node} v{v}: {reply.get('code', 'ack')}"

    def choose(self, truth: Game) -> tuple[str, Message]:
        rng = self.rng
        moves = legal_moves(truth.state, truth.rules)
        roll = rng.random()
        if roll < 0.03:
            return "hint", {}
        if roll < 0.25:
            return "undo", {}
        if roll < 0.3:
            return "restart", {}
        if (roll < 0.4 or not moves) and truth.state.stock:
            return "deal", {}
        if not moves:
            return "undo", {}
        move = rng.choice(moves)
        state = truth.state
        src = state.reserve if move.src == RESERVE else state.cols[move.src]
        return "move", {"card": card_str(src[move.start]), "to": move.dst + 1}

    async def restart(self, n: int) -> None:
        node = self.nodes[n]
        await node.restart()
        for device in self.devices:
            if device.node == n:
                device.client = await _connect(node, self.token)
                device.fed = 0
                if device.open:
                    await _open(device, self.game, self.rng)
        self.fillers[n] = await _connect(node, self.filler_token)

    async def check(self, what: str) -> None:
        record, truth = await self.truth()
        async with asyncio.timeout(TIMEOUT):
            while True:
                for device in self.devices:
                    device.absorb()
                    if device.open and device.board.needs_view:  # after a restart (PROTOCOL.md)
                        await device.client.request("open_game", game=self.game)
                        device.absorb()
                if all(d.board.v == record.version for d in self.devices if d.open):
                    break
                await asyncio.sleep(0.02)
        for n, node in enumerate(self.nodes):
            live = _service(node).cached(self.game)
            if live is None:
                continue
            async with asyncio.timeout(TIMEOUT):
                while live.log_version < record.version and not live.broken:
                    await asyncio.sleep(0.02)
            if not live.broken and _service(node).cached(self.game) is live:
                assert _state(live.game) == _state(truth), (what, n)
                held = live.log_missing  # the log's entries in memory are the stored ones
                assert live.game.actions[held:] == truth.actions[held:], (what, n)
        for device in self.devices:
            if not device.open:
                continue
            assert device.board.gaps == [], (what, device.node, device.board.gaps)
            probe = await _connect(self.nodes[device.node], self.token)
            fresh = await probe.request("open_game", game=self.game)
            await probe.close()
            assert fresh["v"] == record.version, what
            assert device.board.view is not None
            for key in COMPARED:
                assert device.board.view[key] == fresh["view"][key], (what, device.node, key)
            # A catch-up from any older version (before a restore, often) gives the
            # events the log's actions make from there.
            if self.rng.random() < 0.7:
                continue  # most restored games play on with their log not read
            since = self.rng.randrange(0, record.version + 1)
            probe = await _connect(self.nodes[device.node], self.token)
            caught = await probe.request("open_game", game=self.game, since=since)
            await probe.close()
            if caught["type"] == "catch_up":
                expected = await self.events_since(since)
                assert caught["events"] == expected, (what, since)
        await self.check_stored(truth, what)

    async def events_since(self, since: int) -> list[Message]:
        record, actions = await self.store.load_game(self.game)
        assert record is not None
        game = Game(get_level(record.level), record.deal)
        game.replay(map(to_action, actions[:since]))
        return [
            {"v": v, "events": event_dicts(game.play(to_action(action)))}
            for v, action in enumerate(actions[since:], since + 1)
        ]

    async def check_stored(self, truth: Game, what: str) -> None:
        engine = self.store._engine  # behind the store's back
        async with engine.connect() as conn:
            sql = "SELECT snapshot, snapshot_v, version FROM games WHERE id = :id"
            row = (await conn.execute(text(sql), {"id": self.game})).one()
        data, snapshot_v, version = row
        if snapshot_v is None:
            return
        assert 0 <= snapshot_v <= version, what
        record, actions = await self.store.load_game(self.game)
        assert record is not None
        rules = get_level(record.level)
        restored = Game.restore(rules, record.deal, msgpack.unpackb(bytes(data)))
        restored.replay(map(to_action, actions[snapshot_v:]))
        assert _state(restored) == _state(truth), what


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_two_nodes_evicting_and_restoring_one_game_agree_with_its_log(
    tiny_nodes: list[Running], seed: int
) -> None:
    store = Store.connect(tiny_nodes[0].settings.store_url)
    try:
        play = Play(tiny_nodes, store, random.Random(seed))
        await play.start()
        steps = []
        for _ in range(260):
            steps.append(await play.step())
            await play.check(" / ".join(steps[-6:]))
        record, _truth_game = await play.truth()
        assert record.version > 120, record.version  # past classic's undo limit (100)
    finally:
        with contextlib.suppress(Exception):
            await store.close()
