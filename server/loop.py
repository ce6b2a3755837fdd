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
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

__all__ = ["LOOPS", "loop_factory", "run", "stop_task"]

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


async def stop_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (when there is one) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
