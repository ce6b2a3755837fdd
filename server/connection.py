"""One WebSocket connection: frames in, protocol, service, frames out.

The only module that imports ``websockets``. Per connection:

- a reader loop (this handler) takes binary frames one at a time, decodes
  them with ``protocol.decode_request`` and hands the request to
  ``GameService.handle``, queuing the reply on the connection's ``Outbox``.
  Requests of one connection are answered in order; other connections are
  unaffected because every slow part (storage, solver) is awaited;
- a writer task drains the outbox onto the socket. Pushes from other
  connections' actions arrive in the same outbox via the ``Hub``.

A client that does not offer subprotocol ``scorpion.v1`` (none, or only a
version we do not speak) still completes the WebSocket upgrade, so that it can
read why it is refused: its first frame is answered with
``unsupported_version`` and the connection is closed with 1002.

A text frame or an undecodable one is answered with ``bad_request`` and the
connection stays up; every ``bad_request`` is a strike on the ``AbuseMeter``,
and too many close the connection with 1008. Frames above MAX_FRAME_BYTES
never reach us: ``websockets`` closes with 1009 (``max_size``). An
outbox that overflows (a peer that does not read) closes with 1001. Any
unexpected exception becomes an ``internal`` reply; its detail is only logged.

A request that does not ask to upgrade is plain HTTP (``server.http``:
health, readiness, metrics); ``Listener`` answers it through websockets'
``process_request`` hook. Each connection's task sets the log context
(``server.logs.connection_id``, and ``game_id`` per request), and every reply
is counted in ``server.metrics`` by request type and error code.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
import time
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Final

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request as HttpRequest
from websockets.http11 import Response as HttpResponse
from websockets.typing import Subprotocol

from protocol import (
    CLOSE_GOING_AWAY,
    CLOSE_POLICY_VIOLATION,
    CLOSE_PROTOCOL_ERROR,
    MAX_FRAME_BYTES,
    SUBPROTOCOL,
    SUPPORTED_VERSIONS,
    AbuseMeter,
    ProtocolError,
    RequestId,
    build,
    decode_request,
    encode,
)
from server.http import HttpReply, HttpRoutes
from server.hub import Hub, Outbox
from server.logs import connection_id, game_id
from server.metrics import Metrics
from server.service import GameService, Session

__all__ = ["ConnectionHandler", "Listener"]

log = logging.getLogger(__name__)

UNREAD: Final = "unread"
"""The request type counted for a frame that did not decode into a request."""


class ConnectionHandler:
    """The ``websockets`` handler: one call per connection."""

    def __init__(
        self,
        service: GameService,
        hub: Hub,
        queue_size: int = 1024,
        metrics: Metrics | None = None,
    ) -> None:
        self.service = service
        self.hub = hub
        self.queue_size = queue_size
        self.metrics = metrics if metrics is not None else Metrics()
        self.open = 0
        self._outboxes: set[Outbox] = set()
        self._ids = itertools.count(1)

    def queued_bytes(self) -> int:
        """Bytes waiting in every open connection's outbox."""
        return sum(outbox.queued_bytes for outbox in list(self._outboxes))

    async def __call__(self, ws: ServerConnection) -> None:
        if ws.subprotocol != SUBPROTOCOL:
            await self._refuse(ws)
            return
        peer = f"{ws.remote_address}"
        connection_id.set(next(self._ids))
        session = Session(Outbox(self.queue_size), peer=peer)
        writer = asyncio.create_task(self._write(ws, session.outbox))
        self.open += 1
        self._outboxes.add(session.outbox)
        self.metrics.connections_opened.inc()
        log.debug("connection from %s (subprotocol %s)", peer, ws.subprotocol)
        abusive = False
        try:
            abusive = await self._read(ws, session)
        except ConnectionClosed:
            pass
        finally:
            self.open -= 1
            self._outboxes.discard(session.outbox)
            game_id.set(None)
            await self.service.disconnect(session)
            session.outbox.close()
            with contextlib.suppress(ConnectionClosed):
                await writer
        if abusive:
            log.info("closing %s: too many bad requests", peer)
            await ws.close(CLOSE_POLICY_VIOLATION, "too many bad requests")
        log.debug("connection from %s closed (%s)", peer, ws.close_code)

    async def _read(self, ws: ServerConnection, session: Session) -> bool:
        """Answer frames until the peer closes (False) or is abusive (True)."""
        meter = AbuseMeter()
        async for frame in ws:
            reply = await self._answer(session, frame)
            if reply is None:
                continue
            self.hub.send(session.outbox, reply)
            if reply.get("code") == "bad_request" and meter.strike(time.monotonic()):
                return True
        return False

    async def _answer(self, session: Session, frame: bytes | str) -> Mapping[str, Any] | None:
        try:
            request = decode_request(frame)
        except ProtocolError as exc:
            self.metrics.answered(UNREAD, exc.code)
            return exc.to_message()
        except Exception:
            log.exception("could not decode a frame from %s", session.peer)
            self.metrics.answered(UNREAD, "bad_request")
            return build.error("bad_request", "the frame could not be read")
        game = request.fields.get("game")
        game_id.set(game if isinstance(game, int) else None)
        reply = await self.service.handle(session, request)
        failed = reply is not None and reply.get("type") == "error"
        self.metrics.answered(request.type, str(reply.get("code")) if failed and reply else None)
        return reply

    @staticmethod
    async def _refuse(ws: ServerConnection) -> None:
        """No ``scorpion.v1`` offered: answer the first frame ``unsupported_version``, close."""
        with contextlib.suppress(ConnectionClosed):
            frame = await ws.recv()
            re: RequestId | None
            try:
                re = decode_request(frame).id
            except ProtocolError as exc:
                re = exc.re
            refusal = ProtocolError(
                "unsupported_version",
                f"this server speaks only the WebSocket subprotocol {SUBPROTOCOL}: offer it",
                re=re,
                supported=list(SUPPORTED_VERSIONS),
            )
            await ws.send(encode(refusal.to_message()))
            await ws.close(CLOSE_PROTOCOL_ERROR, f"offer subprotocol {SUBPROTOCOL}")

    async def _write(self, ws: ServerConnection, outbox: Outbox) -> None:
        while (frame := await outbox.get()) is not None:
            await ws.send(frame)
        if outbox.overflowed:
            log.warning("closing a connection that does not read its frames")
            await ws.close(CLOSE_GOING_AWAY, "too far behind: reconnect and resync")


