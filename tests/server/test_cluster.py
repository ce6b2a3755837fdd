"""Three real server processes on one PostgreSQL database, players spread over them.

Some players play through two connections on two nodes at once, some are
watched from another node by a connection that never acts, and one node is
killed with SIGKILL mid-run: its clients reconnect to another node, resync
with ``open_game since`` and retry their unanswered action with the same id
and version (PROTOCOL.md section 5). Afterwards, from the database and from
the frames each connection received:

- every game is the replay of its log, and every acknowledged action is in
  the log at the version its ack named (nothing acknowledged was lost);
- every connection's board, built only from what it was sent
  (``tests.server.board``), equals the stored game's view;
- no frame named a card that was face down in the committed game at that
  frame's version;
- no connection was pushed a version that skipped one (every push continued
  its board, or was a snapshot);
- every error code is one PROTOCOL.md lists for its request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from engine.cards import card_str
from engine.game import Game
from engine.levels import get_level
from protocol.errors import RULE_CODES
from protocol.messages import REQUESTS
from server.app import migrate
from server.config import Settings
from server.live import strings_in, to_action
from server.store import ActionRecord, Store
from tests.server.board import Board
from tests.server.client import TIMEOUT, Client
from tests.server.conftest import quiet_settings
from tests.server.store.conftest import PG_EXAMPLE, PG_VARIABLE, _admin
from tests.server.test_process import server_process

Message = dict[str, Any]
CARD = re.compile(r"^[A2-9TJQK][SHDC]$")
ANY_REQUEST = {"bad_request", "hello_required", "rate_limited", "unavailable", "internal"}
STEPS = 30  # actions per acting connection
KINDS = ("move",) * 6 + ("undo",) * 2 + ("hint", "deal", "restart")


@dataclasses.dataclass
class Device:
    """One connection of a player to one node, and its board of the player's game."""

    name: str
    player: int
    node: int
    acts: bool
    client: Client
    board: Board
    acked: list[tuple[str | None, int]] = dataclasses.field(default_factory=list)
    errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    frames: list[Message] = dataclasses.field(default_factory=list)
    unanswered: int = 0
    steps: int = 0
    _fed: int = 0  # how many of the client's frames the board has seen

    def absorb(self) -> None:
        """Feed the frames received since the last call to the board."""
        new = self.client.frames[self._fed :]
        self._fed = len(self.client.frames)
        for frame in new:
            self.frames.append(frame)
            self.board.receive(frame)


