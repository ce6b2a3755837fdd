"""Games and their action logs: starting a game, and the read side.

A game is its level and deal plus its ordered action log (architecture.md,
"State and storage"): ``fetch_actions`` returns the log from a position on,
which the service replays through the engine to rebuild the state, the undo
history and the replay document. The write side of an existing game is in
``server.store.writes``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.store.errors import GameInProgress, NotFound, integrity_kind
from server.store.models import ACTIONS, GAMES, ActionRow, GameRow
from server.store.records import (
    HINT_SEPARATOR,
    ActionRecord,
    GameRecord,
    GameStatus,
    LoggedAction,
    NewGame,
    PauseState,
    StoredSnapshot,
)

__all__ = [
    "ACTIONS_QUERY",
    "ACTION_COLUMNS",
    "GAME_COLUMNS",
    "GAME_QUERY",
    "LOG_COLUMNS",
    "LOG_QUERY",
    "OWNER_QUERY",
    "RESTORE_QUERY",
    "SNAPSHOT_AT",
    "SNAPSHOT_COLUMNS",
    "action_record",
    "action_records",
    "fetch_action",
    "fetch_actions",
    "fetch_game",
    "fetch_games",
    "fetch_log",
    "fetch_owner",
    "fetch_restore",
    "game_record",
    "games_query",
    "insert_game",
    "logged_actions",
    "set_paused",
    "status_is",
    "stored_snapshot",
]

_SNAPSHOT: Final = (GAMES.c.snapshot, GAMES.c.snapshot_v)
GAME_COLUMNS: Final = tuple(c for c in GAMES.c if c not in _SNAPSHOT)
"""A game's columns that make its record: all but its snapshot, which only
``RESTORE_QUERY`` reads (a list of games must not carry the blobs)."""
ACTION_COLUMNS: Final = tuple(c for c in ACTIONS.c if c.name != "created_at")
"""The log's columns that make its records: all but the time of writing, which no
reader uses and which cost a log's read more than its other columns together."""
_COUNTERS: Final = ("version", "moves", "score", "time_ms", "hints", "undos", "suits_removed")


def game_record(row: Mapping[Any, Any]) -> GameRecord:
    """A ``games`` row (by column name) as a record."""
    fields = dict(row)
    fields["status"] = GameStatus(fields["status"])
    return GameRecord(**fields)


def action_record(row: Sequence[Any]) -> ActionRecord:
    """A ``game_actions`` row (its columns in table order) as a record.

    By position: a game's log is read whole, and building each record from a
    mapping (a dict, then keywords) cost more than reading the row.
    """
    return ActionRecord._make(row)


def action_records(rows: Iterable[Sequence[Any]]) -> list[ActionRecord]:
    """A log's rows (``ACTION_COLUMNS``, in order) as records.

    Each is made as the tuple it is: a rebuild reads a whole log, and
    ``action_record`` (``_make``: two Python calls a row) took 1.8 times as long.
    """
    return list(map(_new_record, rows))


_new_record = partial(tuple.__new__, ActionRecord)


def _packed_hint() -> ColumnElement[Any]:
    """``records.pack_hint`` in SQL: the hint's columns joined by a space, a NULL one
    as empty; NULL where ``hint_action`` is (``||`` with a NULL is NULL)."""
    # The constants are written into the statement, not bound: nothing to bind per read.
    separator, empty = literal_column(f"'{HINT_SEPARATOR}'", String), literal_column("''", String)
    packed: ColumnElement[Any] = ACTIONS.c.hint_action
    for column in (ACTIONS.c.hint_card, cast(ACTIONS.c.hint_to, String), ACTIONS.c.hint_reason):
        packed = packed.concat(separator).concat(func.coalesce(column, empty))
    return packed


HINT_COLUMN: Final = _packed_hint()
"""A hint's suggestion as one text column (``LoggedAction.hint``)."""

LOG_COLUMNS: Final = (
    ACTIONS.c.type,
    ACTIONS.c.card,
    ACTIONS.c.to_col,
    ACTIONS.c.t,
    HINT_COLUMN,
)
"""The log's columns a rebuild replays (``LoggedAction``'s fields, in order)."""


def logged_actions(rows: Iterable[Sequence[Any]]) -> list[LoggedAction]:
    """A log's rows (``LOG_COLUMNS``, in order) as what a rebuild replays."""
    return list(map(_new_logged, rows))


