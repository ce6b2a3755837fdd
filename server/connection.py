"""One WebSocket connection: frames in, protocol, service, frames out.

The only module that imports ``websockets``. Per connection:

- a reader loop (this handler) takes binary frames one at a time, decodes
  them with ``protocol.decode_request`` and hands the request to
  ``GameService.handle``, queuing the reply on the connection's ``Outbox``.
  Requests of one connection are answered in order; other connections are
  unaffected because every slow part (storage, solver) is awaited;
- a ``Writer`` drains the outbox onto the socket: as the reader has answered
  a request (its reply and the pushes of its action), or in the loop turn
  after another connection queued a push, it writes the frames at once while
  the socket takes them (no task per connection, nor per reply); only while
  the peer is behind (the transport's buffer above its high-water mark) does
  a task wait for the socket to drain. Pushes from other connections' actions
  arrive in the same outbox via the ``Hub``.

A client that does not offer subprotocol ``scorpion.v1`` (none, or only a
version we do not speak) still completes the WebSocket upgrade, so that it can
read why it is refused: its first frame is answered with
``unsupported_version`` and the connection is closed with 1002.

A text frame or an undecodable one is answered with ``bad_request`` and the
connection stays up. Limits (``server.limits``): every connection is
attributed to an address (the peer, or a trusted proxy's forwarded header);
``admit`` refuses one past the caps (1013) or from a struck address (1008);
each request takes tokens from its kind's buckets (else ``rate_limited`` with
``retry_after_ms``); every ``bad_request`` or ``rate_limited`` is a strike on
the address, and too many close the connection with 1008. The reader waits
for the first frames at most the hello deadline (then 1008), later at most
the idle timeout (1001). Frames above MAX_FRAME_BYTES never reach us:
``websockets`` closes with 1009 (``max_size``), 1002 for broken framing, 1007
for a text frame that is not UTF-8, 1011 when keepalive gets no pong.

The writer bounds outbound memory and time: an outbox that overflows (frames
or bytes, ``server.hub``) or a socket that cannot drain within the drain
timeout closes with 1001 (bytes waiting in the kernel's send buffer too, which
the sweeper watches: ``Writer.watch``); the close itself waits at most CLOSE_WAIT_S for the
socket, then the transport is aborted, so no peer holds a writer (or
keepalive) forever. What ``websockets`` writes by itself (a pong for each
ping) is bounded too: a connection whose socket buffer passes the byte budget
stops reading and is closed with 1001 (``_Bounded``). Each close the server
initiates is logged in one line. Any unexpected exception becomes an
``internal`` reply; its detail is only logged.

A request that does not ask to upgrade is plain HTTP (``server.http``:
health, readiness, metrics); ``Listener`` answers it through websockets'
``process_request`` hook, one with a body too (``_BodyDropping``). Each
connection's task sets the log context (``server.logs.connection_id``, and
``game_id`` per request), and every reply is counted in ``server.metrics`` by
request type and error code.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import itertools
import logging
import math
import re
import socket
import ssl
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, cast

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, SecurityError
from websockets.frames import Frame, Opcode
from websockets.http11 import MAX_NUM_HEADERS
from websockets.http11 import Request as HttpRequest
from websockets.http11 import Response as HttpResponse
from websockets.protocol import State
from websockets.streams import StreamReader
from websockets.typing import Origin, Subprotocol

if sys.platform == "linux":
    import fcntl
    import termios

from protocol import (
    CLOSE_GOING_AWAY,
    CLOSE_POLICY_VIOLATION,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_TRY_AGAIN_LATER,
    CONTROL_FRAMES_BURST,
    CONTROL_FRAMES_PER_S,
    MAX_FRAME_BYTES,
    MAX_SERVER_FRAME_BYTES,
    SUBPROTOCOL,
    SUPPORTED_VERSIONS,
    ProtocolError,
    Request,
    RequestId,
    build,
    decode_request,
    encode,
)
from server.config import Settings
from server.http import HttpReply, HttpRoutes
from server.hub import Budget, Hub, Outbox
from server.limits import (
    KIND_OF,
    BucketMap,
    ConnectionBuckets,
    Limits,
    LimitSettings,
    Network,
    Rate,
    TokenBucket,
    UnreadableHop,
    address_key,
    client_address,
    in_networks,
    parse_networks,
)
from server.logs import connection_id, detached, game_id
from server.loop import stop_task
from server.metrics import Metrics
from server.service import GameService, Session
from server.webclient import SECURITY_HEADERS, content_security_policy

__all__ = ["ConnectionHandler", "ConnectionSettings", "Listener", "handshakes_in_all"]

log = logging.getLogger(__name__)

UNREAD: Final = "unread"
"""The request type counted for a frame that was not a request of a known type."""

CLOSE_WAIT_S: Final = 2.0
"""How long a server-initiated close waits to hand its close frame to the socket."""

HANDLERS_WAIT_S: Final = CLOSE_WAIT_S + 0.5
"""How long a stop waits for the connections' handlers once each was closed: one
answering a request that waits on the store (a database that does not answer) is
cancelled after it, its reply going to a closed connection anyway."""


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """The per-connection bounds (``server.config.Settings`` has them all)."""

    queue_size: int = 1024
    outbox_bytes: int = 4 * 1024 * 1024
    outbox_total_bytes: int = 256 * 1024 * 1024
    drain_timeout: float = 30.0
    hello_timeout: float = 10.0
    idle_timeout: float = 900.0  # 0: never
    trusted_proxies: tuple[Network, ...] = ()
    forwarded_header: str = "X-Forwarded-For"

    @classmethod
    def of(cls, settings: Settings) -> ConnectionSettings:
        return cls(
            queue_size=settings.queue_size,
            outbox_bytes=settings.outbox_bytes,
            outbox_total_bytes=settings.outbox_total_bytes,
            drain_timeout=settings.drain_timeout_ms / 1000,
            hello_timeout=settings.hello_timeout_ms / 1000,
            idle_timeout=settings.idle_timeout_ms / 1000,
            trusted_proxies=tuple(parse_networks(settings.trusted_proxies)),
            forwarded_header=settings.forwarded_header,
        )


@dataclass(eq=False)
class Peer:
    """Who is on the other end of one connection, and its own rate buckets."""

    address: str
    buckets: ConnectionBuckets
    came_early: bool = False  # its last rate_limited request came before it was told it might
    # ... if a hello, over its address's refused tokens: the wait it was told (s)
    hello_wait: float | None = None
    # the new token of the hello being answered, which took one of its address's
    # refused tokens (``Limits.auth_take``): kept if it is refused, else given back
    guess: str | None = None


class ConnectionHandler:
    """The ``websockets`` handler: one call per connection."""

    def __init__(
        self,
        service: GameService,
        hub: Hub,
        settings: ConnectionSettings | None = None,
        metrics: Metrics | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.service = service
        self.hub = hub
        self.settings = settings if settings is not None else ConnectionSettings()
        self.metrics = metrics if metrics is not None else Metrics()
        self.limits = limits if limits is not None else Limits(LimitSettings(rates={}))
        self.budget = Budget(self.settings.outbox_total_bytes)
        self.open = 0
        self._sockets: dict[Outbox, ServerConnection] = {}
        self._ids = itertools.count(1)
        # Connections waiting for a frame: (the time it must come by, whether it said hello,
        # its address and its connection id, for the line that closes it).
        # One sweeper closes the late ones: a timer per connection would cost each idle
        # connection a few hundred bytes (see _sweep).
        self._waiting: dict[ServerConnection, tuple[float, bool, str, int | None]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        # Connections written to whose sockets may still hold bytes for their peers: the
        # sweeper watches them drain (``Writer.watch``), and forgets each once drained.
        self._unsent: set[Writer] = set()

    def queued_bytes(self) -> int:
        """Bytes waiting in every open connection's outbox."""
        return self.budget.used

    def buffered_bytes(self) -> int:
        """Outbound bytes held for every open connection: outboxes plus socket buffers."""
        held = self.budget.used
        for ws in list(self._sockets.values()):
            with contextlib.suppress(Exception):
                held += ws.transport.get_write_buffer_size()
        return held

    def address_of(self, ws: ServerConnection) -> str:
        """The client's address (see ``server.limits``: a trusted proxy's header, or the peer);
        read once a connection (``_Bounded.client``)."""
        if isinstance(ws, _Bounded) and ws.client is not None:
            return ws.client
        peer = peer_of(ws)
        trusted = list(self.settings.trusted_proxies)
        if not trusted or ws.request is None:
            return client_address(peer, None, trusted)
        # Each proxy may add a line of its own: the lines are one chain, in order.
        lines = ws.request.headers.get_all(self.settings.forwarded_header)
        try:
            return client_address(peer, ", ".join(lines) or None, trusted)
        except UnreadableHop as unread:
            log.warning(
                "the trusted proxy %s sent %s without a client address where one belongs:"
                " its clients are counted as the proxy (check --forwarded-header)",
                peer,
                self.settings.forwarded_header,
            )
            return str(unread.args[0])

    async def __call__(self, ws: ServerConnection) -> None:
        connection_id.set(next(self._ids))
        self.metrics.connections_opened.inc()  # every one counted closed, refused or served
        address = self.address_of(ws)
        refused = self.limits.admit(address, time.monotonic())
        if refused is not None:
            code = CLOSE_POLICY_VIOLATION if refused == "banned" else CLOSE_TRY_AGAIN_LATER
            _log_close("refusing a", address, refused, code)
            self.metrics.closed(code)
            await _close(ws, code, refused, self.settings.drain_timeout)
            return
        if isinstance(ws, _Bounded):
            ws.admitted()
        try:
            if ws.subprotocol != SUBPROTOCOL:
                await self._refuse(ws, address)
                self._count_close(ws)
                return
            await self._serve(ws, address)
        finally:
            self.limits.release(address)

    async def _serve(self, ws: ServerConnection, address: str) -> None:
        bounds = self.settings
        outbox = Outbox(bounds.queue_size, bounds.outbox_bytes, self.budget)
        session = Session(outbox, peer=address)
        peer = Peer(address, self.limits.connection_buckets(time.monotonic()))
        writer = Writer(ws, outbox, bounds.drain_timeout, self._unsent)
        outbox.on_ready(writer.ready, owner=asyncio.current_task())
        self.open += 1
        self._sockets[outbox] = ws
        log.debug("connection from %s (subprotocol %s)", address, ws.subprotocol)
        ending: tuple[int, str] | None = None
        try:
            ending = await self._read(ws, session, peer)
        except ConnectionClosed:
            if isinstance(ws, _Bounded) and ws.flooded:  # closed for its control frames
                self.limits.book.strike(address, time.monotonic())
        finally:
            self.open -= 1
            self._sockets.pop(outbox, None)
            game_id.set(None)
            await self.service.disconnect(session)
            outbox.close()
            await writer.finish()
            self._unsent.discard(writer)
            outbox.release()
        if ending is not None:
            _log_close("closing the", address, ending[1], ending[0])
            await _close(ws, *ending, bounds.drain_timeout)
        self._log_end(ws, address)

    def _log_end(self, ws: ServerConnection, address: str) -> None:
        """One line for a close the peer did not ask for (keepalive, protocol errors).

        The metric counts the code the server chose: a close the client started is
        ``none`` (its code, echoed back, is the client's choice: 3000..4999 would make
        a series each). A connection dropped without a close frame is common (a phone
        leaving its network) and costs a client nothing to repeat: a debug line only."""
        self._count_close(ws)
        sent, received = ws.protocol.close_sent, ws.protocol.close_rcvd
        if sent is not None and sent.code not in _LOGGED_ELSEWHERE and received is None:
            _log_close("closed the", address, sent.reason or "-", sent.code)
        elif sent is None and received is None:
            log.debug("the connection from %s dropped without a close frame", address)
        else:
            log.debug("connection from %s closed (%s)", address, ws.close_code)

    def _count_close(self, ws: ServerConnection) -> None:
        """The metric of a connection's end: the close code the server chose, or none."""
        protocol = ws.protocol
        sent = protocol.close_sent
        ours = sent is not None and not protocol.close_rcvd_then_sent
        self.metrics.closed(sent.code if ours and sent is not None else None)

    async def _read(
        self, ws: ServerConnection, session: Session, peer: Peer
    ) -> tuple[int, str] | None:
        """Answer frames until the peer closes (None) or must be closed (code, reason).

        A peer that sends nothing in time is closed by ``_sweep``: ``recv`` then raises
        ``ConnectionClosed``.
        """
        bounds = self.settings
        hello_by = time.monotonic() + bounds.hello_timeout
        self._start_sweeper()
        while True:
            greeted = session.greeted
            if not greeted:
                self._waiting[ws] = (hello_by, False, peer.address, connection_id.get())
            elif bounds.idle_timeout:
                idle_by = time.monotonic() + bounds.idle_timeout
                self._waiting[ws] = (idle_by, True, peer.address, connection_id.get())
            try:
                frame = await ws.recv()
            finally:
                self._waiting.pop(ws, None)
            code = await self._respond(session, peer, frame)
            if code in _STRIKES and self._struck(peer, code):
                return CLOSE_POLICY_VIOLATION, "too many bad or rate-limited requests"
            if not session.greeted and (
                code == "unavailable" or (code == "rate_limited" and peer.hello_wait is not None)
            ):
                # The peer did say hello, and was told to try again (an outage, or the
                # refused tokens of its address): it gets a whole hello deadline for that,
                # after the wait it was told. (A hello refused for the read rate, which
                # pings before hello use up, is not: that would keep a connection open
                # that never says hello.)
                told = peer.hello_wait if code == "rate_limited" else None
                hello_by = time.monotonic() + (told or 0.0) + bounds.hello_timeout
            del frame  # held no longer than its answer: idle connections keep only their state

    def _struck(self, peer: Peer, code: str) -> bool:
        """Count a strike on ``peer``'s address for a reply of ``code``: True once past
        the abuse limit. A ``rate_limited`` is one only when the connection came back
        sooner than it was told (``_admit``)."""
        if code == "rate_limited" and not peer.came_early:
            return False
        return self.limits.book.strike(peer.address, time.monotonic())

    def _start_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = detached(self._sweep(), name="hello-and-idle-sweeper")

    async def _sweep(self) -> None:
        """Close each connection past its hello deadline (1008) or idle timeout (1001),
        and each whose socket has not drained within the drain timeout (1001,
        ``Writer.watch``).

        Runs while there are connections, every quarter of the shortest of the three
        timeouts (at most a second): a connection is closed at most that much late (the
        drain timeout's, at most twice that: a socket is first seen holding bytes at
        the next turn after they were written).
        """
        bounds = self.settings
        tick = min(
            1.0,
            bounds.hello_timeout / 4,
            (bounds.idle_timeout or 4.0) / 4,
            bounds.drain_timeout / 4,
        )
        while self.open or self._waiting:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for writer in list(self._unsent):
                if not writer.watch(now):
                    self._unsent.discard(writer)
            late = [(ws, *entry[1:]) for ws, entry in self._waiting.items() if now >= entry[0]]
            for ws, greeted, address, connection in late:
                del self._waiting[ws]
                if ws.protocol.state is not State.OPEN:
                    # closing already (a protocol error, its close frame unanswered): that
                    # close is its end, logged as such, and no missed deadline
                    continue
                code, reason = (
                    (CLOSE_GOING_AWAY, "idle for too long")
                    if greeted
                    else (CLOSE_POLICY_VIOLATION, "no hello in time")
                )
                named = connection_id.set(connection)  # the line, and the close, are its
                try:
                    _log_close("closing the", address, reason, code)
                    closing = asyncio.create_task(_close(ws, code, reason, bounds.drain_timeout))
                finally:
                    connection_id.reset(named)
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Stop the sweeper (the listener has closed every connection)."""
        await stop_task(self._sweeper)
        self._sweeper = None

    async def _respond(self, session: Session, peer: Peer, frame: bytes | str) -> str | None:
        """Answer one frame; the reply's error code, if it was one."""
        reply = await self._answer(session, peer, frame)
        if reply is not None:
            self.hub.send(session.outbox, reply)
        session.outbox.flush()  # the reply and this request's pushes leave in this loop turn
        return None if reply is None else reply.get("code")

    async def _answer(
        self, session: Session, peer: Peer, frame: bytes | str
    ) -> Mapping[str, Any] | None:
        try:
            request = decode_request(frame)
        except ProtocolError as exc:
            # Under its type if it has one of the catalogue's: a label a client chose
            # would give the counters as many series as it liked.
            self.metrics.answered(exc.request_type or UNREAD, exc.code)
            return exc.to_message()
        except Exception:
            log.exception("could not decode a frame from %s", session.peer)
            self.metrics.answered(UNREAD, "bad_request")
            return build.error("bad_request", "the frame could not be read")
        token = request.fields.get("token") if request.type == "hello" else None
        if isinstance(token, str) and not self.limits.refused_before(token):
            # every share held by reads in flight: their turn ends in milliseconds
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.hello_timeout):
                    await self.limits.auth_turn(peer.address, time.monotonic())
        limited = self._admit(session, peer, request)
        if limited is not None:
            self.metrics.answered(request.type, "rate_limited")
            return limited
        game = request.fields.get("game")
        game_id.set(game if isinstance(game, int) else None)
        reply: Mapping[str, Any] | None = None
        try:
            reply = await self.service.handle(session, request)
        finally:
            self._settle_guess(peer, reply)
        failed = reply is not None and reply.get("type") == "error"
        code = str(reply.get("code")) if failed and reply else None
        self.metrics.answered(request.type, code)
        return reply

    def _settle_guess(self, peer: Peer, reply: Mapping[str, Any] | None) -> None:
        """After a hello with a new token (``_admit`` took one of its address's refused
        tokens for it): kept, and logged, if the token was refused; else given back."""
        token, peer.guess = peer.guess, None
        if token is None:
            return
        refused = reply is not None and reply.get("code") == "unauthenticated"
        if self.limits.auth_settled(peer.address, token, time.monotonic(), refused):
            log.warning("a refused token from %s", peer.address)

    async def _refuse(self, ws: ServerConnection, address: str) -> None:
        """No ``scorpion.v1`` offered: answer the first frame ``unsupported_version``, close
        (1002). A peer that sends none within the hello deadline is closed as one that
        never said hello (1008), as on a connection that offered the subprotocol."""
        bounds = self.settings
        try:
            async with asyncio.timeout(bounds.hello_timeout):
                frame = await ws.recv()
        except ConnectionClosed:
            return
        except TimeoutError:
            code, reason = CLOSE_POLICY_VIOLATION, "no hello in time"
            _log_close("closing the", address, reason, code)
            await _close(ws, code, reason, bounds.drain_timeout)
            return
        re: RequestId | None = None
        try:
            re = decode_request(frame).id
        except ProtocolError as exc:
            re = exc.re
        except Exception:  # the refusal needs only the id, if any
            log.debug("the first frame from %s could not be read", address, exc_info=True)
        refusal = ProtocolError(
            "unsupported_version",
            f"this server speaks only the WebSocket subprotocol {SUBPROTOCOL}: offer it",
            re=re,
            supported=list(SUPPORTED_VERSIONS),
        )
        try:
            async with asyncio.timeout(bounds.drain_timeout):
                await ws.send(encode(refusal.to_message()))
        except ConnectionClosed:
            return
        except TimeoutError:
            ws.transport.abort()  # a peer that does not read even this is not waited for
            return
        reason = f"offer subprotocol {SUBPROTOCOL}"
        await _close(ws, CLOSE_PROTOCOL_ERROR, reason, bounds.drain_timeout)

    def _admit(self, session: Session, peer: Peer, request: Request) -> Mapping[str, Any] | None:
        """None, or the ``rate_limited`` reply for a request over one of its limits."""
        now = time.monotonic()
        kind = KIND_OF.get(request.type, "read")
        player = session.player.id if session.player is not None else None
        if kind == "register" and player is None and request.type != "register":
            kind = "read"  # rotate_token, sign_out without a player: unauthenticated, no write
        wait = self.limits.check(kind, now, peer.buckets, peer.address, player)
        token = request.fields.get("token") if request.type == "hello" else None
        if wait == 0 and isinstance(token, str) and not self.limits.refused_before(token):
            wait = self.limits.auth_take(peer.address, now)  # before the read: see there
            kind = "auth" if wait else kind
            peer.guess = None if wait else token
        if wait == 0:
            return None
        self.metrics.rate_limited.labels(kind).inc()
        retry = max(1, math.ceil(wait * 1000))
        peer.came_early = peer.buckets.refused(kind, now, retry / 1000)
        peer.hello_wait = retry / 1000 if kind == "auth" else None
        return build.error(
            "rate_limited",
            f"Too many {kind} requests; retry in {retry} ms.",
            request.id,
            retry_after_ms=retry,
        )


