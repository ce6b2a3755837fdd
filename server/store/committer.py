"""Group commit: many coroutines' writes, one transaction (and one fsync) per batch.

Why: a move is acknowledged only once it is durable (architecture.md, "A
move, end to end", step 4). Committing each move alone costs one WAL flush
per move: with SQLite's ``synchronous=FULL`` or PostgreSQL's
``synchronous_commit=on`` that flush, not the SQL, bounds throughput. A batch
of N writes costs one flush, so throughput grows with load while latency under
light load stays that of a single commit.

How: ``submit(write)`` queues the write with a future and awaits it. One
worker task takes the first queued write, yields once to the event loop (so
writes submitted in the same loop iteration join in; this is no timer and
adds no latency), drains whatever else is queued up to ``max_batch``, and
hands the batch to the writer function in one transaction. While that
transaction runs, new submissions queue up and form the next batch: batch size
adapts to load by itself. After a batch of one write (light load: one player
acting in lock-step) the worker does not yield first: the turn of the loop it
would wait for brings nothing to join as a rule (it cost a lone action 0.8% of
its instructions, ``bench.instructions``). A write that does come in that turn
forms the next batch. With ``max_batch`` 1 it always yields: there every batch
holds one write, and a backlog committed without a yield (SQLite commits a
lone write on the loop's thread) would hold the loop until its last write.

Each submitter's await returns only after its batch committed; it gets its own
outcome. The writer returns one outcome per write: a result, or an exception
for a write refused without spoiling the transaction (a ``VersionConflict``
detected before anything of it was written); those callers get their error
while the rest of the batch commits. If the writer raises instead (the
transaction failed and was rolled back: an unexpected constraint, a deadlock,
a lost connection), nothing of the batch was stored and the committer retries
every write of it alone, one transaction each, so only the culprit fails.
When it failed with ``StoreUnavailable`` (the database is down, refusing or
timed out) there is no culprit: every write of the batch gets that error at
once, rather than waiting out the timeout once per write; but not for a
``StoreConflict`` (a deadlock with a concurrent transaction), retried alone.

``observe(on_batch, on_commit)`` reports each transaction's batch size and
each write's time from ``submit`` to its outcome (for ``server.metrics``).

Cancelling a ``submit`` does not withdraw its write (it may already be in a
transaction): the service's in-memory game and the database stay in step.
``close()`` writes everything already submitted, then stops the worker.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from server.logs import detached
from server.store.errors import StoreConflict, StoreUnavailable

__all__ = ["BatchWriter", "CommitStats", "GroupCommitter"]

W = TypeVar("W")
R = TypeVar("R")

BatchWriter = Callable[[Sequence[W]], Awaitable[Sequence[R | Exception]]]
"""Writes a batch in one transaction; one outcome per write, or raises if it rolled back."""


@dataclass
class CommitStats:
    """What the committer did: transactions run, writes committed or refused, batch sizes."""

    transactions: int = 0  # writer calls, batches and single retries alike
    writes: int = 0  # writes that got an outcome
    retried: int = 0  # writes re-run alone after their batch's transaction failed
    batch_sizes: Counter[int] = field(default_factory=Counter)

    @property
    def mean_batch(self) -> float:
        batches = sum(self.batch_sizes.values())
        return sum(size * n for size, n in self.batch_sizes.items()) / batches if batches else 0.0


class _Pending(Generic[W, R]):
    """A submitted write, its submitter's future, and when it came (``time.monotonic``)."""

    __slots__ = ("future", "submitted", "write")

    def __init__(self, write: W, future: asyncio.Future[R], submitted: float) -> None:
        self.write = write
        self.future = future
        self.submitted = submitted


def _ignore(_: float) -> None:
    pass


def _own_copy(exc: StoreUnavailable) -> StoreUnavailable:
    """One error per waiting submitter (an exception raised in many tasks collects all their
    frames), chained to the shared cause."""
    copy = StoreUnavailable(str(exc))
    copy.__cause__ = exc.__cause__
    return copy


