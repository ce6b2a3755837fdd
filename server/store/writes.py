"""The write path: what one ``GameWrite`` does inside a transaction.

In order, on the caller's connection (the caller owns the transaction):

1. ``UPDATE games SET version, counters, [status, finished_at, lost_reason]
   WHERE id = :game AND version = :expected AND status = 'active'
   RETURNING *``. This guarded update is the optimistic concurrency check and
   also takes the game's row lock, so of two writers computed from the same
   version (two nodes, two devices) the second blocks, then matches no row.
   No row: nothing was written, and the write's answer is ``VersionConflict``
   (or ``NotFound``), returned as a value so the rest of a batch goes on.
2. ``INSERT`` the action at ``seq = expected + 1``. The (game_id, seq) primary
   key backs the guard up: if a log somehow ran ahead of its game row, the
   insert fails and the whole transaction is rolled back.
3. If the write ends the game, book it in ``level_stats`` (``stats``).
4. If it starts the next game (R17), insert that game.

``apply_writes`` runs many writes in one transaction, ordered by game id so
concurrent batches on two nodes take row locks in the same order (a stable
sort keeps one game's writes in submission order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any, Final, TypeAlias

from sqlalchemy import Update, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.store.errors import NotFound, StoreError, VersionConflict, integrity_kind
from server.store.games import GAME_COLUMNS, game_record, insert_game
from server.store.models import ACTIONS, GAMES
from server.store.records import (
    ActionRecord,
    Committed,
    Ending,
    GameRecord,
    GameStatus,
    GameWrite,
    Progress,
)
from server.store.stats import record_game_end

__all__ = ["WriteOutcome", "apply_write", "apply_writes"]

WriteOutcome: TypeAlias = Committed | StoreError
"""What one write came to: stored, or refused with nothing of it stored."""


_PROGRESS: Final = ("version", "updated_at", *(f.name for f in fields(Progress)))
_ENDING: Final = ("status", "lost_reason", "finished_at")


def _guarded_update(columns: tuple[str, ...]) -> Update:
    """Step 1's statement, built once: parameters ``game``, ``expected`` and ``new_<column>``."""
    return (
        update(GAMES)
        .where(
            GAMES.c.id == bindparam("game"),
            GAMES.c.version == bindparam("expected"),
            GAMES.c.status == GameStatus.ACTIVE.value,
        )
        .values({column: bindparam(f"new_{column}") for column in columns})
        .returning(*GAME_COLUMNS)
    )


_ADVANCE: Final = _guarded_update(_PROGRESS)
_ADVANCE_AND_END: Final = _guarded_update(_PROGRESS + _ENDING)
_INSERT_ACTION: Final = insert(ACTIONS)


def _update_parameters(write: GameWrite, now: datetime) -> dict[str, Any]:
    changes = {"version": write.new_version, "updated_at": now, **asdict(write.progress)}
    if write.ending is not None:
        changes["status"] = write.ending.status.value
        changes["lost_reason"] = write.ending.lost_reason
        changes["finished_at"] = now
    parameters = {f"new_{column}": value for column, value in changes.items()}
    return parameters | {"game": write.game_id, "expected": write.version}


async def _advance_game(
    conn: AsyncConnection, write: GameWrite, now: datetime
) -> GameRecord | None:
    """Step 1: the guarded update; None when the game is gone, moved on or finished."""
    statement = _ADVANCE if write.ending is None else _ADVANCE_AND_END
    result = await conn.execute(statement, _update_parameters(write, now))
    row = result.one_or_none()
    return None if row is None else game_record(row._mapping)


async def _refusal(conn: AsyncConnection, write: GameWrite) -> StoreError:
    """Why step 1 matched nothing: NotFound, or VersionConflict with the game's state."""
    statement = select(GAMES.c.version, GAMES.c.status).where(GAMES.c.id == write.game_id)
    row = (await conn.execute(statement)).one_or_none()
    if row is None:
        return NotFound("game", write.game_id)
    return VersionConflict(write.game_id, write.version, row.version, row.status)


async def _append_action(conn: AsyncConnection, write: GameWrite, now: datetime) -> ActionRecord:
    """Step 2: the action row; a taken (game_id, seq) raises VersionConflict."""
    action = write.action
    assert action is not None and write.seq is not None
    record = ActionRecord(
        game_id=write.game_id,
        seq=write.seq,
        type=action.type,
        card=action.card,
        to=action.to,
        t=action.t,
        request_id=write.request_id,
        created_at=now,
    )
    values = asdict(record)
    values["to_col"] = values.pop("to")
    try:
        await conn.execute(_INSERT_ACTION, values)
    except IntegrityError as exc:
        if integrity_kind(exc) == "unique":
            raise VersionConflict(write.game_id, write.version) from exc
        raise
    return record


async def apply_write(conn: AsyncConnection, write: GameWrite, now: datetime) -> WriteOutcome:
    """Apply ``write`` on ``conn``; a refusal is returned having written nothing.

    Raises (``StoreError`` or a database exception) when the transaction
    itself is spoiled; the caller must then roll it back.
    """
    game = await _advance_game(conn, write, now)
    if game is None:
        return await _refusal(conn, write)
    action = None if write.action is None else await _append_action(conn, write, now)
    if write.ending is not None:
        won = write.ending == Ending.WON
        await record_game_end(conn, game.player_id, game.level, won, write.progress)
    started = None
    if write.then_start is not None:
        started = await insert_game(conn, game.player_id, write.then_start, now)
    return Committed(game, action, started)


async def apply_writes(
    conn: AsyncConnection, writes: Sequence[GameWrite], now: datetime
) -> list[WriteOutcome]:
    """Apply ``writes`` in game-id order; the outcomes come back in the given order."""
    outcomes: dict[int, WriteOutcome] = {}
    for index in sorted(range(len(writes)), key=lambda i: writes[i].game_id):
        outcomes[index] = await apply_write(conn, writes[index], now)
    return [outcomes[index] for index in range(len(writes))]
