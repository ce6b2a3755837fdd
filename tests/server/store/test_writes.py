"""The write path: action + game row + statistics in one transaction, or nothing."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store import (
    Ending,
    GamePaused,
    GameRecord,
    GameStatus,
    GameWrite,
    LevelStats,
    NewAction,
    NewGame,
    NotFound,
    Progress,
    Store,
    VersionConflict,
)
from server.store.games import GAME_COLUMNS
from server.store.records import ActionRecord
from server.store.writes import ACTION_ROW_NAMES, compact_json, game_record
from tests.server.store.conftest import move, new_game, new_player


async def test_a_game_record_has_the_games_columns_in_their_order(store: Store) -> None:
    """``game_record`` builds the record from a returned row by position."""
    assert list(GameRecord._fields) == [c.name for c in GAME_COLUMNS]
    game = await new_game(store)
    row = [getattr(game, c.name) for c in GAME_COLUMNS]
    row[row.index(game.status)] = game.status.value  # as the database returns it
    assert game_record(row) == game


def test_an_action_record_is_its_row() -> None:
    """The write paths pass the records themselves as the action rows (SQLite's as JSON):
    their fields are the row's columns in order (``to`` is the column ``to_col``)."""
    record = ActionRecord(7, 3, "move", "AS", 2, 1500, "r1", "move", "KH", 4, "free")
    assert len(ActionRecord._fields) == len(ACTION_ROW_NAMES)
    assert [name.replace("to_col", "to") for name in ACTION_ROW_NAMES] == list(ActionRecord._fields)
    assert compact_json([record]) == '[[7,3,"move","AS",2,1500,"r1","move","KH",4,"free"]]'


async def test_games_committed_in_one_batch_come_back_as_stored(store: Store) -> None:
    """The hot path's records equal what is read back, times included (they are
    converted once per distinct value and shared)."""
    games = [await new_game(store, name=f"p{index}") for index in range(3)]
    for version in range(3):
        done = await asyncio.gather(*(store.commit(move(g.id, version)) for g in games))
        for game, committed in zip(games, done, strict=True):
            stored = await store.get_game(game.id)
            assert committed.game == stored
            assert committed.game.created_at == game.created_at
            assert committed.game.updated_at.tzinfo is not None


async def test_a_write_moves_the_game_and_logs_the_action(store: Store) -> None:
    game = await new_game(store)
    progress = Progress(moves=1, score=5, time_ms=1200, hints=0, undos=0, suits_removed=0)
    done = await store.commit(
        GameWrite(game.id, 0, progress, NewAction("move", "4H", 7, 1200), request_id="r1")
    )
    assert done.game.version == 1 and done.game.moves == 1 and done.game.score == 5
    assert done.game.time_ms == 1200 and done.game.updated_at >= game.updated_at
    assert done.action is not None and (done.action.seq, done.action.request_id) == (1, "r1")
    assert done.started is None
    assert await store.get_game(game.id) == done.game
    assert await store.load_actions(game.id) == [done.action]


async def test_counters_are_stored_as_given(store: Store) -> None:
    game = await new_game(store)
    progress = Progress(moves=40, score=1234, time_ms=2**40, hints=3, undos=4, suits_removed=2)
    done = await store.commit(GameWrite(game.id, 0, progress, NewAction("undo", t=2**40)))
    stored = await store.get_game(game.id)
    assert stored == done.game
    assert (stored.moves, stored.score, stored.time_ms) == (40, 1234, 2**40)
    assert (stored.hints, stored.undos, stored.suits_removed) == (3, 4, 2)


async def snapshot(engine: AsyncEngine) -> list[object]:
    """Every row the write path touches, to show that a refused write changed nothing."""
    async with engine.connect() as conn:
        return [
            list(await conn.execute(text(f"SELECT * FROM {table} ORDER BY 1, 2")))
            for table in ("games", "game_actions", "level_stats")
        ]


async def test_duplicate_seq_is_a_conflict_and_writes_nothing(
    store: Store, engine: AsyncEngine
) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0, card="4H", request_id="first"))
    before = await snapshot(engine)
    late = GameWrite(
        game.id, 0, Progress(moves=9), NewAction("move", "5S", 2, 9), ending=Ending.WON
    )
    with pytest.raises(VersionConflict) as caught:
        await store.commit(late)
    assert (caught.value.expected, caught.value.current, caught.value.status) == (0, 1, "active")
    assert "version 1" in str(caught.value)
    assert await snapshot(engine) == before


async def test_a_finished_game_takes_no_more_writes(store: Store, engine: AsyncEngine) -> None:
    game = await new_game(store)
    await store.commit(GameWrite(game.id, 0, Progress(), ending=Ending.RESIGNED))
    before = await snapshot(engine)
    with pytest.raises(VersionConflict) as caught:
        await store.commit(move(game.id, 0))
    assert (caught.value.current, caught.value.status) == (0, "lost")
    with pytest.raises(VersionConflict):
        await store.commit(GameWrite(game.id, 0, Progress(), ending=Ending.ABANDONED))
    assert await snapshot(engine) == before


