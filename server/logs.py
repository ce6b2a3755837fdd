"""The server's log: text or JSON lines, no SQL, no tokens, no floods.

Theory of operation
-------------------
``configure_logging(level, fmt)`` installs one handler on the root logger
with two parts:

- a formatter (``TextFormatter`` or ``JsonFormatter``, one object per line:
  ``time``, ``level``, ``logger``, ``message``, and ``connection``/``game``
  when the record was logged while serving one). Both render exceptions with
  ``describe_exception``: the chain of exception types, each with its own
  message unless it comes from the database layer (SQLAlchemy's messages quote
  the statement and its parameters; a driver's may quote values), where only
  the type and SQLSTATE (SQLite: its result code's name, ``SQLITE_FULL``) are
  kept. Below ERROR there is no stack at all; at
  ERROR and above (bugs) the frames are listed as file, line and function,
  never the source line (which may itself hold SQL);
- a ``RateLimit`` filter: the first of a run of identical failures (same
  logger, level, message template and exception type, WARNING or above)
  passes; the others within ``window`` seconds are counted instead of written,
  and one line reports the count when the window ends (``flush``, called by
  the server's heartbeat, or the next occurrence).

``configure_logging`` also routes what Python would otherwise write to
stderr by itself through the handler: warnings (``py.warnings``), an
exception that ends a thread, one raised in a finalizer. ``fatal_line`` is the
process's last line when it cannot go on (a bad setting, a database it cannot
use), in the same format. So with ``json`` every line the server writes is one
JSON object.

``reset_logging()`` (at exit) writes the counts still pending and removes
the handler (and those hooks) again. ``connection_id`` and ``game_id`` are
context variables: set in a connection's task (``server.connection``), they
reach every record logged while it is being served, without being passed around.
Shared work started while serving one (``detached``) carries neither.

Nothing here logs request contents, so a token never reaches the log; SQL
never does either, since the only places it could hide are exception
messages, which are filtered as above.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, Final, TypeVar

__all__ = [
    "JsonFormatter",
    "RateLimit",
    "TextFormatter",
    "configure_logging",
    "connection_id",
    "describe_exception",
    "detached",
    "fatal_line",
    "flush",
    "game_id",
    "make_handler",
    "reset_logging",
]

connection_id: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "connection_id", default=None
)
game_id: contextvars.ContextVar[int | None] = contextvars.ContextVar("game_id", default=None)


T = TypeVar("T")


def detached(work: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
    """``work`` as a task of its own whose lines carry no connection or game.

    A task inherits the context of the code that creates it: shared work started
    while serving one connection (the group commit, the sweeper of hello
    deadlines, a batch of reads) logged that connection's id, and its game's,
    on lines about others.
    """
    context = contextvars.copy_context()
    context.run(connection_id.set, None)
    context.run(game_id.set, None)
    return asyncio.get_running_loop().create_task(work, name=name, context=context)


# Modules whose exception messages may quote SQL, parameters or stored values.
_QUIET_MODULES: Final = ("sqlalchemy", "asyncpg", "sqlite3", "aiosqlite", "alembic")
_NOISY_LOGGERS: Final = ("aiosqlite", "sqlalchemy", "websockets", "asyncio", "alembic")


def _from_database_layer(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.split(".")[0] in _QUIET_MODULES or module == "_sqlite3"


def _one(exc: BaseException) -> str:
    name = type(exc).__qualname__
    if _from_database_layer(exc):
        orig = getattr(exc, "orig", None)
        sqlstate = getattr(orig, "sqlstate", None) or getattr(exc, "sqlstate", None)
        if sqlstate:
            return f"{name} (SQLSTATE {sqlstate})"
        # SQLite's own code (SQLITE_FULL, SQLITE_READONLY, ...): a name, never a value
        code = getattr(orig, "sqlite_errorname", None) or getattr(exc, "sqlite_errorname", None)
        return f"{name} ({code})" if isinstance(code, str) and code.isidentifier() else name
    text = str(exc)
    return f"{name}: {text}" if text else name


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return seen


def describe_exception(exc: BaseException, *, stack: bool = False) -> str:
    """``exc`` and its causes, outermost first; with ``stack``, each one's frames."""
    parts: list[str] = []
    for each in _chain(exc):
        line = _one(each)
        if stack and each.__traceback__ is not None:
            frames = traceback.extract_tb(each.__traceback__)
            where = "".join(f"\n  {f.filename}:{f.lineno} in {f.name}" for f in frames)
            line += where
        parts.append(line)
    return ("\n" if stack else " <- ").join(parts)