def _select_subprotocol(
    connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    """``scorpion.v1`` if offered, else none (instead of websockets' HTTP 400)."""
    return Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None


class Listener:
    """The listening socket: ``websockets``' server with the protocol's settings.

    Subprotocol ``scorpion.v1`` when offered (else none: the handler refuses
    the connection in the protocol's own words), frames up to MAX_FRAME_BYTES (a larger one
    closes with 1009 unread), no permessage-deflate.
    """

    def __init__(self, server: Server) -> None:
        self._server = server

    @classmethod
    async def open(
        cls,
        handler: ConnectionHandler,
        host: str,
        port: int,
        *,
        routes: HttpRoutes | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> Listener:
        async def plain_http(ws: ServerConnection, request: HttpRequest) -> HttpResponse | None:
            if routes is None or _wants_websocket(request):
                return None
            return _response(await routes.answer(request.path))

        server = await serve(
            handler,
            host,
            port,
            subprotocols=[Subprotocol(SUBPROTOCOL)],
            select_subprotocol=_select_subprotocol,
            max_size=MAX_FRAME_BYTES,
            compression=None,
            process_request=plain_http,
            ssl=tls,
        )
        return cls(server)

    @property
    def port(self) -> int:
        return int(next(iter(self._server.sockets)).getsockname()[1])

    async def close(self) -> None:
        """Stop accepting and close every connection with 1001 (going away)."""
        self._server.close(close_connections=True)
        await self._server.wait_closed()


def _wants_websocket(request: HttpRequest) -> bool:
    upgrade = request.headers.get("Upgrade", "")
    return "websocket" in upgrade.lower()


def _response(reply: HttpReply) -> HttpResponse:
    headers = Headers(
        [
            ("Content-Type", reply.content_type),
            ("Content-Length", str(len(reply.body))),
            ("Connection", "close"),
            ("Cache-Control", reply.cache_control),
        ]
    )
    return HttpResponse(reply.status, HTTPStatus(reply.status).phrase, headers, reply.body)