async def test_a_paused_game_takes_no_action_but_can_be_given_up(store: Store) -> None:
    """The pause is in the guard: a node that has not heard of a pause made on another
    node cannot write an action past it, on either path (the hot path alone and in a
    batch, the general path with a win), nor save the time its clock ran on, while a
    resignation still ends the game."""
    game = await new_game(store)
    other = await new_game(store, "bob")
    assert await store.set_paused(game.id, True)
    paused = await store.get_game(game.id)
    with pytest.raises(GamePaused) as caught:
        await store.commit(move(game.id, 0))
    assert (caught.value.game_id, caught.value.version) == (game.id, 0)
    alone, beside = await asyncio.gather(
        store.commit(move(game.id, 0)), store.commit(move(other.id, 0)), return_exceptions=True
    )
    assert isinstance(alone, GamePaused) and not isinstance(beside, BaseException)
    won = GameWrite(game.id, 0, Progress(moves=1), NewAction("move", "5S", 2, 9), ending=Ending.WON)
    for write in (won, move(game.id, 0)):
        with pytest.raises(GamePaused):
            await store.append_actions([write])
        with pytest.raises(GamePaused):
            await store.commit(write)
    assert not await store.save_play_time(game.id, 0, 99_000, 1)  # its clock stands still
    assert await store.get_game(game.id) == paused
    assert await store.load_actions(game.id) == []
    resigned = await store.commit(GameWrite(game.id, 0, Progress(), ending=Ending.RESIGNED))
    assert resigned.game.status is GameStatus.LOST


async def test_a_paused_game_ends_at_the_time_and_score_its_pause_stored(
    store: Store,
) -> None:
    """A node that had not heard of a pause resigned or abandoned the game with the
    time its own clock had run on to, and the time spent paused counted as play."""
    for ending in (Ending.RESIGNED, Ending.ABANDONED):
        game = await new_game(store, name=f"p{ending.name}")
        assert await store.set_paused(game.id, True, (0, 1500, 40))
        late = Progress(moves=0, score=10, time_ms=9000)  # the unaware node's clock
        ended = await store.commit(GameWrite(game.id, 0, late, ending=ending))
        assert (ended.game.time_ms, ended.game.score) == (1500, 40)
        (row,) = await store.level_stats(game.player_id, game.level)
        assert row.best_score == 40


async def test_writing_to_a_missing_game(store: Store) -> None:
    with pytest.raises(NotFound, match="no game 99"):
        await store.commit(move(99, 0))


async def test_append_actions_is_all_or_nothing(store: Store, engine: AsyncEngine) -> None:
    one = await new_game(store, "anna")
    two = await new_game(store, "bob")
    done = await store.append_actions([move(one.id, 0), move(one.id, 1), move(two.id, 0)])
    assert [(d.game.id, d.game.version) for d in done] == [(one.id, 1), (one.id, 2), (two.id, 1)]
    before = await snapshot(engine)
    with pytest.raises(VersionConflict):
        await store.append_actions([move(two.id, 1), move(one.id, 0)])  # the 2nd is stale
    assert await snapshot(engine) == before


async def test_log_running_ahead_of_its_game_is_a_conflict(
    store: Store, engine: AsyncEngine
) -> None:
    """The (game_id, seq) key backs the version guard up, and nothing is half-written."""
    game = await new_game(store)
    async with engine.begin() as conn:  # a stray action the game row does not count
        await conn.execute(
            text(
                "INSERT INTO game_actions (game_id, seq, type, t, created_at)"
                " VALUES (:game, 1, 'deal', 0, CURRENT_TIMESTAMP)"
            ),
            {"game": game.id},
        )
    before = await snapshot(engine)
    with pytest.raises(VersionConflict):
        await store.commit(move(game.id, 0))
    assert await snapshot(engine) == before


async def test_two_stores_racing_for_one_version(database_url: str, store: Store) -> None:
    """Two nodes append the same seq to one game at once: exactly one wins."""
    game = await new_game(store)
    other = Store.connect(database_url)
    try:
        results = await asyncio.gather(
            store.commit(move(game.id, 0, card="4H")),
            other.commit(move(game.id, 0, card="5S")),
            return_exceptions=True,
        )
    finally:
        await other.close()
    conflicts = [r for r in results if isinstance(r, VersionConflict)]
    assert len(conflicts) == 1 and conflicts[0].current == 1
    actions = await store.load_actions(game.id)
    assert len(actions) == 1


# -- statistics ---------------------------------------------------------------------


def _best(pick: Callable[[int, int], int], old: int | None, new: int) -> int:
    return new if old is None else pick(old, new)