def _exception_text(record: logging.LogRecord) -> str | None:
    if not record.exc_info or record.exc_info[1] is None:
        return None
    return describe_exception(record.exc_info[1], stack=record.levelno >= logging.ERROR)


def _context(record: logging.LogRecord) -> dict[str, int]:
    found: dict[str, int] = {}
    for key in ("connection", "game"):
        value = getattr(record, key, None)
        if isinstance(value, int):
            found[key] = value
    return found


class _ContextFilter(logging.Filter):
    """Copies the context variables onto each record (in the logging task's context)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "connection"):
            record.connection = connection_id.get()
        if not hasattr(record, "game"):
            record.game = game_id.get()
        return True


class TextFormatter(logging.Formatter):
    """``time level logger [conn=.. game=..]: message (error)``, one line below ERROR."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(where)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        context = _context(record)
        record.where = "".join(f" {k}={v}" for k, v in context.items())
        # Another handler's formatter may have cached the full traceback on the record
        # (logging's ``exc_text``): it must not reach this line, with its source lines.
        cached, record.exc_text = record.exc_text, None
        try:
            text = super().format(record)
        finally:
            record.exc_text = cached
        error = _exception_text(record)
        return text if error is None else f"{text} ({error})"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        # Local time with its offset from UTC, so lines from hosts in other zones compare.
        moment = datetime.fromtimestamp(record.created).astimezone()
        return moment.isoformat(sep=" ", timespec="milliseconds")

    def formatException(self, ei: object) -> str:  # logging's name
        return ""  # rendered by format() without SQL or source lines

    def formatStack(self, stack_info: str) -> str:
        return ""


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_context(record),
        }
        count = getattr(record, "repeated", None)
        if isinstance(count, int):
            entry["repeated"] = count
        error = _exception_text(record)
        if error is not None:
            entry["error"] = error
        return json.dumps(entry, ensure_ascii=False)


@dataclass
class _Run:
    first: float
    suppressed: int
    sample: logging.LogRecord
    # Of the suppressed: how many had other values than the sample (an address, a reason),
    # and the first few of those, so that the summary does not claim the sample repeated.
    other: int = 0
    others: list[str] = field(default_factory=list)
    last_other: str = ""  # the latest of them: a countdown's first values go stale
    elsewhere: bool = False  # some were about another connection or game than the sample's


def _where(record: logging.LogRecord) -> tuple[object, object]:
    return getattr(record, "connection", None), getattr(record, "game", None)


_OTHERS_SHOWN: Final = 2


class RateLimit(logging.Filter):
    """Let the first of identical failures through; count the rest for ``window`` seconds."""

    def __init__(
        self,
        emit: Callable[[logging.LogRecord], object],
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._emit = emit
        self.window = window
        self._clock = clock
        self._runs: dict[tuple[object, ...], _Run] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(record: logging.LogRecord) -> tuple[object, ...]:
        kind = type(record.exc_info[1]).__name__ if record.exc_info else None
        return (record.name, record.levelno, record.msg, kind)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, "repeated", None) is not None:
            return True
        now = self._clock()
        key = self._key(record)
        with self._lock:
            run = self._runs.get(key)
            if run is not None and now - run.first < self.window:
                run.suppressed += 1
                if _where(record) != _where(run.sample):
                    run.elsewhere = True  # counted lines of other connections or games
                if record.args != run.sample.args:
                    run.other += 1
                    message = record.getMessage()
                    if len(run.others) < _OTHERS_SHOWN:
                        run.others.append(message)
                    else:
                        run.last_other = message
                return False
            self._runs[key] = _Run(now, 0, record)
        if run is not None and run.suppressed:
            self._emit(self._summary(run))
        return True

    def flush(self, *, everything: bool = False) -> None:
        """Report every run whose window has ended (or all, at exit) and forget it."""
        now = self._clock()
        with self._lock:
            ended = [
                k for k, run in self._runs.items() if everything or now - run.first >= self.window
            ]
            runs = [self._runs.pop(k) for k in ended]
        for run in runs:
            if run.suppressed:
                self._emit(self._summary(run))

    def _summary(self, run: _Run) -> logging.LogRecord:
        sample = run.sample
        summary = logging.makeLogRecord(sample.__dict__)
        if run.other:
            # the same kind of line, not the same line: say so, with the first few of the
            # others and the last (a countdown's or a retry's latest values)
            shown = "; ".join(run.others)
            if run.other > len(run.others) + 1:
                shown += "; ..."
            if run.last_other:
                shown += f"; {run.last_other}"
            summary.msg = (
                f"{sample.getMessage()} (and {run.suppressed} more lines like it, "
                f"{run.other} of them with other values: {shown})"
            )
        else:
            summary.msg = f"{sample.getMessage()} (repeated {run.suppressed} more times)"
        summary.args = None
        summary.exc_info = sample.exc_info
        summary.repeated = run.suppressed
        if run.elsewhere:  # the sample's connection and game are not those of the lines counted
            summary.connection = summary.game = None
        summary.created = time.time()
        return summary


