"""A stand-in PostgreSQL server for the failures a real one cannot be asked for on demand.

``FakePostgres`` listens on 127.0.0.1 and treats every connection one way:
``refuse(sqlstate, message)`` answers the start-up packet with a FATAL
ErrorResponse carrying that SQLSTATE (as PostgreSQL does while it shuts down:
57P03), and ``hang()`` accepts and never answers (a frozen server or a
black-holed network). ``url`` is an asyncpg URL pointing at it.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Final

__all__ = ["FakePostgres"]


class FakePostgres:
    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._sqlstate: str | None = None
        self._message = ""
        self._writers: list[asyncio.StreamWriter] = []
        self.connections = 0

    async def __aenter__(self) -> FakePostgres:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"postgresql+asyncpg://postgres@127.0.0.1:{port}/fake?ssl=disable"

    def refuse(self, sqlstate: str, message: str) -> FakePostgres:
        self._sqlstate, self._message = sqlstate, message
        return self

    def hang(self) -> FakePostgres:
        self._sqlstate = None
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        try:
            if self._sqlstate is None:
                await reader.read()  # never answer; wait for the client to give up
                return
            await refuse_startup(reader, writer, self._sqlstate, self._message)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


_SSL_REQUEST: Final = 80877103


async def refuse_startup(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sqlstate: str, message: str
) -> None:
    """Answer a client's start-up (declining TLS first if asked) with a FATAL error."""
    while True:
        (length,) = struct.unpack("!I", await reader.readexactly(4))
        body = await reader.readexactly(length - 4)
        if length == 8 and struct.unpack("!I", body)[0] == _SSL_REQUEST:
            writer.write(b"N")  # no TLS here; the client goes on in plain text
            continue
        break
    fields = f"SFATAL\0VFATAL\0C{sqlstate}\0M{message}\0\0".encode()
    writer.write(b"E" + struct.pack("!I", len(fields) + 4) + fields)
    await writer.drain()


class FreezableProxy:
    """A TCP proxy to a real server that can stop passing bytes on (a frozen database).

    While frozen, what either side sends is held back, as a stopped
    PostgreSQL holds a request it has received; ``thaw()`` lets it through.
    ``shut_down()`` drops every connection and answers new ones with SQLSTATE
    57P03 ("the database system is shutting down") until ``reopen()``. ``delay``
    (seconds) holds back what the client sends by that long: a slow network.
    """

    delay = 0.0

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server: asyncio.Server | None = None
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._refusing = False

    async def __aenter__(self) -> FreezableProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def freeze(self) -> None:
        self._flowing.clear()

    def shut_down(self) -> None:
        """Drop every connection and refuse new ones as a PostgreSQL shutting down does."""
        self._refusing = True
        for writer in list(self._writers):
            writer.close()

    def reopen(self) -> None:
        self._refusing = False

    def thaw(self) -> None:
        self._flowing.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                await refuse_startup(
                    reader, writer, "57P03", "the database system is shutting down"
                )
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._writers.update((writer, up_writer))
        for source, sink, slow in ((reader, up_writer, True), (up_reader, writer, False)):
            task = asyncio.create_task(self._pump(source, sink, slow))
            self._tasks.add(task)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, slow: bool
    ) -> None:
        try:
            while data := await source.read(65536):
                if slow and self.delay:
                    await asyncio.sleep(self.delay)
                await self._flowing.wait()
                sink.write(data)
                await sink.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            sink.close()
