"""Group commit on a real database: many writers, few transactions, failures stay alone."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

import server.store.store as store_module
from server.store import (
    Ending,
    GameRecord,
    GameStatus,
    GameWrite,
    NewAction,
    NewGame,
    NotFound,
    Progress,
    Store,
    VersionConflict,
)
from tests.server.store.conftest import move, new_game

GAMES = 20
MOVES = 10


async def twenty_games(store: Store) -> list[GameRecord]:
    return [await new_game(store, f"player{n}") for n in range(GAMES)]


async def assert_all_played(store: Store, games: list[GameRecord], moves: int = MOVES) -> None:
    for game in games:
        stored = await store.get_game(game.id)
        assert stored is not None and stored.version == moves and stored.moves == moves
        assert [a.seq for a in await store.load_actions(game.id)] == list(range(1, moves + 1))


async def test_players_moving_at_once_share_transactions(store: Store) -> None:
    """20 games, each awaiting its commit before its next move (as the service does)."""
    games = await twenty_games(store)

    async def play(game: GameRecord) -> None:
        for version in range(MOVES):
            await store.commit(move(game.id, version))

    await asyncio.gather(*(play(game) for game in games))
    stats = store.commit_stats
    assert stats.writes == GAMES * MOVES and stats.retried == 0
    assert stats.transactions <= GAMES * MOVES // 5, stats
    assert stats.mean_batch >= 5, stats
    await assert_all_played(store, games)


async def test_a_burst_of_200_commits_takes_a_handful_of_transactions(store: Store) -> None:
    games = await twenty_games(store)
    writes = [move(game.id, version) for version in range(MOVES) for game in games]
    done = await asyncio.gather(*(store.commit(write) for write in writes))
    assert [(d.game.id, d.game.version) for d in done] == [
        (w.game_id, w.new_version) for w in writes
    ]
    stats = store.commit_stats
    assert stats.writes == 200 and stats.transactions <= 200 // 64 + 1, stats
    await assert_all_played(store, games)


async def test_a_stale_write_in_a_batch_fails_alone(store: Store) -> None:
    games = await twenty_games(store)
    writes = [move(game.id, 0, request_id="ok") for game in games]
    stale = move(games[5].id, 0, card="KS", request_id="stale")  # same version as writes[5]
    results = await asyncio.gather(
        *(store.commit(write) for write in [*writes, stale]), return_exceptions=True
    )
    assert isinstance(results[-1], VersionConflict) and results[-1].current == 1
    assert not [r for r in results[:-1] if isinstance(r, BaseException)]
    assert store.commit_stats.transactions == 1  # refused in place: no rollback, no retries
    actions = await store.load_actions(games[5].id)
    assert [(a.card, a.request_id) for a in actions] == [("4H", "ok")]


async def test_a_write_that_spoils_its_batch_fails_alone(store: Store, engine: AsyncEngine) -> None:
    """A write that fails mid-way rolls its batch back; the rest commit on the retry."""
    games = await twenty_games(store)
    culprit = games[7]
    async with engine.begin() as conn:  # a stray action makes culprit's insert fail
        await conn.execute(
            text(
                "INSERT INTO game_actions (game_id, seq, type, t, created_at)"
                " VALUES (:game, 1, 'deal', 0, CURRENT_TIMESTAMP)"
            ),
            {"game": culprit.id},
        )
    results = await asyncio.gather(
        *(store.commit(move(game.id, 0)) for game in games), return_exceptions=True
    )
    assert isinstance(results[7], VersionConflict)
    assert not [r for i, r in enumerate(results) if i != 7 and isinstance(r, BaseException)]
    stats = store.commit_stats
    assert (stats.transactions, stats.retried) == (1 + GAMES, GAMES)
    stored = await store.get_game(culprit.id)
    assert stored is not None and stored.version == 0 and stored.moves == 0
    await assert_all_played(store, [g for g in games if g is not culprit], moves=1)


# -- the batched write path (server.store.writes): a round of statements per batch ----------


async def test_one_batch_mixes_moves_repeats_endings_and_new_games(store: Store) -> None:
    """Three moves of one game, a win, an abandon that starts a game: one transaction."""
    games = await twenty_games(store)
    busy, winner, leaver = games[0], games[1], games[2]
    win = GameWrite(
        winner.id,
        0,
        Progress(moves=1, score=500, time_ms=9000),
        NewAction("move", "AS", 1, 9000),
        request_id="win",
        ending=Ending.WON,
    )
    leave = GameWrite(
        leaver.id, 0, Progress(), ending=Ending.ABANDONED, then_start=NewGame("hard", 7)
    )
    writes = [move(busy.id, 0), win, move(busy.id, 1), leave, move(busy.id, 2)]
    writes += [move(game.id, 0, request_id=f"r{game.id}") for game in games[3:]]
    done = await asyncio.gather(*(store.commit(write) for write in writes))
    assert store.commit_stats.transactions == 1
    assert [d.game.version for d in done[:5]] == [1, 1, 2, 0, 3]
    assert done[1].game.status is GameStatus.WON and done[1].game.finished_at is not None
    assert done[1].action is not None and done[1].action.request_id == "win"
    assert done[3].game.status is GameStatus.LOST and done[3].game.lost_reason == "abandoned"
    assert done[3].action is None and done[3].started is not None
    assert (done[3].started.level, done[3].started.deal) == ("hard", 7)
    for write, committed in zip(writes, done, strict=True):
        assert await store.get_game(write.game_id) == (
            committed.game if write.game_id != busy.id else done[4].game
        )
    assert [a.seq for a in await store.load_actions(busy.id)] == [1, 2, 3]
    [won] = await store.level_stats(winner.player_id, "classic")
    assert (won.wins, won.best_score, won.fastest_win_ms) == (1, 500, 9000)
    [lost] = await store.level_stats(leaver.player_id, "classic")
    assert (lost.losses, lost.games) == (1, 1)
    await assert_all_played(store, games[3:], moves=1)


async def test_refusals_in_a_batch_stay_alone(store: Store, engine: AsyncEngine) -> None:
    """A stale write and a missing game are refused; the rest, even of that game, commit."""
    games = await twenty_games(store)
    await store.commit(move(games[4].id, 0))  # games[4] is at version 1 now
    writes = [move(game.id, 0) for game in games]  # games[4]'s is stale
    writes += [move(games[4].id, 1, card="KS"), move(10_000, 0)]  # its 2nd round: 1 -> 2
    results = await asyncio.gather(
        *(store.commit(write) for write in writes), return_exceptions=True
    )
    assert store.commit_stats.transactions == 2  # the first move, then the batch: no retries
    assert isinstance(results[4], VersionConflict) and results[4].current == 1
    assert not isinstance(results[-2], BaseException)  # 1 -> 2 applied after the stale 0 -> 1
    assert isinstance(results[-1], NotFound)
    good = [r for i, r in enumerate(results[:-2]) if i != 4]
    assert not [r for r in good if isinstance(r, BaseException)]
    assert [a.seq for a in await store.load_actions(games[4].id)] == [1, 2]
    await assert_all_played(store, [g for i, g in enumerate(games) if i != 4], moves=1)


async def test_text_reaches_the_log_exactly_through_a_batch(store: Store) -> None:
    """Request ids travel in one JSON (SQLite) or array (PostgreSQL) parameter per batch."""
    games = await twenty_games(store)
    ids = ['q"uote', "back\\slash", "ünï €", "'; DROP TABLE games; --", "[1,2]", "x" * 64]
    writes = [move(game.id, 0, request_id=rid) for game, rid in zip(games, ids, strict=False)]
    await asyncio.gather(*(store.commit(write) for write in writes))
    assert store.commit_stats.transactions == 1
    for game, rid in zip(games, ids, strict=False):
        [action] = await store.load_actions(game.id)
        assert action.request_id == rid and action.card == "4H" and action.to == 7
        assert await store.find_retry(game.id, 0, rid) == action


async def test_play_time_saves_at_once_share_transactions(store: Store) -> None:
    """Thousands of connections closing at once bank their games' time in a few commits."""
    games = [await new_game(store, f"p{n}") for n in range(40)]
    await store.commit(move(games[0].id, 0))  # this one moved on: its save at v0 is refused
    saved = await asyncio.gather(
        *(store.save_play_time(game.id, 0, 5000 + n, 7) for n, game in enumerate(games))
    )
    assert saved == [False] + [True] * 39
    assert store._time_saves.stats.transactions <= 3
    again = await asyncio.gather(*(store.save_play_time(g.id, 0, 10, 7) for g in games[1:]))
    assert not any(again)  # time only grows
    record = await store.get_game(games[5].id)
    assert record is not None and record.time_ms == 5005 and record.score == 7


