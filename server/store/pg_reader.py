"""PostgreSQL's hot reads: returning players' sign-ins and games, on held connections.

Why: after a restart thousands of players reconnect at once, and each needs
three reads (``sign_in``, ``game_owner``, ``load_game`` or ``restore_game``).
Through SQLAlchemy each read checked a connection out of the pool and pinged
it (``BEGIN``, ``;``, ``ROLLBACK``), sent ``BEGIN``, its statements and the
reset: about ten round trips and as many wake-ups of the event loop for two or three
statements, which made a returning player cost the server twice as much on
PostgreSQL as on SQLite (``bench.reconnect``, docs/benchmarks.md).

How: the same statements as the general path (``compiled``: SQLAlchemy's own,
compiled once, their columns converted as SQLAlchemy does) go through
asyncpg itself on ``READS_HELD`` connections kept from the engine's pool
(``held``), one statement per round trip, outside any ``BEGIN``. The sign-in's
two statements are one here (``compiled.signing_in_query``: the token's player
joined to the player's unfinished game), and so are a game's row and its log
(``compiled.loading_query``: the log as one array; ``compiled.restoring_query``
with the game's snapshot and only the log after it).

Reads of one kind that wait together are sent together: the sign-ins waiting
for a connection are one statement for all their tokens, the restores one for
all their games (up to ``READ_BATCH`` each), as the group committer does for
writes. A statement costs the server about 65 us of CPU (asyncpg's, and the
kernel's for the socket) whatever it reads, and each game of a batch about 11
(64 restores of a 20-action game, timed alone). A read goes out at the end of
the turn of the event loop it was asked in, with the others asked in that turn
(no timer: under light load, at once and alone). A connection that comes free
takes the next batch of the kind whose first read has waited longest (the
connections in turn, first come first served), and a read asked again while
it waits (two devices opening one game) is read once.

What a read sees is committed state: each statement runs alone, in its own
snapshot, as each statement of a read transaction does at PostgreSQL's
default isolation (read committed), which is what the general path had; a
read sent after a request arrived sees at least what was committed then. A
sign-in's expiry is checked as of the latest of its batch's requests (a few
milliseconds apart). An error drops the connection (its state is unknown) and
leaves as SQLAlchemy's (``DBAPIError`` carrying the SQLSTATE,
``InterfaceError``), to every read of the batch, so ``translate_errors`` gives
it the general path's stable codes; a timeout (``--db-timeout-ms``, the
connection's ``command_timeout`` and ``statement_timeout``) is ``unavailable`` as there.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import itertools
from collections.abc import Awaitable, Callable, Hashable, Sequence
from datetime import datetime
from typing import Any, Final, Generic, TypeVar

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncEngine

from server.logs import detached
from server.loop import finish_within
from server.store.compiled import (
    LOG_AT,
    PLAYER_WIDTH,
    RESTORED_LOG_AT,
    TOKEN_AT,
    CompiledQuery,
    loading_query,
    restoring_query,
    signing_in_query,
)
from server.store.games import OWNER_QUERY, SNAPSHOT_AT, logged_actions, stored_snapshot
from server.store.held import HeldConnection
from server.store.players import ISSUED_AT, player_record
from server.store.records import GameRecord, LoggedAction, SignIn, StoredSnapshot
from server.store.writes import game_record

__all__ = ["READS_HELD", "READ_BATCH", "PostgresReader"]

READS_HELD: Final = 3
"""Connections kept for these reads: each read is a few statements of well under a
millisecond, so a few carry more returning players than the server's core can
serve (``bench.reconnect``)."""
READ_BATCH: Final = 64
"""Reads of one kind sent in one statement at most (module docstring)."""

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
Driver = Any  # asyncpg.Connection
SignedIn = SignIn | None
Restored = tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]]


class _Kind(Generic[K, T]):
    """The reads of one statement waiting for a connection: each key (what a read asks)
    with the futures of those who asked it, in order of arrival; ``read(driver, keys)``
    answers up to ``most`` keys at once, by key (a key left out is answered ``missing``)."""

    def __init__(
        self,
        read: Callable[[Driver, list[K]], Awaitable[dict[K, T]]],
        missing: T,
        most: int = READ_BATCH,
    ) -> None:
        self.read = read
        self.missing = missing
        self.most = most
        self.waiting: dict[K, tuple[int, list[asyncio.Future[T]]]] = {}  # key: (turn, asked)

    def first(self) -> int | None:
        """The turn of the read that has waited longest; None when none waits."""
        for turn, _asked in self.waiting.values():
            return turn
        return None

    def take(self) -> dict[K, list[asyncio.Future[T]]]:
        """The next batch: the ``most`` keys that have waited longest."""
        keys = list(itertools.islice(self.waiting, self.most))
        return {key: self.waiting.pop(key)[1] for key in keys}


class PostgresReader:
    """Returning players' reads on connections kept from ``engine``'s pool (module docstring)."""

    def __init__(self, engine: AsyncEngine, held: int = READS_HELD) -> None:
        self._owner = CompiledQuery(OWNER_QUERY, engine.dialect)
        self._signing_in = CompiledQuery(signing_in_query(False), engine.dialect)
        self._signing_in_expiring = CompiledQuery(signing_in_query(True), engine.dialect)
        self._loading = CompiledQuery(loading_query(), engine.dialect)
        self._restoring = CompiledQuery(restoring_query(), engine.dialect)
        self._all = [HeldConnection(engine) for _ in range(held)]
        self._free = collections.deque(self._all)  # taken in turn: each stays in use
        self._turns = itertools.count()
        self._batches: set[asyncio.Task[None]] = set()
        self._sending = False  # a ``_send`` is due at the end of this turn of the loop
        self._sign_ins: _Kind[str, SignedIn] = _Kind(self._sign_in, None)
        self._expiring: _Kind[tuple[str, datetime], SignedIn] = _Kind(self._sign_in_expiring, None)
        self._owners: _Kind[int, int | None] = _Kind(self._owner_of, None, most=1)
        self._loads: _Kind[tuple[int, int], tuple[GameRecord | None, list[LoggedAction]]]
        self._loads = _Kind(self._load, (None, []), most=1)
        self._restores: _Kind[int, Restored] = _Kind(self._restore, (None, None, []))
        self._kinds: tuple[_Kind[Any, Any], ...] = (
            self._sign_ins,
            self._expiring,
            self._owners,
            self._loads,
            self._restores,
        )

    async def sign_in(self, token_hash: str, issued_after: datetime | None) -> SignedIn:
        """The token's player and that player's unfinished games (``Store.sign_in``)."""
        if issued_after is None:
            return await self._ask(self._sign_ins, token_hash)
        return await self._ask(self._expiring, (token_hash, issued_after))

    async def game_owner(self, game_id: int) -> int | None:
        return await self._ask(self._owners, game_id)

    async def load_game(
        self, game_id: int, after_seq: int
    ) -> tuple[GameRecord | None, list[LoggedAction]]:
        """The game's row and its log after ``after_seq`` (``Store.load_game``)."""
        return await self._ask(self._loads, (game_id, after_seq))

    async def restore_game(self, game_id: int) -> Restored:
        """The game's row, its snapshot and the log after it, in one statement
        (``Store.restore_game``)."""
        return await self._ask(self._restores, game_id)

    async def close(self, within: float | None = None) -> None:
        """Let the batches under way finish, then give every kept connection back.

        ``within`` (seconds; None: no limit) bounds the wait: past it (a database that
        does not answer, a stop's deadline) the batches left are cancelled and every
        kept connection is cut off rather than given back, which would wait on the
        database to roll back."""
        in_time = await finish_within(set(self._batches), within)
        for each in self._all:
            await (each.close() if in_time else each.drop())

    # -- the statements, each for a batch of keys ----------------------------------

    async def _sign_in(self, driver: Driver, keys: list[str]) -> dict[str, SignedIn]:
        rows = await _rows(driver, self._signing_in, token_hashes=keys)
        return _signed_in(rows)

    async def _sign_in_expiring(
        self, driver: Driver, keys: list[tuple[str, datetime]]
    ) -> dict[tuple[str, datetime], SignedIn]:
        """Each token's sign-in, its expiry as of the batch's latest request (module
        docstring)."""
        hashes = list({token_hash for token_hash, _after in keys})
        issued_after = max(after for _hash, after in keys)
        query = self._signing_in_expiring
        found = _signed_in(
            await _rows(driver, query, token_hashes=hashes, issued_after=issued_after)
        )
        return {key: found.get(key[0]) for key in keys}

    async def _owner_of(self, driver: Driver, keys: list[int]) -> dict[int, int | None]:
        (game_id,) = keys
        rows = await _rows(driver, self._owner, game_id=game_id)
        return {game_id: int(rows[0][0]) if rows else None}

    async def _load(
        self, driver: Driver, keys: list[tuple[int, int]]
    ) -> dict[tuple[int, int], tuple[GameRecord | None, list[LoggedAction]]]:
        ((game_id, after_seq),) = keys
        rows = await _rows(driver, self._loading, game_id=game_id, after_seq=after_seq)
        if not rows:
            return {}
        (row,) = rows
        log = zip(*row[LOG_AT:], strict=True) if row[LOG_AT] is not None else ()
        return {(game_id, after_seq): (game_record(row[:LOG_AT]), logged_actions(log))}

    async def _restore(self, driver: Driver, keys: list[int]) -> dict[int, Restored]:
        rows = await _rows(driver, self._restoring, game_ids=keys)
        restored: dict[int, Restored] = {}
        at = RESTORED_LOG_AT
        for row in rows:
            log = zip(*row[at:], strict=True) if row[at] is not None else ()
            snapshot = stored_snapshot(*row[SNAPSHOT_AT:at])
            record = game_record(row[:SNAPSHOT_AT])
            restored[record.id] = record, snapshot, logged_actions(log)
        return restored

    # -- waiting, batching, sending -------------------------------------------------

    async def _ask(self, kind: _Kind[K, T], key: K) -> T:
        """``key``'s answer, read with the others of its kind waiting with it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if key in kind.waiting:
            kind.waiting[key][1].append(future)
        else:
            kind.waiting[key] = next(self._turns), [future]
        if not self._sending:  # at the end of this turn: the reads asked in it go together
            self._sending = True
            loop.call_soon(self._send)
        return await future

    def _send(self) -> None:
        """Give each free connection the next batch: of the kind that has waited longest."""
        self._sending = False
        while self._free:
            waiting = [
                (turn, n)
                for n, kind in enumerate(self._kinds)
                if (turn := kind.first()) is not None
            ]
            if not waiting:
                return
            kind = self._kinds[min(waiting)[1]]
            batch = kind.take()
            held = self._free.popleft()
            task = detached(self._run(held, kind, batch))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _run(
        self, held: HeldConnection, kind: _Kind[K, T], batch: dict[K, list[asyncio.Future[T]]]
    ) -> None:
        """One batch on ``held``: each asker gets its key's answer, or the error."""
        try:
            try:
                driver = await held.driver()
                found = await kind.read(driver, list(batch))
            except BaseException as exc:
                for asked in batch.values():
                    for future in asked:
                        if future.done():
                            continue
                        if isinstance(exc, Exception):
                            future.set_exception(_translated(exc))
                        else:  # this batch was cancelled (the loop is ending): so are they
                            future.cancel()
                await held.drop()
                if not isinstance(exc, Exception):
                    raise
                return
            for key, asked in batch.items():
                answer = found.get(key, kind.missing)
                for future in asked:
                    if not future.done():
                        future.set_result(answer)
        finally:
            self._free.append(held)
            self._send()


