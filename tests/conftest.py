"""Settings and fixtures every test package shares.

Hypothesis gives each example 200 ms by default and fails a test whose example
took longer as "flaky". These tests check what is computed, not how fast: on a
loaded machine (CI with a browser beside it, two test workers) one example of
the codec's property test took 369 ms and failed the run. Speed is measured by
``make bench``, not here.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("scorpion", deadline=None)
settings.load_profile("scorpion")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signals_as_they_were() -> Iterator[None]:
    """Each test leaves the stop signals' handlers as it found them.

    The server's ``main()``, run in the test's own process, ignores a second stop
    signal once stopped (a process about to exit); ignored, SIGTERM stays ignored in
    every process the test worker starts later, which then outlived a benchmark that
    was killed (``tests/bench``) when such a test had run before it in the worker.
    """
    before = {each: signal.getsignal(each) for each in _STOP_SIGNALS}
    yield
    for each, handler in before.items():
        if signal.getsignal(each) is not handler:
            signal.signal(each, handler)