_new_logged = partial(tuple.__new__, LoggedAction)

# The log's columns are the record's fields in order (``to_col`` is ``to``).
assert [c.name for c in ACTION_COLUMNS] == [
    "to_col" if name == "to" else name for name in ActionRecord._fields
]


MAX_GAME_ID: Final = 2**53 - 1  # the wire's safe integers (PROTOCOL.md section 1)


def new_game_id() -> int:
    """A random game id: ids say nothing of how many games there are.

    Drawn from 2^53 values, two games meet one id about once in 10^4 runs of a
    server that stores a million games; the primary key refuses it and the
    caller starts again (``GameInProgress`` makes ``new_game`` retry).
    """
    return secrets.randbelow(MAX_GAME_ID) + 1


async def insert_game(
    conn: AsyncConnection, player_id: int, game: NewGame, now: datetime
) -> GameRecord:
    """Start ``game`` for ``player_id``: NotFound without the player, GameInProgress (R17)."""
    statement = (
        insert(GameRow)
        .values(
            id=new_game_id(),
            player_id=player_id,
            level=game.level,
            deal=game.deal,
            winnable=game.winnable,
            deal_chosen=game.chosen,
            status=GameStatus.ACTIVE.value,
            **dict.fromkeys(_COUNTERS, 0),
            created_at=now,
            updated_at=now,
        )
        .returning(*GAME_COLUMNS)
    )
    try:
        row = (await conn.execute(statement)).one()
    except IntegrityError as exc:
        kind = integrity_kind(exc)
        if kind == "foreign_key":
            raise NotFound("player", player_id) from exc
        if kind == "unique":
            raise GameInProgress(player_id) from exc
        raise
    return game_record(row._mapping)


# The reads of a returning player, with named parameters: run here through SQLAlchemy,
# and compiled once by ``sqlite_reader`` for its own connection.
OWNER_QUERY: Final = select(GameRow.player_id).where(GameRow.id == bindparam("game_id"))
GAME_QUERY: Final = select(*GAME_COLUMNS).where(GameRow.id == bindparam("game_id"))
ACTIONS_QUERY: Final = (
    select(*ACTION_COLUMNS)
    .where(ActionRow.game_id == bindparam("game_id"), ActionRow.seq > bindparam("after_seq"))
    .order_by(ActionRow.seq)
)
LOG_QUERY: Final = (
    select(*LOG_COLUMNS)
    .where(ActionRow.game_id == bindparam("game_id"), ActionRow.seq > bindparam("after_seq"))
    .order_by(ActionRow.seq)
)


def status_is(status: GameStatus) -> ColumnElement[bool]:
    """``games.status = '<status>'`` with the value in the statement's text, not bound.

    SQLite decides when it prepares a statement whether the partial index on active
    games (``uq_games_active_player``) serves it, and with the status bound, that
    depends on the value: so it prepared the statement anew on every execution
    (about 250,000 instructions, a sixth of a returning player's sign-in). The value
    is one of ``GameStatus``'s, never input.
    """
    return GameRow.status == literal_column(f"'{GameStatus(status).value}'")


def _snapshot_columns() -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """The row's snapshot version and data where the row vouches for them (both
    stored, at a version the game has reached, of a game still active), else NULL: a
    snapshot ahead of its game, or of a finished one (a bug's, or a hand's), is never
    read, and its blob never sent. A finished game is rebuilt from its whole log, so
    the log a restore reads must be all of it."""
    held = and_(
        GAMES.c.snapshot.is_not(None),
        GAMES.c.snapshot_v.between(0, GAMES.c.version),
        status_is(GameStatus.ACTIVE),
    )
    return (
        case((held, GAMES.c.snapshot_v)).label("snapshot_v"),
        case((held, GAMES.c.snapshot)).label("snapshot"),
    )


SNAPSHOT_COLUMNS: Final = _snapshot_columns()
"""A restore's (``RESTORE_QUERY``'s) columns after the game's: the snapshot's
version and data, both NULL unless the row holds one it vouches for."""
RESTORE_QUERY: Final = select(*GAME_COLUMNS, *SNAPSHOT_COLUMNS).where(
    GameRow.id == bindparam("game_id")
)
"""``GAME_QUERY`` with the game's snapshot (``SNAPSHOT_COLUMNS``); the log after it
is ``LOG_QUERY``'s with ``after_seq`` its version (0 without one)."""
SNAPSHOT_AT: Final = len(GAME_COLUMNS)
"""Where a ``RESTORE_QUERY`` row's snapshot columns are: after the game's."""


