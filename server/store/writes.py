"""The write path: what a batch of ``GameWrite``s does inside one transaction.

The caller owns the transaction and the connection. ``apply_writes`` takes
the batch in rounds: a round holds at most one write per game (the first
write of each game, then the second, ...), so a game's writes apply in
submission order and each sees the version its predecessor left. A round
has two steps whatever its size (on PostgreSQL one statement, the second step
a CTE of the first; on SQLite two):

1. One guarded ``UPDATE games ... FROM <the round's rows> WHERE games.id =
   row.id AND games.version = row.expected AND games.status = 'active'
   AND (NOT games.paused OR <no action>) RETURNING games.*``. This is the
   optimistic concurrency check (a pause moves no version, so it is checked
   too: an action is refused, ``GamePaused``, an end is not) and also
   takes each game's row lock, so of two writers computed from the same
   version (two nodes, two devices) the second blocks, then matches no row.
   A write whose game does not come back wrote nothing; its answer is
   ``VersionConflict`` (or ``NotFound``), returned as a value (one ``SELECT``
   for all of a round's refusals) so the rest of the batch goes on.
2. One ``INSERT`` of the round's actions at ``seq = expected + 1``, ``ON
   CONFLICT DO NOTHING RETURNING`` the keys it stored. The (game_id, seq)
   primary key backs the guard up: an action that did not come back means a
   log ran ahead of its game row, and ``VersionConflict`` is raised for that
   write, so the caller rolls the whole transaction back (the committer then
   retries each write alone, and only that one fails).

Then, per write that ends its game (rare): book it in ``level_stats``
(``stats``) and, if it starts the player's next game (R17), insert that game.

The rows travel as one parameter per column: PostgreSQL arrays unnested
(``unnest``), on SQLite one JSON array read with ``json_each``. So each
statement's text is the same for every batch size: compiled and prepared
once, never per batch. ``now`` is one parameter for all rows. On SQLite the
two statements go to the aiosqlite connection itself (``execute_fetchall``:
one trip to its thread each, where SQLAlchemy's adapter makes four), inside
SQLAlchemy's transaction, with SQLAlchemy's own type conversions. The rows are
sorted by game id, so the updates visit (and lock) the games in id order,
the order concurrent batches on other nodes use too; were two batches ever
to deadlock all the same, the database would fail one and the committer
would retry its writes alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import Any, Final, TypeAlias

from sqlalchemy import (
    Boolean,
    Dialect,
    TextualSelect,
    bindparam,
    column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from server.store.errors import GamePaused, NotFound, StoreError, VersionConflict
from server.store.games import GAME_COLUMNS, insert_game, status_is
from server.store.models import GAMES, UTCDateTime
from server.store.notify import CHANNEL
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

__all__ = ["WriteOutcome", "apply_write", "apply_writes", "save_play_times", "save_snapshots"]
# Also used by ``sqlite_writer`` (the same statements on SQLite's plain driver):
# SQLITE_PLAIN_STATEMENTS, SQLITE_ONE_STATEMENTS (with PLAIN_GAME_WIDTH), SQLITE_SNAPSHOT,
# column_types, compact_json, game_row, game_record, action_record, rounds;
# and by ``pg_writer``: POSTGRESQL_ALONE (with its POSTGRESQL_ALONE_PARAMETERS) and
# POSTGRESQL_ONE (with PLAIN_GAME_WIDTH).

WriteOutcome: TypeAlias = Committed | StoreError
"""What one write came to: stored, or refused with nothing of it stored."""

_ACTIVE: Final = GameStatus.ACTIVE.value

# (column, PostgreSQL type) of the rows of step 1 and step 2, in parameter order; the
# action's are ``ActionRecord``'s fields in order, so a record is passed as its row.
_GAME_ROW: Final = (
    ("id", "BIGINT"),
    ("expected", "INTEGER"),
    ("version", "INTEGER"),
    ("moves", "INTEGER"),
    ("score", "INTEGER"),
    ("time_ms", "BIGINT"),
    ("hints", "INTEGER"),
    ("undos", "INTEGER"),
    ("suits_removed", "INTEGER"),
    ("status", "VARCHAR"),
    ("lost_reason", "VARCHAR"),
)
_ACTION_ROW: Final = (
    ("game_id", "BIGINT"),
    ("seq", "INTEGER"),
    ("type", "VARCHAR"),
    ("card", "VARCHAR"),
    ("to_col", "INTEGER"),
    ("t", "BIGINT"),
    ("request_id", "VARCHAR"),
    ("hint_action", "VARCHAR"),
    ("hint_card", "VARCHAR"),
    ("hint_to", "INTEGER"),
    ("hint_reason", "VARCHAR"),
)


_ENDING_COLUMNS: Final = ("status", "lost_reason")
_SNAPSHOT: Final = ("snapshot", "snapshot_v")


_HELD_WHILE_PAUSED: Final = ("time_ms", "score")
"""A paused game's clock stands still: these stay as its pause stored them (``_set``)."""


