"""Input and output: a terminal with prompts and colours, or plain lines for scripts.

``Terminal.standard()`` reads standard input; when it is not a terminal the
client is in script mode (one command per line, no prompts, plain text).
Tests build a ``Terminal`` from a list of lines and a ``StringIO``. Standard
input is read on a daemon thread, so an interrupt never waits for a line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterable
from typing import Any, TextIO

__all__ = ["Terminal"]


class Terminal:
    """Where commands come from and text goes to."""

    def __init__(
        self,
        out: TextIO,
        lines: Iterable[str] | None = None,
        *,
        interactive: bool = False,
        stdin: TextIO | None = None,
    ) -> None:
        self.out = out
        self.interactive = interactive
        self._lines = iter(lines) if lines is not None else None
        self._stdin = stdin
        self._queue: asyncio.Queue[str] | None = None

    @classmethod
    def standard(cls) -> Terminal:
        return cls(sys.stdout, interactive=sys.stdin.isatty(), stdin=sys.stdin)

    async def readline(self, prompt: str = "> ") -> str | None:
        """The next line without its newline, or None at the end of input."""
        if self.interactive:
            self.out.write(prompt)
            self.out.flush()
        if self._lines is not None:
            await asyncio.sleep(0)
            return next(self._lines, None)
        if self._queue is None:
            self._queue = asyncio.Queue()
            loop = asyncio.get_running_loop()
            thread = threading.Thread(
                target=self._pump, args=(loop, self._queue), name="stdin", daemon=True
            )
            thread.start()
        line = await self._queue.get()
        return line.rstrip("\r\n") if line else None

    def _pump(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str]) -> None:
        """Read standard input on a daemon thread, so Ctrl-C never waits for a line."""
        stdin = self._stdin or sys.stdin
        while True:
            try:
                line = stdin.readline()
            except (OSError, ValueError):
                line = ""
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line)
            except RuntimeError:  # the loop is gone
                return
            if not line:
                return

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def json(self, obj: Any) -> None:
        self.say(json.dumps(obj, ensure_ascii=False, sort_keys=True))