def stored_snapshot(v: int | None, data: bytes | None) -> StoredSnapshot | None:
    """A restore's snapshot columns as a record (None without one), the data as
    ``bytes`` whatever the driver gave (some give a ``memoryview``)."""
    return None if v is None or data is None else StoredSnapshot(v, bytes(data))


def games_query(status: GameStatus | None, limit: int | None) -> Select[*tuple[Any, ...]]:
    """A player's (``player_id``) games, newest first, of one status, at most ``limit``."""
    statement = select(*GAME_COLUMNS).where(GameRow.player_id == bindparam("player_id"))
    if status is not None:
        statement = statement.where(status_is(status))
    return statement.order_by(GameRow.created_at.desc(), GameRow.id.desc()).limit(limit)


async def fetch_owner(conn: AsyncConnection, game_id: int) -> int | None:
    owner: int | None = (await conn.execute(OWNER_QUERY, {"game_id": game_id})).scalar_one_or_none()
    return owner


async def fetch_game(conn: AsyncConnection, game_id: int) -> GameRecord | None:
    row = (await conn.execute(GAME_QUERY, {"game_id": game_id})).one_or_none()
    return None if row is None else game_record(row._mapping)


async def fetch_restore(
    conn: AsyncConnection, game_id: int
) -> tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]:
    """The game, its snapshot and the log after it (all of it without one), in the
    connection's transaction (``Store.restore_game``): one snapshot of the database
    on SQLite, whose transactions are; PostgreSQL's reads take ``pg_reader``'s one
    statement (``compiled.restoring_query``)."""
    row = (await conn.execute(RESTORE_QUERY, {"game_id": game_id})).one_or_none()
    if row is None:
        return None, None, []
    fields = dict(row._mapping)
    snapshot = stored_snapshot(fields.pop("snapshot_v"), fields.pop("snapshot"))
    after = 0 if snapshot is None else snapshot.v
    return game_record(fields), snapshot, await fetch_log(conn, game_id, after)


async def fetch_games(
    conn: AsyncConnection, player_id: int, status: GameStatus | None, limit: int | None
) -> list[GameRecord]:
    """A player's games, newest first, optionally of one status and at most ``limit``."""
    rows = await conn.execute(games_query(status, limit), {"player_id": player_id})
    return [game_record(row._mapping) for row in rows]


async def fetch_actions(conn: AsyncConnection, game_id: int, after_seq: int) -> list[ActionRecord]:
    """The game's actions with ``seq > after_seq``, in log order."""
    rows = await conn.execute(ACTIONS_QUERY, {"game_id": game_id, "after_seq": after_seq})
    return action_records(rows)


async def fetch_log(conn: AsyncConnection, game_id: int, after_seq: int) -> list[LoggedAction]:
    """The game's actions with ``seq > after_seq``, in log order, as a rebuild replays them."""
    rows = await conn.execute(LOG_QUERY, {"game_id": game_id, "after_seq": after_seq})
    return logged_actions(rows)


async def fetch_action(conn: AsyncConnection, game_id: int, seq: int) -> ActionRecord | None:
    statement = select(*ACTION_COLUMNS).where(ActionRow.game_id == game_id, ActionRow.seq == seq)
    row = (await conn.execute(statement)).one_or_none()
    return None if row is None else action_record(row)


async def set_paused(
    conn: AsyncConnection, game_id: int, paused: bool, now: datetime
) -> PauseState | None:
    """Record that the player paused (or resumed) an active game, as changed at ``now``
    (a node that missed both reckons the play time since from it): how it was before,
    its play time, its version and when it was last changed; None if it is over or gone."""
    found = select(GAMES.c.paused, GAMES.c.time_ms, GAMES.c.version, GAMES.c.updated_at).where(
        GAMES.c.id == game_id, status_is(GameStatus.ACTIVE)
    )
    row = (await conn.execute(found.with_for_update())).one_or_none()
    if row is None:
        return None
    updated_at = row.updated_at
    if row.paused != paused:
        changed = update(GAMES).where(GAMES.c.id == game_id)
        await conn.execute(changed.values(paused=paused, updated_at=now))
        updated_at = now
    return PauseState(bool(row.paused), row.time_ms, row.version, updated_at)