def _set(
    value: Callable[[str], str], *, ending: bool = True, carried: bool = False
) -> tuple[str, ...]:
    """The guarded update's assignments, the new values read by ``value(column)``.

    ``ending=False``: for writes that end no game, whose status stays active,
    the status columns are left out. Assigning a column SQLite indexes rewrites
    the index entries even when the value does not change (``games``' status is
    in two indexes): two more pages in the WAL per commit, twice the pages. The
    snapshot's columns are left out too: a write that ends its game sets them to
    NULL, one that leaves it active keeps them, unless ``carried``: the row has a
    ``snapshot`` too (PostgreSQL's statements of ``pg_writer``), NULL but now and
    then (``GameWrite.snapshot``), when it becomes the game's at the new version.
    """
    counters = (
        f"{name} = {value(name)}"
        for name, _type in _GAME_ROW[2:]
        if ending or name not in _ENDING_COLUMNS
    )
    kept = {name: f"games.{name}" for name in _SNAPSHOT}
    if carried:
        data, version = value("snapshot"), value("version")
        kept = {
            "snapshot": f"COALESCE({data}, games.snapshot)",
            "snapshot_v": f"CASE WHEN {data} IS NULL THEN games.snapshot_v ELSE {version} END",
        }
    if not ending:
        carries = (f"{name} = {kept[name]}" for name in _SNAPSHOT if carried)
        return (*counters, "updated_at = :now", *carries)
    # An end without an action may come from a node that has not heard of a pause: a
    # paused game ends at the time (and score) its pause stored, not at that node's.
    counters = (
        f"{name} = CASE WHEN games.paused THEN games.{name} ELSE {value(name)} END"
        if name in _HELD_WHILE_PAUSED
        else f"{name} = {value(name)}"
        for name, _type in _GAME_ROW[2:]
    )
    active = f"{value('status')} = '{_ACTIVE}'"
    finished = f"finished_at = CASE WHEN {active} THEN NULL ELSE :now END"
    # An ended game is not paused (a paused game may be resigned or abandoned).
    unpaused = f"paused = CASE WHEN {active} THEN games.paused ELSE FALSE END"
    # A game that ends drops its snapshot: a finished game is never restored from one.
    dropped = (f"{name} = CASE WHEN {active} THEN {kept[name]} END" for name in _SNAPSHOT)
    return (*counters, "updated_at = :now", finished, unpaused, *dropped)


_SET: Final = _set(lambda name: f"v.{name}")
_GAME_FIELDS: Final = tuple(column.name for column in GAME_COLUMNS)
_RETURNING: Final = ", ".join(f"games.{name}" for name in _GAME_FIELDS)
_ACTION_COLUMNS: Final = ", ".join(name for name, _type in _ACTION_ROW)


def _named(name: str) -> str:
    return f":{name}"


def _rows_source(
    dialect: str,
    shape: tuple[tuple[str, str], ...],
    name: str,
    mark: Callable[[str], str] = _named,
) -> str:
    """A FROM item ``name`` with ``shape``'s columns, one row per array (or JSON) element.

    ``mark(column)`` is the parameter's placeholder (``:column`` by default).
    """
    if dialect == "postgresql":
        arrays = ", ".join(f"CAST({mark(column)} AS {kind}[])" for column, kind in shape)
        columns = ", ".join(column for column, _kind in shape)
        return f"unnest({arrays}) AS {name} ({columns})"
    elements = ", ".join(f"json_extract(value, '$[{i}]') AS {c}" for i, (c, _k) in enumerate(shape))
    return f"(SELECT {elements} FROM json_each(:{name})) AS {name}"