def _signed_in(rows: Sequence[Sequence[Any]]) -> dict[str, SignedIn]:
    """``signing_in_query``'s rows as each token's player and unfinished games."""
    by_token: dict[str, list[Sequence[Any]]] = {}
    for row in rows:
        by_token.setdefault(row[TOKEN_AT], []).append(row)
    signed_in: dict[str, SignedIn] = {}
    for token_hash, each in by_token.items():
        games = [row[PLAYER_WIDTH:TOKEN_AT] for row in each if row[PLAYER_WIDTH] is not None]
        unfinished = [game_record(game) for game in games]
        signed_in[token_hash] = SignIn(player_record(each[0]), unfinished, each[0][ISSUED_AT])
    return signed_in


def _translated(exc: Exception) -> Exception:
    """A read's error as the general path's (SQLAlchemy's), a new one for each reader."""
    if isinstance(exc, asyncpg.PostgresError):
        return sa_exc.DBAPIError("read", None, exc)
    if isinstance(exc, asyncpg.InterfaceError | asyncpg.InternalClientError):
        # InternalClientError: a connection the server closed under a statement
        return sa_exc.InterfaceError("read", None, exc)
    try:  # one exception raised in several tasks would gather all their tracebacks
        return copy.copy(exc)
    except Exception:
        return exc


async def _rows(driver: Driver, query: CompiledQuery, **values: Any) -> Sequence[Sequence[Any]]:
    return query.convert(await driver.fetch(query.sql, *query.parameters(values)))