async def test_a_game_saved_twice_in_one_transaction_keeps_its_newest_longest_time(
    store: Store,
) -> None:
    one, two, ended = [await new_game(store, f"p{n}") for n in range(3)]
    await store.commit(move(two.id, 0))  # at version 1, 1,000 ms
    await store.commit(GameWrite(ended.id, 0, Progress(time_ms=10), ending=Ending.RESIGNED))
    saved = await asyncio.gather(
        store.save_play_time(one.id, 0, 300, 3),
        store.save_play_time(one.id, 0, 500, 5),
        store.save_play_time(one.id, 0, 400, 4),
        store.save_play_time(two.id, 0, 9000, 9),  # the game moved on since
        store.save_play_time(two.id, 1, 900, 8),  # less than it holds
        store.save_play_time(two.id, 1, 1800, 9),
        store.save_play_time(ended.id, 0, 5000, 1),  # over
    )
    assert saved == [False, True, False, False, False, True, False]
    assert store._time_saves.stats.transactions == 1
    times = [await store.get_game(game.id) for game in (one, two, ended)]
    assert [(g.time_ms, g.score) for g in times if g is not None] == [(500, 5), (1800, 9), (10, 0)]


async def test_banking_play_times_tells_the_time_each_game_holds_now(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose clocks run banks them all at once, and learns of each game it holds
    at the stored version the time stored, which another node may have made larger."""
    ahead, behind, moved, paused, ended = [await new_game(store, f"b{n}") for n in range(5)]
    assert await store.save_play_time(behind.id, 0, 7000, 3)  # another node's bank
    await store.commit(move(moved.id, 0))
    assert await store.set_paused(paused.id, True) is not None
    await store.commit(GameWrite(ended.id, 0, Progress(time_ms=10), ending=Ending.RESIGNED))
    behind_at = (await store.get_game(behind.id)).time_at  # type: ignore[union-attr]
    saves = [(game.id, 0, 4000, 2) for game in (ahead, behind, moved, paused, ended)]
    held = await store.bank_play_times(saves)
    # as each was before this bank's saves, and since when: counted on from then
    assert {game: t for game, (t, _) in held.items()} == {ahead.id: 0, behind.id: 7000}
    assert held[behind.id][1] == behind_at  # another node's bank
    assert held[ahead.id][1] == ahead.updated_at  # made then, never saved since
    times = [await store.get_game(game.id) for game in (ahead, behind, moved)]
    assert [g.time_ms for g in times if g is not None] == [4000, 7000, 1000]
    monkeypatch.setattr(store_module, "TIME_SAVES_PER_TRANSACTION", 2)  # two transactions
    many = [await new_game(store, f"m{n}") for n in range(3)]
    banked = [(g.id, 0, 100 + n, 0) for n, g in enumerate(many)]
    assert {game: t for game, (t, _) in (await store.bank_play_times(banked)).items()} == {
        g.id: 0 for g in many
    }
    held = await store.bank_play_times(banked)  # again: what the first saved
    assert {game: t for game, (t, _) in held.items()} == {g.id: 100 + n for n, g in enumerate(many)}