_ADVANCE: Final = (
    "UPDATE games SET {set} FROM {rows}"
    f" WHERE games.id = v.id AND games.version = v.expected AND games.status = '{_ACTIVE}'"
    " AND (NOT games.paused OR v.version = v.expected)"  # a paused game: no action, an end
    f" RETURNING {_RETURNING}"
)
_APPEND: Final = (
    f"INSERT INTO game_actions ({_ACTION_COLUMNS}, created_at)"
    " SELECT {columns}, {now} FROM {rows} ON CONFLICT DO NOTHING RETURNING game_id"
)


def _sqlite_sql(*, ending: bool = True) -> tuple[str, str]:
    """SQLite: the round's two statements (module docstring); ``ending=False``: for
    rounds whose writes end no game (``_set``)."""
    assignments = _set(lambda name: f"v.{name}", ending=ending)
    advance = _ADVANCE.format(
        set=", ".join(assignments), rows=_rows_source("sqlite", _GAME_ROW, "v")
    )
    rows = _rows_source("sqlite", _ACTION_ROW, "a") + " WHERE true"  # WHERE: SQLite's grammar
    return advance, _APPEND.format(columns=_ACTION_COLUMNS, now=":now", rows=rows)


def _postgresql_statement() -> TextualSelect:
    """PostgreSQL: both steps in one statement (one round trip), the second as a CTE.

    ``a`` holds every action of the round; joined with ``moved`` only those
    whose game moved are inserted. The result is the moved games, each with
    whether its action was stored (``logged``).
    """
    now = "CAST(:now AS TIMESTAMP WITH TIME ZONE)"
    advance = _ADVANCE.format(
        set=", ".join(_SET).replace(":now", now), rows=_rows_source("postgresql", _GAME_ROW, "v")
    )
    columns = ", ".join(f"a.{name}" for name, _kind in _ACTION_ROW)
    append = _APPEND.format(columns=columns, now=now, rows="a JOIN moved ON moved.id = a.game_id")
    sql = (
        f"WITH a AS (SELECT * FROM {_rows_source('postgresql', _ACTION_ROW, 'a')}),"
        f" moved AS ({advance}), logged AS ({append})"
        f" SELECT {', '.join(f'moved.{name}' for name in _GAME_FIELDS)},"
        " logged.game_id IS NOT NULL AS logged"
        " FROM moved LEFT JOIN logged ON logged.game_id = moved.id"
    )
    now_param = bindparam("now", type_=UTCDateTime())
    return text(sql).bindparams(now_param).columns(*GAME_COLUMNS, column("logged", Boolean))


PLAIN_GAME_WIDTH: Final = len(_GAME_ROW) - len(_ENDING_COLUMNS)
"""The columns of ``game_row`` that a lone plain action's statements bind
(``SQLITE_ONE_STATEMENTS``, ``POSTGRESQL_ONE``): all but the status columns,
which are last, as a write that ends no game leaves them alone (``_set``)."""
assert tuple(name for name, _type in _GAME_ROW[PLAIN_GAME_WIDTH:]) == _ENDING_COLUMNS


_CARRIED_ROW: Final = (*_GAME_ROW, ("snapshot", "BYTEA"))
"""``pg_writer``'s game row: ``game_row``'s columns, then the snapshot the write carries
(``GameWrite.snapshot``; NULL but now and then)."""

# The parameters of ``POSTGRESQL_ALONE``, in order ($1, $2, ...).
POSTGRESQL_ALONE_PARAMETERS: Final = (
    "now",
    "node",
    *(name for name, _kind in _CARRIED_ROW),
    *(name for name, _kind in _ACTION_ROW),
)