_installed: list[tuple[logging.Handler, RateLimit]] = []


def make_handler(
    fmt: str = "text", stream: IO[str] | None = None, window: float = 10.0
) -> tuple[logging.Handler, RateLimit]:
    """A handler writing ``fmt`` lines to ``stream`` (stderr), with its rate limiter."""
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(_ContextFilter())
    limiter = RateLimit(handler.handle, window)
    handler.addFilter(limiter)
    return handler, limiter


def fatal_line(message: str, fmt: str = "text", status: int | None = None) -> str:
    """The last line of a process that cannot go on, in the log's format.

    ``text``: ``scorpion-server: message``, for a person at a terminal. ``json``: one
    object with the keys of every other record (``level`` ERROR, logger ``server``)
    and ``exit``, the exit status, so that a log collector reads it as it reads the rest.
    """
    if fmt != "json":
        return f"scorpion-server: {message}"
    entry: dict[str, object] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "ERROR",
        "logger": "server",
        "message": message,
    }
    if status is not None:
        entry["exit"] = status
    return json.dumps(entry, ensure_ascii=False)


def flush() -> None:
    """Report the repeat counts of the limiter ``configure_logging`` installed, if any."""
    for _, limiter in list(_installed):
        limiter.flush()


def reset_logging() -> None:
    """Report what is still counted and remove the handler ``configure_logging`` installed."""
    root = logging.getLogger()
    for handler, limiter in _installed:
        limiter.flush(everything=True)
        root.removeHandler(handler)
    if _installed:
        logging.captureWarnings(False)
        threading.excepthook = threading.__excepthook__
        sys.unraisablehook = sys.__unraisablehook__
    _installed.clear()


def _thread_failed(args: threading.ExceptHookArgs) -> None:
    """An exception that ended a thread: a record (ERROR, with frames), not a raw traceback."""
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    error = args.exc_value if args.exc_value is not None else args.exc_type()
    logging.getLogger("server").error("an exception ended thread %s", name, exc_info=error)


def _unraisable(args: sys.UnraisableHookArgs) -> None:
    """An exception Python could not raise (in a finalizer, say): a record, not raw text."""
    error = args.exc_value if args.exc_value is not None else args.exc_type()
    logging.getLogger("server").error(
        "an exception was ignored in %s", args.err_msg or repr(args.object), exc_info=error
    )


def configure_logging(
    level: str, fmt: str = "text", stream: IO[str] | None = None, window: float = 10.0
) -> RateLimit:
    """Our loggers at ``level`` in ``fmt``; libraries at WARNING at most. Returns the limiter."""
    reset_logging()
    handler, limiter = make_handler(fmt, stream, window)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in _NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # What Python itself would write to stderr goes through the handler too, so that with
    # json every line is an object: warnings, exceptions in threads and finalizers.
    logging.captureWarnings(True)
    threading.excepthook = _thread_failed
    sys.unraisablehook = _unraisable
    _installed.append((handler, limiter))
    return limiter
