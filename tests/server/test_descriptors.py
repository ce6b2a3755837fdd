"""The file descriptor limit raised at start, and said when short (``server.descriptors``)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
from typing import Any

import pytest

from server import descriptors
from tests.server.conftest import Start


class Limits:
    """A stand-in for ``resource``'s RLIMIT_NOFILE: (soft, hard), and what was set."""

    def __init__(self, soft: int, hard: int, *, settable: bool = True) -> None:
        self.now = (soft, hard)
        self.settable = settable

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.now

    def set(self, which: int, limits: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        if not self.settable:
            raise ValueError("not allowed to raise the current limit")
        self.now = limits


def patched(monkeypatch: pytest.MonkeyPatch, limits: Limits) -> None:
    monkeypatch.setattr(resource, "getrlimit", limits.get)
    monkeypatch.setattr(resource, "setrlimit", limits.set)


def test_the_soft_limit_is_raised_to_the_hard_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """1024, systemd's soft limit, was kept: the server ran out of descriptors at a
    tenth of --max-connections' 10,000."""
    limits = Limits(1024, 524288)
    patched(monkeypatch, limits)
    with caplog.at_level(logging.WARNING):
        assert descriptors.raise_limit(descriptors.needed(10_000, 2500, 4096)) == 524288
    assert limits.now == (524288, 524288)
    assert not caplog.records


def test_a_limit_below_what_the_caps_need_is_said(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    limits = Limits(1024, 4096)
    patched(monkeypatch, limits)
    need = descriptors.needed(10_000, 2500, 4096)
    with caplog.at_level(logging.WARNING):
        assert descriptors.raise_limit(need) == 4096
    assert limits.now == (4096, 4096)  # as far as it goes
    [said] = [r.getMessage() for r in caplog.records]
    assert "may open 4096 file descriptors" in said and f"fewer than the {need}" in said
    caplog.clear()
    refused = Limits(1024, 4096, settable=False)  # a container that forbids raising it
    patched(monkeypatch, refused)
    with caplog.at_level(logging.WARNING):
        assert descriptors.raise_limit(need) == 1024
    assert "may open 1024 file descriptors" in caplog.records[0].getMessage()


def test_an_unlimited_hard_limit_raises_the_soft_one_as_far_as_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = Limits(1024, resource.RLIM_INFINITY)
    patched(monkeypatch, limits)
    assert descriptors.raise_limit(5000) == 5000
    assert limits.now == (5000, resource.RLIM_INFINITY)


def test_few_descriptors_left_are_said(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    patched(monkeypatch, Limits(1024, 1024))
    used = [1024 - descriptors.SPARE - 1]
    monkeypatch.setattr(descriptors, "in_use", lambda: used[0])
    high = [False]
    asked: list[int] = []

    def taken(number: int) -> bool:
        asked.append(number)
        return high[0]

    watch = descriptors.Watch(taken)
    with caplog.at_level(logging.WARNING):
        watch.check()  # the high descriptor is free: plenty left, nothing counted
        high[0] = True
        watch.check()  # taken, but by one of few left open after a peak
        assert not caplog.records
        used[0] += 1
        watch.check()
    assert asked == [1024 - descriptors.SPARE] * 3
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith(f"{1024 - descriptors.SPARE} of the 1024 file descriptors")


def test_the_high_descriptor_is_taken_only_near_the_limit() -> None:
    """The real probe and count, near this process's own limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = max(int(fd) for fd in os.listdir("/proc/self/fd")) + 9  # the last 8 free
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    held = []
    try:
        assert not descriptors._taken(limit - 4)
        with contextlib.suppress(OSError):
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        assert descriptors._taken(limit - 4)
        assert descriptors.in_use() == limit  # none left to list them: all in use
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_count_of_open_descriptors_is_the_process_own() -> None:
    before = descriptors.in_use()
    assert before is not None and before > 2
    with open(__file__, "rb"):
        assert descriptors.in_use() == before + 1


def test_an_accept_that_failed_for_want_of_descriptors_is_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """asyncio's own handler logged each failed accept as an error with its traceback;
    uvloop's closed listener was said the same way, or not at all."""
    passed: list[dict[str, Any]] = []
    handle = descriptors.accept_failed(lambda _loop, context: passed.append(context))
    loop = asyncio.new_event_loop()
    try:
        out = OSError(errno.EMFILE, "Too many open files")
        with caplog.at_level(logging.WARNING):
            handle(loop, {"message": "socket.accept() out of system resource", "exception": out})
        other = {"message": "something else", "exception": ValueError("no")}
        handle(loop, other)
    finally:
        loop.close()
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "no file descriptors left" in record.getMessage()
    assert passed == [other]


async def test_what_the_caps_need_counts_the_connections_accepted_at_once(
    start: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard asyncio loop accepts up to the listen backlog's count of connections
    in one go, each holding its descriptor before it is counted: with a limit just above
    what the caps needed, a burst of 3000 upgrades from 240 addresses ran the server out
    of descriptors (uvloop stayed within). The need counts them."""
    asked: list[int] = []

    def raise_limit(need: int) -> int:
        asked.append(need)
        return need

    monkeypatch.setattr(descriptors, "raise_limit", raise_limit)
    await start(max_connections=300, listen_backlog=1000)
    assert asked == [300 + 256 + 1000 + descriptors.RESERVED]
