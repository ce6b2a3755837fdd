"""The event loop choice: uvloop when installed, asyncio's own on request, a clear refusal."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from server import loop as loop_module
from server.config import SettingsError, load_settings
from server.loop import loop_factory, run, stop_task

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def test_asyncio_is_the_standard_loop() -> None:
    assert loop_factory("asyncio") is asyncio.new_event_loop


def test_auto_takes_uvloop_when_installed() -> None:
    factory = loop_factory("auto")
    loop = factory()
    try:
        assert type(loop).__module__.startswith("uvloop") == HAS_UVLOOP
    finally:
        loop.close()


def test_run_returns_the_coroutine_result_on_either_loop() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert run(answer(), "asyncio") == 42
    assert run(answer(), "auto") == 42


def test_an_unknown_loop_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="unknown event loop"):
        loop_factory("tokio")
    with pytest.raises(SettingsError, match=r"--event-loop \(SCORPION_EVENT_LOOP\)"):
        load_settings(["--event-loop", "tokio"])
    with pytest.raises(SettingsError, match="SCORPION_EVENT_LOOP"):
        load_settings([], {"SCORPION_EVENT_LOOP": "tokio"})


async def test_stop_task_stops_a_task_that_took_its_cancellation_for_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Python 3.11 a cancellation landing as ``asyncio.wait_for``'s time runs out is
    taken for the timeout: the listener for other nodes' changes went on, and its
    server's stop waited for it for good (once in CI, a test's teardown 17 minutes)."""
    monkeypatch.setattr(loop_module, "CANCEL_AGAIN_S", 0.05)
    swallowed = 0

    async def heartbeat() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if swallowed == 0:  # as wait_for's race does, once
                    swallowed += 1
                    continue
                raise

    task = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.02)
    await asyncio.wait_for(stop_task(task, insist=True), 5)
    assert task.cancelled() and swallowed == 1
