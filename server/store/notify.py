"""Change notifications between server nodes that share one PostgreSQL database.

Why: several ``scorpion-server`` processes (nodes) may serve the same
database, and one player may have a game open on two of them (two devices).
Each node caches the games its connections use; when another node commits an
action on such a game, this node must learn of it to push the events to its
own connections and to keep its cached copy current (architecture.md, "Many
machines").

How: the write transaction that commits a batch also runs ``pg_notify`` on
``CHANNEL`` with a payload naming the writing node and the games it changed
(``"<node> <game>,<game>,..."``). PostgreSQL delivers a notification only
when its transaction commits, and only once, to every session listening on
the channel, so a node hears exactly the committed changes, after they are
visible. ``ChangeListener`` keeps one dedicated asyncpg connection that
listens, calls ``on_change(game_ids)`` for every other node's notification
(and for its own node's, for the games whose commit the node lost the answer
to, ``in_doubt``: such a commit may land after the node's catch-up read the
store, and the node must learn of it then), and, when that connection is lost,
stops answering (``HEARTBEAT_S``) or cannot be made (also at start: the server
does not wait for it), reconnects with a growing pause and, once it listens
again, calls ``on_reset()``: notifications sent meanwhile are lost, so the node must
recheck every game it holds.

Revoked tokens take a second channel, ``SIGN_OUTS``: the transaction that
revokes (``sign_out``, with ``everywhere`` or not, and ``rotate_token``) also
runs ``pg_notify`` there, naming the writing node, the player and the token's
SHA-256 as the store keeps it (``"<node> <player> <hash>"``), or no hash when
every token of the player went (``"<node> <player>"``). A revoked token is no
secret (it signs no one in), and anyone who may listen may read the tokens'
hashes anyway. The listener calls ``on_revoked(player_id, token_hash)`` for
another node's, and the node signs out the connections that acted on those
tokens, as it signs out its own; a node's own it ignores (that node signed its
connections out with the answer), but for a revocation whose answer the node
lost (``revoking``: the token's hash, or the player's id for every token), as
for a game ``in_doubt``. Notifications lost while not listening are
covered by the same ``on_reset()``: the node then checks the tokens of its
connections against the store. (A second channel, not a second payload form on
``CHANNEL``: a node that knows only game payloads never mistakes one for a
game's, and each callback gets the one kind it handles.)

SQLite has no such channel: one SQLite database is served by one node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection

from server.loop import stop_task
from server.store.database import connect_arguments

__all__ = [
    "APPLICATION_NAME",
    "CHANNEL",
    "SIGN_OUTS",
    "ChangeListener",
    "Revocation",
    "format_payload",
    "format_revocation",
    "new_node_id",
    "notify_changes",
    "notify_revoked",
    "parse_payload",
    "parse_revocation",
]

CHANNEL: Final = "scorpion_games"
SIGN_OUTS: Final = "scorpion_sign_outs"  # revoked tokens (module docstring)
APPLICATION_NAME: Final = "scorpion-listener"  # how the connection shows in pg_stat_activity
MAX_PAYLOAD: Final = 7900  # PostgreSQL refuses payloads of 8000 bytes or more
RETRY_MIN_S: Final = 0.2
RETRY_MAX_S: Final = 5.0
HEARTBEAT_S: Final = 5.0
"""Every so often the listening connection is asked ``SELECT 1``, and given as long to
answer: one that went silent (a half-open TCP connection after a partition, a database
host that died, a NAT that forgot it) is closed by nothing, and would leave the node
deaf to the others' commits and sign-outs for good. One that does not answer is
dropped and replaced, and the node rechecks what it holds (``on_reset``)."""
DEAF_NOT_READY_S: Final = 10.0
"""A node that has not been listening for this long is not ready (``/readyz``): it
pushes no other node's moves to its connections and hears no sign-out made elsewhere,
while a node that hears them may be serving its players' other devices."""
_LOST: Final = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError)
"""What a lost or refused connection raises: PostgreSQL's errors, and asyncpg's own
(a connection closed under a call raises ``InterfaceError`` or, mid-protocol,
``InternalClientError``). The listener reconnects after each of them."""

log = logging.getLogger(__name__)

OnChange = Callable[[list[int]], None]
OnReset = Callable[[], None]
OnRevoked = Callable[[int, str | None], None]
"""``on_revoked(player_id, token_hash)``: that token of the player was revoked, or
every token of the player when ``token_hash`` is None."""
_TOKEN_HASH: Final = re.compile(r"[0-9a-f]{64}")  # players.hash_token: SHA-256, hex


