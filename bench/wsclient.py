"""A lean WebSocket client for the connection storms of ``bench.reconnect``.

Why: in a storm, every client opens a connection, says two things and reads two
answers, and the clients all share one core. Through ``websockets``' client
that took about 820 us of the clients' CPU per connection (against a bare echo
server, 2026-12-03), as much as the server's own work for a returning player:
the storm measured its clients as much as the server. This client does the
same on the wire for a fraction of that (``docs/benchmarks.md``).

What: RFC 6455's client side, as much as the benchmark needs. The opening
handshake is checked (status 101, ``Sec-WebSocket-Accept`` for a random key,
the subprotocol); each message leaves as one binary frame masked with a random
key; the server's frames are read whole (fragments joined, pings answered with
a pong, a close frame answered and the connection closed). No extensions
(``websockets``' server then sends uncompressed frames), no TLS, no proxies.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from collections import deque
from typing import Final

__all__ = ["HandshakeFailed", "LeanConnection", "connect"]

_GUID: Final = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class HandshakeFailed(ConnectionError):
    """The server did not switch to WebSocket as asked (or closed before it did)."""


def masked_frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One final client frame of ``payload``, masked with ``mask`` (4 random bytes by default)."""
    mask = os.urandom(4) if mask is None else mask
    size = len(payload)
    if size < 126:
        head = bytes((0x80 | opcode, 0x80 | size))
    elif size < 1 << 16:
        head = bytes((0x80 | opcode, 0x80 | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
    # XOR as one big integer: the whole payload in a few C calls, not a loop per byte.
    key = int.from_bytes((mask * (size // 4 + 1))[:size], "big")
    body = (int.from_bytes(payload, "big") ^ key).to_bytes(size, "big")
    return head + mask + body


class LeanConnection(asyncio.Protocol):
    """One client connection: ``send`` and ``recv`` whole binary messages, then ``close``."""

    def __init__(self, key: str, subprotocol: str) -> None:
        self._accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
        self._subprotocol = subprotocol
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._open = False
        self._closed = False
        self._opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._messages: deque[bytes] = deque()
        self._fragments: list[bytes] = []
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None

    # -- the caller's side ----------------------------------------------------

    async def send(self, message: bytes) -> None:
        if self._closed or self._transport is None:
            raise ConnectionError("the connection is closed")
        self._transport.write(masked_frame(_BINARY, message))

    async def recv(self) -> bytes:
        """The next whole message from the server."""
        while not self._messages:
            if self._closed:
                raise self._error or ConnectionError("the connection is closed")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._messages.popleft()

    async def close(self) -> None:
        """Say goodbye (close code 1000) and close the socket."""
        if self._transport is not None and not self._closed:
            self._transport.write(masked_frame(_CLOSE, (1000).to_bytes(2, "big")))
            self._transport.close()
        self._closed = True

    # -- asyncio's side -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            if not self._open and not self._handshake():
                return
            self._frames()
        except ConnectionError as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._open:
            self._fail(HandshakeFailed("the server closed the connection during the handshake"))
        else:
            self._fail(exc or ConnectionError("the server closed the connection"))

    # -- internals ------------------------------------------------------------

    def _handshake(self) -> bool:
        """Read the server's answer to the opening handshake once it is all here."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > 16_384:
                raise HandshakeFailed("the handshake's answer is too long")
            return False
        status, *lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        if not status.startswith("HTTP/1.1 101 "):
            raise HandshakeFailed(f"the server answered {status!r}")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("upgrade", "").lower() != "websocket":
            raise HandshakeFailed("the answer does not upgrade to websocket")
        if headers.get("sec-websocket-accept") != self._accept:
            raise HandshakeFailed("the answer's Sec-WebSocket-Accept does not match the key")
        if headers.get("sec-websocket-protocol") != self._subprotocol:
            raise HandshakeFailed(f"the server did not choose the subprotocol {self._subprotocol}")
        if "sec-websocket-extensions" in headers:
            raise HandshakeFailed("the server chose an extension this client did not offer")
        self._open = True
        self._opened.set_result(None)
        return True

    def _frames(self) -> None:
        """Take every whole frame off the buffer."""
        buffer = self._buffer
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            if second & 0x80 or first & 0x70:
                raise ConnectionError("the server sent a masked frame, or reserved bits")
            size, at = second & 0x7F, 2
            if size == 126:
                if len(buffer) < 4:
                    return
                size, at = int.from_bytes(buffer[2:4], "big"), 4
            elif size == 127:
                if len(buffer) < 10:
                    return
                size, at = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < at + size:
                return
            payload = bytes(buffer[at : at + size])
            del buffer[: at + size]
            self._frame(first & 0x0F, bool(first & 0x80), payload)

    def _frame(self, opcode: int, final: bool, payload: bytes) -> None:
        if opcode in (_TEXT, _BINARY, _CONTINUATION):
            if (opcode == _CONTINUATION) != bool(self._fragments):
                raise ConnectionError("a continuation frame out of place")
            if not final:
                self._fragments.append(payload)
                return
            if self._fragments:
                payload = b"".join([*self._fragments, payload])
                self._fragments.clear()
            self._messages.append(payload)
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(None)
        elif opcode == _PING:
            assert self._transport is not None
            self._transport.write(masked_frame(_PONG, payload))
        elif opcode == _CLOSE:
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            reason = payload[2:].decode("utf-8", "replace")
            if self._transport is not None and not self._closed:
                self._transport.write(masked_frame(_CLOSE, payload[:2]))
                self._transport.close()
            self._fail(ConnectionError(f"the server closed the connection: {code} {reason}"))
        elif opcode != _PONG:
            raise ConnectionError(f"an unknown opcode {opcode:#x}")

    def _fail(self, exc: Exception) -> None:
        if self._closed and self._error is not None:
            return
        self._closed = True
        self._error = exc
        if not self._opened.done():
            self._opened.set_exception(exc)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        if self._transport is not None:
            self._transport.close()


async def connect(host: str, port: int, subprotocol: str, timeout: float = 60) -> LeanConnection:
    """Open a WebSocket connection to ``ws://host:port/`` speaking ``subprotocol``.

    Raises ``OSError`` when the socket cannot be opened (``HandshakeFailed``, one, when
    the server refuses the upgrade or closes first) and ``TimeoutError`` after ``timeout``.
    """
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n"
    ).encode()
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        transport, connection = await loop.create_connection(
            lambda: LeanConnection(key, subprotocol), host, port
        )
        transport.write(request)
        try:
            await connection._opened
        except BaseException:
            transport.close()
            raise
    return connection
