"""GroupCommitter on its own, with a fake writer: batching, isolation of failures, shutdown."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence

import pytest

from server.store import GroupCommitter, StoreConflict, StoreUnavailable, VersionConflict


class FakeWriter:
    """Records each batch; ``bad`` writes are refused, ``poison`` spoils a whole batch."""

    def __init__(self, *, bad: int | None = None, poison: int | None = None) -> None:
        self.batches: list[list[int]] = []
        self.bad = bad
        self.poison = poison
        self.gate: asyncio.Event | None = None

    async def __call__(self, writes: Sequence[int]) -> list[int | Exception]:
        self.batches.append(list(writes))
        if self.gate is not None:
            await self.gate.wait()
        if self.poison in writes and len(writes) > 1:
            raise RuntimeError("the transaction failed")
        if self.poison is not None and self.poison in writes:
            raise VersionConflict(self.poison, 0)
        return [VersionConflict(w, 0) if w == self.bad else w * 10 for w in writes]


async def test_a_lone_write_goes_at_once() -> None:
    writer = FakeWriter()
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    assert await asyncio.wait_for(committer.submit(1), timeout=1) == 10
    assert writer.batches == [[1]]
    await committer.close()


async def test_concurrent_writes_share_a_transaction() -> None:
    writer = FakeWriter()
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    results = await asyncio.gather(*(committer.submit(n) for n in range(50)))
    assert results == [n * 10 for n in range(50)]
    assert writer.batches == [list(range(50))]
    assert committer.stats.transactions == 1 and committer.stats.batch_sizes == {50: 1}
    await committer.close()


async def test_batches_are_capped() -> None:
    writer = FakeWriter()
    committer: GroupCommitter[int, int] = GroupCommitter(writer, max_batch=4)
    await asyncio.gather(*(committer.submit(n) for n in range(10)))
    assert [len(batch) for batch in writer.batches] == [4, 4, 2]
    await committer.close()


async def test_writes_queued_during_a_transaction_form_the_next_batch() -> None:
    writer = FakeWriter()
    writer.gate = asyncio.Event()
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    first = asyncio.ensure_future(committer.submit(0))
    while not writer.batches:
        await asyncio.sleep(0)
    later = [asyncio.ensure_future(committer.submit(n)) for n in range(1, 6)]
    await asyncio.sleep(0)
    writer.gate.set()
    assert await first == 0 and [await f for f in later] == [10, 20, 30, 40, 50]
    assert writer.batches == [[0], [1, 2, 3, 4, 5]]
    await committer.close()


@pytest.mark.parametrize("max_batch", [1, 4])
async def test_a_backlog_of_writes_lets_the_loop_run_between_its_batches(max_batch: int) -> None:
    # A writer that never awaits (SQLite's inline commit) holds the loop while it runs: a
    # backlog of writes, each in a batch of its own (max_batch 1), must not be committed in
    # one stretch without the loop serving anything else in between.
    writer = FakeWriter()
    committer: GroupCommitter[int, int] = GroupCommitter(writer, max_batch=max_batch)
    await committer.submit(0)  # the last batch held one write
    written_at_each_turn: list[int] = []

    async def turns() -> None:
        while True:
            written_at_each_turn.append(sum(map(len, writer.batches)))
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(turns())
    await asyncio.gather(*(committer.submit(n) for n in range(1, 49)))
    watcher.cancel()
    steps = [b - a for a, b in itertools.pairwise(written_at_each_turn)]
    assert max(steps) <= max_batch  # at most one batch between two turns of the loop
    await committer.close()


async def test_a_refused_write_fails_alone_in_its_batch() -> None:
    writer = FakeWriter(bad=3)
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    results = await asyncio.gather(*(committer.submit(n) for n in range(6)), return_exceptions=True)
    assert isinstance(results[3], VersionConflict)
    assert [r for i, r in enumerate(results) if i != 3] == [0, 10, 20, 40, 50]
    assert committer.stats.transactions == 1 and committer.stats.retried == 0
    await committer.close()


async def test_a_failed_transaction_is_retried_write_by_write() -> None:
    writer = FakeWriter(poison=2)
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    results = await asyncio.gather(*(committer.submit(n) for n in range(5)), return_exceptions=True)
    assert isinstance(results[2], VersionConflict)
    assert [r for i, r in enumerate(results) if i != 2] == [0, 10, 30, 40]
    assert writer.batches == [[0, 1, 2, 3, 4], [0], [1], [2], [3], [4]]
    assert committer.stats.transactions == 6 and committer.stats.retried == 5
    assert committer.stats.writes == 5
    await committer.close()


async def test_an_unavailable_database_fails_the_batch_at_once() -> None:
    """No culprit to find: one failed transaction, not one timeout per write."""

    async def down(writes: Sequence[int]) -> list[int | Exception]:
        batches.append(list(writes))
        raise StoreUnavailable("the database cannot be reached")

    batches: list[list[int]] = []
    committer: GroupCommitter[int, int] = GroupCommitter(down)
    results = await asyncio.gather(*(committer.submit(n) for n in range(5)), return_exceptions=True)
    assert all(isinstance(r, StoreUnavailable) for r in results)
    assert len({id(r) for r in results}) == 5  # each submitter raises its own
    assert batches == [[0, 1, 2, 3, 4]] and committer.stats.retried == 0
    await committer.close()


async def test_a_batch_given_up_for_a_deadlock_is_retried_write_by_write() -> None:
    """A deadlock has no culprit either, but nothing is down: each write goes again alone."""

    async def deadlocked_once(writes: Sequence[int]) -> list[int | Exception]:
        batches.append(list(writes))
        if len(writes) > 1:
            raise StoreConflict("the database gave the work up for a concurrent one")
        return [n * 10 for n in writes]

    batches: list[list[int]] = []
    committer: GroupCommitter[int, int] = GroupCommitter(deadlocked_once)
    results = await asyncio.gather(*(committer.submit(n) for n in range(4)))
    assert results == [0, 10, 20, 30]
    assert batches == [[0, 1, 2, 3], [0], [1], [2], [3]] and committer.stats.retried == 4
    await committer.close()


async def test_observers_see_batch_sizes_and_commit_times() -> None:
    sizes: list[float] = []
    seconds: list[float] = []
    committer: GroupCommitter[int, int] = GroupCommitter(FakeWriter(bad=1))
    committer.observe(sizes.append, seconds.append)
    await asyncio.gather(*(committer.submit(n) for n in range(4)), return_exceptions=True)
    assert sizes == [4] and len(seconds) == 3 and all(s >= 0 for s in seconds)
    await committer.close()


async def test_close_writes_what_was_submitted_then_refuses() -> None:
    writer = FakeWriter()
    writer.gate = asyncio.Event()
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    pending = [asyncio.ensure_future(committer.submit(n)) for n in range(3)]
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(committer.close())
    await asyncio.sleep(0)
    writer.gate.set()
    await closing
    assert [await f for f in pending] == [0, 10, 20]
    with pytest.raises(StoreUnavailable, match="closed"):
        await committer.submit(9)


async def test_a_cancelled_submit_still_writes() -> None:
    writer = FakeWriter()
    writer.gate = asyncio.Event()
    committer: GroupCommitter[int, int] = GroupCommitter(writer)
    task = asyncio.ensure_future(committer.submit(7))
    while not writer.batches:
        await asyncio.sleep(0)
    task.cancel()
    writer.gate.set()
    await committer.close()
    assert task.cancelled() and writer.batches == [[7]]
    assert committer.stats.writes == 1


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GroupCommitter(FakeWriter(), max_batch=0)
