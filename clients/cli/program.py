"""The ``scorpion`` program, loaded by ``__main__``: parse the command line and run it.

No input ends in a traceback: a bad argument is one line naming it (exit 2),
a failure that ends a command is one line on stderr too (exit 1, ``app``),
an interrupt exits 130 (SIGTERM, SIGHUP and SIGQUIT end it as quietly, with
128 plus the signal's number, once the line editor has given the terminal back
its modes), a closed pipe (``scorpion replay 3 | head``)
ends the program quietly, standard output closed (``>&-``) or refusing to be
written (``>/dev/full``) is one line on stderr (exit 1), and even a bug is one
line on stderr (set ``SCORPION_DEBUG=1`` for its traceback). Nothing is
written when stderr is closed too: the exit status still tells.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from clients.cli.app import run
from clients.cli.i18n import _, use
from clients.cli.options import UsageError, parse_args
from clients.cli.terminal import OutputError, Terminal, complain, tolerate_encodings

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    tolerate_encodings()  # an ASCII terminal shows ♠ as S, and never fails on a character
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        complain(str(exc))
        return 2
    except SystemExit as exc:  # --help or --version, printed
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:  # while the catalogue of the help's words was read, say
        return 130
    except BrokenPipeError:
        quiet_pipe()
        return 141
    except OutputError as exc:
        return output_failed(exc)
    use(options.lang)
    if sys.stdout is None:  # started with standard output closed
        complain(_("app.no_stdout"))
        return 1
    try:
        return asyncio.run(until_signalled(run(options, Terminal.standard())))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        quiet_pipe()
        return 141
    except OutputError as exc:
        return output_failed(exc)
    except Exception as exc:  # a bug: one line, not a traceback (SCORPION_DEBUG=1 shows it)
        if os.environ.get("SCORPION_DEBUG"):
            raise
        complain(f"{type(exc).__name__}: {exc}")
        return 1


ENDING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)
"""Signals that end the client: their default action would leave the terminal raw."""


async def until_signalled(command: Coroutine[Any, Any, int]) -> int:
    """``command``'s exit status, or 128 + the signal's number when one of
    ``ENDING_SIGNALS`` ends it first: the command is cancelled, so that the line
    editor restores the terminal's modes (echo, lines) on its way out. A second
    such signal has its default action again."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(command)
    received: list[int] = []
    handled: list[int] = []

    def end(signum: int) -> None:
        received.append(signum)
        for each in handled:
            loop.remove_signal_handler(each)
            signal.signal(each, signal.SIG_DFL)
        task.cancel()

    for signum in ENDING_SIGNALS:
        # Not in a thread other than the main one, nor with Windows' event loop.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, end, signum)
            handled.append(signum)
    try:
        return await task
    except asyncio.CancelledError:
        if not received:
            raise
        return 128 + received[0]
    finally:
        if not received:
            for signum in handled:
                loop.remove_signal_handler(signum)


def output_failed(exc: OutputError) -> int:
    """Standard output closed or refusing: one line on stderr, exit status 1."""
    complain(_("app.no_stdout") if exc.closed else _("app.output_failed", reason=exc.reason))
    quiet_pipe()  # what is left in stdout's buffer must not fail again at exit
    return 1


def quiet_pipe() -> None:
    """The reader went away: send what is left of stdout nowhere, so exit stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
