"""A raw WebSocket client over a bare TCP socket: it sends frames and reads only when told.

``RawClient.open(port)`` does the HTTP upgrade by hand on a socket whose
receive buffer is tiny, then ``send`` writes masked binary frames. Nothing
reads the socket unless the test calls ``read_close``, and nothing answers
the server's pings: this is the client that stops reading (or whose network
is gone), which ``websockets``' own client cannot be.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import struct

from protocol import SUBPROTOCOL, encode

__all__ = ["RawClient", "upgrade_head"]

RECEIVE_BUFFER = 4096


def upgrade_head(port: int, headers: dict[str, str] | None = None) -> bytes:
    """The HTTP request that opens a WebSocket of the game's subprotocol, with a fresh key."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET / HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Protocol: {SUBPROTOCOL}",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class RawClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int, headers: dict[str, str] | None = None) -> RawClient:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=2**16)
        writer.write(upgrade_head(port, headers))
        await writer.drain()
        status = await reader.readuntil(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 101"), status
        return cls(reader, writer)

    def send(self, message: dict[str, object]) -> None:
        """Queue one masked binary frame holding ``message`` (no drain: we may not block)."""
        payload = encode(message)
        mask = os.urandom(4)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x82, 0x80 | size)
        elif size < 2**16:
            head = struct.pack("!BBH", 0x82, 0x80 | 126, size)
        else:
            head = struct.pack("!BBQ", 0x82, 0x80 | 127, size)
        self.writer.write(head + mask + masked)

    async def read_close(self, timeout: float = 10.0) -> int | None:
        """Read (and drop) frames until the server's close frame: its code (None: none came)."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    first, second = await self.reader.readexactly(2)
                    size = second & 0x7F
                    if size == 126:
                        (size,) = struct.unpack("!H", await self.reader.readexactly(2))
                    elif size == 127:
                        (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
                    payload = await self.reader.readexactly(size)
                    if first & 0x0F == 0x8:
                        return int(struct.unpack("!H", payload[:2])[0]) if payload else None
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            return None

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()