_STRIKES: Final = frozenset({"bad_request", "rate_limited"})
"""Reply codes that may be a strike on the sender's address (``_struck``)."""

_LOGGED_ELSEWHERE: Final = frozenset({1000, CLOSE_GOING_AWAY, CLOSE_POLICY_VIOLATION})
"""Close codes sent with their own log line (or normal): not logged again at the end."""


WRITE_FRAMES: Final = 64
WRITE_BYTES: Final = 64 * 1024
"""At most this many frames (and bytes, beyond the first frame) go out in one write."""


class Writer:
    """Writes one connection's outbox to its socket (module docstring).

    ``ready`` is the outbox's callback (``Outbox.on_ready``): it runs when the
    connection's task has answered a request, or in the loop turn after another
    task queued frames, and writes them at once while the socket takes them:
    the connection is open and websockets has not paused writing (the
    transport's buffer is below its high-water mark). A reply thus costs
    a callback, where a writer task per connection cost a task wake-up, a
    timeout and ``ws.send``'s context per reply. When a write leaves the socket
    behind (writing paused, frames queued or not) or the outbox overflows, a
    task (``_drain``) takes over: it waits for the socket to drain at most
    ``timeout`` each time and sends as long as frames are queued; a peer that
    does not read in that time, or whose outbox overflows, is closed with 1001.
    ``finish`` waits for that task. The task runs in the connection's own
    context (its id in the log), whoever queued the frame that started it.

    Each write puts the writer in ``unsent``, the connections whose sockets the
    handler's sweeper watches drain (``watch``): what was written may wait in the
    kernel's send buffer, out of the transport's sight, for a peer that reads nothing.
    """

    __slots__ = (
        "closing",
        "context",
        "outbox",
        "since",
        "taken",
        "task",
        "timeout",
        "unsent",
        "ws",
    )

    def __init__(
        self, ws: ServerConnection, outbox: Outbox, timeout: float, unsent: set[Writer]
    ) -> None:
        self.ws = ws
        self.outbox = outbox
        self.timeout = timeout
        self.unsent = unsent
        self.task: asyncio.Task[None] | None = None  # sending while the peer is behind
        self.closing = False  # a 1001 close was started: nothing more is sent
        self.context = contextvars.copy_context()  # made in the connection's task
        # Since when the socket has held bytes its peer took none of (``watch``), and how
        # many the peer had taken then.
        self.since: float | None = None
        self.taken = 0

    def ready(self) -> None:
        """Write what is queued now, or leave it to a task (class docstring)."""
        if self.task is not None or self.closing:
            return  # the task takes what is queued
        outbox, ws = self.outbox, self.ws
        if not outbox.overflowed:
            while _writable(ws):
                frames = outbox.take_batch(WRITE_FRAMES, WRITE_BYTES)
                if not frames:
                    return  # all written, and the socket takes more
                try:
                    _write_frames(ws, frames)
                except Exception:  # as websockets' send_context: end the connection
                    log.exception("could not write to the connection from %s", peer_of(ws))
                    ws.transport.abort()
                    return
                self.unsent.add(self)
            if ws.protocol.state is not State.OPEN:
                while outbox.take_batch(WRITE_FRAMES, WRITE_BYTES):
                    pass  # the connection is closing: as a send would, they go nowhere
                return
        # Behind: writing paused (the last write may have emptied the outbox), or overflowed.
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self._drain(), context=self.context.copy())

    async def finish(self) -> None:
        """After ``outbox.close()``: the queued frames sent (or dropped, the peer gone)."""
        self.ready()
        if self.task is not None:
            await self.task

    def watch(self, now: float) -> bool:
        """Whether the socket may still hold bytes its peer has not taken (the sweeper
        asks at each turn, of a connection written to): False once it holds none.

        A peer that takes none of the bytes waiting for it within ``timeout`` is closed
        with 1001, as one whose drain task waited in vain. Those bytes may all be in the
        kernel's send buffer, which grows to megabytes: then the outbox is empty,
        websockets never paused writing and no task waits, while the peer reads nothing.
        A peer that takes some within ``timeout`` is not closed here: how far behind it
        may fall is the outbox's budget. What it took shows as its receive window opens
        again, which a reader of a hundred bytes a second with a small receive buffer
        does less often than every 30 s: such a reader is closed as one that reads none.
        Only Linux says what the kernel holds (``_backlog``); elsewhere the drain task's
        timeout is all there is.
        """
        if self.closing or self.ws.protocol.state is not State.OPEN:
            return False  # closing already: that close is waited for at most CLOSE_WAIT_S
        if self.task is not None:
            self.since = None  # the drain task waits for the socket, with its own timeout
            return True
        backlog = _backlog(self.ws)
        if backlog is None or not backlog[0]:
            self.since = None
            return False
        taken = backlog[1]
        if self.since is None or taken != self.taken:
            self.since, self.taken = now, taken
            return True
        if now - self.since < self.timeout:
            return True
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self._too_slow(), context=self.context.copy())
        return False

    async def _drain(self) -> None:
        """Send while frames are queued, waiting for the socket; close a peer that is behind."""
        outbox, ws, timeout = self.outbox, self.ws, self.timeout
        try:
            while not outbox.overflowed:
                frames = outbox.take_batch(WRITE_FRAMES, WRITE_BYTES)
                async with asyncio.timeout(timeout):
                    await _send(ws, frames)  # and the socket drained below its mark
                self.unsent.add(self)  # what is left below the mark is watched
                del frames  # not held while waiting for the next ones
                if not len(outbox):
                    break
        except TimeoutError:
            await self._too_slow()
            return
        except ConnectionClosed:
            return  # the reader ends the connection
        finally:
            self.task = None
        if outbox.overflowed:
            log.warning("closing a connection that does not read its frames (outbox full)")
            self.closing = True
            await _close(ws, CLOSE_GOING_AWAY, "too far behind: reconnect and resync", timeout)

    async def _too_slow(self) -> None:
        """Close the connection of a peer that did not take its frames within the
        timeout (1001), dropping those still queued."""
        self.outbox.overflow()
        reason = f"did not read its frames within {self.timeout:g} s"
        log.warning("closing a connection that %s", reason)
        self.closing = True
        await _close(self.ws, CLOSE_GOING_AWAY, "too slow: reconnect and resync", self.timeout)


