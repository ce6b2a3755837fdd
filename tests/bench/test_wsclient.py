"""The storm benchmark's lean WebSocket client against ``websockets``' own server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader
from websockets.typing import Subprotocol

from bench import wsclient
from bench.wsclient import HandshakeFailed, masked_frame

Handler = Callable[[ServerConnection], Awaitable[None]]


async def _echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


@pytest.fixture
async def listening() -> AsyncIterator[Callable[..., Awaitable[int]]]:
    """Start a ``websockets`` server with ``handler``: its port."""
    servers = []

    async def start(handler: Handler = _echo, subprotocol: str | None = "scorpion.v1") -> int:
        offered = [Subprotocol(subprotocol)] if subprotocol else None
        server = await serve(handler, "127.0.0.1", 0, subprotocols=offered, compression=None)
        servers.append(server)
        port: int = server.sockets[0].getsockname()[1]
        return port

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


def test_a_frame_is_masked_as_a_server_reads_it() -> None:
    for size in (0, 1, 125, 126, 65535, 65536):
        payload = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
        reader = StreamReader()
        reader.feed_data(masked_frame(0x2, payload))
        reader.feed_eof()
        parsing = Frame.parse(reader.read_exact, mask=True)  # as a server: masks required
        with pytest.raises(StopIteration) as parsed:
            next(parsing)
        frame = parsed.value.value
        assert (frame.opcode, frame.data, frame.fin) == (Opcode.BINARY, payload, True)
    assert masked_frame(0x2, b"ab", b"\x01\x02\x03\x04")[2:] == b"\x01\x02\x03\x04\x60\x60"


async def test_messages_go_both_ways(listening: Callable[..., Awaitable[int]]) -> None:
    port = await listening()
    ws = await wsclient.connect("127.0.0.1", port, "scorpion.v1")
    for message in (b"", b"x", b"y" * 70_000):
        await ws.send(message)
        assert await ws.recv() == message
    await ws.close()


async def test_fragments_are_joined_and_pings_answered(
    listening: Callable[..., Awaitable[int]],
) -> None:
    pongs = []

    async def fragments(ws: ServerConnection) -> None:
        await ws.send([b"ab", b"cd", b"ef"])  # one message in three frames
        pong = await ws.ping(b"are you there")
        await pong
        pongs.append(True)
        await ws.send(b"after the ping")
        await ws.wait_closed()

    port = await listening(fragments)
    ws = await wsclient.connect("127.0.0.1", port, "scorpion.v1")
    assert await ws.recv() == b"abcdef"
    assert await ws.recv() == b"after the ping"
    assert pongs == [True]
    await ws.close()


async def test_a_close_from_the_server_ends_recv(listening: Callable[..., Awaitable[int]]) -> None:
    async def close(ws: ServerConnection) -> None:
        await ws.close(1008, "no hello in time")

    port = await listening(close)
    ws = await wsclient.connect("127.0.0.1", port, "scorpion.v1")
    with pytest.raises(ConnectionError, match="1008 no hello in time"):
        await ws.recv()
    with pytest.raises(ConnectionError):
        await ws.send(b"too late")


async def test_a_server_without_the_subprotocol_is_refused(
    listening: Callable[..., Awaitable[int]],
) -> None:
    port = await listening(subprotocol=None)
    with pytest.raises(HandshakeFailed, match="subprotocol"):
        await wsclient.connect("127.0.0.1", port, "scorpion.v1")


async def test_a_server_that_is_not_websocket_is_refused() -> None:
    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    for handler, match in ((http, "404"), (silent, "closed the connection")):
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(HandshakeFailed, match=match):
            await wsclient.connect("127.0.0.1", port, "scorpion.v1")
        server.close()
        await server.wait_closed()


async def test_a_refused_connection_is_an_os_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        await wsclient.connect("127.0.0.1", port, "scorpion.v1", timeout=5)
