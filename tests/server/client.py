"""A small asyncio test client for the Scorpion protocol over real WebSockets.

``Client.connect(url)`` opens a connection offering ``scorpion.v1``; a reader
task decodes every frame into ``frames`` (all of them, in order, for the
hidden-information scan), resolves replies by ``re`` and queues pushes and
unaddressed errors on ``pushes``. ``request`` sends one request and returns
its reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from protocol import SUBPROTOCOL, encode

__all__ = ["Client"]

TIMEOUT = 20.0
Message = dict[str, Any]


class Client:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[Message] = []
        self.pushes: asyncio.Queue[Message] = asyncio.Queue()
        self._waiting: dict[Any, asyncio.Future[Message]] = {}
        self._ids = itertools.count(1)
        self.token: str | None = None
        self.player: Message | None = None
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str) -> Client:
        ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None)
        return cls(ws)

    async def _read(self) -> None:
        try:
            await self._read_frames()
        finally:  # a request whose reply can no longer come fails at once
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionResetError("the connection closed"))

    async def _read_frames(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                assert isinstance(frame, bytes), "the server sends binary frames only"
                message: Message = msgpack.unpackb(frame, raw=False)
                self.frames.append(message)
                future = self._waiting.pop(message.get("re"), None)
                if future is not None and not future.done():
                    future.set_result(message)
                else:
                    self.pushes.put_nowait(message)

    async def send_raw(self, frame: bytes | str) -> None:
        await self.ws.send(frame)

    async def request(self, type_: str, *, id_: Any = None, **fields: Any) -> Message:
        """Send ``{type, id, **fields}`` and return the reply (a new id unless given)."""
        request_id = next(self._ids) if id_ is None else id_
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        await self.ws.send(encode({"type": type_, "id": request_id, **fields}))
        return await asyncio.wait_for(future, TIMEOUT)

    async def pipeline(self, requests: list[dict[str, Any]]) -> list[Message]:
        """Send every request (``{type, **fields}``) without waiting, then await the replies."""
        loop = asyncio.get_running_loop()
        futures = []
        for fields in requests:
            request_id = next(self._ids)
            future: asyncio.Future[Message] = loop.create_future()
            self._waiting[request_id] = future
            futures.append(future)
            await self.ws.send(encode({**fields, "id": request_id}))
        # Thousands at once (a long game built by one pipeline) take seconds on a busy
        # machine: 10 ms more for each, beyond one request's time.
        return list(await asyncio.wait_for(asyncio.gather(*futures), TIMEOUT + 0.01 * len(futures)))

    async def hello(self, token: str | None = None, locale: str = "en") -> Message:
        fields: dict[str, Any] = {"protocol": 1, "client": "test/1", "locale": locale}
        if token is not None:
            fields["token"] = token
        return await self.request("hello", **fields)

    async def register(self, name: str) -> Message:
        await self.hello()
        reply = await self.request("register", name=name)
        assert reply["type"] == "registered", reply
        self.token = reply["token"]
        self.player = reply["player"]
        return reply

    async def push(self, timeout: float = TIMEOUT) -> Message:
        return await asyncio.wait_for(self.pushes.get(), timeout)

    async def events_until(self, v: int) -> list[Message]:
        """Pushes up to and including the ``events`` push of version ``v``."""
        seen = []
        while True:
            message = await self.push()
            seen.append(message)
            if (
                message.get("type") == "events"
                and message["v"] >= v
                and any(event["type"] != "clock" for event in message["events"])
            ):
                return seen

    def drain(self) -> list[Message]:
        out = []
        while not self.pushes.empty():
            out.append(self.pushes.get_nowait())
        return out

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