def _log_close(which: str, address: str, reason: str, code: int) -> None:
    """The WARNING line for a connection the server refuses or closes: "``which``
    connection from ADDRESS: REASON (CODE)". The code, and the reason when it is one of
    the server's own (a fixed few), are part of the line's format, not its values, so
    the log's counting of repeats (``logs.RateLimit``, by format) keeps each reason's
    lines apart: an abuse close just after a missed hello deadline was counted as one
    more "no hello in time", and never named. The addresses of one reason are counted
    together; so are websockets' own reasons (``closed the``), which may carry numbers."""
    if which == "closed the":
        log.warning(f"{which} connection from %s: %s ({code:d})", address, reason)
        return
    log.warning(f"{which} connection from %s: {reason.replace('%', '%%')} ({code:d})", address)


def _writable(ws: ServerConnection) -> bool:
    """The socket takes frames now: open, and websockets has not paused writing."""
    return ws.protocol.state is State.OPEN and not ws.paused and not ws.transport.is_closing()


def _write_frames(ws: ServerConnection, frames: Sequence[bytes]) -> None:
    """Hand ``frames``, each a binary message, to the transport in one write.

    ``ws.send`` writes each message by itself: one system call per frame, the
    largest single cost of a small reply on loopback. Queued together in
    websockets' protocol, they leave in one write. The connection must be open.
    """
    for frame in frames:
        ws.protocol.send_binary(frame)
    chunks = ws.protocol.data_to_send()
    ws.transport.write(b"".join(chunks))
    if chunks and not chunks[-1]:  # an end of stream queued with them: as websockets does
        if ws.transport.can_write_eof():
            ws.transport.write_eof()
        else:
            ws.transport.close()