class GroupCommitter(Generic[W, R]):
    """Collects concurrent ``submit``s into batches for ``writer`` (module docstring)."""

    def __init__(self, writer: BatchWriter[W, R], *, max_batch: int = 64) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self._writer = writer
        self._max_batch = max_batch
        self._queue: list[_Pending[W, R]] = []  # submitted, not yet in a batch
        self._wake: asyncio.Future[None] | None = None  # the worker, waiting for a write
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self.stats = CommitStats()
        self._on_batch: Callable[[float], None] = _ignore
        self._on_commit: Callable[[float], None] = _ignore

    def observe(
        self, on_batch: Callable[[float], None], on_commit: Callable[[float], None]
    ) -> None:
        """Call ``on_batch(size)`` per transaction and ``on_commit(seconds)`` per write."""
        self._on_batch, self._on_commit = on_batch, on_commit

    async def submit(self, write: W) -> R:
        """Write ``write`` with whatever else is pending; its outcome once committed."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        worker = self._worker
        if worker is None or worker.done():
            worker, loop = None, asyncio.get_running_loop()
        else:  # a running worker's loop is this one, and asking costs nothing
            loop = worker.get_loop()  # (get_running_loop() is a getpid() call on 3.11)
        future: asyncio.Future[R] = loop.create_future()
        self._queue.append(_Pending(write, future, time.monotonic()))
        if worker is None:
            self._worker = detached(self._run(), name="store-group-commit")
        else:
            self._wake_worker()
        return await future

    @property
    def idle(self) -> bool:
        """No write queued or being committed."""
        worker = self._worker
        return not self._queue and (worker is None or worker.done() or self._wake is not None)

    async def close(self) -> None:
        """Refuse new writes, commit the queued ones, stop the worker."""
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            self._wake_worker()
            await worker  # cancelled (a close given up), so is the worker

    def _wake_worker(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def _run(self) -> None:
        """Commit what is queued, a batch at a time; return once closed and drained."""
        queue = self._queue
        loop = asyncio.get_running_loop()
        lone = False  # the last batch held the one write queued: the load is light
        while True:
            if not queue:
                if self._closed:
                    return
                self._wake = loop.create_future()
                try:
                    await self._wake
                finally:
                    self._wake = None
                continue
            if not lone:
                await asyncio.sleep(0)  # let writes submitted in this loop iteration join
            batch = queue[: self._max_batch]
            del queue[: self._max_batch]
            # Light load: the batch could have held more writes, and one was queued. (With
            # max_batch 1 a batch says nothing of the load; the yield keeps a backlog of
            # inline commits from holding the loop until the last of them.)
            lone = len(batch) == 1 < self._max_batch
            await self._flush(batch)

    async def _flush(self, batch: Sequence[_Pending[W, R]]) -> None:
        """One transaction for ``batch``; if it fails, one per write."""
        self.stats.transactions += 1
        self.stats.batch_sizes[len(batch)] += 1
        self._on_batch(len(batch))
        try:
            outcomes = await self._writer([pending.write for pending in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"{len(outcomes)} outcomes for {len(batch)} writes")
        except Exception as exc:
            if len(batch) == 1:
                self._settle(batch[0], exc)
                return
            if isinstance(exc, StoreUnavailable) and not isinstance(exc, StoreConflict):
                for pending in batch:
                    self._settle(pending, _own_copy(exc))
                return
            self.stats.retried += len(batch)
            for pending in batch:
                await self._flush([pending])
            return
        for pending, outcome in zip(batch, outcomes, strict=True):
            self._settle(pending, outcome)

    def _settle(self, pending: _Pending[W, R], outcome: R | Exception) -> None:
        self.stats.writes += 1
        if not isinstance(outcome, Exception):
            self._on_commit(time.monotonic() - pending.submitted)
        if pending.future.done():  # the submitter was cancelled; the write stands
            return
        if isinstance(outcome, Exception):
            pending.future.set_exception(outcome)
        else:
            pending.future.set_result(outcome)