def _postgresql_alone() -> str:
    """PostgreSQL: a round of plain actions as one statement that is its own transaction.

    For ``pg_writer``, sent by the driver itself with positional parameters
    (``POSTGRESQL_ALONE_PARAMETERS``). The same two steps as ``_POSTGRESQL``,
    except that the append has no ``ON CONFLICT``: with no ``BEGIN`` around
    the statement, a log that ran ahead of its game must fail the statement
    (a unique violation on ``game_actions``' key), so that nothing of it is
    kept. A third CTE queues the notification to other nodes
    (``notify.CHANNEL``: this node's id and the moved games, as
    ``notify.format_payload`` writes it), sent when the statement commits; the
    result is the moved games' rows.
    """
    position = {name: n for n, name in enumerate(POSTGRESQL_ALONE_PARAMETERS, start=1)}

    def mark(name: str) -> str:
        return f"${position[name]}"

    now = "CAST($1 AS TIMESTAMP WITH TIME ZONE)"
    assignments = _set(lambda name: f"v.{name}", carried=True)
    advance = _ADVANCE.format(
        set=", ".join(assignments).replace(":now", now),
        rows=_rows_source("postgresql", _CARRIED_ROW, "v", mark),
    )
    columns = ", ".join(f"a.{name}" for name, _kind in _ACTION_ROW)
    append = _APPEND.format(columns=columns, now=now, rows="a JOIN moved ON moved.id = a.game_id")
    append = append.replace(" ON CONFLICT DO NOTHING RETURNING game_id", "")
    payload = "CAST($2 AS TEXT) || ' ' || string_agg(CAST(moved.id AS TEXT), ',' ORDER BY moved.id)"
    return (
        f"WITH a AS (SELECT * FROM {_rows_source('postgresql', _ACTION_ROW, 'a', mark)}),"
        f" moved AS ({advance}), logged AS ({append}),"
        f" told AS (SELECT pg_notify('{CHANNEL}', {payload}) FROM moved HAVING count(*) > 0)"
        f" SELECT {', '.join(f'moved.{name}' for name in _GAME_FIELDS)},"
        " (SELECT count(*) FROM told) AS told FROM moved"
    )


def _advance_one(game: dict[str, str], now: str) -> str:
    """Step 1 for one plain action (``_set``'s ``ending=False``), each of the game row's
    columns read from its placeholder in ``game``, the time from ``now``; the snapshot
    the write carries too, if ``game`` has a placeholder for it."""
    carried = "snapshot" in game
    assignments = ", ".join(_set(game.__getitem__, ending=False, carried=carried))
    assignments = assignments.replace(":now", now)
    return (
        f"UPDATE games SET {assignments}"
        f" WHERE games.id = {game['id']} AND games.version = {game['expected']}"
        f" AND games.status = '{_ACTIVE}' AND NOT games.paused RETURNING {_RETURNING}"
    )


def _postgresql_one() -> str:
    """PostgreSQL: ``POSTGRESQL_ALONE`` for a batch of one plain action, with a
    parameter per value where that one has an array per column: ``$1`` the time,
    ``$2`` the node, then ``game_row(write)[:PLAIN_GAME_WIDTH]``, the action's
    record, in column order, and last the snapshot the write carries (or NULL).
    asyncpg encodes a one-element array at several times the cost of its value,
    and a lone action has 20 of them."""
    game = {
        name: f"CAST(${n} AS {kind})"
        for n, (name, kind) in enumerate(_GAME_ROW[:PLAIN_GAME_WIDTH], start=3)
    }
    start = 3 + PLAIN_GAME_WIDTH
    action = [f"CAST(${n} AS {kind})" for n, (_name, kind) in enumerate(_ACTION_ROW, start=start)]
    game["snapshot"] = f"CAST(${start + len(_ACTION_ROW)} AS BYTEA)"
    now = "CAST($1 AS TIMESTAMP WITH TIME ZONE)"
    advance = _advance_one(game, now)
    append = (
        f"INSERT INTO game_actions ({_ACTION_COLUMNS}, created_at)"
        f" SELECT {', '.join(action)}, {now} FROM moved"
    )
    payload = "CAST($2 AS TEXT) || ' ' || CAST(moved.id AS TEXT)"
    return (
        f"WITH moved AS ({advance}), logged AS ({append}),"
        f" told AS (SELECT pg_notify('{CHANNEL}', {payload}) FROM moved)"
        f" SELECT {', '.join(f'moved.{name}' for name in _GAME_FIELDS)},"
        " (SELECT count(*) FROM told) AS told FROM moved"
    )


_POSTGRESQL: Final = _postgresql_statement()
POSTGRESQL_ALONE: Final = _postgresql_alone()
POSTGRESQL_ONE: Final = _postgresql_one()
SQLITE_STATEMENTS: Final = _sqlite_sql()
SQLITE_PLAIN_STATEMENTS: Final = _sqlite_sql(ending=False)