async def _send(ws: ServerConnection, frames: Sequence[bytes]) -> None:
    """``_write_frames`` within websockets' ``send_context``, which checks that the
    connection is open (else raises ``ConnectionClosed``) and waits for the socket
    to drain below its high-water mark, as ``ws.send`` does (no frames: only that)."""
    async with ws.send_context():
        if frames:
            _write_frames(ws, frames)


_TCP_INFO_BYTES: Final = 128
_BYTES_ACKED: Final = 120
"""Where Linux's ``struct tcp_info`` has ``tcpi_bytes_acked`` (since 4.2), and its size
up to that field: the bytes of the stream the peer has acknowledged."""


def _backlog(ws: ServerConnection) -> tuple[int, int] | None:
    """The bytes written to ``ws`` that its peer has not taken yet (in the transport's
    buffer, then in the kernel's send buffer, sent or not, until the peer acknowledges
    them), and how many of the stream's bytes it has taken in all; None where the
    system does not say (Linux does), or the socket is gone."""
    if sys.platform != "linux":
        return None
    transport = ws.transport
    sock = transport.get_extra_info("socket")  # the TCP socket's, under TLS too
    if sock is None:
        return None
    try:
        unacked = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, bytes(4))  # SIOCOUTQ
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except (OSError, ValueError):  # closed since (uvloop's socket: ValueError)
        return None
    if len(info) < _TCP_INFO_BYTES:  # a kernel older than 4.2
        return None
    (waiting,) = struct.unpack("i", unacked)
    (taken,) = struct.unpack_from("Q", info, _BYTES_ACKED)
    return transport.get_write_buffer_size() + waiting, taken


async def _close(ws: ServerConnection, code: int, reason: str, timeout: float) -> None:
    """Send a close frame; a peer that does not drain it in time is cut off (no waiting)."""
    try:
        async with asyncio.timeout(min(timeout, CLOSE_WAIT_S)):
            await ws.close(code, reason)
    except TimeoutError:
        ws.transport.abort()
    except ConnectionClosed:
        pass


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """``scorpion.v1`` if offered, else none (instead of websockets' HTTP 400)."""
    return Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None


class Listener:
    """The listening socket: ``websockets``' server with the protocol's settings.

    Subprotocol ``scorpion.v1`` when offered (else none: the handler refuses
    the connection in the protocol's own words), frames up to MAX_FRAME_BYTES (a larger one
    closes with 1009 unread), no permessage-deflate. With ``origins``, a
    handshake whose ``Origin`` header is not one of them is refused (HTTP 403);
    one without the header (not a browser) is let in.
    """

    @classmethod
    async def open(
        cls,
        handler: ConnectionHandler,
        host: str,
        port: int,
        *,
        routes: HttpRoutes | None = None,
        tls: ssl.SSLContext | None = None,
        origins: list[str] | None = None,
        keepalive: float | None = 20.0,
        backlog: int,
    ) -> Listener:
        async def plain_http(ws: ServerConnection, request: HttpRequest) -> HttpResponse | None:
            # An upgrade is by GET alone: one by another method is answered as that method
            # (HEAD as a HEAD, the rest 405 with Allow: GET, HEAD), not by websockets.
            too_soon = _too_soon_through_proxy(handler, gate, ws, request.method)
            if too_soon is not None:
                return too_soon
            if routes is None or (_wants_websocket(request) and request.method == "GET"):
                return None
            method = request.method
            accept_encoding = ", ".join(request.headers.get_all("Accept-Encoding"))
            if_none_match = ", ".join(request.headers.get_all("If-None-Match"))
            reply = await routes.answer(request.path, method, accept_encoding, if_none_match)
            hosts = request.headers.get_all("Host")
            return _response(reply, method != "HEAD", hosts[0] if len(hosts) == 1 else None)

        base = _BodyDropping if routes is not None else _Bounded
        max_buffered = max(handler.settings.outbox_bytes, 2 * MAX_SERVER_FRAME_BYTES)
        gate = SocketGate(
            handler.limits.settings.max_per_address + HANDSHAKES_PER_ADDRESS,
            list(handler.settings.trusted_proxies),
            handler.limits.settings.connections,
            handshakes_in_all(handler.limits.settings.max_total),
        )
        # TLS is not asyncio's (``ssl=`` to serve): asyncio would hand the server a socket
        # only once its TLS handshake is done, and sockets silent in theirs would go
        # uncounted. Each connection does its own, once ``gate`` has counted it.
        server = await serve(
            handler,
            host,
            port,
            create_connection=_bounded_class(base, max_buffered, gate, tls),
            subprotocols=[Subprotocol(SUBPROTOCOL)],
            select_subprotocol=_select_subprotocol,
            max_size=MAX_FRAME_BYTES,
            compression=None,
            process_request=plain_http,
            process_response=_allow_head,
            ping_interval=keepalive,
            ping_timeout=keepalive,
            # The closes at shutdown (``close``) wait for a peer no longer than ours do.
            close_timeout=CLOSE_WAIT_S,
            # A browser always sends Origin; other clients need not (None lets them in).
            origins=None if origins is None else [*(Origin(o) for o in origins), None],
            backlog=backlog,
        )
        return cls(server, gate)

    def __init__(self, server: Server, gate: SocketGate) -> None:
        self._server = server
        self._gate = gate

    @property
    def port(self) -> int:
        return int(next(iter(self._server.sockets)).getsockname()[1])

    async def close(self) -> None:
        """Stop accepting and close every connection with 1001 (going away), each
        waiting for its peer's close at most ``CLOSE_WAIT_S``; a TLS handshake still
        going on is cut."""
        self._server.close(close_connections=True)
        for handshake in list(self._gate.handshakes):
            handshake.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HANDLERS_WAIT_S):
                await self._server.wait_closed()  # shielded: a timeout leaves it going
                return
        # Requests still waiting on the store: without this, a stop waited out each one's
        # database timeout, one after the other for those queued for a connection, before
        # the store's own bounded work began (docs/deploy.md). Nothing is lost: a request
        # not answered by now gets no ack on a closed connection, and one that commits
        # all the same is found as any unanswered one is (a resend gets its ack).
        waiting = list(self._server.handler_tasks)
        log.warning("stop: %d connections still answering a request were cut short", len(waiting))
        for task in waiting:
            task.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSE_WAIT_S):
                await self._server.wait_closed()


