"""SQLAlchemy statements compiled once, for the hot paths that run them on the driver.

The store's readers of a returning player's rows (``sqlite_reader`` on
``sqlite3``, ``pg_reader`` on asyncpg) run the same statements as the general
path (``games.GAME_QUERY`` and the others; on PostgreSQL, two of them joined
into one where that saves a round trip: ``signing_in_query``, ``loading_query``,
``restoring_query``), compiled once for their dialect, each reader its own:
the SQL, the order of its parameters (with the values the statement fixes
itself, such as a status), SQLAlchemy's conversions of the parameters going
in and of the columns coming out. Both paths return the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlalchemy import (
    ARRAY,
    BigInteger,
    ColumnElement,
    Dialect,
    Integer,
    Select,
    and_,
    any_,
    bindparam,
    func,
    literal_column,
    select,
    true,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.types import NullType

from server.store.games import (
    GAME_COLUMNS,
    LOG_COLUMNS,
    SNAPSHOT_COLUMNS,
    status_is,
)
from server.store.models import GAMES, ActionRow, GameRow, PlayerRow, TokenRow
from server.store.players import ISSUED_AT, token_query
from server.store.records import GameStatus

__all__ = [
    "LOG_AT",
    "PLAYER_WIDTH",
    "RESTORED_LOG_AT",
    "TOKEN_AT",
    "CompiledQuery",
    "loading_query",
    "restoring_query",
    "signing_in_query",
]


class CompiledQuery:
    """A SQLAlchemy select compiled for ``dialect``: SQL, parameters, conversions."""

    def __init__(self, statement: Select[*tuple[Any, ...]], dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        self.names = list(compiled.positiontup or ())
        self.fixed = compiled.params  # the statement's own values (``status_1``...)
        binds: dict[str, Any] = dict(compiled._bind_processors)
        self.binds = [binds.get(name) for name in self.names]
        processors = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns
        ]
        # Only the columns SQLAlchemy converts on this dialect (dates) are touched.
        self.conversions = [(i, f) for i, f in enumerate(processors) if f is not None]

    def parameters(self, values: dict[str, Any]) -> list[Any]:
        """The positional parameters for ``values`` (by name), converted as SQLAlchemy would."""
        parameters = []
        for name, bind in zip(self.names, self.binds, strict=True):
            value = values[name] if name in values else self.fixed[name]
            parameters.append(value if bind is None else bind(value))
        return parameters

    def convert(self, found: Iterable[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        """The rows the driver returned, each column converted as SQLAlchemy would
        (the driver's own rows when no column needs it, as for a game's log)."""
        if not self.conversions:
            return list(found)
        rows = [list(row) for row in found]
        for index, convert in self.conversions:
            for row in rows:
                row[index] = convert(row[index])
        return rows


PLAYER_WIDTH: Final = ISSUED_AT + 1
"""The player's columns and when the token was issued (``players.ISSUED_AT``), at the
start of a ``signing_in_query`` row; the game's follow, then the token's hash
(``TOKEN_AT``)."""


def signing_in_query(expiring: bool) -> Select[*tuple[Any, ...]]:
    """``token_query`` for several tokens (``token_hashes``, an array) with each one's
    player's unfinished games (``games_query``'s, in its order) in one statement: a
    row per game (the schema allows one), the player's columns and the token's issue
    time, the game's, and last the token's hash; a player with none has one row whose
    game columns are NULL; an unknown token, none. ``pg_reader``'s: one round trip for
    the sign-ins of a batch, where the general path makes two for each. (On SQLite,
    where a statement is no round trip, the two statements measured 1.2% fewer
    instructions per returning player.)"""
    unfinished = and_(GAMES.c.player_id == PlayerRow.id, status_is(GameStatus.ACTIVE))
    return (
        token_query(expiring, many=True)
        .add_columns(*GAME_COLUMNS, TokenRow.token_hash)
        .outerjoin(GAMES, unfinished)
        .order_by(GAMES.c.created_at.desc(), GAMES.c.id.desc())
    )


def _log_arrays(after: ColumnElement[Any]) -> Any:
    """The game's (``games.id``'s) log after seq ``after`` as a lateral subquery of one
    row: an array per ``LOG_COLUMNS`` column, in log order (NULL when empty)."""
    return (
        select(
            *(
                type_coerce(func.array_agg(aggregate_order_by(column, ActionRow.seq)), NullType())
                for column in LOG_COLUMNS
            )
        )
        .where(ActionRow.game_id == GameRow.id, ActionRow.seq > after)
        .lateral("log")
    )


def loading_query() -> Select[*tuple[Any, ...]]:
    """PostgreSQL's ``GAME_QUERY`` and ``LOG_QUERY`` in one statement: the game's
    columns, then its log after ``after_seq`` as one array per column, in log order
    (NULL when empty); no row for a missing game. One round trip for two, and the
    row and the log read in one snapshot. ``pg_reader``'s.

    (Arrays of plain values: asyncpg decodes them in C, where an array of rows took
    it 14% more instructions per returning player than the two statements.)"""
    log = _log_arrays(bindparam("after_seq"))
    return (
        select(*GAME_COLUMNS, *log.c)
        .select_from(GAMES.outerjoin(log, true()))
        .where(GameRow.id == bindparam("game_id"))
    )


def restoring_query() -> Select[*tuple[Any, ...]]:
    """PostgreSQL's ``RESTORE_QUERY`` and the log after its snapshot in one statement,
    as ``loading_query``, for several games (``game_ids``, an array): per game a row
    of its columns, the snapshot's version and data (``SNAPSHOT_COLUMNS``: NULL
    without one), then the log after that version (the whole log without one), all
    read in one snapshot of the database; no row for a missing game. ``pg_reader``'s."""
    snapshot_v, _data = SNAPSHOT_COLUMNS
    log = _log_arrays(func.coalesce(snapshot_v.element, literal_column("0", Integer)))
    return (
        select(*GAME_COLUMNS, *SNAPSHOT_COLUMNS, *log.c)
        .select_from(GAMES.outerjoin(log, true()))
        .where(GameRow.id == any_(bindparam("game_ids", type_=ARRAY(BigInteger()))))
    )


TOKEN_AT: Final = PLAYER_WIDTH + len(GAME_COLUMNS)
"""Where a ``signing_in_query`` row's token hash is: after the player's and the game's."""
LOG_AT: Final = len(GAME_COLUMNS)
"""Where a ``loading_query`` row's log is: after the game's columns."""
RESTORED_LOG_AT: Final = LOG_AT + len(SNAPSHOT_COLUMNS)
"""Where a ``restoring_query`` row's log is: after the game's and the snapshot's columns."""
