"""Group commit on a real database: many writers, few transactions, failures stay alone."""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import GameRecord, Store, VersionConflict
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