class _Bounded(ServerConnection):
    """``websockets``' server connection, with a bound on what the peer makes it write.

    ``websockets`` answers each ping with a pong written straight to the socket's
    buffer, past the outbox and its byte budget (``server.hub``), and reads on
    whether or not the peer reads: a peer that sent pings without reading made the
    server hold every pong (some 300 MB in 8 s over loopback) until keepalive gave
    up on it. Once the bytes waiting for the socket pass ``max_buffered`` (set per
    listener: the per-connection byte budget, never below two of the largest server
    frames, more than the writer ever leaves there), the connection stops reading:
    what the peer sends from then on is dropped unread, and unanswered. It is closed
    with 1001, like a connection whose outbox overflowed (PROTOCOL.md section 10).

    Each socket is counted by the listener's ``gate`` from its accept, and closed
    unread when it is one too many. On a TLS port the TLS handshake follows here
    (``_handshake``), and websockets has the socket only once it is done.
    """

    max_buffered: int = 2 * MAX_SERVER_FRAME_BYTES
    gate: SocketGate | None = None
    tls: ssl.SSLContext | None = None  # this port's TLS, done here rather than by asyncio
    _behind: asyncio.Task[None] | None = None
    _counted: str | None = None  # the address ``gate`` counts this socket under
    _accepted: asyncio.Transport | None = None  # the socket, while in its handshake
    client: str | None = None  # the client's address, once read (``address_of``)
    peer: str | None = None  # the peer's address, read at the accept (``peer_of``)
    _opened = False  # websockets has the socket (on a TLS port: once its handshake is done)
    _ended = False  # the socket was lost before websockets had it
    # On a TLS port, before websockets has the socket: the bytes read before the TLS
    # handshake took it (uvloop reads once before it can), then what came after (data,
    # None for the end of the stream) until websockets has it.
    _raw: list[bytes] | None = None
    _early: list[bytes | None] | None = None
    _held: list[bytes] | None = None  # after the request head, until its answer (handshake)
    _ended_early = False  # the peer's stream ended before its upgrade was answered
    _controls: TokenBucket | None = None  # the pings, pongs and fragments it may still send
    flooded = False  # closed for sending too many of them (a strike on its address)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # websockets words its refusals of a handshake for itself, with the library's own
        # causes ('Invalid base64-encoded string: ...'), also to a plain HTTP request
        # ('Failed to open a WebSocket connection: line too long' for /healthz)
        self.protocol.reject = functools.partial(_refuse, self.protocol.reject)  # type: ignore[method-assign]
        # the control frame limit, applied before websockets answers a ping (``_limit``)
        self.protocol.recv_frame = functools.partial(self._limit, self.protocol.recv_frame)  # type: ignore[method-assign]
        self._unheard: collections.deque[Frame] = collections.deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # a socket's (uvloop's is no subclass)
        self.peer = _address(transport.get_extra_info("peername"))
        if self.gate is not None:
            address = self.peer
            if not self.gate.enter(address, self):
                transport.abort()  # closed unread, before websockets has seen it
                return
            self._counted = address
            self._accepted = transport
        if self.tls is None:
            self._open(transport)
            return
        assert self.gate is not None
        transport.pause_reading()  # asyncio's holds; uvloop's reads once all the same
        self._raw = []
        handshake = asyncio.get_running_loop().create_task(self._handshake(transport, self.tls))
        self.gate.handshakes.add(handshake)
        handshake.add_done_callback(self.gate.handshakes.discard)

    def _open(self, transport: asyncio.BaseTransport) -> None:
        self._opened = True
        super().connection_made(transport)

    async def _handshake(self, transport: asyncio.Transport, tls: ssl.SSLContext) -> None:
        """The TLS handshake, bounded by ``TLS_HANDSHAKE_S``; then websockets has the socket."""
        loop = asyncio.get_running_loop()
        raw, self._raw = self._raw or [], None
        if self._ended or transport.is_closing():  # gone before its handshake began
            return
        self._early = []
        if raw:
            # start_tls gives the socket to its TLS protocol at once, in this step, and
            # starts the handshake in the next: the bytes already read reach it before.
            loop.call_soon(_give_back, transport, raw)
        try:
            secure = await loop.start_tls(
                transport, self, tls, server_side=True, ssl_handshake_timeout=TLS_HANDSHAKE_S
            )
        except (OSError, TimeoutError, asyncio.CancelledError) as exc:
            # A client that does not speak TLS, does not trust the certificate, or is too slow.
            log.debug("no TLS handshake with %s: %r", self._counted, exc)
            transport.abort()
            self._leave()
            return
        early, self._early = self._early, None
        if secure is None or self._ended:  # lost since its handshake ended
            return
        self._open(secure)
        for data in early:
            if data is not None:
                self.data_received(data)
            elif not self.eof_received():
                secure.close()

    def data_received(self, data: bytes) -> None:
        if self._raw is not None:  # TLS bytes, before start_tls has the socket
            self._raw.append(data)
            return
        if self._early is not None:
            self._early.append(data)
            return
        self._read(data)

    def eof_received(self) -> bool | None:  # type: ignore[override]  # asyncio's type
        if self._raw is not None:
            return None  # gone before its TLS handshake began: closed
        if self._early is not None:
            self._early.append(None)
            return None  # TLS shuts down after a close_notify whatever is returned
        return self._end()

    def connection_lost(self, exc: Exception | None) -> None:
        self._leave()
        if self._opened:
            super().connection_lost(exc)
        else:
            self._ended = True

    def _leave(self) -> None:
        self._handshaken()
        if self.gate is not None and self._counted is not None:
            self.gate.leave(self._counted)
            self._counted = None

    def admitted(self) -> None:
        """Served (``ConnectionHandler``): no longer among the sockets in their handshakes.
        One refused right after its handshake (1013, 1008) stays among them till it is
        gone: its descriptor is held while its close is waited for."""
        self._handshaken()

    def _handshaken(self) -> None:
        """No longer among the sockets in their handshakes: admitted, or gone."""
        if self.gate is not None and self._accepted is not None and self._counted is not None:
            self._accepted = None
            self.gate.handshaken(self._counted, self)

    def evict(self) -> None:
        """Closed unread in its handshake, to make room for another address's socket
        (``Handshaking``)."""
        accepted = self._accepted
        self._leave()
        if accepted is not None:
            accepted.abort()

    def _end(self) -> bool | None:
        """The peer's end of its stream, once websockets has the socket."""
        super().eof_received()
        return None

    def _limit(self, recv_frame: Callable[[Frame], None], frame: Frame) -> None:
        """Each frame websockets parsed, before it handles it (``Protocol.recv_frame``,
        which answers a ping with a pong there and then): a ping, a pong or a fragment
        takes a token of the connection's ``CONTROL_FRAMES``; with none left the
        connection is closed with 1008, and what it sends after is dropped unread.

        websockets answers a ping before any request is read, so a ping costs the
        server a pong whatever the request limits say: one connection sending pings
        as fast as it could kept the server from everyone else. A ping past the limit
        is not answered (counted when its event came, after websockets had parsed and
        answered all of a read, the 101st of 101 pings got its pong).

        A dropped frame other than a ping is still handled by websockets, which keeps
        the state of a fragmented message and of the closing handshake, and only its
        event is dropped (``process_event``). Once closed for a flood, every frame read
        after (but its close) is dropped too: past the limit the rest of a fragmented
        message was, and a message after it reached websockets in the middle of that one
        (a failed assertion, 1011)."""
        drop = self.flooded and frame.opcode is not Opcode.CLOSE
        if not drop and (frame.opcode in _CONTROL_OPCODES or not frame.fin):
            now = self.loop.time()
            if self._controls is None:
                self._controls = TokenBucket(CONTROL_FRAMES, now)
            if self._controls.wait(now) > 0:
                if self._behind is None:
                    self._flood()
                drop = True
            else:
                self._controls.take(now)
        if drop and frame.opcode is Opcode.PING:
            return  # unanswered, and no event
        recv_frame(frame)
        if drop:
            self._unheard.append(frame)  # its event, in the order websockets queued them

    def process_event(self, event: object) -> None:
        """Each event websockets read (``data_received``), but the frames ``_limit``
        dropped."""
        if self._unheard and event is self._unheard[0]:
            self._unheard.popleft()
            return
        super().process_event(event)  # type: ignore[arg-type]  # websockets' Event

    def _flood(self) -> None:
        self.flooded = True
        self.transport.pause_reading()
        log.warning(
            "closing the connection from %s: too many pings, pongs or fragments (%d)",
            peer_of(self),
            CLOSE_POLICY_VIOLATION,
        )
        closing = _close(self, CLOSE_POLICY_VIOLATION, "too many control frames", CLOSE_WAIT_S)
        self._behind = asyncio.get_running_loop().create_task(closing)

    def _read(self, data: bytes) -> None:
        """What the peer sent, once websockets has the socket: given to websockets a
        ``READ_SLICE`` at a time, so that a connection being closed (for a flood, or for
        not reading: ``_feed``) stops being read within a slice, not after all that one
        read brought (64 KiB of empty pings are some 11,000)."""
        if self._held is not None:  # sent before its handshake was answered: kept till then
            self._hold(data)
            return
        for start in range(0, len(data), READ_SLICE):
            if self._behind is not None:
                return  # being closed (for not reading, or a flood): nothing more is answered
            self._feed(data if len(data) <= READ_SLICE else data[start : start + READ_SLICE])

    def _hold(self, data: bytes) -> None:
        assert self._held is not None
        self._held.append(data)
        if sum(map(len, self._held)) > MAX_FRAME_BYTES:  # no client sends before the 101
            self._held = None
            self.transport.abort()

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        """websockets' handshake; then what the client sent after its request, which
        websockets would have read and answered (a pong per ping) before its ``101``."""
        try:
            await super().handshake(*args, **kwargs)
        finally:
            held, self._held = self._held, None
            if held and self.protocol.state is State.OPEN:
                self._read(b"".join(held))
            if self._ended_early:  # a 101 is out: now websockets hears the end
                self._hear_the_end()

    def _hear_the_end(self) -> None:
        """The peer's end of its stream, held while its upgrade was answered (``_end``),
        given to websockets now, and the socket closed (as asyncio closes it when
        ``eof_received`` returns nothing)."""
        self._ended_early = False
        self.__dict__.pop("send_data", None)  # back to the class's
        ServerConnection.eof_received(self)
        self.transport.close()

    def _send_then_hear_the_end(self) -> None:
        """``send_data`` while the peer's end is held: once a refusal is out (websockets
        ends its side of the stream after one), the end is heard. Else websockets would
        wait for the peer's close, which came already, until its close timeout (2 s; 10 s
        after a 431), holding the socket against its address's count."""
        ServerConnection.send_data(self)
        if self.protocol.eof_sent:
            self._hear_the_end()

    def _feed(self, data: bytes) -> None:
        super().data_received(data)
        waiting = self.transport.get_write_buffer_size()
        if waiting > self.max_buffered:
            self.transport.pause_reading()
            log.warning(
                "closing the connection from %s: it does not read what it is sent "
                "(%d bytes waiting) (%d)",
                peer_of(self),
                waiting,
                CLOSE_GOING_AWAY,
            )
            reason = "too far behind: reconnect and resync"
            closing = _close(self, CLOSE_GOING_AWAY, reason, CLOSE_WAIT_S)
            self._behind = asyncio.get_running_loop().create_task(closing)


READ_SLICE: Final = 1024
"""Bytes given to websockets at once (``_Bounded._read``): at most 170 empty pings."""