class Revocation(NamedTuple):
    """What a ``SIGN_OUTS`` payload says: which node revoked which tokens of a player."""

    node: str
    player_id: int
    token_hash: str | None  # None: every token of the player


def _ignore_revoked(_player_id: int, _token_hash: str | None) -> None:
    pass


def new_node_id() -> str:
    """A random id for this process's store, so a node can ignore its own notifications."""
    return secrets.token_hex(6)


def format_payload(node: str, game_ids: Iterable[int]) -> list[str]:
    """Payloads naming ``game_ids``, split so each stays under PostgreSQL's limit."""
    payloads: list[str] = []
    current: list[str] = []
    size = len(node) + 1
    for game_id in sorted(set(game_ids)):
        item = str(game_id)
        if current and size + len(item) + 1 > MAX_PAYLOAD:
            payloads.append(f"{node} {','.join(current)}")
            current, size = [], len(node) + 1
        current.append(item)
        size += len(item) + 1
    if current:
        payloads.append(f"{node} {','.join(current)}")
    return payloads


def parse_payload(payload: str) -> tuple[str, list[int]] | None:
    """(node, game ids) of a payload; None if it is not one of ours."""
    node, _, games = payload.partition(" ")
    try:
        ids = [int(item) for item in games.split(",")] if games else []
    except ValueError:
        return None
    return (node, ids) if node and ids else None


def format_revocation(node: str, player_id: int, token_hash: str | None = None) -> str:
    """The ``SIGN_OUTS`` payload for a revocation: one, well under PostgreSQL's limit
    (a node id, a player id and a SHA-256 in hex: under 100 bytes)."""
    if token_hash is not None and not _TOKEN_HASH.fullmatch(token_hash):
        raise ValueError("a token's hash is a SHA-256 in lowercase hex")
    payload = f"{node} {player_id}" if token_hash is None else f"{node} {player_id} {token_hash}"
    assert len(payload) <= MAX_PAYLOAD
    return payload


def parse_revocation(payload: str) -> Revocation | None:
    """What a ``SIGN_OUTS`` payload says; None if it is not one of ours."""
    parts = payload.split(" ")
    if len(parts) not in (2, 3) or not parts[0]:
        return None
    if not (parts[1].isascii() and parts[1].isdigit()):
        return None
    token_hash = parts[2] if len(parts) == 3 else None
    if token_hash is not None and not _TOKEN_HASH.fullmatch(token_hash):
        return None
    return Revocation(parts[0], int(parts[1]), token_hash)


async def notify_changes(conn: AsyncConnection, node: str, game_ids: Iterable[int]) -> None:
    """Queue the notification on ``conn``'s transaction: sent if and when it commits."""
    for payload in format_payload(node, game_ids):
        await conn.execute(
            text("SELECT pg_notify(:channel, :payload)"), {"channel": CHANNEL, "payload": payload}
        )


async def notify_revoked(
    conn: AsyncConnection, node: str, player_id: int, token_hash: str | None = None
) -> None:
    """Queue the revocation's notification on ``conn``'s transaction (sent if it commits):
    the token with ``token_hash`` of ``player_id``, or with None every token of theirs."""
    payload = format_revocation(node, player_id, token_hash)
    await conn.execute(
        text("SELECT pg_notify(:channel, :payload)"), {"channel": SIGN_OUTS, "payload": payload}
    )


def _why(exc: BaseException) -> str:
    """An exception's words, or its name when it has none (a bare ``TimeoutError``)."""
    return str(exc) or type(exc).__name__


