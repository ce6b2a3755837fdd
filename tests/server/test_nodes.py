"""Two server nodes on one PostgreSQL database: one player, a game open on both.

Each test starts two ``ScorpionServer``s on the same database (as two
replicas behind a load balancer would run) and connects one client to each
with the same player's token. PostgreSQL only: SQLite is served by one node.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import server.service as service_module
from server.store import GameRecord, GameStatus, Store, StoreUnavailable
from server.store.notify import APPLICATION_NAME
from tests.server.client import TIMEOUT, Client
from tests.server.conftest import Running, hello_held_after_its_read, quiet_settings
from tests.server.store.conftest import PG_EXAMPLE, PG_VARIABLE, _admin
from tests.server.test_play import play

Message = dict[str, Any]


@pytest.fixture
async def nodes(
    server_postgres_url: str | None, tmp_path: Path
) -> AsyncIterator[tuple[Running, Running]]:
    if server_postgres_url is None:
        pytest.skip(f"multi-node tests need PostgreSQL: set {PG_VARIABLE}, e.g. {PG_EXAMPLE}")
    await _admin(server_postgres_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    settings = quiet_settings(tmp_path, database_url=server_postgres_url)
    first, second = Running(settings), Running(settings)
    await first.start()
    await second.start()
    yield first, second
    await first.stop()
    await second.stop()


async def two_devices(nodes: tuple[Running, Running]) -> tuple[Client, Client, int]:
    """One player on node A and node B, with hard deal 1 open on both."""
    a_node, b_node = nodes
    on_a = await a_node.player("kai")
    game = (await on_a.request("new_game", level="hard", deal=1))["game"]
    on_b = await b_node.connect()
    await on_b.hello(on_a.token)
    opened = await on_b.request("open_game", game=game)
    assert opened["type"] == "game" and opened["v"] == 0
    return on_a, on_b, game


def deaf(node: Running, monkeypatch: pytest.MonkeyPatch) -> Store:
    """``node``'s store, its listener made to hear no other node's changes (for the
    test; ``monkeypatch.undo()`` lets it hear again)."""
    store = node.server.store
    assert store is not None and store._listener is not None
    monkeypatch.setattr(store._listener, "_on_change", lambda game_ids: None)
    return store


def not_clock(messages: list[Message]) -> list[Message]:
    """The ``events`` pushes that are not clock starts and stops."""
    return [m for m in messages if m["type"] == "events" and m["events"][0]["type"] != "clock"]


async def sees(client: Client, v: int) -> None:
    """Wait until ``client`` was pushed the events of version ``v``."""
    async with asyncio.timeout(TIMEOUT):
        while v and not any(m["v"] >= v for m in not_clock(client.frames)):
            await asyncio.sleep(0.01)


async def test_moves_on_either_node_reach_both(nodes: tuple[Running, Running]) -> None:
    on_a, on_b, game = await two_devices(nodes)
    steps: list[tuple[Client, dict[str, Any]]] = [
        (on_a, {"type": "move", "card": "7C", "to": 5}),
        (on_b, {"type": "undo"}),
        (on_a, {"type": "deal"}),
        (on_b, {"type": "restart"}),
    ]
    v = 0
    for client, step in steps:
        await sees(client, v)  # each device acts on the version it was told about
        reply = await play(client, game, v, step)
        assert reply["type"] == "ack" and reply["v"] == v + 1, reply
        v = reply["v"]
    await sees(on_a, v)
    await sees(on_b, v)
    assert [m["v"] for m in not_clock(on_a.frames)] == [1, 2, 3, 4]
    assert not_clock(on_a.frames) == not_clock(on_b.frames)


async def test_same_version_on_two_nodes_one_wins_one_is_stale(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    replies = await asyncio.gather(
        on_a.request("move", game=game, v=0, card="7C", to=5),
        on_b.request("deal", game=game, v=0),
    )
    kinds = sorted(reply["type"] for reply in replies)
    assert kinds == ["ack", "error"], replies
    refused = next(reply for reply in replies if reply["type"] == "error")
    assert refused["code"] == "stale" and refused["v"] == 1
    # The refused device resyncs as PROTOCOL.md says (open_game since its version)
    # and goes on from there; both devices then see the next action alike.
    loser, winner = (on_a, on_b) if replies[0]["type"] == "error" else (on_b, on_a)
    caught = await loser.request("open_game", game=game, since=0)
    assert caught["type"] == "catch_up" and caught["v"] == 1
    assert [batch["v"] for batch in caught["events"]] == [1]
    assert (await loser.request("undo", game=game, v=1))["v"] == 2
    await sees(winner, 2)
    await sees(loser, 2)
    assert not_clock(winner.frames)[-1] == not_clock(loser.frames)[-1]
    assert not_clock(winner.frames)[-1]["v"] == 2


async def test_an_action_at_a_version_only_the_other_node_has_heard_of_is_applied(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device that saw version 1 (played on node A) acts on node B before B has heard
    of it: B catches up from the store and applies the action, rather than answering
    ``stale`` with the version it has (which names an older version than the device's)."""
    on_a, on_b, game = await two_devices(nodes)
    deaf(nodes[1], monkeypatch)  # B hears nothing
    moved = await on_a.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack" and moved["v"] == 1, moved
    undone = await on_b.request("undo", game=game, v=1)
    assert undone["type"] == "ack" and undone["v"] == 2, undone
    await sees(on_b, 2)
    assert [m["v"] for m in not_clock(on_b.frames)] == [1, 2]  # B pushed version 1 first
    # A version no node has is still stale, naming the store's.
    ahead = await on_b.request("deal", game=game, v=9)
    assert ahead["type"] == "error" and ahead["code"] == "stale" and ahead["v"] == 2, ahead


