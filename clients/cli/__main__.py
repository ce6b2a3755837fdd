"""``scorpion`` / ``python -m clients.cli``: parse the command line and run it.

No input ends in a traceback: a bad argument is one line naming it (exit 2),
an interrupt exits 130, a closed pipe (``scorpion replay 3 | head``)
ends the program quietly, and even a bug is one line on stderr (set
``SCORPION_DEBUG=1`` for its traceback).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from clients.cli.app import run
from clients.cli.i18n import use
from clients.cli.options import UsageError, parse_args
from clients.cli.terminal import Terminal

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"scorpion: {exc}", file=sys.stderr)
        return 2
    use(options.lang)
    try:
        return asyncio.run(run(options, Terminal.standard()))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        quiet_pipe()
        return 141
    except Exception as exc:  # a bug: one line, not a traceback (SCORPION_DEBUG=1 shows it)
        if os.environ.get("SCORPION_DEBUG"):
            raise
        print(f"scorpion: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def quiet_pipe() -> None:
    """The reader went away: send what is left of stdout nowhere, so exit stays quiet."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
