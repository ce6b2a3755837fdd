"""Which event loop runs the server: uvloop when installed, else asyncio's own.

uvloop (libuv under asyncio's API) does the same work with less CPU per
socket operation; it is an optional dependency (the ``server`` extra), so a
plain install still runs on the standard loop. ``choice`` is ``"auto"``
(uvloop if importable), ``"uvloop"`` (required: ImportError without it) or
``"asyncio"`` (the standard loop, whatever is installed).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable, Collection, Coroutine
from typing import Any, Final, TypeVar

__all__ = ["LOOPS", "finish_within", "loop_factory", "run", "stop_task"]

T = TypeVar("T")
LOOPS: Final = ("auto", "uvloop", "asyncio")


def loop_factory(choice: str = "auto") -> Callable[[], asyncio.AbstractEventLoop]:
    """The function that makes the chosen loop (module docstring)."""
    if choice not in LOOPS:
        raise ValueError(f"unknown event loop {choice!r}: one of {', '.join(LOOPS)}")
    if choice != "asyncio":
        try:
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            if choice == "uvloop":
                raise
        else:
            factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
            return factory
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T], choice: str = "auto") -> T:
    """``asyncio.run(main)`` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)


async def stop_task(task: asyncio.Task[Any] | None, *, insist: bool = False) -> None:
    """Cancel ``task`` (when there is one) and wait until it has ended.

    ``insist``: cancelled again each ``CANCEL_AGAIN_S`` while it runs on, for a task
    that loops on timeouts of its own and cleans up at once when cancelled. A
    cancellation that lands as such a timeout expires can be taken for it
    (``asyncio.wait_for`` on Python 3.11), and the task goes on as if never
    cancelled: the listener for other nodes' changes did so once in CI, and its
    server's stop waited for good. (Not for a task whose clean-up takes its time,
    such as a start cut short: a second cancellation would cut the clean-up too.)
    """
    if task is None:
        return
    task.cancel()
    while insist and not task.done():
        await asyncio.wait({task}, timeout=CANCEL_AGAIN_S)
        if not task.done():
            task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def finish_within(tasks: Collection[asyncio.Task[Any]], timeout: float | None) -> bool:
    """Wait up to ``timeout`` seconds (None: no limit) for ``tasks`` to end; cancel those
    still running then and wait until they have ended. Whether all ended in time."""
    if not tasks:
        return True
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return not pending


CANCEL_AGAIN_S: Final = 1.0
