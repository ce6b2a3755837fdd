"""The hub's fan-out and the outbox bound; the service's lost-position push."""

from __future__ import annotations

from engine.levels import Rules
from engine.state import State
from server.hub import Hub, Outbox
from tests.server.conftest import Running


async def test_outbox_overflow_stops_the_connection() -> None:
    outbox = Outbox(limit=2)
    assert outbox.put(b"1") and outbox.put(b"2")
    assert not outbox.put(b"3") and outbox.overflowed
    assert await outbox.get() is None


async def test_push_reaches_every_watcher_in_the_same_order() -> None:
    hub = Hub()
    one, two, other = Outbox(), Outbox(), Outbox()
    hub.watch(7, one)
    hub.watch(7, two)
    hub.watch(8, other)
    for n in range(3):
        assert hub.push(7, {"type": "events", "n": n}) == 2
    frames_one = [await one.get() for _ in range(3)]
    frames_two = [await two.get() for _ in range(3)]
    assert frames_one == frames_two and len(other) == 0
    hub.unwatch(7, one)
    assert hub.count(7) == 1 and hub.games_of(two) == [7]


def test_a_connections_games_are_those_it_has_open_in_order() -> None:
    hub = Hub()
    one, two = Outbox(), Outbox()
    for game in (9, 3, 5):
        hub.watch(game, one)
    hub.watch(3, two)
    hub.watch(3, one)  # again: still once, where it was first opened
    assert hub.games_of(one) == [9, 3, 5] and hub.games_of(two) == [3]
    hub.unwatch(3, one)
    hub.unwatch(4, one)  # never opened: nothing changes
    assert hub.games_of(one) == [9, 5] and hub.games_of(two) == [3] and hub.count(3) == 1
    hub.unwatch(9, one)
    hub.unwatch(5, one)
    assert hub.games_of(one) == [] and hub.watched() == [3]


class ProvesEverythingLost:
    """A stand-in solver pool whose search proves every position lost."""

    workers = 1
    pending = 0
    busy = False
    lost_budget_ms = 1

    async def verdict(self, state: State, rules: Rules) -> str:
        return "lost"

    def known_lost(self, rules: Rules, key: bytes) -> bool:
        return True


async def test_a_proved_lost_position_is_pushed(server: Running) -> None:
    service = server.server.service
    assert service is not None
    solver = ProvesEverythingLost()
    service.solver = service.advisor.solver = service.lost_checks.solver = solver  # type: ignore[assignment]
    max_ = await server.player("max")
    game = (await max_.request("new_game", level="hard", deal=1))["game"]
    lost = [{"type": "lost_position", "from_deal": True}]
    while (push := await max_.push()).get("events") != lost:
        pass
    assert push["v"] == 0  # said at the deal
    assert (await max_.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    while (push := await max_.push()).get("events") != lost:
        pass
    assert push["v"] == 1
    hint = await max_.request("hint", game=game)
    assert (hint["action"], hint["v"]) == ("move", 2)  # a move all the same (R20)
    assert "reason" not in hint