def _sqlite_one() -> tuple[str, str]:
    """SQLite: the same two steps for a round of one write that ends no game, its rows
    as plain numbered parameters, ``?1`` for ``now`` and then the row's columns in
    order: ``(now, *game_row(write)[:PLAIN_GAME_WIDTH])`` and ``(now, *record)``, an
    ``ActionRecord`` being its row. A lone action's transaction then builds and parses no JSON, nor
    a map of parameters (``sqlite_writer``)."""
    game = {name: f"?{n}" for n, (name, _type) in enumerate(_GAME_ROW[:PLAIN_GAME_WIDTH], start=2)}
    advance = _advance_one(game, "?1")
    values = ", ".join(f"?{n}" for n in range(2, len(_ACTION_ROW) + 2))
    append = (
        f"INSERT INTO game_actions ({_ACTION_COLUMNS}, created_at) VALUES ({values}, ?1)"
        " ON CONFLICT DO NOTHING RETURNING game_id"
    )
    return advance, append


SQLITE_ONE_STATEMENTS: Final = _sqlite_one()
SQLITE_SNAPSHOT: Final = (
    "UPDATE games SET snapshot = ?, snapshot_v = ? WHERE id = ? AND version = ?"
)
"""SQLite: keep a snapshot a write carries (``GameWrite.snapshot``), in its transaction,
after the write moved its game to that version: ``(data, v, game id, v)``."""
ACTION_ROW_NAMES: Final = tuple(name for name, _type in _ACTION_ROW)


compact_json: Final = json.JSONEncoder(separators=(",", ":")).encode
"""JSON text without spaces, for the rows' parameter on SQLite. One encoder made once:
``json.dumps`` with options makes a new one on every call."""

TIMES_KEPT: Final = 4096
"""Stored times whose conversion ``column_types`` keeps: a batch's rows share one
``updated_at`` (its ``now``), and a game's ``created_at`` comes back with every action."""


_STATUS_AT: Final = _GAME_FIELDS.index("status")
_STATUSES: Final = {status.value: status for status in GameStatus}
"""A stored status as its enum member: a dict lookup, where ``GameStatus(text)`` makes
two calls through ``EnumType``."""

ReturnedGame: TypeAlias = Callable[[Sequence[Any]], GameRecord]
"""A game row a write returned, as a record (``column_types``)."""


@cache
def column_types(dialect: Dialect) -> tuple[Callable[[Any], Any], ReturnedGame]:
    """SQLAlchemy's own conversions on ``dialect``: ``now`` in, a returned game row out.

    The second takes a row of the game's columns in table order (columns after
    them, such as PostgreSQL's flag of a logged action, are left out) and
    converts, as SQLAlchemy would, only the columns SQLAlchemy converts on this
    dialect (on SQLite the times and the flags), then makes the record. The
    times' conversions (on SQLite, parsing the text into an aware datetime: most
    of a returned row's cost) are kept for the last ``TIMES_KEPT`` values met; a
    datetime is immutable, so the rows may share one.
    """
    now = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert now is not None
    conversions: list[tuple[int, Callable[[Any], Any]]] = []
    for index, c in enumerate(GAME_COLUMNS):
        convert = c.type.dialect_impl(dialect).result_processor(dialect, None)
        if convert is not None and isinstance(c.type, UTCDateTime):
            convert = lru_cache(maxsize=TIMES_KEPT)(convert)
        if convert is not None:
            conversions.append((index, convert))
    width = len(GAME_COLUMNS)

    def returned(row: Sequence[Any]) -> GameRecord:
        values = list(row)
        del values[width:]
        for index, convert in conversions:
            values[index] = convert(values[index])
        values[_STATUS_AT] = _STATUSES[values[_STATUS_AT]]
        return _new_tuple(GameRecord, values)  # every field: no Python __new__ for defaults

    return now, returned


_new_tuple = tuple.__new__


async def _sqlite_fetch(conn: AsyncConnection, sql: str, parameters: dict[str, Any]) -> list[Any]:
    """Run ``sql`` on the aiosqlite connection itself: one trip to its thread, not four.

    (SQLAlchemy's adapter makes a cursor, executes, fetches and closes, each a
    trip.) The transaction is SQLAlchemy's: ``BEGIN`` was sent explicitly
    (``database``). Driver errors leave as SQLAlchemy's, like any other.
    """
    driver = (await conn.get_raw_connection()).driver_connection
    assert driver is not None
    try:
        return list(await driver.execute_fetchall(sql, parameters))
    except sqlite3.IntegrityError as exc:
        raise IntegrityError(sql, parameters, exc) from exc
    except (sqlite3.Error, ValueError) as exc:  # ValueError: aiosqlite's "Connection closed"
        raise OperationalError(sql, parameters, exc) from exc


