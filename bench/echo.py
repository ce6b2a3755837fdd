"""The ceiling: a bare ``websockets`` server that decodes each frame and answers one.

What the full server is measured against (``bench.load --target echo``): the
same library, the same loopback, the same clients, but no protocol checks, no
game, no store, no pushes. Each msgpack frame is decoded and answered with one
frame of about the size of the server's ``ack`` (``re``, ``game``, ``v``), so
the clients' ``Player`` runs unchanged against it. Whatever the full server
costs beyond this is ours; this much is the stack's.

    python -m bench.echo --port PORT [--loop auto|uvloop|asyncio]
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import Any

import msgpack
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from bench.common import Parser, port, run_main
from protocol import MAX_FRAME_BYTES, SUBPROTOCOL
from server.config import Settings
from server.loop import LOOPS
from server.loop import run as run_loop

__all__ = ["answer"]


def answer(frame: bytes | str) -> bytes:
    """The reply to one request frame: an ack-sized map naming its id and the next version."""
    request: dict[str, Any] = msgpack.unpackb(frame, raw=False)
    v = request.get("v", -1)
    reply = {"type": "ack", "re": request.get("id"), "game": request.get("game", 1), "v": v + 1}
    packed: bytes = msgpack.packb(reply)
    return packed


async def _echo(ws: ServerConnection) -> None:
    with contextlib.suppress(ConnectionClosed):  # a client gone, or the server stopping
        async for frame in ws:
            await ws.send(answer(frame))


async def _serve(port: int) -> None:
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    # The subprotocol chosen and the listen backlog as the server's: the same handshake,
    # and the same queue for a storm of connections (``bench.reconnect --target echo``).
    subprotocols = [Subprotocol(SUBPROTOCOL)]
    async with serve(
        _echo,
        "127.0.0.1",
        port,
        compression=None,
        max_size=MAX_FRAME_BYTES,
        subprotocols=subprotocols,
        backlog=Settings().listen_backlog,
    ):
        await stop


def _main(argv: Sequence[str] | None) -> int:
    parser = Parser(prog="python -m bench.echo", description=__doc__)
    parser.add_argument("--port", type=port, required=True)
    parser.add_argument("--loop", choices=LOOPS, default="auto", help="the event loop")
    args = parser.parse_args(argv)
    run_loop(_serve(args.port), args.loop)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("python -m bench.echo", _main, argv)


if __name__ == "__main__":
    sys.exit(main())