async def test_a_node_behind_answers_an_action_at_an_old_version_stale_whatever_it_breaks(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf to A's move, judged an undo and an impossible move at the version it
    knew by the rules on its own copy (``nothing_to_undo``, ``no_destination``): the
    version is checked before the game's state (PROTOCOL.md section 5), and the store's
    was past it."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    for n, step in enumerate(({"type": "undo"}, {"type": "move", "card": "AS"})):
        fields = {key: value for key, value in step.items() if key != "type"}
        # Ids of B's own: a resend of A's move (its id) would get A's ack.
        refused = await on_b.request(step["type"], id_=f"b{n}", game=game, v=0, **fields)
        assert refused["type"] == "error" and refused["code"] == "stale", (step, refused)
        assert refused["v"] == 1, refused
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.version == 1 and len(actions) == 1


async def test_a_node_behind_a_resignation_answers_an_old_version_stale(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above for a resignation B had not heard of: on a finished game an action with
    an old ``v`` gets ``stale`` (section 5), not B's rule errors; a hint, which names no
    version, gets ``game_over``."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("resign", game=game))["v"] == 1
    for step in ({"type": "undo"}, {"type": "move", "card": "AS"}, {"type": "deal"}):
        refused = await play(on_b, game, 0, step)
        assert refused["type"] == "error" and refused["code"] == "stale", (step, refused)
        assert refused["v"] == 1, refused
    assert (await on_b.request("hint", game=game))["code"] == "game_over"
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.status is GameStatus.LOST and actions == []


async def test_stale_from_a_node_behind_names_the_stored_version(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The game at version 1 on both nodes, B deaf to A's undo: B's move at version 0 was
    ``stale`` naming version 1, B's own, where the game was at 2 (section 5: ``stale``
    carries the current ``v``)."""
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    await sees(on_b, 1)
    deaf(nodes[1], monkeypatch)  # B hears nothing from here on
    assert (await on_a.request("undo", game=game, v=1))["v"] == 2
    refused = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert refused["type"] == "error" and refused["code"] == "stale", refused
    assert refused["v"] == 2, refused


async def test_a_node_whose_copy_is_current_refuses_by_the_rules(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What B's copy refuses, B reads the store for first: when nothing changed there, the
    rule's refusal stands. When the store cannot be read, no refusal can be known true:
    ``unavailable``, not the rule's word from a copy that may be behind."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)  # B hears nothing (and nothing happens)
    refused = await on_b.request("undo", game=game, v=0)
    assert refused["type"] == "error" and refused["code"] == "nothing_to_undo", refused
    refused = await on_b.request("move", game=game, v=0, card="AS")
    assert refused["type"] == "error" and refused["code"] == "no_destination", refused
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["v"] == 1

    async def cut_off(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the database cannot be reached")

    monkeypatch.setattr(store, "load_game", cut_off)
    for v in (0, 5):
        refused = await on_b.request("undo", game=game, v=v)
        assert refused["type"] == "error" and refused["code"] == "unavailable", refused


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_one_node_refuses_from_its_copy_reading_nothing(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node alone on its store holds the game itself: its refusals read no game."""
    ada = await server.player("ada")
    game = (await ada.request("new_game", level="hard", deal=1))["game"]
    store = server.server.store
    assert store is not None
    reads: list[int] = []
    load_game = store.load_game

    async def counted(game_id: int, *args: Any, **kwargs: Any) -> Any:
        reads.append(game_id)
        return await load_game(game_id, *args, **kwargs)

    monkeypatch.setattr(store, "load_game", counted)
    assert (await ada.request("undo", game=game, v=0))["code"] == "nothing_to_undo"
    assert (await ada.request("move", game=game, v=0, card="7C", to=5))["v"] == 1
    assert (await ada.request("deal", game=game, v=7))["code"] == "stale"
    assert (await ada.request("pause", game=game))["type"] == "ack"
    assert (await ada.request("undo", game=game, v=1))["code"] == "paused"
    assert reads == []


async def test_a_sign_out_while_an_action_catches_up_applies_nothing(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While node B reads the store to catch up for an action at a version beyond its
    own, a ``sign_out`` with ``everywhere`` on another of B's connections signs the
    acting connection out: the action is ``unauthenticated`` and changes nothing."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)
    third = await nodes[1].connect()  # before the move: a welcome after it catches B up
    assert (await third.hello(on_a.token))["type"] == "welcome"
    moved = await on_a.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack" and moved["v"] == 1, moved
    entered, released = asyncio.Event(), asyncio.Event()
    load_game = store.load_game

    async def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        await released.wait()
        return await load_game(*args, **kwargs)

    monkeypatch.setattr(store, "load_game", held)
    acting = asyncio.create_task(on_b.request("undo", game=game, v=1))
    await asyncio.wait_for(entered.wait(), TIMEOUT)
    assert (await third.request("sign_out", everywhere=True))["type"] == "signed_out"
    released.set()
    reply = await acting
    assert reply["type"] == "error" and reply["code"] == "unauthenticated", reply
    monkeypatch.setattr(store, "load_game", load_game)
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.version == 1 and len(actions) == 1  # no undo


async def test_resigning_on_one_node_ends_the_game_on_the_other(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_b.request("resign", game=game))["v"] == 1
    await sees(on_a, 1)
    lost = [e for m in not_clock(on_a.frames) for e in m["events"]]
    assert {"type": "game_lost", "reason": "resigned", "deal": 1} in lost
    refused = await on_a.request("move", game=game, v=1, card="7C", to=5)
    assert refused["code"] == "game_over"
    stats = await on_a.request("stats", level="hard")
    assert stats["stats"][0]["losses"] == 1


async def clock_stopped(client: Client) -> None:
    """Wait until ``client`` was pushed a ``clock`` event that stops the clock."""
    async with asyncio.timeout(TIMEOUT):
        while not any(
            event == {**event, "type": "clock", "running": False}
            for m in client.frames
            if m["type"] == "events"
            for event in m["events"]
        ):
            await asyncio.sleep(0.01)


async def test_pausing_on_one_node_stops_the_clock_on_the_other(
    nodes: tuple[Running, Running],
) -> None:
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_b.request("pause", game=game))["type"] == "ack"
    await clock_stopped(on_a)


async def paused_unheard(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> tuple[Client, Client, int, Store, GameRecord]:
    """Two devices (``two_devices``), node B deaf to node A, and the game paused on A:
    the devices, the game, B's store and the game's row as the pause stored it."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("pause", game=game))["type"] == "ack"
    record = await store.get_game(game)
    assert record is not None and record.paused
    return on_a, on_b, game, store, record


async def test_a_pause_the_other_node_has_not_heard_of_stops_its_moves(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``pause`` acked on node A holds on node B before B hears of it: B's move at the
    unchanged version answers ``paused`` and stores nothing, and B adopts the pause
    (its device is told the clock stopped)."""
    _on_a, on_b, game, store, _paused = await paused_unheard(nodes, monkeypatch)
    refused = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert refused["type"] == "error" and refused["code"] == "paused", refused
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.version == 0 and record.paused and actions == []
    await clock_stopped(on_b)
    again = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert again["type"] == "error" and again["code"] == "paused", again


async def test_a_pause_the_other_node_has_not_heard_of_refuses_what_breaks_a_rule_too(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf to A's acked pause, refused an undo and an impossible move by the
    rules on its own copy (``nothing_to_undo``, ``no_destination``): a paused game
    refuses every action with ``paused``, on every node as soon as the pause is acked
    (PROTOCOL.md section 6)."""
    _on_a, on_b, game, store, _paused = await paused_unheard(nodes, monkeypatch)
    for step in ({"type": "undo"}, {"type": "move", "card": "AS"}):
        refused = await play(on_b, game, 0, step)
        assert refused["type"] == "error" and refused["code"] == "paused", (step, refused)
    record, actions = await store.load_game(game, 0)
    assert record is not None and record.version == 0 and record.paused and actions == []


async def test_a_resume_and_a_move_the_other_node_has_not_heard_of_make_it_stale(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf, adopted A's pause (its move refused); A then resumed and moved. B's
    undo at the version it knew answered ``paused`` from B's own state: the version is
    checked before the state (PROTOCOL.md section 5), and the store is past it."""
    on_a, on_b, game, _store, _paused = await paused_unheard(nodes, monkeypatch)
    refused = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert refused["code"] == "paused", refused
    await clock_stopped(on_b)
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    late = await on_b.request("undo", game=game, v=0)
    assert late["type"] == "error" and late["code"] == "stale" and late["v"] == 1, late
    done = await on_b.request("undo", game=game, v=1)  # caught up: B plays on
    assert done["type"] == "ack" and done["v"] == 2, done


async def test_a_node_that_missed_the_resume_counts_the_play_since(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf, adopted A's pause; A resumed. B's next action, caught up from the
    store, stored the pause's play time: all the time played since the resume was lost."""
    on_a, on_b, game, store, paused = await paused_unheard(nodes, monkeypatch)
    assert (await on_b.request("hint", game=game))["code"] == "paused"  # B adopts the pause
    await clock_stopped(on_b)
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    await asyncio.sleep(0.6)  # played on A
    moved = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack", moved
    record = await store.get_game(game)
    assert record is not None and record.time_ms >= paused.time_ms + 500, (record, paused)


async def test_a_node_that_missed_the_resume_does_not_count_a_banked_time_twice(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf, adopted A's pause; A resumed, moved, and banked its running clock.
    B, caught up by its hint, went on from the banked play time plus all the time since
    the move: the time between the move and the bank was counted twice, and stored (a
    hint's play time above the time the game had existed)."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 0.2)
    on_a, on_b, game, store, _paused = await paused_unheard(nodes, monkeypatch)
    assert (await on_b.request("hint", game=game))["code"] == "paused"  # B adopts the pause
    await clock_stopped(on_b)
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    await asyncio.sleep(1.5)  # A plays on, and banks its clock every 0.2 s
    assert (await on_b.request("hint", game=game))["type"] == "hint"
    on_a_now = nodes[0].server.service.cached(game).clock.now_ms()  # type: ignore[union-attr]
    record = await store.get_game(game)
    assert record is not None and record.version == 2, record
    assert record.time_ms <= on_a_now + service_module.CLOCK_SKEW_MS, (record, on_a_now)


async def test_a_pause_on_a_node_that_missed_moves_names_the_games_version(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf, adopted A's pause; A resumed and moved. B's pause was stored, but
    acked at version 0, and B's device was never sent A's move."""
    on_a, on_b, game, _store, _paused = await paused_unheard(nodes, monkeypatch)
    assert (await on_b.request("hint", game=game))["code"] == "paused"
    await clock_stopped(on_b)
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    on_b.drain()
    paused = await on_b.request("pause", game=game)
    assert paused["type"] == "ack" and paused["v"] == 1, paused
    seen = await on_b.events_until(1)
    assert any(e["type"] == "moved" for m in seen if m["type"] == "events" for e in m["events"])


async def test_a_pause_racing_a_move_on_the_other_node_names_the_version_after_it(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's move committed after B's pause caught up and before B stored the pause (the
    move's write found the game not paused yet): B acked the pause at the version before
    the move (21 of 34 such races) and pushed its device a paused clock at that version,
    a state never stored, then the move."""
    on_a, on_b, game = await two_devices(nodes)
    store = nodes[1].server.store
    assert store is not None
    set_paused = store.set_paused

    async def after_a_move(*args: Any) -> Any:
        moved = await on_a.request("move", game=game, v=0, card="7C", to=5)  # A's first
        assert moved["type"] == "ack" and moved["v"] == 1, moved
        return await set_paused(*args)

    monkeypatch.setattr(store, "set_paused", after_a_move)
    before = len(on_b.frames)
    paused = await on_b.request("pause", game=game)
    assert paused["type"] == "ack" and paused["v"] == 1, paused
    pushed = [m for m in on_b.frames[before:] if m["type"] == "events"]
    moved_at = next(i for i, m in enumerate(pushed) if m["events"][0]["type"] == "moved")
    clocks = [m for m in pushed if m["events"][0]["type"] == "clock"]
    assert clocks and all(m["v"] == 1 for m in clocks), pushed
    assert pushed.index(clocks[0]) > moved_at, pushed


async def test_a_pause_racing_the_games_end_on_the_other_node_names_the_version_after_it(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with A's action ending the game (a winning move: 11 of 11 races; a
    resign here): B found it over in the store and acked at the version before the end,
    before its device was told the game had ended."""
    on_a, on_b, game = await two_devices(nodes)
    store = nodes[1].server.store
    assert store is not None
    set_paused = store.set_paused

    async def after_a_resign(*args: Any) -> Any:
        assert (await on_a.request("resign", game=game))["type"] == "ack"
        return await set_paused(*args)

    monkeypatch.setattr(store, "set_paused", after_a_resign)
    before = len(on_b.frames)
    paused = await on_b.request("pause", game=game)
    assert paused["type"] == "ack" and paused["v"] == 1, paused  # the resign's version
    ended = [
        i
        for i, m in enumerate(on_b.frames[before:])
        if m["type"] == "events" and any(e["type"] == "game_lost" for e in m["events"])
    ]
    acked = next(i for i, m in enumerate(on_b.frames[before:]) if m.get("re") == paused["re"])
    assert ended and ended[0] < acked, on_b.frames[before:]


async def test_a_hint_on_a_node_that_missed_the_resume_is_given(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    on_a, on_b, game, _store, _paused = await paused_unheard(nodes, monkeypatch)
    assert (await on_b.request("hint", game=game))["code"] == "paused"  # B adopts the pause
    await clock_stopped(on_b)
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    hint = await on_b.request("hint", game=game)
    assert hint["type"] == "hint", hint


async def test_a_pause_heard_late_holds_the_time_it_stored(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that learned of another's pause late (here by its move refused) stopped
    its clock where its own had run on to, showed that time and stored it with a later
    resignation: the time spent paused counted as play."""
    _on_a, on_b, game, store, record = await paused_unheard(nodes, monkeypatch)
    await asyncio.sleep(0.5)  # B's clock runs on
    refused = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert refused["type"] == "error" and refused["code"] == "paused", refused
    await clock_stopped(on_b)
    clocks = [e for m in on_b.frames if m["type"] == "events" for e in m["events"]]
    assert clocks[-1] == {
        "type": "clock",
        "running": False,
        "time_ms": record.time_ms,
        "paused": True,
    }
    view = await on_b.request("open_game", game=game)
    assert view["view"]["time_ms"] == record.time_ms, view
    assert (await on_b.request("resign", game=game))["type"] == "ack"
    ended = await store.get_game(game)
    assert ended is not None and ended.time_ms == record.time_ms


async def test_a_node_that_missed_a_pause_counts_none_of_it_as_play(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf to A's pause, resumed (or paused) from its own clock, which had run
    on: the time spent paused became play, and B pushed a time never stored."""
    _on_a, on_b, game, store, paused = await paused_unheard(nodes, monkeypatch)
    await asyncio.sleep(0.5)  # B's clock runs on
    (listed,) = (await on_b.request("games"))["games"]
    assert listed["time_ms"] == paused.time_ms, listed  # the stored row, not B's clock
    assert (await on_b.request("pause", game=game))["type"] == "ack"
    clocks = [e for m in on_b.frames if m["type"] == "events" for e in m["events"]]
    assert clocks[-1] == {
        "type": "clock",
        "running": False,
        "time_ms": paused.time_ms,
        "paused": True,
    }
    await asyncio.sleep(0.3)
    loop = asyncio.get_running_loop()
    resumed = loop.time()  # play counts from here: none of the 0.8 s paused before it
    assert (await on_b.request("resume", game=game))["type"] == "ack"
    view = await on_b.request("open_game", game=game)
    since = int((loop.time() - resumed) * 1000)
    assert paused.time_ms <= view["view"]["time_ms"] < paused.time_ms + since + 50, (view, since)
    moved = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack", moved
    since = int((loop.time() - resumed) * 1000)
    record = await store.get_game(game)
    assert record is not None and record.time_ms < paused.time_ms + since + 50, (record, since)


async def test_a_pause_of_a_game_ended_unheard_shows_the_time_it_ended_at(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node deaf to the other's resignation took a pause: it stopped its clock at its
    own time and showed that for good, never the time the game ended at."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[0], monkeypatch)  # A hears nothing
    assert (await on_b.request("resign", game=game))["type"] == "ack"
    ended = await store.get_game(game)
    assert ended is not None and ended.status is GameStatus.LOST
    await asyncio.sleep(0.3)  # A's clock runs on
    assert (await on_a.request("pause", game=game))["type"] == "ack"
    async with asyncio.timeout(TIMEOUT):
        while (view := await on_a.request("open_game", game=game))["view"]["status"] == "active":
            await asyncio.sleep(0.05)
    assert view["view"]["time_ms"] == ended.time_ms, view


async def test_a_pause_and_resume_both_unheard_are_not_counted_once_caught_up(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B missed A's pause and A's resume: its clock ran through the pause, and it
    kept that time once it caught up, and stored it with its next write. Caught up, it
    counts no more than the stored time and the time since the row last changed."""
    on_a, on_b, game, store, paused = await paused_unheard(nodes, monkeypatch)
    await asyncio.sleep(1.0)  # paused; B's clock runs on
    loop = asyncio.get_running_loop()
    resumed = loop.time()  # before the resume is sent: the row's time counts from its write
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    (listed,) = (await on_b.request("games"))["games"]  # still deaf: the row is read
    since = loop.time() - resumed
    assert listed["time_ms"] < paused.time_ms + since * 1000 + 300, (listed, paused)
    monkeypatch.undo()  # B hears again; a read catches it up
    view = await on_b.request("open_game", game=game)
    since = loop.time() - resumed
    assert view["view"]["time_ms"] < paused.time_ms + since * 1000 + 300, (view, paused)
    assert (await on_b.request("pause", game=game))["type"] == "ack"
    since = loop.time() - resumed  # play since the resume, not the second paused before it
    record = await store.get_game(game)
    assert record is not None and record.time_ms < paused.time_ms + since * 1000 + 300, record


async def test_another_nodes_action_does_not_set_this_nodes_clock_back(
    nodes: tuple[Running, Running],
) -> None:
    """B's device opened the game later, so B's clock runs behind A's; B's move must not
    pull A's clock back: time open on two nodes counts as the larger of the two."""
    a_node, b_node = nodes
    on_a = await a_node.player("kai")
    game = (await on_a.request("new_game", level="hard", deal=1))["game"]
    await asyncio.sleep(0.8)
    on_b = await b_node.connect()
    await on_b.hello(on_a.token)
    assert (await on_b.request("open_game", game=game))["type"] == "game"
    before = (await on_a.request("open_game", game=game))["view"]["time_ms"]
    assert before >= 700
    assert (await on_b.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    await sees(on_a, 1)
    after = (await on_a.request("open_game", game=game))["view"]["time_ms"]
    assert after >= before, (before, after)


async def test_a_node_whose_device_left_takes_up_the_time_the_other_node_ran(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's device closes the game while B's keeps it open: B's clock runs on, A's stops.
    A's device that opened it again was shown A's time, and its win recorded seconds
    less than the game had been open (R22: play time counts while any device has it
    open). Running clocks bank their time; A takes it up from the store."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 0.2)
    on_a, _, game = await two_devices(nodes)  # B's device keeps the game open
    assert (await on_a.request("close_game", game=game))["type"] == "ack"
    await asyncio.sleep(1.5)
    view = (await on_a.request("open_game", game=game))["view"]
    assert view["time_ms"] >= 1200, view["time_ms"]
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
    store = nodes[0].server.store
    assert store is not None
    [action] = await store.load_actions(game)
    assert action.t >= 1200, action  # the move's play time, as its score and a win take it


async def test_two_running_clocks_agree_after_a_bank(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's device leaves the game and comes back while B's keeps it open: A's node
    starts from B's last bank, seconds behind B's clock. Its banks then took up the
    stored time as it was at B's bank, not as it is now, so A's clock stayed behind by
    the time between the two nodes' banks for as long as both ran, and A's pause stored
    that (4 of 4 runs by hand, 2 to 4.5 s lost)."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 1.0)
    loop = asyncio.get_running_loop()
    on_a, on_b, game = await two_devices(nodes)  # B's clock and banks start about now
    opened_on_b = loop.time()
    assert (await on_a.request("close_game", game=game))["type"] == "ack"
    await asyncio.sleep(opened_on_b + 2.5 - loop.time())  # half-way between B's banks
    assert (await on_a.request("open_game", game=game))["type"] == "game"
    await asyncio.sleep(2.3)  # A's node banks twice, B's twice
    asked = loop.time()
    a_time = (await on_a.request("open_game", game=game))["view"]["time_ms"]
    b_time = (await on_b.request("open_game", game=game))["view"]["time_ms"]
    between = int((loop.time() - asked) * 1000)  # B's clock read this much later
    assert -250 < b_time - a_time < 250 + between, (a_time, b_time, between)
    assert (await on_a.request("pause", game=game))["type"] == "ack"
    store = nodes[0].server.store
    assert store is not None
    record = await store.get_game(game)
    assert record is not None
    assert record.time_ms > b_time - 250, (record.time_ms, b_time)


async def test_two_running_clocks_agree_when_the_node_behind_banks_first(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, with A's node banking just before B's (another game keeps its banks
    going): A's save, larger than B's bank of a period before, went in first, and A took
    up its own time back, behind B's clock by the same 0.6 s for good (3 of 3)."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 1.0)
    loop = asyncio.get_running_loop()
    on_a, on_b, game = await two_devices(nodes)  # A's banks started just before B's
    opened_on_b = loop.time()
    other = await nodes[0].player("lea")  # a clock running on A's node: its banks go on
    assert (await other.request("new_game", level="hard", deal=2))["type"] == "game"
    assert (await on_a.request("close_game", game=game))["type"] == "ack"
    await asyncio.sleep(opened_on_b + 2.6 - loop.time())  # 0.6 s after B's bank
    assert (await on_a.request("open_game", game=game))["type"] == "game"
    reopened = len(on_a.frames)

    def jumps() -> list[Message]:
        return [
            e
            for m in on_a.frames[reopened:]
            if m["type"] == "events"
            for e in m["events"]
            if e["type"] == "clock" and e["running"]
        ]

    # A's node banks each second, just before B's; A's device is told of the jump (it
    # was, only when the stored time alone was more): within two banks, or a few more
    # on a loaded machine, where the banks' phases drift
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(6.0):
            while not jumps():
                await asyncio.sleep(0.05)
    assert jumps(), on_a.frames[reopened:]
    asked = loop.time()
    a_time = (await on_a.request("open_game", game=game))["view"]["time_ms"]
    b_time = (await on_b.request("open_game", game=game))["view"]["time_ms"]
    between = int((loop.time() - asked) * 1000)
    assert -250 < b_time - a_time < 250 + between, (a_time, b_time, between)


async def test_a_snapshot_of_a_game_paused_unheard_says_it_is_paused(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """B missed a deal, its undo (a card face down again: a snapshot, not the events) and
    a pause: its snapshot said ``paused: false, running: true``, and only a clock stop
    followed (6 of 34 runs)."""
    on_a, on_b, game = await two_devices(nodes)
    deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("deal", game=game, v=0))["type"] == "ack"
    assert (await on_a.request("undo", game=game, v=1))["type"] == "ack"
    assert (await on_a.request("pause", game=game))["type"] == "ack"
    monkeypatch.undo()
    service = nodes[1].server.service
    assert service is not None
    service.remote_changed([game])  # B hears of it now
    async with asyncio.timeout(TIMEOUT):
        while not any(e["type"] == "snapshot" for m in on_b.frames for e in m.get("events", [])):
            await asyncio.sleep(0.01)
    (snapshot,) = [e for m in on_b.frames for e in m.get("events", []) if e["type"] == "snapshot"]
    assert (snapshot["view"]["paused"], snapshot["view"]["running"]) == (True, False), snapshot
    store = nodes[0].server.store
    assert store is not None
    record = await store.get_game(game)
    assert record is not None and snapshot["view"]["time_ms"] == record.time_ms


async def test_a_pause_or_resume_is_stored_whatever_the_node_last_heard(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that had not heard of the other's ``pause`` (or ``resume``) took a
    ``resume`` (a ``pause``) for one that changed nothing, acked it and stored nothing:
    the other node went on taking moves after a pause was acked."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[0], monkeypatch)  # A hears nothing
    assert (await on_b.request("pause", game=game))["type"] == "ack"  # A: still running
    assert (await on_a.request("resume", game=game))["type"] == "ack"
    record = await store.get_game(game)
    assert record is not None and not record.paused
    moved = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert moved["type"] == "ack", moved
    assert (await on_b.request("pause", game=game))["type"] == "ack"
    assert (await on_a.request("resume", game=game))["type"] == "ack"  # A: running still
    assert (await on_b.request("resume", game=game))["type"] == "ack"  # B: paused, as stored
    assert (await on_a.request("pause", game=game))["type"] == "ack"  # A: paused, as stored
    record = await store.get_game(game)
    assert record is not None and record.paused
    refused = await on_b.request("undo", game=game, v=1)
    assert refused["type"] == "error" and refused["code"] == "paused", refused


# -- signing out on one node signs out on the other ------------------------------------

SIGNED_OUT_S = 3.0
"""How soon a connection on the other node is signed out after a revocation."""


async def signed_out(client: Client, within: float = SIGNED_OUT_S) -> None:
    """Wait until ``client`` no longer acts as a player (its requests answer
    ``unauthenticated``), at most ``within`` seconds."""
    async with asyncio.timeout(within):
        while True:
            reply = await client.request("games")
            if reply["type"] == "error":
                assert reply["code"] == "unauthenticated", reply
                return
            await asyncio.sleep(0.05)


async def still_signed_in(client: Client) -> None:
    assert (await client.request("games"))["type"] == "games"


def hub_of(node: Running) -> Any:
    service = node.server.service
    assert service is not None
    return service.hub


async def test_signing_out_everywhere_signs_the_player_out_on_every_node(
    nodes: tuple[Running, Running],
) -> None:
    """A device lost: its player signs out everywhere on another node's connection, and
    the lost device's connection is signed out at once, its games closed."""
    on_a, on_b, game = await two_devices(nodes)
    store = nodes[0].server.store
    assert store is not None and on_a.player is not None
    other_token = await store.issue_token(on_a.player["id"])  # a third device, on B
    phone = await nodes[1].connect()
    assert (await phone.hello(other_token))["type"] == "welcome"
    bystander = await nodes[1].player("lou")  # another player on B: untouched
    assert hub_of(nodes[1]).count(game) == 1
    out = await on_a.request("sign_out", everywhere=True)
    assert out["type"] == "signed_out" and out["revoked"] == 2, out
    await signed_out(on_b)
    await signed_out(phone)
    assert hub_of(nodes[1]).count(game) == 0  # its games closed, as on the signing node
    moved = await on_b.request("move", game=game, v=0, card="7C", to=5)
    assert moved["code"] == "unauthenticated", moved
    await still_signed_in(bystander)


async def test_a_rotated_token_signs_its_connections_out_on_every_node(
    nodes: tuple[Running, Running],
) -> None:
    """The old token stops working: connections signed in with it, on either node, are
    signed out; the rotating connection and those on other tokens play on."""
    on_a, on_b, game = await two_devices(nodes)
    store = nodes[0].server.store
    assert store is not None and on_a.player is not None
    other_token = await store.issue_token(on_a.player["id"])
    phone = await nodes[1].connect()
    assert (await phone.hello(other_token))["type"] == "welcome"
    rotated = await on_a.request("rotate_token")
    assert rotated["type"] == "token", rotated
    await signed_out(on_b)
    assert hub_of(nodes[1]).count(game) == 0
    await still_signed_in(phone)
    await still_signed_in(on_a)
    assert (await on_a.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"


async def test_a_sign_out_on_one_node_leaves_the_devices_on_the_other_playing(
    nodes: tuple[Running, Running],
) -> None:
    """A plain sign_out revokes nothing: the player's devices share the token."""
    on_a, on_b, _game = await two_devices(nodes)
    out = await on_a.request("sign_out")
    assert out["type"] == "signed_out" and out["revoked"] == 0, out
    await asyncio.sleep(1)  # what another node would have heard by now
    await still_signed_in(on_b)


@pytest.mark.parametrize("revoke", ["everywhere", "rotate"])
async def test_a_revocation_missed_while_not_listening_is_found_when_listening_again(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch, revoke: str
) -> None:
    """Both nodes' listening connections are cut, and cannot connect again until after
    a revocation on node A: node B never hears of it. Once listening again, B checks
    the tokens of its connections against the store and signs out those revoked."""
    on_a, on_b, game = await two_devices(nodes)
    url = nodes[0].settings.database_url
    assert url is not None
    real_connect = asyncpg.connect
    down = True

    async def connect(*args: Any, **kwargs: Any) -> Any:
        ours = kwargs.get("server_settings", {}).get("application_name") == APPLICATION_NAME
        if ours and down:
            raise OSError("the database cannot be reached (test)")
        return await real_connect(*args, **kwargs)

    monkeypatch.setattr(asyncpg, "connect", connect)
    await _admin(
        url,
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        f" WHERE application_name = '{APPLICATION_NAME}' AND datname = current_database()",
    )
    if revoke == "everywhere":
        assert (await on_a.request("sign_out", everywhere=True))["revoked"] == 1
    else:
        assert (await on_a.request("rotate_token"))["type"] == "token"
    await asyncio.sleep(0.5)
    await still_signed_in(on_b)  # nothing heard: the notification was sent to no one
    down = False
    await signed_out(on_b, within=RECONNECTED_S + SIGNED_OUT_S)
    assert hub_of(nodes[1]).count(game) == 0


RECONNECTED_S = 6.0
"""How soon a listener connects again once it can (its pause grows to 5 s at most)."""


@pytest.mark.parametrize("revoke", ["everywhere", "rotate"])
async def test_a_hello_reading_its_token_as_another_node_revokes_it_is_refused(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch, revoke: str
) -> None:
    """A hello on node B read its token just before node A revoked it, and signs in
    only after B heard of the revocation and signed out that token's connections: it
    would be left signed in with a revoked token. It is ``unauthenticated``."""
    a_node, b_node = nodes
    owner = await a_node.player("hal")
    store = b_node.server.store
    assert store is not None
    late = await b_node.connect()
    assert owner.token is not None
    greeting, released = await hello_held_after_its_read(store, late, owner.token, monkeypatch)
    heard = asyncio.Event()
    service = b_node.server.service
    assert service is not None
    revoked = service.remote_revoked

    def hear(player_id: int, token_hash: str | None) -> None:
        revoked(player_id, token_hash)
        heard.set()

    assert store._listener is not None
    monkeypatch.setattr(store._listener, "_on_revoked", hear)
    if revoke == "everywhere":
        assert (await owner.request("sign_out", everywhere=True))["type"] == "signed_out"
    else:
        assert (await owner.request("rotate_token"))["type"] == "token"
    await asyncio.wait_for(heard.wait(), SIGNED_OUT_S)
    released.set()
    reply = await greeting
    assert reply.get("code") == "unauthenticated", reply
    assert (await late.request("games"))["code"] in ("unauthenticated", "hello_required")


async def test_a_node_that_cannot_read_the_log_serves_no_old_state(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, cut off from the database and deaf to A's notifications, answered
    ``open_game`` with the state it held (the game still active, at an old version) and
    ``replay`` with null, for a game A had ended. It says ``unavailable`` now, as its
    other reads do, and the stored state once it can read again."""
    on_a, on_b, game = await two_devices(nodes)
    store = deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("resign", game=game))["v"] == 1
    load_game = store.load_game

    async def cut_off(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("the database cannot be reached")

    monkeypatch.setattr(store, "load_game", cut_off)
    for asked in ("open_game", "replay"):
        reply = await on_b.request(asked, game=game)
        assert reply["type"] == "error" and reply["code"] == "unavailable", reply
    monkeypatch.setattr(store, "load_game", load_game)
    opened = await on_b.request("open_game", game=game)
    assert opened["type"] == "game" and opened["v"] == 1 and opened["view"]["status"] == "lost"
    replay = await on_b.request("replay", game=game)
    assert replay["result"] is not None and replay["result"]["won"] is False


async def test_a_game_list_shows_the_row_it_read_when_the_cache_is_behind_it(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node B, deaf to A's notifications, listed the game in ``welcome`` and ``games`` as
    the copy it held showed it (v 0, active) beside the row it had just read (v 2, lost):
    a client trusting ``welcome`` saw its version go back."""
    on_a, on_b, game = await two_devices(nodes)
    await on_b.close()  # B holds the game, no connection of B watches it
    deaf(nodes[1], monkeypatch)  # B hears nothing
    assert (await on_a.request("deal", game=game, v=0))["v"] == 1
    again = await nodes[1].connect()
    welcome = await again.hello(on_a.token)  # the player's unfinished games
    listed = {each["game"]: each for each in welcome["games"]}
    assert listed[game]["v"] == 1 and listed[game]["moves"] == 1, listed[game]
    await again.close()
    assert (await on_a.request("resign", game=game))["v"] == 2
    again = await nodes[1].connect()
    await again.hello(on_a.token)
    games = await again.request("games")
    listed = {each["game"]: each for each in games["games"]}
    assert listed[game]["v"] == 2 and listed[game]["status"] == "lost", listed[game]
    opened = await again.request("open_game", game=game)  # the copy caught up meanwhile
    assert opened["v"] == 2 and opened["view"]["status"] == "lost"


async def test_a_game_list_takes_up_the_time_the_other_node_banked(
    nodes: tuple[Running, Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's device keeps the game open (its clock runs, banked every CLOCK_BANK_S); B's
    device closed it, B's copy stands at its stop. B listed the copy's time in
    ``welcome`` and ``games`` beside a row it had just read holding more (a bank moves
    no ``updated_at``), then gave the row's in ``open_game``: one node, two times."""
    monkeypatch.setattr(service_module, "CLOCK_BANK_S", 0.2)
    on_a, on_b, game = await two_devices(nodes)
    assert (await on_b.request("close_game", game=game))["type"] == "ack"
    store = nodes[0].server.store
    assert store is not None
    async with asyncio.timeout(TIMEOUT):  # A's clock banked past a second
        while (banked := await store.get_game(game)) is None or banked.time_ms < 1000:
            await asyncio.sleep(0.05)
    again = await nodes[1].connect()
    welcome = await again.hello(on_a.token)
    listed = {each["game"]: each for each in welcome["games"]}
    assert listed[game]["time_ms"] >= 1000, (listed[game], banked)
    games = await again.request("games")
    listed = {each["game"]: each for each in games["games"]}
    assert listed[game]["time_ms"] >= 1000, (listed[game], banked)
