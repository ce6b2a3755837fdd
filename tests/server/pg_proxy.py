"""A TCP relay to the real PostgreSQL that can go silent, for the network's failures.

``SilentProxy(host, port)`` listens on 127.0.0.1 and relays each connection to
the database. ``silence()`` stops relaying, both ways, on every connection open
at that moment, and closes none: what a half-open TCP connection looks like
after a partition, a database host that died, or a NAT that forgot the
connection. Connections made later are relayed as before. ``url_for(url)``
is ``url`` pointed at the relay.
"""

from __future__ import annotations

import asyncio
import contextlib

from sqlalchemy.engine import make_url

__all__ = ["SilentProxy"]


class _Relay:
    def __init__(self) -> None:
        self.silent = False
        self.tasks: list[asyncio.Task[None]] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if self.silent:
                    continue  # swallowed: neither end hears of it
                writer.write(data)
                await writer.drain()
        writer.close()


class SilentProxy:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._server: asyncio.Server | None = None
        self._relays: list[_Relay] = []

    async def __aenter__(self) -> SilentProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for relay in self._relays:
            for task in relay.tasks:
                task.cancel()
            for writer in relay.writers:
                writer.close()
        await self._server.wait_closed()

    def url_for(self, url: str) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return make_url(url).set(host="127.0.0.1", port=port).render_as_string(hide_password=False)

    def silence(self) -> None:
        for relay in self._relays:
            relay.silent = True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        relay = _Relay()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        relay.writers = [writer, up_writer]
        relay.tasks = [
            asyncio.create_task(relay.pump(reader, up_writer)),
            asyncio.create_task(relay.pump(up_reader, writer)),
        ]
        self._relays.append(relay)
