"""PostgreSQL's hot write path: a group-commit batch of plain actions in one round trip.

Why: through SQLAlchemy's session-less async path a lone action's
transaction took seven round trips to PostgreSQL (the pool's pre-ping, itself
``BEGIN``, ``;``, ``ROLLBACK``; then ``BEGIN``, the write, ``pg_notify``,
``COMMIT``), each a wake-up of the event loop and a pass through the
adapter's greenlet, about 1.5 ms of the server's CPU for microseconds of SQL.
Here the batch is one statement (``writes.POSTGRESQL_ALONE``; for a batch of
one, ``writes.POSTGRESQL_ONE``, the same with a value per parameter where the
batch's has an array per column) sent by asyncpg itself, prepared once per
connection (asyncpg's statement cache), outside any ``BEGIN``: PostgreSQL runs
a lone statement as its own transaction, so the guarded update, the append to
the log and the notification to other nodes commit together or not at all, in
one round trip.

The guarantees are those of the general path (``writes``):

- Durable before the ack: the statement's implicit commit flushes the WAL
  before PostgreSQL answers (``synchronous_commit`` as configured, ``on`` by
  default), exactly as an explicit ``COMMIT`` does.
- Conflicts between nodes: the update is guarded by the expected version and
  takes each game's row lock, in game id order; of two nodes writing the same
  version, the second blocks, then matches no row and is refused
  (``VersionConflict``, with the version it found, read after the statement).
  A log that ran ahead of its game fails the statement on ``game_actions``'
  primary key: nothing is kept, a lone write gets ``VersionConflict``, a batch
  raises and the committer retries its writes alone.
- Other nodes hear of the moved games with the commit (``notify``): the
  statement queues the notification itself.
- Errors leave as SQLAlchemy's (``IntegrityError``, ``DBAPIError`` carrying
  the SQLSTATE, ``InterfaceError``) so ``translate_errors`` gives them the
  same stable codes as the general path's (``unavailable`` for a lost or
  refused connection or a timeout).

Only the common case comes here (``takes``): batches of actions that end no
game, each game at most once (one round). The rest takes the general path.

The connection is one of the engine's pool, checked out at the first batch
and kept (``held``; the committer runs one batch at a time). After any error
other than a refusal by a constraint it is dropped (its state is unknown) and
the next batch checks out a fresh, pinged one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine

from server.store.errors import VersionConflict
from server.store.held import HeldConnection
from server.store.records import Committed, GameWrite
from server.store.writes import (
    PLAIN_GAME_WIDTH,
    POSTGRESQL_ALONE,
    POSTGRESQL_ALONE_PARAMETERS,
    POSTGRESQL_ONE,
    REFUSED_COLUMNS,
    WriteOutcome,
    action_record,
    column_types,
    game_row,
    refusal,
)

__all__ = ["MAX_BATCH", "PostgresWriter"]

MAX_BATCH: Final = 256
"""The most writes a batch may have here: its notification (a game id of up to
20 characters each) stays under PostgreSQL's payload limit (``notify``)."""

_REFUSED: Final = f"SELECT {REFUSED_COLUMNS} FROM games WHERE id = ANY(CAST($1 AS BIGINT[]))"
_ARITY: Final = len(POSTGRESQL_ALONE_PARAMETERS)


class PostgresWriter:
    """Writes batches of plain actions on one held connection (module docstring)."""

    def __init__(self, engine: AsyncEngine, node_id: str) -> None:
        self._engine = engine
        self._node_id = node_id
        self._held = HeldConnection(engine)

    @staticmethod
    def takes(batch: Sequence[GameWrite]) -> bool:
        """Whether ``batch`` is for this path: actions only, no game ending, one round."""
        if len(batch) == 1:  # the usual batch at light load: no generator, no set
            return batch[0].ending is None and batch[0].action is not None
        if not 0 < len(batch) <= MAX_BATCH:
            return False
        if not all(write.ending is None and write.action is not None for write in batch):
            return False
        return len({write.game_id for write in batch}) == len(batch)

    async def write(self, batch: Sequence[GameWrite], now: datetime) -> list[WriteOutcome]:
        """``batch`` in one statement: one outcome per write, refusals as values."""
        bind_now, returned = column_types(self._engine.dialect)
        # Games locked in id order; a batch of one is in order already.
        ordered = batch if len(batch) == 1 else sorted(batch, key=lambda write: write.game_id)
        records = {write.game_id: action_record(write) for write in ordered}
        arguments: list[Any] = [bind_now(now), self._node_id]
        if len(ordered) == 1:  # a value per parameter, not an array of one
            statement = POSTGRESQL_ONE
            arguments += game_row(ordered[0])[:PLAIN_GAME_WIDTH]
            arguments += records[ordered[0].game_id]  # an ActionRecord is its row
            arguments.append(ordered[0].snapshot)
        else:
            statement = POSTGRESQL_ALONE
            games = [game_row(write) for write in ordered]
            arguments += [list(column) for column in zip(*games, strict=True)]
            arguments.append([write.snapshot for write in ordered])
            arguments += [list(column) for column in zip(*records.values(), strict=True)]
            assert len(arguments) == _ARITY
        driver = await self._held.driver()
        try:
            rows = await driver.fetch(statement, *arguments)
            moved = {row[0]: returned(row) for row in rows}  # the logged flag left out
            missing = [write.game_id for write in ordered if write.game_id not in moved]
            refused = {}
            if missing:
                refused = {row[0]: row for row in await driver.fetch(_REFUSED, missing)}
        except asyncpg.UniqueViolationError as exc:
            if len(batch) == 1 and exc.table_name == "game_actions":  # the log ran ahead
                raise VersionConflict(batch[0].game_id, batch[0].version) from exc
            raise sa_exc.IntegrityError(statement, None, exc) from exc
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise sa_exc.IntegrityError(statement, None, exc) from exc
        except BaseException as exc:
            await self._held.drop()
            if isinstance(exc, asyncpg.PostgresError):
                raise sa_exc.DBAPIError(statement, None, exc) from exc
            if isinstance(exc, asyncpg.InterfaceError | asyncpg.InternalClientError):
                # InternalClientError: a connection the server closed under a statement
                raise sa_exc.InterfaceError(statement, None, exc) from exc
            raise
        outcomes: list[WriteOutcome] = []
        for write in batch:
            game = moved.get(write.game_id)
            outcomes.append(
                refusal(write, refused.get(write.game_id))
                if game is None
                else Committed(game, records[write.game_id], None)
            )
        return outcomes

    async def close(self) -> None:
        """Give the connection back to the pool (again: nothing to do)."""
        await self._held.close()