@dataclass
class Expected:
    """The statistics arithmetic, written plainly, to check the SQL against."""

    games: int = 0
    wins: int = 0
    losses: int = 0
    current_streak: int = 0
    best_streak: int = 0
    best_score: int | None = None
    fastest_win_ms: int | None = None
    fewest_moves: int | None = None

    def book(self, won: bool, progress: Progress) -> None:
        self.games += 1
        self.best_score = _best(max, self.best_score, progress.score)
        if not won:
            self.losses += 1
            self.current_streak = 0
            return
        self.wins += 1
        self.current_streak += 1
        self.best_streak = max(self.best_streak, self.current_streak)
        self.fastest_win_ms = _best(min, self.fastest_win_ms, progress.time_ms)
        self.fewest_moves = _best(min, self.fewest_moves, progress.moves)

    def stats(self, player_id: int, level: str) -> LevelStats:
        return LevelStats(player_id, level, **vars(self))


async def finish(store: Store, game: GameRecord, ending: Ending, progress: Progress) -> GameRecord:
    """End ``game`` (after one move, for a win) and start the next one of its level."""
    action = NewAction("move", "AS", 1, progress.time_ms) if ending is Ending.WON else None
    write = GameWrite(
        game.id, game.version, progress, action, ending=ending,
        then_start=NewGame(game.level, game.deal + 1),
    )  # fmt: skip
    done = await store.commit(write)
    assert done.game.status is ending.status and done.started is not None
    return done.started


async def test_streaks_and_bests(store: Store) -> None:
    game = await new_game(store, level="hard")
    expected = Expected()
    rng = random.Random(17)
    outcomes = [Ending.WON, Ending.WON, Ending.RESIGNED, Ending.WON, Ending.WON, Ending.WON]
    outcomes += [rng.choice(list(Ending)) for _ in range(10)]
    for ending in outcomes:
        progress = Progress(
            moves=rng.randrange(50, 200),
            score=rng.randrange(0, 5000),
            time_ms=rng.randrange(60_000, 900_000),
        )
        game = await finish(store, game, ending, progress)
        expected.book(ending is Ending.WON, progress)
        assert await store.level_stats(game.player_id, "hard") == [
            expected.stats(game.player_id, "hard")
        ]
    assert expected.best_streak >= 3


async def test_win_loss_arithmetic_by_hand(store: Store) -> None:
    game = await new_game(store, level="classic")
    player_id = game.player_id
    game = await finish(store, game, Ending.WON, Progress(moves=120, score=900, time_ms=300_000))
    game = await finish(store, game, Ending.WON, Progress(moves=150, score=700, time_ms=200_000))
    game = await finish(store, game, Ending.ABANDONED, Progress(moves=5, score=950, time_ms=1000))
    game = await finish(store, game, Ending.WON, Progress(moves=110, score=100, time_ms=400_000))
    [stats] = await store.level_stats(player_id, "classic")
    assert (stats.games, stats.wins, stats.losses) == (4, 3, 1)
    assert (stats.current_streak, stats.best_streak) == (1, 2)
    assert stats.best_score == 950  # a best score counts any finished game
    assert (stats.fastest_win_ms, stats.fewest_moves) == (200_000, 110)  # wins only
    assert stats.win_rate == 0.75


async def test_statistics_are_per_player_and_level(store: Store) -> None:
    anna = await new_game(store, "anna", level="easy")
    bob = await new_game(store, "bob", level="easy")
    anna_next = await finish(store, anna, Ending.WON, Progress(moves=80, score=10, time_ms=5000))
    await finish(store, bob, Ending.RESIGNED, Progress())
    changed = await store.commit(
        GameWrite(
            anna_next.id, 0, Progress(), ending=Ending.ABANDONED, then_start=NewGame("hard", 1)
        )
    )
    assert changed.started is not None
    by_level = {s.level: s for s in await store.level_stats(anna.player_id)}
    assert sorted(by_level) == ["easy"]
    assert (by_level["easy"].wins, by_level["easy"].losses) == (1, 1)
    [bobs] = await store.level_stats(bob.player_id)
    assert (bobs.level, bobs.games, bobs.losses, bobs.best_score) == ("easy", 1, 1, 0)


async def test_level_stats_before_any_game(store: Store) -> None:
    player = await new_player(store)
    assert await store.level_stats(player.id) == []
    [fresh] = await store.level_stats(player.id, "medium")
    assert fresh == LevelStats(player.id, "medium", 0, 0, 0, 0, 0, None, None, None)
    assert fresh.win_rate == 0.0


async def test_an_unfinished_game_is_not_counted(store: Store) -> None:
    game = await new_game(store)
    await store.commit(move(game.id, 0))
    [stats] = await store.level_stats(game.player_id, "classic")
    assert stats.games == 0
    assert (await store.get_game(game.id)) is not None
    assert [g.status for g in await store.list_games(game.player_id)] == [GameStatus.ACTIVE]