CONTROL_FRAMES: Final = Rate(CONTROL_FRAMES_PER_S, CONTROL_FRAMES_BURST)
"""A connection's pings, pongs and message fragments (PROTOCOL.md section 10)."""

_CONTROL_OPCODES: Final = frozenset({Opcode.PING, Opcode.PONG, Opcode.CONT})
"""Frames counted by ``CONTROL_FRAMES``, with the first piece of a fragmented message (a
close frame is not: there is one). A whole message is counted by the requests' limits."""


def _give_back(transport: asyncio.Transport, raw: list[bytes]) -> None:
    """Hand the bytes read from ``transport`` before start_tls took it to the protocol
    start_tls gave it (asyncio's and uvloop's TLS protocols are buffered protocols, and
    keep what comes before their handshake begins)."""
    if transport.is_closing():
        return
    protocol = cast(asyncio.BufferedProtocol, transport.get_protocol())
    for data in raw:
        view = memoryview(data)
        while view:
            buffer = memoryview(protocol.get_buffer(len(view)))
            size = min(len(buffer), len(view))
            buffer[:size] = view[:size]
            protocol.buffer_updated(size)
            view = view[size:]


def _too_soon_through_proxy(
    handler: ConnectionHandler, gate: SocketGate, ws: ServerConnection, method: str
) -> HttpResponse | None:
    """HTTP 429 (with ``Retry-After``) for a request a trusted proxy forwards from a client
    over its rate of new connections (``SocketGate.forwarded``); None for any other. The
    client's address is known only from the request, not at the accept where a direct
    client's connection is counted. A HEAD's answer has no body."""
    peer = peer_of(ws)
    if gate.accepts is None or not in_networks(peer, gate.trusted):
        return None
    client = handler.address_of(ws)
    if isinstance(ws, _Bounded):
        ws.client = client  # read once: an unreadable header is said once
    wait = gate.forwarded(peer, client)
    if wait == 0:
        return None
    seconds = math.ceil(wait)
    said = f"Too many new connections from this address: retry in {seconds} s.\n"
    response = _response(HttpReply(HTTPStatus.TOO_MANY_REQUESTS, said.encode()), method != "HEAD")
    response.headers["Retry-After"] = str(seconds)
    return response


def peer_of(ws: ServerConnection) -> str:
    """The address of ``ws``'s peer, as read at the accept: uvloop's socket, closed by a
    peer's reset, no longer says it (ValueError), and its request may still be read."""
    if isinstance(ws, _Bounded) and ws.peer is not None:
        return ws.peer
    return _address(ws.remote_address)


def _address(remote: object) -> str:
    return str(remote[0]) if isinstance(remote, tuple) and remote else str(remote)


_HANDSHAKE_FAILED: Final = "Failed to open a WebSocket connection: "


def _refuse(reject: Callable[[int, str], HttpResponse], status: int, text: str) -> HttpResponse:
    """websockets' ``reject``, worded as this server says it (``_public_refusal``); an
    upgrade to another WebSocket version than 13 is 426 with the version spoken, as RFC
    6455 section 4.2.2 asks (websockets answers 400 and names none)."""
    said = _public_refusal(status, text)
    if said != _OTHER_VERSION:
        response = reject(status, said)
        _secure(response.headers)
        return response
    response = reject(HTTPStatus.UPGRADE_REQUIRED, _VERSION_SPOKEN)
    response.headers["Upgrade"] = "websocket"  # RFC 9110 section 15.5.22: a 426 names it
    response.headers["Sec-WebSocket-Version"] = "13"
    _secure(response.headers)
    return response


_OTHER_VERSION: Final = "Invalid Sec-WebSocket-Version header.\n"
_VERSION_SPOKEN: Final = "Unsupported WebSocket version: this server speaks version 13.\n"


def _public_refusal(status: int, text: str) -> str:
    """websockets' refusal ``text`` as this server says it: what was wrong, without the
    causes it chains on (a decoder's or a library's own words), and a head too large
    said as such whatever the request was."""
    if not text.startswith(_HANDSHAKE_FAILED):
        return text
    if status == HTTPStatus.REQUEST_URI_TOO_LONG:
        return "The request line is too long.\n"
    if status == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
        return "The request's header lines are too long, or too many.\n"
    # the first line and the first reason; of a header's value, only that it is invalid
    # (websockets' parser adds 'expected token at 0 in ...', the value echoed as it came)
    reason = text[len(_HANDSHAKE_FAILED) :].splitlines()[0].strip().removesuffix(".")
    reason = reason.split("; ")[0]
    header = re.match(r"(?i)(invalid|missing) ([\w-]+) header", reason)
    if header is not None:
        reason = header.group(0)
    return f"{reason[:1].upper()}{reason[1:]}.\n"


def _bounded_class(
    base: type[_Bounded], max_buffered: int, gate: SocketGate, tls: ssl.SSLContext | None
) -> type[ServerConnection]:
    """``base`` with the listener's bound on the bytes waiting for a socket, its gate and
    its TLS."""
    attributes = {"max_buffered": max_buffered, "gate": gate, "tls": tls}
    return type(base.__name__, (base,), attributes)


TLS_HANDSHAKE_S: Final = 10.0
"""The time a TLS handshake may take (asyncio's default is 60 s), as long as websockets
gives the WebSocket handshake after it."""


HANDSHAKES_PER_ADDRESS: Final = 16
"""Sockets an address may hold beyond ``--max-connections-per-address``: handshakes in
progress and plain HTTP requests (a page's assets), so that one over the cap of open
connections still hears 1013 from a finished handshake."""


