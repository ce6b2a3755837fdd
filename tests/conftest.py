"""Settings and fixtures every test package shares.

Hypothesis gives each example 200 ms by default and fails a test whose example
took longer as "flaky". These tests check what is computed, not how fast: on a
loaded machine (CI with a browser beside it, two test workers) one example of
the codec's property test took 369 ms and failed the run. Speed is measured by
``make bench``, not here.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator

import pytest
from hypothesis import settings

settings.register_profile("scorpion", deadline=None)
settings.load_profile("scorpion")


def _utf8_locale() -> None:
    """Run the tests, and the programs they start, in English and UTF-8, whatever the
    host's locale.

    The terminal client writes what the user's locale can show: under ``LANG=C``, or
    none set (cron, a minimal container), ASCII stand-ins (``7C`` for ``7♣``), as
    documented; and it speaks the locale's language (``LC_ALL``, ``LC_MESSAGES``,
    ``LANG``). The tests expect English on a UTF-8 terminal, and failed elsewhere for
    no fault of the code; those about other locales set theirs themselves.
    """
    for name in ("LC_ALL", "LC_CTYPE", "LC_MESSAGES"):
        os.environ.pop(name, None)
    os.environ["LANG"] = "C.UTF-8"


_utf8_locale()

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


def _own_handlers() -> list[logging.Handler]:
    """The root logger's handlers but pytest's own (it adds and removes those per phase)."""
    return [
        each
        for each in logging.getLogger().handlers
        if not type(each).__module__.startswith("_pytest")
    ]


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Each test leaves the root logger's level and handlers as it found them.

    ``configure_logging``, run by the server's ``main()`` inside a test, sets the root
    level (INFO by default) and installs a handler; left behind, every later test in the
    worker logged at that level, into that handler's stream.
    """
    root = logging.getLogger()
    level, handlers = root.level, _own_handlers()
    yield
    for each in _own_handlers():
        if each not in handlers:
            root.removeHandler(each)
    root.setLevel(level)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser's tests (tests/web: its end-to-end run takes about 13 minutes on
    one worker) come first, the rest in their order. Run last, as the directory's
    name sorts, they began when the other worker had nearly finished and the suite
    waited for them alone; first, under `make test`'s `-n 3 --dist worksteal`, the
    other workers run the rest meanwhile and take back what was queued behind them."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/web/"))