def _columns(shape: tuple[tuple[str, str], ...], rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """PostgreSQL: ``rows`` of ``shape`` as one array parameter per column."""
    columns = list(zip(*rows, strict=True)) or [()] * len(shape)
    return {name: list(values) for (name, _kind), values in zip(shape, columns, strict=True)}


async def _advance_and_append(
    conn: AsyncConnection,
    games: list[tuple[Any, ...]],
    actions: dict[int, ActionRecord],
    now: datetime,
) -> tuple[list[GameRecord], set[int]]:
    """Steps 1 and 2: the moved games and the ids whose action is in."""
    dialect = conn.dialect
    if dialect.name == "postgresql":
        parameters = {"now": now} | _columns(_GAME_ROW, games)
        parameters |= _columns(_ACTION_ROW, list(actions.values()))
        rows = list(await conn.execute(_POSTGRESQL, parameters))  # converted by SQLAlchemy
        return [game_record(row[:-1]) for row in rows], {row[0] for row in rows if row[-1]}
    bind_now, returned = column_types(dialect)
    sqlite_now = bind_now(now)
    advance, append = SQLITE_STATEMENTS
    parameters = {"now": sqlite_now, "v": compact_json(games)}
    moved = [returned(row) for row in await _sqlite_fetch(conn, advance, parameters)]
    wanted = [actions[game.id] for game in moved if game.id in actions]
    if not wanted:
        return moved, set()
    parameters = {"now": sqlite_now, "a": compact_json(wanted)}
    return moved, {row[0] for row in await _sqlite_fetch(conn, append, parameters)}


def game_record(row: Sequence[Any]) -> GameRecord:
    """A returned ``games`` row as a record (by position: cheaper than by name; the
    record's fields are the table's columns in order, as a test checks)."""
    values = list(row)
    values[_STATUS_AT] = _STATUSES[values[_STATUS_AT]]
    return GameRecord(*values)


def game_row(write: GameWrite) -> tuple[Any, ...]:
    progress = write.progress
    ending = write.ending
    return (
        write.game_id,
        write.version,
        write.new_version,
        progress.moves,
        progress.score,
        progress.time_ms,
        progress.hints,
        progress.undos,
        progress.suits_removed,
        _ACTIVE if ending is None else ending.status.value,
        None if ending is None else ending.lost_reason,
    )


def action_record(write: GameWrite) -> ActionRecord:
    action = write.action
    assert action is not None and write.seq is not None
    return ActionRecord(
        game_id=write.game_id,
        seq=write.seq,
        type=action.type,
        card=action.card,
        to=action.to,
        t=action.t,
        request_id=write.request_id,
        hint_action=action.hint_action,
        hint_card=action.hint_card,
        hint_to=action.hint_to,
        hint_reason=action.hint_reason,
    )


def rounds(writes: Sequence[GameWrite]) -> list[list[int]]:
    """Indexes of ``writes`` in rounds: each game at most once per round, each round by game id."""
    rounds: list[list[int]] = []
    seen: dict[int, int] = {}
    for index in sorted(range(len(writes)), key=lambda i: writes[i].game_id):  # stable
        game = writes[index].game_id
        n = seen[game] = seen.get(game, -1) + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(index)
    return rounds


REFUSED_COLUMNS: Final = "id, version, status, paused"
"""What ``refusal`` reads of a game whose guarded update matched nothing."""


def refusal(write: GameWrite, row: Sequence[Any] | None) -> StoreError:
    """Why step 1 matched nothing for ``write``, from its game's ``REFUSED_COLUMNS``
    (None: no such game): NotFound, GamePaused, or VersionConflict with the game's state."""
    if row is None:
        return NotFound("game", write.game_id)
    _id, version, status, paused = row
    if paused and status == _ACTIVE and version == write.version and write.action is not None:
        return GamePaused(write.game_id, version)
    return VersionConflict(write.game_id, write.version, version, status)


async def _refusals(conn: AsyncConnection, refused: list[GameWrite]) -> list[StoreError]:
    """Why step 1 matched nothing, for each of ``refused`` (``refusal``)."""
    ids = sorted({write.game_id for write in refused})
    statement = text(f"SELECT {REFUSED_COLUMNS} FROM games WHERE id IN :ids").bindparams(
        bindparam("ids", expanding=True)
    )
    found = {row[0]: row for row in await conn.execute(statement, {"ids": ids})}
    return [refusal(write, found.get(write.game_id)) for write in refused]


async def _apply_round(
    conn: AsyncConnection, writes: list[GameWrite], now: datetime
) -> list[WriteOutcome]:
    """One round (distinct games, by id): outcomes in the same order."""
    rows = [game_row(write) for write in writes]
    actions = {write.game_id: action_record(write) for write in writes if write.action is not None}
    moved, logged = await _advance_and_append(conn, rows, actions, now)  # a record is a row
    games = {record.id: record for record in moved}
    for write in writes:
        if write.action is not None and write.game_id in games and write.game_id not in logged:
            raise VersionConflict(write.game_id, write.version)  # the log ran ahead of the game
    refused = [write for write in writes if write.game_id not in games]
    errors = iter(await _refusals(conn, refused) if refused else ())
    outcomes: list[WriteOutcome] = []
    for write in writes:
        game = games.get(write.game_id)
        if game is None:
            outcomes.append(next(errors))
            continue
        outcomes.append(
            Committed(game, actions.get(write.game_id), await _end(conn, write, game, now))
        )
    return outcomes


async def _end(
    conn: AsyncConnection, write: GameWrite, game: GameRecord, now: datetime
) -> GameRecord | None:
    """Book the end of ``game`` if ``write`` ends it; the game it starts, if any."""
    if write.ending is None:
        return None
    won = write.ending == Ending.WON
    progress = Progress(game.moves, game.score, game.time_ms)  # as stored: a pause held them
    await record_game_end(conn, game.player_id, game.level, won, progress, game.winnable)
    if write.then_start is None:
        return None
    return await insert_game(conn, game.player_id, write.then_start, now)


# (column, PostgreSQL type) of a play-time save's row.
_TIME_ROW: Final = (
    ("id", "BIGINT"),
    ("version", "INTEGER"),
    ("time_ms", "BIGINT"),
    ("score", "INTEGER"),
)
_SAVE_TIMES: Final = (
    "UPDATE games SET time_ms = t.time_ms, score = t.score, time_at = {now} FROM {rows}"
    f" WHERE games.id = t.id AND games.version = t.version AND games.status = '{_ACTIVE}'"
    " AND games.time_ms < t.time_ms AND NOT games.paused RETURNING games.id"
)


async def save_play_times(
    conn: AsyncConnection, saves: Sequence[tuple[int, int, int, int]], now: datetime
) -> list[bool]:
    """Bank the play time of active games that have not moved: one statement for all.

    Each save is (game id, version, time_ms, score): the time spent up to a moment
    between actions (R22), kept when the clock stops (pause, last connection gone,
    shutdown) so that a restart does not give it back. A save applies only to a game
    still active at ``version``, not paused, that holds less time: it never overwrites
    a newer write, time only grows, and a paused game's clock stands still (a node that
    has not heard of a pause made on another cannot add the time its clock ran on).
    One guarded ``UPDATE ... FROM`` the saves' rows (as the write path's step 1):
    when thousands of connections close at once, a statement per save was most of
    what banking their time cost. Of a game saved
    more than once here, the save of the highest version and then the longest time
    is the one tried (such an ``UPDATE`` takes any one row per game). True for each
    save that was applied. A save is taken as the play time at ``now`` (``time_at``).
    """
    kept: dict[int, tuple[int, int, int, int]] = {}
    for save in saves:
        other = kept.get(save[0])
        if other is None or save[1:3] > other[1:3]:
            kept[save[0]] = save
    rows = sorted(kept.values())  # in game id order, the order the write path locks games in
    dialect = conn.dialect.name
    postgresql = dialect == "postgresql"
    at = "CAST(:now AS TIMESTAMP WITH TIME ZONE)" if postgresql else ":now"
    sql = text(_SAVE_TIMES.format(now=at, rows=_rows_source(dialect, _TIME_ROW, "t")))
    sql = sql.bindparams(bindparam("now", type_=UTCDateTime()))
    parameters = _columns(_TIME_ROW, rows) if postgresql else {"t": compact_json(rows)}
    saved = {row[0] for row in await conn.execute(sql, {**parameters, "now": now})}
    return [save[0] in saved and kept[save[0]] is save for save in saves]


async def bank_play_times(
    conn: AsyncConnection, saves: Sequence[tuple[int, int, int, int]], now: datetime
) -> dict[int, tuple[int, datetime]]:
    """``save_play_times``, and the play time each game held before it and since when
    (as ``GameRecord.clock_since``: another node's bank or change), by game id: only of
    the games active at their save's version and not paused. A node's running clock
    takes up the time another node banked, as of the version it holds, counted on from
    when it was banked: read before this save, which may replace it with a time that is
    larger but behind the other node's clock now (its bank is up to a period old)."""
    versions: dict[int, int] = {}
    for game_id, version, _, _ in saves:
        versions[game_id] = max(version, versions.get(game_id, version))
    query = select(
        GAMES.c.id, GAMES.c.version, GAMES.c.time_ms, GAMES.c.time_at, GAMES.c.updated_at
    ).where(
        GAMES.c.id.in_(sorted(versions)), status_is(GameStatus.ACTIVE), GAMES.c.paused.is_(False)
    )
    held: dict[int, tuple[int, datetime]] = {}
    for game_id, version, t, time_at, updated_at in await conn.execute(query):
        if versions[game_id] == version:
            held[game_id] = (t, updated_at if time_at is None or updated_at > time_at else time_at)
    await save_play_times(conn, saves, now)
    return held


_SAVE_SNAPSHOT: Final = (
    update(GAMES)
    .where(
        GAMES.c.id == bindparam("game_id"),
        status_is(GameStatus.ACTIVE),
        GAMES.c.version >= bindparam("v"),
        or_(
            GAMES.c.snapshot_v.is_(None),
            GAMES.c.snapshot_v < bindparam("v"),
            # One the row does not vouch for (games.SNAPSHOT_COLUMNS) is never read:
            # left, it would refuse every snapshot up to its version.
            GAMES.c.snapshot_v > GAMES.c.version,
            GAMES.c.snapshot.is_(None),
        ),
    )
    .values(snapshot=bindparam("data"), snapshot_v=bindparam("v"))
)


async def save_snapshots(conn: AsyncConnection, snapshots: Sequence[tuple[int, int, bytes]]) -> int:
    """Keep each (game id, version, data) in its game's row where it is still true and
    newer: the game is active, has reached that version, and holds no snapshot of it
    or a later one (one ahead of the game's version, or without data, is none). So a
    save that lost a race with the game's end, or with a later save, changes nothing.
    How many rows changed.

    A statement per snapshot, in game id order (the order the write path locks
    games in, ``apply_writes``): snapshots are saved now and then, not per action.
    """
    changed = 0
    for game_id, v, data in sorted(snapshots, key=lambda snapshot: snapshot[:2]):
        values = {"game_id": game_id, "v": v, "data": data}
        changed += (await conn.execute(_SAVE_SNAPSHOT, values)).rowcount
    return changed


async def apply_writes(
    conn: AsyncConnection, writes: Sequence[GameWrite], now: datetime
) -> list[WriteOutcome]:
    """Apply ``writes`` in rounds (module docstring); outcomes in the given order.

    A refusal is returned having written nothing. Raises (``StoreError`` or a
    database exception) when the transaction itself is spoiled; the caller
    must then roll it back.
    """
    outcomes: dict[int, WriteOutcome] = {}
    for indexes in rounds(writes):
        done = await _apply_round(conn, [writes[index] for index in indexes], now)
        outcomes.update(zip(indexes, done, strict=True))
    found = [outcomes[index] for index in range(len(writes))]
    await save_snapshots(conn, snapshots_of(writes, found))
    return found


def snapshots_of(
    writes: Sequence[GameWrite], outcomes: Sequence[object]
) -> list[tuple[int, int, bytes]]:
    """The (game id, version, data) of the snapshots that ``writes`` carry and whose
    write committed (``outcomes``, in the same order), to keep in the same transaction."""
    return [
        (write.game_id, write.new_version, write.snapshot)
        for write, outcome in zip(writes, outcomes, strict=True)
        if write.snapshot is not None and isinstance(outcome, Committed)
    ]


async def apply_write(conn: AsyncConnection, write: GameWrite, now: datetime) -> WriteOutcome:
    """Apply one write on ``conn``, as ``apply_writes`` does."""
    return (await apply_writes(conn, [write], now))[0]
