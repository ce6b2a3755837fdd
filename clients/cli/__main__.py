"""``scorpion`` / ``python -m clients.cli``: parse the command line and run it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from clients.cli.app import run
from clients.cli.options import parse_args
from clients.cli.terminal import Terminal

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return asyncio.run(run(options, Terminal.standard()))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