def handshakes_in_all(max_connections: int) -> int:
    """Sockets that may be in their handshakes at once, from every address together
    (``SocketGate``): a quarter of ``--max-connections``, at least ``HANDSHAKES_IN_ALL``."""
    return max(HANDSHAKES_IN_ALL, max_connections // 4)


HANDSHAKES_IN_ALL: Final = 256
"""The fewest sockets that may be in their handshakes at once, whatever the caps."""


class SocketGate:
    """Open sockets per peer address, counted from the TCP accept (before TLS).

    The cap on connections per address (``Limits.admit``) counts a connection once its
    handshake is done, and ``websockets`` gives a handshake 10 s: one address could hold
    any number of sockets that never send a request, each a file descriptor, until the
    server had none left for anyone. A socket beyond ``limit`` from one address is
    closed at once, unread, and so is one beyond the address's rate of new sockets
    (``connections``, a bucket per address): one address opening and closing
    connections as fast as it could (connect, hello, close; or plain HTTP requests),
    within every other limit, took a core and slowed every player's moves tenfold. A
    trusted proxy's sockets are not counted (they carry many clients): each client is
    counted by the forwarded address once its request is read, against the same rate
    (``forwarded``: one beyond is answered 429), and against the caps on open
    connections after its handshake (``Limits.admit``).

    The sockets still in their handshakes (TLS, WebSocket, or a plain HTTP request till
    it is answered) are also counted in all, a trusted proxy's too, at most
    ``handshakes`` (``Handshaking``): capped per address only, 30 addresses holding 78
    each used up the process's 1024 descriptors, whatever ``--max-connections`` said,
    and a signed-in player's ``new_game`` failed for want of one. With the caps after
    the handshake, the descriptors clients can hold are bounded (``server.descriptors``).
    """

    def __init__(
        self,
        limit: int,
        trusted: list[Network],
        connections: Rate | None = None,
        handshakes: int = HANDSHAKES_IN_ALL,
    ) -> None:
        self.limit = limit
        self.trusted = trusted
        self.handshaking = Handshaking(handshakes)
        self.open: dict[str, int] = {}
        self.handshakes: set[asyncio.Task[None]] = set()  # TLS handshakes going on
        self.accepts = BucketMap(connections) if connections is not None else None

    def enter(self, peer: str, socket: _Bounded) -> bool:
        """Count a new socket from ``peer``, in its handshake; False (not counted) when it
        is one too many, or comes too soon after the others."""
        key = address_key(peer)
        if self.trusted and in_networks(peer, self.trusted):
            return self.handshaking.enter(key, socket)
        if self.accepts is not None:
            now = time.monotonic()
            bucket = self.accepts.get(key, now)
            if bucket.wait(now) > 0:
                log.warning(
                    "closed a connection from %s before its handshake: more than %g new "
                    "connections a second from it",
                    key,
                    self.accepts.rate.per_s,
                )
                return False
            bucket.take(now)
        held = self.open.get(key, 0)
        if held >= self.limit:
            log.warning(
                "closed a connection from %s before its handshake: %d sockets open from it",
                key,
                held,
            )
            return False
        if not self.handshaking.enter(key, socket):
            return False
        # read again: making room may have closed one of this address's own sockets
        self.open[key] = self.open.get(key, 0) + 1
        return True

    def handshaken(self, peer: str, socket: _Bounded) -> None:
        """``socket`` from ``peer`` is no longer in its handshake (open, or gone)."""
        self.handshaking.leave(address_key(peer), socket)

    def forwarded(self, proxy: str, client: str) -> float:
        """Count a new connection from ``client``, the address the trusted ``proxy``
        forwarded (``client_address``): 0.0, or the seconds until it may open one more (not
        counted). The bucket is the one its direct connections take from. A client whose
        address the proxy did not give (the proxy's own, or another trusted one) is not
        counted: it stands for all of them."""
        if (
            self.accepts is None
            or client == address_key(proxy)
            or in_networks(client, self.trusted)
        ):
            return 0.0
        now = time.monotonic()
        bucket = self.accepts.get(client, now)
        wait = bucket.wait(now)
        if wait > 0:
            log.warning(
                "refused a connection from %s through a trusted proxy: more than %g new "
                "connections a second from it (429)",
                client,
                self.accepts.rate.per_s,
            )
            return wait
        bucket.take(now)
        return 0.0

    def leave(self, peer: str) -> None:
        if self.trusted and in_networks(peer, self.trusted):
            return
        key = address_key(peer)
        left = self.open.get(key, 1) - 1
        if left > 0:
            self.open[key] = left
        else:
            self.open.pop(key, None)


class Handshaking:
    """The sockets in their handshakes, by address, oldest first: at most ``allowed``.

    When there are as many, a new socket takes the place of the oldest of the address
    holding the most, if that one holds more than the new socket's address then would:
    it is closed, unread. Else the oldest socket of the addresses holding the most is
    (of all, when none holds more than one; an honest handshake ends in milliseconds).
    Addresses holding many sockets that never finish their handshakes (each within its
    own cap) may fill the places, and a client holding none still gets one: refused at
    once, it waited in vain, since each socket of theirs that timed out came back at
    once; and so may many addresses holding one each (300 held every place when the
    newest was refused). Nor do such addresses, making room for themselves,
    close a slow client's one handshake (the oldest of all, it was closed when it took a
    second or two beside 15 of them, or 128 holding two each): that takes as many
    addresses as there are places, each holding one.
    """

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.count = 0
        self._sockets: dict[str, dict[_Bounded, None]] = {}  # by address, oldest first
        self._oldest: dict[_Bounded, str] = {}  # every one, oldest first: its address
        self._holding: dict[int, dict[str, None]] = {}  # how many -> addresses holding so many
        self._most = 0  # the most sockets one address holds

    def enter(self, key: str, socket: _Bounded) -> bool:
        """Count ``socket`` of address ``key``; False (not counted) when there is no room."""
        if self.count >= self.allowed and not self._make_room(key):
            return False
        held = self._sockets.setdefault(key, {})
        held[socket] = None
        self._oldest[socket] = key
        self._recount(key, len(held) - 1, len(held))
        self.count += 1
        return True

    def leave(self, key: str, socket: _Bounded) -> None:
        held = self._sockets.get(key)
        if held is None or socket not in held:
            return
        del held[socket]
        self._oldest.pop(socket, None)
        if not held:
            del self._sockets[key]
        self._recount(key, len(held) + 1, len(held))
        self.count -= 1

    def _make_room(self, key: str) -> bool:
        own = len(self._sockets.get(key, ()))
        if self._most <= own + 1:
            # the newcomer's address holds the most, or will: the oldest socket of those
            # holding the most makes room (of all, when none holds more than one)
            found = next(
                (
                    (socket, address)
                    for socket, address in self._oldest.items()
                    if len(self._sockets[address]) >= self._most
                ),
                None,
            )
            if found is None:
                return False  # no place at all
            oldest, address = found
            log.warning(
                "closed a connection from %s in its handshake for one from %s: %d sockets "
                "in their handshakes from every address, none holding more than its share, "
                "and it the oldest of those holding the most (see --max-connections)",
                address,
                key,
                self.count,
            )
            oldest.evict()  # leaves at once
            return True
        most = next(iter(self._holding[self._most]))
        log.warning(
            "closed a connection from %s in its handshake for one from %s: %d sockets in "
            "their handshakes from every address, %d of them from %s (see --max-connections)",
            most,
            key,
            self.count,
            self._most,
            most,
        )
        next(iter(self._sockets[most])).evict()  # leaves at once
        return True

    def _recount(self, key: str, before: int, after: int) -> None:
        if before:
            holding = self._holding[before]
            del holding[key]
            if not holding:
                del self._holding[before]
        if after:
            self._holding.setdefault(after, {})[key] = None
        self._most = max(self._most, after)
        while self._most and self._most not in self._holding:
            self._most -= 1


MAX_HEAD_BYTES: Final = 64 * 1024
"""A request head longer than this is refused here (``_too_large``): 414 when its request
line is longer than ``MAX_LINE_BYTES``, else 431 (given such a head, ``websockets`` parsed
it under its own, larger bounds, and closed without a word on a bad line in it)."""
MAX_LINE_BYTES: Final = 8192  # websockets' own bound on a line of the head, its CR LF counted
_BARE_LF: Final = re.compile(rb"(?<!\r)\n")  # a line ended by LF alone
_EMPTY_LINES: Final = re.compile(rb"(?:\r\n)*")  # empty lines before a request line


class _BodyDropping(_Bounded):
    """``websockets``' server connection, for a port that answers plain HTTP too.

    ``websockets`` reads no request body: it closes the connection without a word
    on a request that has one (``Content-Length`` other than 0, or
    ``Transfer-Encoding``). Nor does it take a second request on a connection: two
    pipelined in one packet went unanswered. A plain HTTP request (not an upgrade)
    is answered here as the one request its head makes, without a body: the head
    goes on without those headers, and everything after it (a body, more requests)
    is read and dropped, up to the close that follows the answer. The end of the
    client's stream (a half-close right after the request) is not passed on either,
    so the answer still goes out. An upgrade goes to ``websockets`` unchanged.

    ``websockets`` also closes without a word on a head it cannot parse (a request
    line without its version, a header line without its colon, an upgrade with a
    body). Such a head, a line of text that cannot begin a request, a head whose
    lines end in a bare LF (which websockets waited on until the handshake's timeout)
    and a head cut short by the end of the client's stream are answered 400 here
    (``_head_problem``); bytes that are not text (a TLS hello on the plain port) are
    closed at once.
    """

    _head: bytes | None = b""  # the request head so far; None once it was passed on
    _dropping = False

    def _read(self, data: bytes) -> None:
        if self._dropping:
            return
        if self._head is None:
            super()._read(data)
            return
        new = max(0, len(self._head) - 1)  # where a line ended by this data may begin to end
        self._head += data
        if self._head.startswith(b"\r"):
            # Empty lines before the request line are ignored (RFC 9112 section 2.2), each
            # CR LF whole: a CR whose LF has not come yet waits for it.
            empty = _EMPTY_LINES.match(self._head)  # in one pass: they may be megabytes
            if empty is not None:
                self._head = self._head[empty.end() :]
            new = 0
            if self._head in (b"", b"\r"):
                return
        if not _may_be_request(self._head):
            received, self._head = self._head, None
            if _is_text(received):  # a line of text, but no request: say so
                self._refuse_head("not an HTTP request")
            else:  # a TLS hello on the plain port, say: it would not read an answer
                self.transport.close()
            return
        end = self._head.find(b"\r\n\r\n")
        # A line ended by LF alone: a head ended so (\n\n, \n\r\n) would never be complete.
        # Looked for in what came (and the byte before it): a head dripped a byte at a
        # time is not searched whole again at each byte.
        if _BARE_LF.search(self._head, new, len(self._head) if end < 0 else end + 4):
            self._head = None
            self._refuse_head("each line of the head must end with CR LF")
            return
        if end < 0 and len(self._head) <= MAX_HEAD_BYTES:
            return  # the head is not complete yet
        received, self._head = self._head, None
        whole = received if end < 0 else received[: end + 4]
        # Too large first, whatever else is wrong with it, and measured as it came (a
        # plain request's head goes on without its body's headers, which may be what
        # made it too large); websockets would close on a bad line in it without a word.
        too_large = _too_large(whole, complete=end >= 0)
        if too_large is not None:
            self._refuse_head(*too_large)
            return
        head = _plain_head(whole)
        problem = _head_problem(whole if head is None else head, whole)
        if problem is not None:
            self._refuse_head(problem)
            return
        if head is None:  # an upgrade: what follows waits for its answer
            self._feed(whole)
            self._held = []
            self._hold(received[end + 4 :])
        else:
            self._dropping = True
            super()._read(head)

    def _refuse_head(self, problem: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> None:
        """Answer ``status`` (400: ``problem`` said as a bad request; else ``problem`` as
        it is) to a head ``websockets`` would close on without a word, then close; what
        else comes is dropped."""
        self._dropping = True
        said = f"Bad request: {problem}." if status == HTTPStatus.BAD_REQUEST else problem
        body = f"{said}\n".encode()
        secure = "".join(f"{name}: {value}\r\n" for name, value in _secure(Headers()).raw_items())
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n%s\r\n%s"
            % (status.value, status.phrase.encode(), len(body), secure.encode(), body)
        )
        self.transport.close()  # after what is written has gone out

    def _end(self) -> bool | None:
        if self._held is not None and self.tls is None and not self.protocol.eof_sent:
            # An upgrade not answered yet: a refusal (a bad key, version 8, a POST) would
            # be lost with the socket; the end is heard once a refusal is out, or once
            # the handshake is over (a 101). One answered already (a head too large,
            # refused as it was read) hears it now. (On TLS, asyncio closes the socket
            # whatever eof_received returns.)
            self._ended_early = True
            self.send_data = self._send_then_hear_the_end  # type: ignore[method-assign]
            return True
        if self._dropping and not self.protocol.eof_sent and self.tls is None:  # not answered
            # This connection's sends (the answer is the next) end it afterwards;
            # every other connection keeps websockets' own send_data.
            self.send_data = self._send_then_end  # type: ignore[method-assign]
            return True  # the transport stays open for the answer
        if self._head:  # a head cut short: websockets would close without a word
            self._head = None
            self._refuse_head("the request ended before its head did")
            return None
        return super()._end()

    def _send_then_end(self) -> None:
        """``send_data`` once the client ended its stream before its answer: once the
        answer is out, websockets hears the end, and the connection closes (as asyncio
        closes it when ``eof_received`` returns nothing)."""
        ServerConnection.send_data(self)
        if self.protocol.eof_sent:
            del self.send_data  # back to the class's
            ServerConnection.eof_received(self)
            self.transport.close()


_BODY_HEADERS: Final = (b"content-length", b"transfer-encoding")


def _may_be_request(start: bytes) -> bool:
    """Whether ``start`` may begin an HTTP request: a method (letters), then a space.
    Anything else (a TLS hello on the plain port, a stray protocol) is closed at once,
    rather than held as a head that has not ended (until the handshake's timeout)."""
    method, space, _ = start.partition(b" ")
    return method.isalpha() if space else start.isalpha() and len(start) <= 16


_TEXT: Final = re.compile(rb"[\t\r\n\x20-\x7e]*")
_WELL_FORMED_HEAD: Final = re.compile(
    rb"[A-Za-z]+ [\x21-\x7e]+ HTTP/1\.[01]\r\n"
    rb"(?:[-!#$%&'*+.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*\r\n)*\r\n"
)
"""A head ``websockets`` surely parses, line by line: a subset of what it takes."""


def _is_text(data: bytes) -> bool:
    return _TEXT.fullmatch(data) is not None


def _head_problem(head: bytes, received: bytes) -> str | None:
    """Why ``head`` (ending with its blank line) is refused here: ``websockets`` would
    refuse it without an answer, or it is framed as RFC 9112 refuses (``received``, the
    head as it came, before its body's headers were taken out: ``_framing_problem``).
    None when it is taken. (A head too large was refused before, by ``_too_large``.)

    A head of the usual shape is let through on one regular expression; only one
    that is not is parsed by ``websockets``' own parser, which says what is wrong.
    The parse costs some 20 us, so every handshake does not pay it.
    """
    lowered = head.lower()
    if (
        _WELL_FORMED_HEAD.fullmatch(head)
        and b"content-length" not in lowered
        and b"transfer-encoding" not in lowered
    ):
        return _framing_problem(received)
    reader = StreamReader()
    reader.feed_data(head)
    reader.feed_eof()
    try:
        next(HttpRequest.parse(reader.read_line))
    except StopIteration:
        return _framing_problem(received)  # parsed
    except SecurityError:
        return None  # a line too long, or too many (``_too_large``): websockets answers it
    except UnicodeDecodeError:
        return "the request line or a header is not ASCII"  # not the codec's words
    except (ValueError, NotImplementedError, EOFError) as exc:
        return _said(str(exc))
    return None


# What ``websockets``' parser found, in the server's words: its own quote the peer's
# bytes (a NUL, a terminal's escape, markup), which an answer must not send back.
_HEAD_PROBLEMS: Final = (
    ("invalid HTTP request line", "the request line is not METHOD TARGET VERSION"),
    ("unsupported protocol", "the HTTP version is neither HTTP/1.1 nor HTTP/1.0"),
    ("invalid HTTP header line", "a header line has no colon"),
    ("invalid HTTP header name", "a header's name is not a token"),
    ("invalid HTTP header value", "a header's value holds a character a header may not"),
    ("transfer coding", "a request may not carry a body (Transfer-Encoding)"),
    ("unsupported request body", "a request may not carry a body (Content-Length)"),
    ("line without CRLF", "each line of the head must end with CR LF"),
)


def _too_large(head: bytes, complete: bool) -> tuple[str, HTTPStatus] | None:
    """414 or 431, with its words, for a head over the bounds: ``websockets``' own (a line
    of more than ``MAX_LINE_BYTES`` with its CR LF, more than ``MAX_NUM_HEADERS`` header
    lines) and ``MAX_HEAD_BYTES`` in all; ``complete`` when it has ended. None within them."""
    if complete and len(head) <= MAX_LINE_BYTES and head.count(b"\n") <= MAX_NUM_HEADERS + 2:
        return None  # the usual head: every line within the bound, and few of them
    request_line, ended, rest = head.partition(b"\r\n")
    if not ended or len(request_line) + 2 > MAX_LINE_BYTES:
        return "The request line is too long.", HTTPStatus.REQUEST_URI_TOO_LONG
    lines = rest[:-4].split(b"\r\n") if complete else rest.split(b"\r\n")
    if (
        not complete
        or len(head) > MAX_HEAD_BYTES
        or len(lines) > MAX_NUM_HEADERS
        or any(len(line) + 2 > MAX_LINE_BYTES for line in lines)
    ):
        return (
            "The request's header lines are too long, or too many.",
            HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
        )
    return None


def _framing_problem(head: bytes) -> str | None:
    """What RFC 9112 has a server answer 400 that ``websockets`` lets through: a
    ``Host`` missing from an HTTP/1.1 request or given twice (section 3.2), a
    ``Content-Length`` that is not a number, or two that differ (section 6.3). A body
    is never read here, but a request so framed is not answered as if it were sound."""
    lowered = head.lower()
    if lowered.count(b"\r\nhost:") == 1 and b"\r\ncontent-length:" not in lowered:
        return None  # the usual head, on one pass
    request_line, *lines = lowered[:-4].split(b"\r\n")
    hosts, lengths = 0, set()
    for line in lines:
        name, _, value = line.partition(b":")
        if name == b"host":
            hosts += 1
        elif name == b"content-length":
            for length in value.split(b","):
                digits = length.strip()
                if not digits.isdigit():
                    return "Content-Length is not a number"
                lengths.add(digits.lstrip(b"0"))  # as a number, of any length
    if hosts > 1:
        return "Host is given more than once"
    if hosts == 0 and request_line.endswith(b" http/1.1"):
        return "an HTTP/1.1 request must name its Host"
    if len(lengths) > 1:
        return "Content-Length is given twice, with different numbers"
    return None


def _said(problem: str) -> str:
    for start, said in _HEAD_PROBLEMS:
        if problem.startswith(start):
            return said
    return "the request head cannot be read"


def _plain_head(head: bytes) -> bytes | None:
    """``head`` (ending with its blank line) without the headers that announce a body,
    if it is a plain HTTP request; None for a WebSocket upgrade."""
    request_line, *lines = head[:-4].split(b"\r\n")
    fields = []
    for line in lines:
        name, _, value = line.partition(b":")
        # the name as it is: one with white space about it (`Content-Length : 5`) is no
        # header of a body but a bad line, kept for `_head_problem` to refuse
        fields.append((name.lower(), value.strip().lower(), line))
    if any(name == b"upgrade" and b"websocket" in value for name, value, _ in fields):
        return None
    kept = [line for name, _, line in fields if name not in _BODY_HEADERS]
    return b"\r\n".join([request_line, *kept]) + b"\r\n\r\n"


def _allow_head(_ws: ServerConnection, _request: HttpRequest, response: HttpResponse) -> None:
    """A 405 to an upgrade (websockets' own: ``Allow: GET``) names HEAD too, as this
    port's other 405s do: it answers both."""
    if response.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
        del response.headers["Allow"]  # setting a header adds one more
        response.headers["Allow"] = "GET, HEAD"


def _wants_websocket(request: HttpRequest) -> bool:
    """Whether the request asks to upgrade to a WebSocket. Every ``Upgrade`` header is
    read: ``Headers.get`` raises on a name given twice (a 500 and an error logged)."""
    return any("websocket" in value.lower() for value in request.headers.get_all("Upgrade"))


def _secure(headers: Headers, host: str | None = None) -> Headers:
    """``headers``, given the security headers of ``server.webclient`` that every answer
    of the port carries, refusals too; the policy naming ``host`` (the request's Host)."""
    headers["Content-Security-Policy"] = content_security_policy(host)
    for name, value in SECURITY_HEADERS:
        headers[name] = value
    return headers


def _response(reply: HttpReply, body: bool = True, host: str | None = None) -> HttpResponse:
    """``reply`` as the response; without its body (a HEAD's), but with its length.
    A 304 has neither body nor length, nor the type and coding of the body it stands
    for (RFC 9110 15.4.5): its tag, caching and ``Vary`` say all. Every one carries the
    security headers of ``server.webclient``, its policy naming ``host`` (the request's
    Host)."""
    headers = Headers()
    if reply.status != HTTPStatus.NOT_MODIFIED:
        headers["Content-Type"] = reply.content_type
        headers["Content-Length"] = str(len(reply.body))
        if reply.content_encoding is not None:
            headers["Content-Encoding"] = reply.content_encoding
    headers["Connection"] = "close"
    headers["Cache-Control"] = reply.cache_control
    if reply.etag is not None:
        headers["ETag"] = reply.etag
    if reply.allow is not None:
        headers["Allow"] = reply.allow
    if reply.vary:
        headers["Vary"] = "Accept-Encoding"
    _secure(headers, host)
    status = HTTPStatus(reply.status).phrase
    return HttpResponse(reply.status, status, headers, reply.body if body else b"")