class ChangeListener:
    """Listens on ``CHANNEL`` and ``SIGN_OUTS`` over its own connection until ``close()``
    (module docstring)."""

    def __init__(
        self,
        url: URL,
        node: str,
        on_change: OnChange,
        on_reset: OnReset,
        in_doubt: set[int] | None = None,
        on_revoked: OnRevoked | None = None,
        revoking: set[int | str] | None = None,
    ) -> None:
        self._connect = connect_arguments(url)  # as the pool's: host, ssl, ... alike
        self._node = node
        self._in_doubt = in_doubt if in_doubt is not None else set()  # the owner's set
        self._on_change = on_change
        self._on_reset = on_reset
        self._on_revoked = on_revoked if on_revoked is not None else _ignore_revoked
        self._revoking = revoking if revoking is not None else set()  # the owner's set
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._deaf_since: float | None = None  # the loop's time; None while listening
        self._heard_at = 0.0  # the loop's time the database last answered the listener

    def deaf_for(self) -> float:
        """Seconds since the database last answered the listening connection, once that
        connection is known lost (or since the listener started, if it has not listened
        yet); 0 while listening."""
        if self._deaf_since is None:
            return 0.0
        return asyncio.get_running_loop().time() - self._deaf_since

    async def start(self) -> None:
        """Start listening; returns once the first connection listens (or failed once)."""
        self._deaf_since = self._heard_at = asyncio.get_running_loop().time()
        self._task = asyncio.create_task(self._run(), name="store-change-listener")
        waiter = asyncio.create_task(self._listening.wait())
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()

    async def close(self) -> None:
        await stop_task(self._task, insist=True)
        self._task = None

    async def _run(self) -> None:
        pause = RETRY_MIN_S
        missed = False  # a notification may have been sent while we were not listening
        while True:
            try:
                connection = await asyncpg.connect(
                    **(self._connect | {"timeout": HEARTBEAT_S}),
                    server_settings={"application_name": APPLICATION_NAME},
                )
            except _LOST as exc:
                log.warning("change listener cannot connect (%s); retrying", _why(exc))
                self._failed()
                missed = True
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_S)
                continue
            try:
                await self._listen(connection, reset=missed)
                log.warning("change listener lost its connection; reconnecting")
            except _LOST as exc:
                log.warning("change listener failed (%s); reconnecting", _why(exc))
            finally:
                if self._deaf_since is None:  # it did listen: the next try comes soon
                    pause = RETRY_MIN_S
                missed = True
                self._failed()
                if not connection.is_closed():
                    await _close(connection)
            await asyncio.sleep(pause)

    def _failed(self) -> None:
        """Not listening (the connection lost, or not made): ``start()`` waits no longer,
        deafness counts from when the node last heard from the database, and a node deaf
        for ``DEAF_NOT_READY_S`` rechecks what it holds at each try (``on_reset``), so its
        connections learn of the others' moves and sign-outs meanwhile, late."""
        self._listening.set()
        if self._deaf_since is None:
            self._deaf_since = self._heard_at
        if self.deaf_for() >= DEAF_NOT_READY_S:
            self._on_reset()

    async def _listen(self, connection: Any, *, reset: bool) -> None:
        """Listen on ``connection`` until it is lost; raise if it does not answer in time."""
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _conn: lost.set())
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(HEARTBEAT_S):
                await connection.add_listener(CHANNEL, self._received)
                await connection.add_listener(SIGN_OUTS, self._revoked)
        except TimeoutError:  # an OSError, as the listener's other losses
            raise TimeoutError(f"LISTEN not answered in {HEARTBEAT_S:g} s") from None
        self._heard_at = loop.time()
        self._deaf_since = None
        self._listening.set()
        if reset:
            self._on_reset()  # anything may have changed while we were not listening
        # asyncio.timeout, not wait_for: on Python 3.11 a cancellation that lands as
        # wait_for's time runs out is taken for the timeout, and the listener went on
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(HEARTBEAT_S):
                    await lost.wait()
                return
            try:
                async with asyncio.timeout(HEARTBEAT_S):
                    await connection.fetchval("SELECT 1")
            except TimeoutError:
                connection.terminate()
                raise TimeoutError(f"its connection did not answer in {HEARTBEAT_S:g} s") from None
            self._heard_at = loop.time()

    def _received(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        parsed = parse_payload(str(payload))
        if parsed is None:
            log.warning("ignoring a notification that is not ours: %r", payload)
            return
        node, game_ids = parsed
        if node != self._node:
            self._on_change(game_ids)
            return
        if self._in_doubt:  # our own commit: heard only where we lost its answer
            landed = [game_id for game_id in game_ids if game_id in self._in_doubt]
            if landed:
                self._in_doubt.difference_update(landed)
                self._on_change(landed)

    def _revoked(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        parsed = parse_revocation(str(payload))
        if parsed is None:
            log.warning("ignoring a sign-out notification that is not ours: %r", payload)
            return
        if parsed.node != self._node:
            self._on_revoked(parsed.player_id, parsed.token_hash)
            return
        # Our own: its connections were signed out with the answer, unless it was lost.
        key = parsed.player_id if parsed.token_hash is None else parsed.token_hash
        if key in self._revoking:
            self._revoking.discard(key)
            self._on_revoked(parsed.player_id, parsed.token_hash)


async def _close(connection: Any) -> None:
    """Close ``connection``, politely within 2 s, or cut it off when that fails or the
    listener is being stopped: a node that stops waits for no database (one that went
    silent would hold its stop for the 2 s), and a close left running in the background
    would end, unheard, in an error written to standard error after the log closed."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        connection.terminate()
        return
    try:
        await connection.close(timeout=2)  # cancelled, asyncpg cuts the connection off
    except Exception:
        connection.terminate()