@pytest.fixture
async def cluster(
    server_postgres_url: str | None, tmp_path: Path
) -> AsyncIterator[tuple[Settings, list[Any]]]:
    if server_postgres_url is None:
        pytest.skip(f"cluster tests need PostgreSQL: set {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    await _admin(server_postgres_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    settings = quiet_settings(tmp_path, database_url=server_postgres_url)
    await migrate(settings)
    async with contextlib.AsyncExitStack() as stack:
        nodes = [await stack.enter_async_context(server_process(settings)) for _ in range(3)]
        yield settings, nodes


async def connect(url: str, token: str, game: int, device: Device | None = None) -> Client:
    client = await Client.connect(url)
    await client.hello(token)
    opened = await client.request("open_game", game=game, **(
        {} if device is None or device.board.v < 0 else {"since": device.board.v}
    ))  # fmt: skip
    assert opened["type"] in ("game", "catch_up"), opened
    return client


def choose(device: Device, rng: random.Random) -> Message:
    kind = rng.choice(KINDS)
    if kind == "move":
        cards = device.board.face_up()
        return {"type": "move", "card": rng.choice(cards[:9] or ["AS"])}
    return {"type": kind}


async def act(device: Device, rng: random.Random, urls: list[str], dead: set[int]) -> None:
    for step in range(STEPS):
        device.absorb()
        if device.board.needs_view:
            await send(device, "open_game", f"{device.name}-{step}-view", {}, urls, dead)
            device.absorb()
        request = choose(device, rng)
        request_id = f"{device.name}-{step}"
        v = device.board.v
        fields = {k: val for k, val in request.items() if k != "type"}
        if request["type"] != "hint":
            fields["v"] = v
        reply = await send(device, request["type"], request_id, fields, urls, dead)
        device.absorb()
        record(device, request["type"], reply, request_id)
        if reply.get("code") == "stale":
            since = {"since": device.board.v}
            await send(device, "open_game", f"{device.name}-{step}-sync", since, urls, dead)
        device.steps += 1
        await asyncio.sleep(rng.random() * 0.02)


async def send(
    device: Device, kind: str, request_id: str, fields: Message, urls: list[str], dead: set[int]
) -> Message:
    """The reply; after a lost connection, reconnect elsewhere and retry the same request."""
    for _attempt in range(3):
        try:
            return await device.client.request(
                kind, id_=request_id, game=device.board.game, **fields
            )
        except (ConnectionClosed, TimeoutError, OSError):
            device.unanswered += 1
            await reconnect(device, urls, dead)
    raise AssertionError(f"{device.name}: no reply to {kind} after reconnecting")


async def reconnect(device: Device, urls: list[str], dead: set[int]) -> None:
    device.absorb()
    alive = [n for n in range(len(urls)) if n not in dead]
    device.node = alive[device.player % len(alive)]
    device.client = await connect(urls[device.node], TOKENS[device.player], device.board.game)
    device._fed = 0
    device.absorb()


def record(device: Device, kind: str, reply: Message, request_id: str) -> None:
    if reply["type"] == "error":
        device.errors.append((kind, reply["code"]))
    elif reply["type"] in ("ack", "hint"):
        device.acked.append((None if kind == "hint" else request_id, reply["v"]))


TOKENS: dict[int, str] = {}


async def watch(device: Device, stop: asyncio.Event, urls: list[str], dead: set[int]) -> None:
    while not stop.is_set():
        device.absorb()
        try:
            if device.board.needs_view:
                await device.client.request("open_game", game=device.board.game)
            await device.client.request("ping")
        except (ConnectionClosed, TimeoutError, OSError):
            if not stop.is_set():
                await reconnect(device, urls, dead)
        await asyncio.sleep(0.02)


def hidden_by_version(level: str, deal: int, actions: list[ActionRecord]) -> list[set[str]]:
    """The names of the cards face down or in the stock after each stored version."""
    game = Game(get_level(level), deal)

    def hidden() -> set[str]:
        state = game.state
        down = {c for col, n in zip(state.cols, state.down, strict=True) for c in col[:n]}
        return {card_str(c) for c in down | set(state.stock)}

    found = [hidden()]
    for action in actions:
        game.play(to_action(action.logged()))
        found.append(hidden())
    return found


async def test_three_nodes_one_node_killed_every_view_is_committed_state(
    cluster: tuple[Settings, list[Any]],
) -> None:
    settings, nodes = cluster
    urls = [url for _process, url in nodes]
    rng = random.Random(20261201)
    devices: list[Device] = []
    for player in range(6):
        first = await Client.connect(urls[player % 3])
        await first.register(f"p{player}")
        assert first.token is not None
        TOKENS[player] = first.token
        game = (await first.request("new_game", level="hard", deal=player + 1))["game"]
        devices.append(Device(f"p{player}a", player, player % 3, True, first, Board(game)))
        if player < 5:  # a second device on the next node: acting for 0..2, watching for 3, 4
            node = (player + 1) % 3
            second = await connect(urls[node], TOKENS[player], game)
            devices.append(Device(f"p{player}b", player, node, player < 3, second, Board(game)))
    for device in devices:
        device.absorb()
    dead: set[int] = set()
    stop = asyncio.Event()
    watchers = [asyncio.create_task(watch(d, stop, urls, dead)) for d in devices if not d.acts]
    actors = [
        asyncio.create_task(act(d, random.Random(rng.random()), urls, dead))
        for d in devices
        if d.acts
    ]
    async with asyncio.timeout(TIMEOUT):  # about a third of the run, then kill node 2
        while max(d.steps for d in devices if d.acts) < STEPS // 3:
            await asyncio.sleep(0.01)
    process, _url = nodes[2]
    dead.add(2)
    process.kill()  # mid-run: its clients must go on elsewhere
    async with asyncio.timeout(TIMEOUT * 6):
        await asyncio.gather(*actors)
    await settle(devices)
    stop.set()
    await asyncio.gather(*watchers)
    assert all(d.node not in dead for d in devices)
    await check(settings, devices, dead)


async def settle(devices: list[Device]) -> None:
    """Wait until every connection stands at its game's latest version."""
    try:
        await _settle(devices)
    except TimeoutError:
        where = [(d.name, d.node, d.board.v, d.board.needs_view, d.board.gaps) for d in devices]
        raise AssertionError(f"some connections never caught up: {where}") from None


async def _settle(devices: list[Device]) -> None:
    async with asyncio.timeout(TIMEOUT):
        while True:
            for device in devices:
                device.absorb()
            latest: dict[int, int] = {}
            for device in devices:
                latest[device.board.game] = max(latest.get(device.board.game, 0), device.board.v)
            if all(d.board.v == latest[d.board.game] and not d.board.needs_view for d in devices):
                return
            for device in devices:
                if device.board.needs_view:
                    with contextlib.suppress(ConnectionClosed, TimeoutError, OSError):
                        await device.client.request("open_game", game=device.board.game)
            await asyncio.sleep(0.05)


async def check(settings: Settings, devices: list[Device], dead: set[int]) -> None:
    store = Store.connect(settings.store_url)
    try:
        for game in {d.board.game for d in devices}:
            mine = [d for d in devices if d.board.game == game]
            record = await store.get_game(game)
            assert record is not None
            actions = await store.load_actions(game)
            assert len(actions) == record.version
            check_acks(mine, actions)
            hidden = hidden_by_version(record.level, record.deal, actions)
            truth = await mine[0].client.request("open_game", game=game)
            assert mine[0].node not in dead
            for device in mine:
                check_device(device, truth, hidden)
    finally:
        await store.close()


def check_acks(devices: list[Device], actions: list[ActionRecord]) -> None:
    unanswered = sum(d.unanswered for d in devices)
    acked = [ack for d in devices for ack in d.acked]
    assert len({v for _id, v in acked}) == len(acked), "two acks for one version"
    for request_id, v in acked:
        stored = actions[v - 1]
        assert stored.request_id == request_id or (request_id is None and stored.type == "hint")
    assert len(actions) - len(acked) <= unanswered, "an action in the log nobody was told of"


def check_device(device: Device, truth: Message, hidden: list[set[str]]) -> None:
    board = device.board
    assert board.gaps == [], f"{device.name} was pushed versions that skip: {board.gaps}"
    assert board.v == truth["v"], device.name
    assert board.view is not None
    for key in ("columns", "stock", "reserve", "foundations", "moves", "undos", "hints"):
        assert board.view[key] == truth["view"][key], (device.name, key)
    for frame in device.frames:
        if frame["type"] == "error" or "v" not in frame:
            continue
        at = hidden[min(frame["v"], len(hidden) - 1)]
        named = {s for s in strings_in(frame) if CARD.match(s)}
        assert not named & at, (device.name, frame, named & at)
    for kind, code in device.errors:
        listed = set(REQUESTS[kind].errors) | ANY_REQUEST
        assert code in listed or (code in RULE_CODES and kind != "hint"), (kind, code)
