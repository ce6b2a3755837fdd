"""Games: starting one, reading them back, the action log, one unfinished game per player."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from server.store import (
    Ending,
    GameInProgress,
    GameStatus,
    GameWrite,
    NewAction,
    NewGame,
    NotFound,
    Progress,
    Store,
)
from server.store.records import MAX_STORED_DEAL, GameRecord
from tests.server.store.conftest import move, new_game, new_player


async def test_create_and_get_game(store: Store) -> None:
    player = await new_player(store)
    game = await store.create_game(player.id, "hard", 12345)
    assert (game.player_id, game.level, game.deal) == (player.id, "hard", 12345)
    assert game.status is GameStatus.ACTIVE and not game.finished
    assert (game.version, game.moves, game.score, game.time_ms) == (0, 0, 0, 0)
    assert (game.hints, game.undos, game.suits_removed) == (0, 0, 0)
    assert game.finished_at is None and game.lost_reason is None
    assert game.created_at.tzinfo is UTC and game.created_at == game.updated_at
    assert await store.get_game(game.id) == game
    assert await store.get_game(game.id + 1) is None


@pytest.mark.parametrize("deal", [1, 2**63, 10**20, MAX_STORED_DEAL])
async def test_deal_numbers_beyond_64_bits_are_exact(store: Store, deal: int) -> None:
    player = await new_player(store)
    game = await store.create_game(player.id, "classic", deal)
    assert game.deal == deal
    stored = await store.get_game(game.id)
    assert stored is not None and stored.deal == deal


@pytest.mark.parametrize("deal", [-1, MAX_STORED_DEAL + 1])
def test_unstorable_deals_are_refused(deal: int) -> None:
    with pytest.raises(ValueError, match="cannot be stored"):
        NewGame("classic", deal)


async def test_game_for_unknown_player(store: Store) -> None:
    with pytest.raises(NotFound, match="no player 7"):
        await store.create_game(7, "classic", 1)


async def test_one_unfinished_game_per_player(store: Store) -> None:
    game = await new_game(store)
    with pytest.raises(GameInProgress):
        await store.create_game(game.player_id, "easy", 2)
    assert await store.unfinished_games(game.player_id) == [game]


async def test_abandon_and_start_next_is_one_write(store: Store) -> None:
    """R17: the new game exists exactly when the old one is lost as abandoned."""
    old = await new_game(store)
    done = await store.commit(
        GameWrite(old.id, 0, Progress(), ending=Ending.ABANDONED, then_start=NewGame("easy", 9))
    )
    assert done.game.status is GameStatus.LOST and done.game.lost_reason == "abandoned"
    assert done.started is not None and (done.started.level, done.started.deal) == ("easy", 9)
    assert await store.unfinished_games(old.player_id) == [done.started]
    stats = await store.level_stats(old.player_id, "classic")
    assert (stats[0].games, stats[0].losses) == (1, 1)


async def test_list_games_newest_first_and_by_status(store: Store) -> None:
    player = await new_player(store)
    first = await store.create_game(player.id, "classic", 1)
    lost = await store.commit(
        GameWrite(first.id, 0, Progress(), ending=Ending.RESIGNED, then_start=NewGame("hard", 2))
    )
    assert lost.started is not None
    other = await new_game(store, "bob")
    games = await store.list_games(player.id)
    assert [g.id for g in games] == [lost.started.id, first.id]
    assert [g.id for g in await store.list_games(player.id, GameStatus.LOST)] == [first.id]
    assert [g.id for g in await store.list_games(player.id, limit=1)] == [lost.started.id]
    assert [g.id for g in await store.unfinished_games(player.id)] == [lost.started.id]
    assert [g.id for g in await store.list_games(other.player_id)] == [other.id]


async def test_load_actions_in_order_and_after_a_seq(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0, card="4H", request_id="a"))
    await store.commit(GameWrite(game.id, 1, Progress(moves=2), NewAction("deal", t=2500)))
    await store.commit(GameWrite(game.id, 2, Progress(moves=2, hints=1), NewAction("hint", t=3000)))
    actions = await store.load_actions(game.id)
    assert [(a.seq, a.type, a.card, a.to, a.t) for a in actions] == [
        (1, "move", "4H", 7, 1000),
        (2, "deal", None, None, 2500),
        (3, "hint", None, None, 3000),
    ]
    assert [a.request_id for a in actions] == ["a", None, None]
    assert [a.seq for a in await store.load_actions(game.id, after_seq=2)] == [3]
    assert await store.load_actions(game.id, after_seq=3) == []
    assert await store.load_actions(game.id + 1) == []


async def test_find_retry_recognises_an_applied_request(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0, request_id="req-1"))
    retry = await store.find_retry(game.id, 0, "req-1")
    assert retry is not None and retry.seq == 1
    assert await store.find_retry(game.id, 0, "req-2") is None
    assert await store.find_retry(game.id, 1, "req-1") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": "jump"}, "unknown action type"),
        ({"type": "move"}, "card None"),
        ({"type": "deal", "card": "4H"}, "with card"),
        ({"type": "undo", "to": 3}, "destination"),
        ({"type": "hint", "t": -1}, "negative play time"),
    ],
)
def test_bad_actions_are_refused_before_sql(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NewAction(**kwargs)  # type: ignore[arg-type]


def test_writes_that_make_no_sense_are_refused() -> None:
    with pytest.raises(ValueError, match="action, an ending"):
        GameWrite(1, 0, Progress())
    with pytest.raises(ValueError, match="only when this one ends"):
        GameWrite(1, 0, Progress(), NewAction("deal"), then_start=NewGame("easy", 1))
    with pytest.raises(ValueError, match="request id belongs"):
        GameWrite(1, 0, Progress(), ending=Ending.RESIGNED, request_id="r")
    with pytest.raises(ValueError, match="too long"):
        GameWrite(1, 0, Progress(), NewAction("deal"), request_id="r" * 65)


def test_a_clock_counts_on_from_the_latest_of_time_at_and_updated_at() -> None:
    """A node counts a running clock on from when the row's play time was stored. An
    older server (a node not yet upgraded, during the documented rolling start of new
    nodes) changes the row without ``time_at``: counted from the pause's ``time_at``,
    a 10 s pause then resumed on the older node was counted as play time, and stored."""
    paused_at = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    resumed_at = paused_at + timedelta(seconds=10)
    base = GameRecord(
        1, 1, "hard", 1, GameStatus.ACTIVE, 0, 0, 0, 2000, 0, 0, 0, paused_at, paused_at, None, None
    )
    assert base.clock_since == paused_at  # stored before time_at was kept
    assert base._replace(time_at=paused_at).clock_since == paused_at
    older_node = base._replace(time_at=paused_at, updated_at=resumed_at)
    assert older_node.clock_since == resumed_at
    banked = base._replace(time_at=resumed_at + timedelta(seconds=5), updated_at=resumed_at)
    assert banked.clock_since == resumed_at + timedelta(seconds=5)
