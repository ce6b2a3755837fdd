"""Applying a connection's events to a snapshot gives the server's next snapshot.

``Board`` is a client's reducer, written from PROTOCOL.md alone ("Keeping the
view" in section 4, the clock and score of section 6, catch_up in section 5):
it imports nothing of the engine or the server. Hypothesis drives random games
on every level through ``GameService``: moves (legal or not), hint-guided moves,
deals, undos, restarts, hints, pauses, closing and reopening, resigning,
abandoning for a new game, a second device opening the game, catch-ups and
play time passing on a fake clock. Whenever the test asks for a fresh snapshot,
the board built from the snapshots and pushes this connection received must
equal it exactly, play time and timed score included.

The service runs with a real SQLite store and solver pool; the only stand-in
is the clock's time source (so that "now" is the same for server and client).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import server.live
from engine.solver.easy import WinnableDeals
from protocol import LEVELS, new_request
from server.app import prepare_store
from server.clock import PlayClock
from server.hub import Hub, Outbox
from server.service import GameService, Session
from server.store import Store
from server.winnable_pools import WinnablePools
from server.workers import SolverPool
from tests.helpers import hint_player_win
from tests.server.conftest import quiet_settings

Message = dict[str, Any]
RANKS_DOWN = "KQJT98765432A"
STEP_MS = 125  # fake time moves in eighths of a second: exact in binary floating point


# -- the client's reducer (PROTOCOL.md only) ---------------------------------------------


@dataclass
class Board:
    """One game as a client keeps it: the last view, its version and clock."""

    view: Message
    v: int
    now_ms: int  # the client's clock when the view or the last clock event arrived
    base_ms: int = 0
    running: bool = False

    def __post_init__(self) -> None:
        self.view = copy.deepcopy(self.view)
        self.base_ms = self.view["time_ms"]
        self.running = self.view["running"]

    def push(self, message: Message, now_ms: int) -> None:
        whole = any(event["type"] == "snapshot" for event in message["events"])
        assert whole or message["v"] in (self.v, self.v + 1), "a push skipped a version"
        self.v = message["v"]
        self.apply(message["events"], now_ms)

    def apply(self, events: list[Message], now_ms: int) -> None:
        for event in events:
            getattr(self, f"_{event['type']}", self._other)(event, now_ms)

    def set_clock(self, time_ms: int, running: bool, now_ms: int) -> None:
        self.base_ms, self.running, self.now_ms = time_ms, running, now_ms

    def same(self, now_ms: int, view: Message) -> bool:
        """Whether the board shows ``view`` at ``now_ms``."""
        return self.at(now_ms) == view

    def at(self, now_ms: int) -> Message:
        """The view as the client shows it at ``now_ms`` (section 6)."""
        view = copy.deepcopy(self.view)
        t = self.base_ms + (now_ms - self.now_ms if self.running else 0)
        view["time_ms"], view["running"] = t, self.running
        if not view["won"]:
            earned = view["earned"]
            view["score"] = (
                earned if view["scoring"] == "points" else max(0, earned - 30 * (t // 30000))
            )
        return view

    def _column(self, number: int) -> list[str]:
        cards: list[str] = self.view["columns"][number - 1]["cards"]
        return cards

    def _moved(self, event: Message, now_ms: int) -> None:
        source, target, count = event["from"], event["to"], event["count"]
        if source == "reserve":
            self.view["reserve"].remove(event["card"])
            moving = [event["card"]]
        else:
            column = self._column(source)
            moving = column[len(column) - count :]
            del column[len(column) - count :]
        assert moving[0] == event["card"]
        if target == "reserve":
            self.view["reserve"].insert(event["index"] - 1, event["card"])  # 1-based
        else:
            self._column(target).extend(moving)

    def _flipped(self, event: Message, now_ms: int) -> None:
        column = self.view["columns"][event["column"] - 1]
        column["down"] -= 1
        column["cards"].append(event["card"])
        assert column["cards"] == [event["card"]], "flipped: the only face-up card"

    def _unflipped(self, event: Message, now_ms: int) -> None:
        column = self.view["columns"][event["column"] - 1]
        assert len(column["cards"]) == 1, "unflipped: the column's only face-up card"
        column["cards"] = []
        column["down"] += 1

    def _dealt(self, event: Message, now_ms: int) -> None:
        for number, card in enumerate(event["cards"], 1):
            self._column(number).append(card)
        self.view["stock"] = 0

    def _undealt(self, event: Message, now_ms: int) -> None:
        for number in range(1, event["count"] + 1):
            self._column(number).pop()
        self.view["stock"] = event["count"]

    def _suit_removed(self, event: Message, now_ms: int) -> None:
        del self._column(event["column"])[-13:]
        self.view["foundations"].append(event["suit"])

    def _suit_restored(self, event: Message, now_ms: int) -> None:
        assert self.view["foundations"].pop() == event["suit"]
        self._column(event["column"]).extend(rank + event["suit"] for rank in RANKS_DOWN)

    def _restarted(self, event: Message, now_ms: int) -> None:
        self.view.update(
            columns=copy.deepcopy(event["columns"]),
            stock=event["stock"],
            reserve=list(event["reserve"]),
            foundations=[],
        )

    def _score(self, event: Message, now_ms: int) -> None:
        for name in ("score", "moves", "undos", "hints", "earned", "undo_depth", "stuck"):
            self.view[name] = event[name]

    def _won(self, event: Message, now_ms: int) -> None:
        self.view.update(
            won=True,
            status="won",
            deal=event["deal"],
            score=event["score"],
            time_ms=event["time_ms"],
        )

    def _game_lost(self, event: Message, now_ms: int) -> None:
        self.view.update(status="lost", deal=event["deal"], paused=False)  # over: not paused

    def _snapshot(self, event: Message, now_ms: int) -> None:
        self.view = copy.deepcopy(event["view"])
        self.set_clock(self.view["time_ms"], self.view["running"], now_ms)

    def _clock(self, event: Message, now_ms: int) -> None:
        self.set_clock(event["time_ms"], event["running"], now_ms)
        self.view["paused"] = event["paused"]

    def _other(self, event: Message, now_ms: int) -> None:
        """hint, undone, stuck, lost_position and unknown types change nothing kept."""


# -- driving the service --------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.ms = 0

    def monotonic(self) -> float:
        return self.ms / 1000


@dataclass
class Rig:
    loop: asyncio.AbstractEventLoop
    service: GameService
    time: FakeTime
    names: Iterator[int] = field(default_factory=itertools.count)

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(work)


@dataclass
class Connection:
    """One session: sends requests and reads every frame queued for it, in order."""

    rig: Rig
    session: Session = field(default_factory=lambda: Session(Outbox(100_000)))
    boards: dict[int, Board] = field(default_factory=dict)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    async def request(
        self, type_: str, on_reply: Callable[[Message], object] | None = None, **fields: Any
    ) -> Message:
        """The reply; ``on_reply`` sees it where it arrives among the pushes."""
        request = new_request(type_, next(self.ids), **fields)
        reply = await self.rig.service.handle(self.session, request)
        frames: list[Message] = []
        outbox = self.session.outbox
        while len(outbox):
            frame = await outbox.get()
            assert frame is not None
            frames.append(msgpack.unpackb(frame, raw=False))
        if reply is not None:  # sent after what the handler queued (server.connection)
            frames.append(reply)
        answer = None
        for message in frames:
            if message.get("re") == request.id:
                answer = message
                if on_reply is not None:
                    on_reply(message)
            elif message["type"] == "events" and message["game"] in self.boards:
                self.boards[message["game"]].push(message, self.rig.time.ms)
        assert answer is not None, frames
        return answer

    async def snapshot(self, game: int) -> Message:
        """A fresh open_game, which must equal the board kept from events."""
        return await self.request("open_game", on_reply=self.check, game=game)

    def check(self, reply: Message) -> None:
        board = self.boards[reply["game"]]
        assert reply["type"] == "game" and reply["v"] == board.v
        assert board.same(self.rig.time.ms, reply["view"]), (board.at(self.rig.time.ms), reply)

    def adopt(self, reply: Message) -> None:
        if reply["type"] == "game":
            self.boards[reply["game"]] = Board(reply["view"], reply["v"], self.rig.time.ms)

    async def start(self, level: str, **fields: Any) -> Message:
        return await self.request("new_game", on_reply=self.adopt, level=level, **fields)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    fake = FakeTime()
    loop = asyncio.new_event_loop()
    number = hint_player_win().deal_number
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server.live, "PlayClock", lambda base: PlayClock(base, fake.monotonic))
        path: Path = tmp_path_factory.mktemp("view-events")
        store: Store = loop.run_until_complete(prepare_store(quiet_settings(path)))
        solver = SolverPool(1, hint_budget_ms=30, lost_budget_ms=0)
        service = GameService(store, Hub(), solver, pools=WinnablePools(WinnableDeals([number])))
        try:
            yield Rig(loop, service, fake)
        finally:
            loop.run_until_complete(service.close())
            loop.run_until_complete(solver.close())
            loop.run_until_complete(store.close())
            loop.close()


async def signed_in(rig: Rig) -> tuple[Connection, str]:
    main = Connection(rig)
    await main.request("hello", protocol=1, client="test/1", locale="en")
    registered = await main.request("register", name=f"view{next(rig.names)}")
    assert registered["type"] == "registered", registered
    return main, registered["token"]


STEPS = (
    *["move"] * 4,
    *["follow_hint"] * 5,
    "deal",
    "undo",
    "undo",
    "restart",
    "hint",
    "pause",
    "resume",
    "reopen",
    "second_device",
    "catch_up",
    *["time"] * 3,
    "snapshot",
    "resign",
    "new_game",
)


async def play(rig: Rig, data: st.DataObject, level: str) -> None:
    main, token = await signed_in(rig)
    deal = None if level == "easy" else data.draw(st.one_of(st.none(), st.integers(1, 2**53 - 1)))
    start = await main.start(level, **({} if deal is None else {"deal": deal}))
    game = start["game"]
    checkpoint = (copy.deepcopy(main.boards[game]), rig.time.ms)
    for step in data.draw(st.lists(st.sampled_from(STEPS), min_size=5, max_size=40)):
        board = main.boards[game]
        if step == "time":
            rig.time.ms += STEP_MS * data.draw(st.integers(0, 640))
        elif step == "move":
            faces = [card for column in board.view["columns"] for card in column["cards"]]
            faces += board.view["reserve"]
            # Draws that do not depend on the position keep Hypothesis's replays consistent
            # (the server's random deals and timed hints may differ between runs).
            pick, to = data.draw(st.integers(0, 999)), data.draw(st.integers(0, 10))
            if faces:
                fields: dict[str, Any] = {"to": to} if to else {}
                card = faces[pick % len(faces)]
                await main.request("move", game=game, v=board.v, card=card, **fields)
        elif step == "follow_hint":
            hint = await main.request("hint", game=game)
            if hint.get("action") == "move":
                await main.request("move", game=game, v=board.v, card=hint["card"], to=hint["to"])
            elif hint.get("action") == "deal":
                await main.request("deal", game=game, v=board.v)
        elif step in ("deal", "undo", "restart"):
            await main.request(step, game=game, v=board.v)
        elif step in ("hint", "pause", "resume", "resign"):
            await main.request(step, game=game)
        elif step == "reopen":
            await main.request("close_game", game=game)
            await main.request("open_game", on_reply=main.adopt, game=game)
        elif step == "second_device":
            other = Connection(rig)
            await other.request("hello", protocol=1, client="test/2", locale="en", token=token)
            opened = await other.request("open_game", game=game)
            assert board.same(rig.time.ms, opened["view"])  # a running clock included
            await rig.service.disconnect(other.session)
        elif step == "catch_up":
            kept, _ = checkpoint
            reply = await main.request("open_game", game=game, since=kept.v)
            if reply["type"] == "catch_up":
                for batch in reply["events"]:
                    kept.v = batch["v"]
                    kept.apply(batch["events"], rig.time.ms)
                kept.set_clock(reply["time_ms"], reply["running"], rig.time.ms)
                kept.view["paused"] = reply["paused"]
                assert kept.v == reply["v"] == board.v
                assert kept.same(rig.time.ms, board.at(rig.time.ms))
            else:
                main.check(reply)
            await main.snapshot(game)
            checkpoint = (copy.deepcopy(main.boards[game]), rig.time.ms)
        elif step == "snapshot":
            await main.snapshot(game)
        elif step == "new_game":
            fresh = await main.start(level)
            if fresh["type"] == "game":
                await main.snapshot(game)  # the abandoned game, lost, as its events said
                game = fresh["game"]
                checkpoint = (copy.deepcopy(main.boards[game]), rig.time.ms)
    await main.snapshot(game)
    await rig.service.disconnect(main.session)


@pytest.mark.parametrize("level", LEVELS)
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_events_applied_to_a_snapshot_give_the_next_snapshot(
    rig: Rig, level: str, data: st.DataObject
) -> None:
    rig.run(play(rig, data, level))


def test_a_won_game_ends_as_its_events_say(rig: Rig) -> None:
    """Easy, played to a win: the deal number, status, final score and stopped clock."""

    async def win() -> None:
        # Only the won deal in the pool: earlier tests here may have found others (a player
        # who had every pooled deal gets one found then).
        rig.service.pools = WinnablePools(WinnableDeals([hint_player_win().deal_number]))
        main, _ = await signed_in(rig)
        start = await main.start("easy")
        game = start["game"]
        board = main.boards[game]
        assert start["view"]["deal"] is None  # withheld until the game ends (section 7)
        restored = False
        for action in hint_player_win().actions:
            rig.time.ms += STEP_MS * 9
            fields = {"card": action.to_dict()["card"]} if action.type == "move" else {}
            if action.to is not None:
                fields["to"] = action.to
            if action.type == "hint":
                await main.request("hint", game=game)
                continue
            suits = len(board.view["foundations"])
            await main.request(action.type, game=game, v=board.v, **fields)
            if not restored and 0 < len(board.view["foundations"]) > suits < 3:
                restored = True  # undo the first suit's removal (suit_restored), then redo
                await main.request("undo", game=game, v=board.v)
                await main.snapshot(game)
                await main.request(action.type, game=game, v=board.v, **fields)
            await main.snapshot(game)
        assert restored
        view = (await main.snapshot(game))["view"]
        assert (view["won"], view["status"], view["running"]) == (True, "won", False)
        assert view["deal"] == hint_player_win().deal_number
        rig.time.ms += 60_000
        assert (await main.snapshot(game))["view"] == view  # nothing moves after a win
        await rig.service.disconnect(main.session)

    rig.run(win())
