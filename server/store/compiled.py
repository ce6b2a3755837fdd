"""SQLAlchemy statements compiled once, for the hot paths that run them on the driver.

The store's readers of a returning player's rows (``sqlite_reader`` on
``sqlite3``, ``pg_reader`` on asyncpg) run the same statements as the general
path (``games.GAME_QUERY`` and the others), compiled once for their dialect:
the SQL, the order of its parameters (with the values the statement fixes
itself, such as a status), SQLAlchemy's conversions of the parameters going
in and of the columns coming out. Both paths return the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Dialect, Select

from server.store.games import ACTIONS_QUERY, GAME_QUERY, OWNER_QUERY, games_query
from server.store.players import token_query
from server.store.records import GameStatus

__all__ = ["CompiledQuery", "ReturningReads"]


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


class ReturningReads:
    """The statements of a returning player's reads, compiled for ``dialect``: the
    token's player, the player's unfinished games, a game's owner, its row, its log.

    The base of both hot readers (``sqlite_reader``, ``pg_reader``).
    """

    def __init__(self, dialect: Dialect) -> None:
        self._token = CompiledQuery(token_query(False), dialect)
        self._token_expiring = CompiledQuery(token_query(True), dialect)
        self._unfinished = CompiledQuery(games_query(GameStatus.ACTIVE, None), dialect)
        self._owner = CompiledQuery(OWNER_QUERY, dialect)
        self._game = CompiledQuery(GAME_QUERY, dialect)
        self._actions = CompiledQuery(ACTIONS_QUERY, dialect)
