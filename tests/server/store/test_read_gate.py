"""The store's read gate: reads take pooled connections in turn; a known outage fails fast."""

from __future__ import annotations

import asyncio

import pytest

from server.store import StoreUnavailable
from server.store.store import _ReadGate


async def test_reads_take_their_turns_in_order_and_at_most_slots_at_once() -> None:
    gate = _ReadGate(3)
    inside = most = 0
    entered: list[int] = []

    async def read(n: int) -> None:
        nonlocal inside, most
        async with gate.turn():
            entered.append(n)
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.001)
            inside -= 1

    await asyncio.gather(*(read(n) for n in range(30)))
    assert most == 3 and entered == list(range(30))


async def test_while_the_database_is_down_one_read_tries_and_the_others_fail_at_once() -> None:
    gate = _ReadGate(3)
    with pytest.raises(StoreUnavailable):
        async with gate.turn():
            raise StoreUnavailable("down")
    answer = asyncio.Event()

    async def probe() -> str:
        async with gate.turn():
            await answer.wait()  # the database takes its time
            return "read"

    probing = asyncio.create_task(probe())
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(StoreUnavailable):
        async with gate.turn():
            pytest.fail("a second read went to the database while it is down")
    assert loop.time() - started < 0.05
    answer.set()
    assert await probing == "read"
    async with gate.turn():  # back up: reads go through again
        pass


async def test_reads_queued_when_the_database_went_down_fail_at_once() -> None:
    """Both connections busy with reads that time out, three more waiting: the first of
    those tries the database again, the other two are answered at once."""
    gate = _ReadGate(2)
    release = asyncio.Event()
    tried: list[str] = []

    async def slow(name: str) -> None:
        async with gate.turn():
            await release.wait()
            raise StoreUnavailable(f"{name}: no answer in time")

    async def queued(name: str) -> None:
        async with gate.turn():
            tried.append(name)
            await asyncio.sleep(0.05)  # the probe: still no answer
            raise StoreUnavailable(f"{name}: no answer in time")

    busy = [asyncio.create_task(slow(name)) for name in ("a", "b")]
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(queued(name)) for name in ("c", "d", "e")]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*busy, *waiting, return_exceptions=True)
    assert all(isinstance(result, StoreUnavailable) for result in results)
    assert tried == ["c"]  # d and e never reached the database
