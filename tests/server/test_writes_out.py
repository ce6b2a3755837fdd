"""Frames out: what one connection is sent in the same turn leaves in one write."""

from __future__ import annotations

import asyncio
from typing import Any

from server.hub import Outbox
from tests.server.conftest import Running


async def test_a_batch_is_what_is_queued_within_its_bounds() -> None:
    outbox = Outbox()
    for frame in (b"a" * 10, b"b" * 10, b"c" * 10, b"d" * 30):
        outbox.put(frame)
    assert await outbox.get_batch(2, 1000) == [b"a" * 10, b"b" * 10]
    assert await outbox.get_batch(10, 35) == [b"c" * 10]  # the next would pass 35 bytes
    assert await outbox.get_batch(10, 5) == [b"d" * 30]  # the first goes out whatever its size
    waiting = asyncio.create_task(outbox.get_batch(10, 1000))
    await asyncio.sleep(0)
    assert not waiting.done()
    outbox.put(b"e")
    assert await waiting == [b"e"] and outbox.queued_bytes == 0
    outbox.close()
    assert await outbox.get_batch(10, 1000) is None


async def test_an_ack_and_its_push_leave_in_one_write(server: Running) -> None:
    ada = await server.player("ada")
    start = await ada.request("new_game", level="hard", deal=1)
    handler = server.server.handler
    assert handler is not None
    (ws,) = handler._sockets.values()
    writes: list[bytes] = []
    write = ws.transport.write

    def counted(data: Any) -> None:
        writes.append(bytes(data))
        write(data)

    ws.transport.write = counted  # type: ignore[method-assign]
    ada.drain()
    reply = await ada.request("deal", game=start["game"], v=start["v"])
    assert reply["type"] == "ack", reply
    (push,) = await ada.events_until(reply["v"])
    assert push["v"] == reply["v"]
    assert len(writes) == 1, [len(data) for data in writes]


async def test_the_owners_frames_wait_for_its_flush_and_others_call_back_next_turn() -> None:
    """A connection's own task (its replies, its actions' pushes) writes when it has
    answered (``flush``); a push from another task is written in the next loop turn."""
    outbox = Outbox()
    calls: list[list[bytes]] = []
    outbox.on_ready(lambda: calls.append(outbox.take_batch(10, 1000)), owner=asyncio.current_task())
    outbox.put(b"push")
    outbox.put(b"ack")
    await asyncio.sleep(0)
    assert calls == []  # the owner has not flushed yet
    outbox.flush()
    assert calls == [[b"push", b"ack"]]
    outbox.flush()
    assert len(calls) == 1  # nothing owed

    async def other() -> None:
        outbox.put(b"from another device")
        assert len(calls) == 1  # called back in the next turn, not at once

    await asyncio.create_task(other())
    await asyncio.sleep(0)
    assert calls[-1] == [b"from another device"]
