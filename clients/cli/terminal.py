"""Input and output: a line editor on a terminal, or plain lines for scripts.

``Terminal.standard()`` looks at standard input. On a terminal it reads
commands with prompt_toolkit: line editing, a history (up/down), completion
of commands and cards (Tab) and a status bar under the prompt that is drawn
again every second (``status``: the clock ticks there). The program runs
inside ``patch_stdout``, so whatever is printed while a command is being
typed (a move from another device, a notice) appears above the prompt and
never inside it. Nothing here clears the screen: prompt_toolkit keeps track of
where its prompt is, and a clear under it loses what was printed after. When
standard input is not a terminal the client is in
script mode: one command per line, read on a daemon thread (an interrupt
never waits for a line), no prompts, plain text.

The end of input (Ctrl-D, the end of a script, or a terminal that is gone or never
the client's: EIO) is final: every later
``readline`` returns None at once, so a question that met it is answered
"no" and the command loop then ends as after ``q``. Ctrl-C in the line
editor is an interrupt, as everywhere else: the program ends (exit 130).

Standard streams never fail on a character (``tolerate_encodings``): what
the output's encoding lacks is written as an ASCII stand-in (``♠`` as ``S``,
the suit letter a player types; anything else as ``?``), and input that is
not in the input's encoding is read with U+FFFD in its place. The output's
encoding is the one the user's locale names, even when this machine does not
have that locale installed, and ASCII under the C or POSIX locale, though
Python itself would write UTF-8 in both (``terminal_encoding``); JSON lines
escape what the output lacks instead. Text from
elsewhere is shown with its control characters as escapes (``printable``;
``complain`` always does so), and ``json`` makes JSON of whatever a server
sent (``jsonable``).

Tests build a ``Terminal`` from a list of lines and a ``StringIO``.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import contextlib
import errno
import io
import json
import math
import os
import re
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TextIO

import msgpack
from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, emacs_insert_mode, has_selection, vi_insert_mode
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.patch_stdout import patch_stdout

from clients.cli.i18n import _

if sys.platform != "win32":
    import termios

    # What setting the terminal's modes raises: EIO when the terminal is gone or not ours
    _TERMINAL_ERRORS: tuple[type[Exception], ...] = (OSError, termios.error)
else:
    _TERMINAL_ERRORS = (OSError,)

__all__ = [
    "OutputError",
    "Terminal",
    "WordCompleter",
    "complain",
    "json_line",
    "jsonable",
    "locale_encoding",
    "printable",
    "shown_url",
    "terminal_encoding",
    "terminal_gone",
    "tolerate_encodings",
]

Words = Callable[[], Iterable[str]]

_NO_MOUSE = KeyBindings()


@_NO_MOUSE.add(Keys.Vt100MouseEvent)
def _no_mouse(event: KeyPressEvent) -> None:
    """Drop what the line editor's input parser takes for a mouse report. The client asks
    the terminal for none, so it is an escape sequence typed or pasted (``ESC [ 3 1 m``,
    colour in copied text), on which prompt_toolkit's own handler fails with a traceback.
    """


def _plain(press: KeyPress) -> bool:
    """A key that is a printable character, which the editor inserts as it is."""
    return not isinstance(press.key, Keys) and len(press.key) == 1 and press.key.isprintable()


@Condition
def _line_full() -> bool:
    """The line being edited holds more than ``LINE_LIMIT`` characters already."""
    return len(get_app().current_buffer.text) > LINE_LIMIT


@_NO_MOUSE.add(Keys.Any, filter=_line_full)
def _past_the_limit(event: KeyPressEvent) -> None:
    """A character typed past ``LINE_LIMIT`` is dropped: the line is refused whole when
    entered (``Terminal._take``), as a line that long from a script is, and the editor
    no longer copies an ever longer line at each key. So are the printable characters
    read already after it (``_typed``)."""
    queue = event.app.key_processor.input_queue
    while queue and _plain(queue[0]):
        queue.popleft()


@_NO_MOUSE.add(
    Keys.Any,
    filter=(emacs_insert_mode | vi_insert_mode) & ~has_selection & ~_line_full,
    save_before=lambda event: not event.is_repeat,
)
def _typed(event: KeyPressEvent) -> None:
    """A character typed, with the printable ones after it that the editor has read
    already (a long line arriving at once, typed or pasted without bracketed paste),
    inserted together up to ``LINE_LIMIT``: prompt_toolkit's own self-insert takes each
    on its own, a millisecond or two of key-binding lookup each (20,000 characters kept
    the client busy for half a minute)."""
    queue = event.app.key_processor.input_queue
    buffer = event.current_buffer
    text = [event.data * event.arg]
    room = LINE_LIMIT + 1 - len(buffer.text) - len(text[0])
    while queue and room > 0 and _plain(queue[0]):
        text.append(queue.popleft().data)
        room -= 1
    buffer.insert_text("".join(text))


@_NO_MOUSE.add(Keys.BracketedPaste)
def _paste(event: KeyPressEvent) -> None:
    """Pasted text goes into the line. Text that holds a line break is taken at once,
    and ``Terminal._edit`` runs its lines one by one, as if each had been typed and
    entered (prompt_toolkit's own handler kept them in one line, which then ran as
    one unknown command)."""
    data = event.data.replace("\r\n", "\n").replace("\r", "\n")
    event.current_buffer.insert_text(data)
    if "\n" in data:
        event.current_buffer.validate_and_handle()


class _Suspended(Exception):
    """Ctrl-Z in the line editor: the prompt is left, the line typed kept (``_suspend``)."""

    def __init__(self, typed: Document) -> None:
        super().__init__("suspended")
        self.typed = typed


if hasattr(signal, "SIGTSTP"):  # not on Windows

    @_NO_MOUSE.add("c-z")
    def _suspend(event: KeyPressEvent) -> None:
        """Ctrl-Z leaves the prompt, which gives the terminal its modes back, and
        ``Terminal._edit`` stops the client (prompt_toolkit's own suspension stops it
        inside the prompt and sets the modes again when continued, from the background
        too: stopped by SIGTTOU before a ``kill %1`` could be handled)."""
        event.app.erase_when_done = True  # the prompt comes back whole when resumed
        event.app.exit(exception=_Suspended(event.current_buffer.document))


def terminal_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is what the terminal's calls raise once it is gone (hung up) or
    not the client's (EIO): the end of input, not a failure."""
    return isinstance(exc, _TERMINAL_ERRORS) and exc.args[:1] == (errno.EIO,)


def _stopped_by(signum: int) -> bool:
    """Send ``signum`` (a stop signal) to the client's process group; whether it stopped
    the client: continued, it is told SIGCONT, which os.kill hands to its handler before
    it returns (a signal to the process itself is handled at once)."""
    continued: list[int] = []
    before = signal.signal(signal.SIGCONT, lambda number, _frame: continued.append(number))
    try:
        os.kill(0, signum)
    finally:
        signal.signal(signal.SIGCONT, signal.SIG_DFL if before is None else before)
    return bool(continued)


FOREGROUND_POLL_S = 0.25  # how often a client continued in the background looks again
# The fewest columns the screens are drawn for (the level menu, a table's figures
# and the board each need some room beside their indent).
MIN_COLUMNS: Final = 20
STAND_IN = "scorpion-stand-in"
STAND_INS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C", "·": "-", "⋮": ":", "▒": "#", "…": "..."}


def _stand_in(error: UnicodeError) -> tuple[str, int]:
    """The codec error handler ``STAND_IN``: what an encoding lacks, as ASCII."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    lacking = error.object[error.start : error.end]
    return "".join(STAND_INS.get(char, "?") for char in lacking), error.end


codecs.register_error(STAND_IN, _stand_in)


def tolerate_encodings() -> None:
    """Standard input, output and error that never fail on a character their encoding lacks.

    Where Python chose an encoding the user's terminal does not have
    (``terminal_encoding``), standard output and error take the terminal's
    (ASCII under the C or POSIX locale): what it lacks is written as its
    stand-in. Standard input takes it too unless it is ASCII, which UTF-8 reads.
    """
    chosen = terminal_encoding()
    streams = ((sys.stdin, "replace"), (sys.stdout, STAND_IN), (sys.stderr, STAND_IN))
    for stream, errors in streams:
        if isinstance(stream, io.TextIOWrapper):
            if chosen is None or (chosen == "ascii" and stream is sys.stdin):
                stream.reconfigure(errors=errors)
            else:
                stream.reconfigure(encoding=chosen, errors=errors)


# What Python's locale coercion (PEP 538) writes over LC_CTYPE when the locale is C.
_COERCED = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})


def terminal_encoding() -> str | None:
    """The terminal's encoding where it is not the one Python chose; None: Python's stands.

    When the C library cannot load the user's locale (``LANG=C``, none set,
    as under cron, or a locale this machine does not have installed, such as
    ``ru_RU.UTF-8`` on a minimal system), Python takes it for the C locale and
    writes UTF-8 (PEP 540's UTF-8 mode; PEP 538 sets ``LC_CTYPE=C.UTF-8``,
    overwriting what the user had). The terminal's encoding is then the one the
    locale's name says (``locale_encoding``): UTF-8 for ``ru_RU.UTF-8``, ASCII
    for C, POSIX or none. UTF-8 mode that the user asked for (``PYTHONUTF8=1``,
    ``-X utf8``) and an encoding the user chose for Python (``PYTHONIOENCODING``)
    are kept.
    """
    if not sys.flags.utf8_mode or "utf8" in sys._xoptions:
        return None
    if sys.flags.ignore_environment:
        return "ascii"
    if os.environ.get("PYTHONUTF8") or os.environ.get("PYTHONIOENCODING"):
        return None
    chosen = locale_encoding(_named_locale())
    return None if chosen == "utf-8" else chosen


def _named_locale() -> str:
    """The locale the environment names for characters: LC_ALL, else LC_CTYPE, else LANG."""
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = os.environ.get(name, "")
        if name == "LC_CTYPE" and value in _COERCED:
            value = _at_start(name)  # Python's coercion, not the user's: what the user had
        if value:
            return value
    return ""


def _at_start(name: str) -> str:
    """The variable ``name`` as the process started with it (Linux's /proc), else ""."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            start = handle.read(1 << 20)
    except OSError:
        return ""
    prefix = name.encode() + b"="
    for entry in start.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("ascii", "replace")
    return ""


def locale_encoding(name: str) -> str:
    """The encoding a locale's name says (``ru_RU.UTF-8``: ``utf-8``), as Python's codec name.

    ASCII where it says none that Python knows: C, POSIX, nothing, or a name
    without one (``ru_RU``, whose encoding only the C library's tables tell);
    ASCII too for a codec Python knows that no terminal is in (``_terminal_codec``).
    """
    codeset = name.partition("@")[0].partition(".")[2]
    if not codeset:
        return "ascii"
    try:
        codec = codecs.lookup(codeset)
    except LookupError:
        return "ascii"
    return codec.name if _terminal_codec(codec) else "ascii"


_ASCII: Final = "".join(map(chr, range(128)))


def _terminal_codec(codec: codecs.CodecInfo) -> bool:
    """Whether a terminal's streams can be in ``codec``: a text encoding (not ``rot13``,
    ``base64`` or ``zlib``) that writes and reads ASCII as ASCII (not UTF-16 or UTF-7)
    and takes the stand-ins for what it lacks (not ``idna``; ``undefined`` takes nothing)."""
    if not getattr(codec, "_is_text_encoding", True):  # what TextIOWrapper refuses
        return False
    try:
        written = codec.encode(_ASCII + "♠", STAND_IN)[0]
        read = codec.decode(_ASCII.encode("ascii"))[0]
    except (UnicodeError, TypeError, ValueError):
        return False
    return isinstance(written, bytes) and written.startswith(_ASCII.encode()) and read == _ASCII


def _unicode(encoding: str | None) -> bool:
    """Whether ``encoding`` holds every character (None: a stream of text, ``StringIO``)."""
    if encoding is None:
        return True
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


LINE_LIMIT: Final = 65536
"""Characters of one line of piped input at most: a longer one is read to its end and
dropped, so an input that never ends a line (``< /dev/zero``) holds no more than this."""
_TOO_LONG: Final = "a line longer than LINE_LIMIT"  # put in the queue as itself (``is``)


def _bounded_line(stdin: TextIO) -> str:
    """The next line of ``stdin`` ('' at its end), or ``_TOO_LONG`` for one of more than
    ``LINE_LIMIT`` characters, whose rest is read and dropped."""
    line = stdin.readline(LINE_LIMIT + 1)
    if len(line) <= LINE_LIMIT or line.endswith("\n"):
        return line
    while (more := stdin.readline(LINE_LIMIT)) and not more.endswith("\n"):
        pass
    return _TOO_LONG


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):  # closed underneath
        return False


_AUTHORITY_END = re.compile("[/?#]")


def shown_url(url: str, *, refused: bool = False) -> str:
    """``url`` as a line may show it: a password in it (``ws://ada:s3cret@host``) as
    ``***`` (``ws://ada:***@host``), since output is read over shoulders and kept in logs.

    The password is what the URL's user part holds after its first ``:``, and
    that part runs to the host's last ``@``, as ``urlsplit`` reads it (so the
    user ``ada@example.org`` of ``ws://ada@example.org:s3cret@host`` keeps its
    ``@``). A URL ``refused`` as a server's may owe that to a ``/``, ``?`` or
    ``#`` left unencoded in its password (``ws://ada:s3/c@host``, whose host is
    read as ``ada``): there the password runs to the last ``@`` of all.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or _AUTHORITY_END.search(scheme):
        return url
    authority_end = _AUTHORITY_END.search(rest)
    authority = rest if authority_end is None else rest[: authority_end.start()]
    user, at, _host = authority.rpartition("@")
    if not (at and ":" in user) and refused:
        user, at, _host = rest.rpartition("@")
        if _AUTHORITY_END.search(user.partition(":")[0]):
            return url  # a ':' after the host's end: no user part of the URL
    if not (at and ":" in user):
        return url
    return f"{scheme}://{user.partition(':')[0]}:***@{rest[len(user) + 1 :]}"


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``, ``\\n``).

    For text from elsewhere (a server's message, a close reason, a line
    typed): an escape sequence in it must not drive the terminal (retitle
    it, clear it, move the cursor), a newline not split a one-line message,
    and a bidirectional override not reorder what is shown.
    """
    return _CONTROLS.sub(lambda found: repr(found[0])[1:-1], text)


def complain(text: str, err: TextIO | None = None) -> None:
    """``scorpion: text`` as one line on ``err`` (default: ``sys.stderr`` as it is now).

    Nothing is written when there is no standard error; control characters
    are shown as escapes (``printable``): the text may quote a server.
    """
    err = sys.stderr if err is None else err
    if err is not None:
        with contextlib.suppress(OSError, ValueError):
            err.write(f"scorpion: {printable(text)}\n")
            err.flush()


class OutputError(Exception):
    """Standard output cannot be written (closed, or the device refuses); not a closed pipe."""

    CLOSED = "closed"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def closed(self) -> bool:
        """Standard output was closed (``>&-``), rather than failing to write."""
        return self.reason == self.CLOSED


class WordCompleter(Completer):
    """Completes the word under the cursor from ``words()`` (asked anew each time)."""

    def __init__(self, words: Words) -> None:
        self.words = words

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        word = document.get_word_before_cursor(WORD=True)
        lower = word.lower()
        seen: set[str] = set()
        for candidate in self.words():
            if candidate.lower().startswith(lower) and candidate not in seen:
                seen.add(candidate)
                yield Completion(candidate, start_position=-len(word))


class Terminal:
    """Where commands come from and text goes to."""

    def __init__(
        self,
        out: TextIO | None,
        lines: Iterable[str] | None = None,
        *,
        interactive: bool = False,
        stdin: TextIO | None = None,
        editor: bool = False,
        err: TextIO | None = None,
    ) -> None:
        self._out = out
        self._err = err
        self.interactive = interactive
        self.editor = editor
        self._lines = iter(lines) if lines is not None else None
        self._ended = False
        self._stdin = stdin
        self._queue: asyncio.Queue[str] | None = None
        self._session: PromptSession[str] | None = None
        self._pasted: collections.deque[str] = collections.deque()  # lines of a paste, still to run
        self.status: Callable[[], str] | None = None
        self.words: Words = lambda: ()
        self._redirected: TextIO | None = None  # standard error, while the editor has it

    @classmethod
    def standard(cls) -> Terminal:
        if sys.stdin is None:  # started with standard input closed (``<&-``): no input at all
            return cls(None, [])
        tty = _isatty(sys.stdin) and _isatty(sys.stdout)
        return cls(None, interactive=_isatty(sys.stdin), stdin=sys.stdin, editor=tty)

    @property
    def out(self) -> TextIO:
        """The output stream (``sys.stdout`` as it is now: patched while editing)."""
        return self._out if self._out is not None else sys.stdout

    def isatty(self) -> bool:
        isatty = getattr(self.out, "isatty", None)
        return bool(isatty()) if callable(isatty) else False

    def size(self) -> tuple[int, int | None]:
        """(columns, rows) of the terminal now; (80, None) when not a terminal."""
        if not (self.editor or self.isatty()):
            return 80, None
        try:  # the terminal itself: COLUMNS and LINES may be stale after a resize
            size = os.get_terminal_size((sys.__stdout__ or sys.stdout).fileno())
        except (AttributeError, ValueError, OSError):
            size = shutil.get_terminal_size((80, 24))
        # A terminal whose size was never set says 0 by 0: unknown, as shutil takes it.
        # One narrower than MIN_COLUMNS is drawn for MIN_COLUMNS, and wraps the lines.
        return max(MIN_COLUMNS, size.columns or 80), max(1, size.lines or 24)

    def table_width(self) -> int | None:
        """The columns a table may fill: the terminal's, or None (no limit) when
        the output is a file or a pipe."""
        columns, lines = self.size()
        return columns if lines is not None else None

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """While the program runs: printing goes above the prompt (editor mode)."""
        if not self.editor:
            yield
            return
        before = sys.stderr
        with patch_stdout(raw=True):
            # Standard error is now the editor's proxy too, which prints above the
            # prompt on the terminal: right when standard error is that terminal,
            # wrong when it was redirected (``2>errors.log``), where lines belong.
            self._redirected = None if _isatty(before) else before
            try:
                yield
            finally:
                self._redirected = None

    async def readline(self, prompt: str = "> ") -> str | None:
        """The next line without its newline, or None at (and after) the end of input."""
        if not self._ended:
            line = await self._read(prompt)
            self._ended = line is None
            return line
        return None

    async def _read(self, prompt: str) -> str | None:
        if self.editor:
            return await self._edit(prompt)
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
        while line is _TOO_LONG:
            self.complain(_("input.line_too_long", limit=f"{LINE_LIMIT:,}"))
            line = await self._queue.get()
        return line.rstrip("\r\n") if line else None

    async def _edit(self, prompt: str) -> str | None:
        if self._session is None:
            self._session = PromptSession(
                history=InMemoryHistory(),
                completer=WordCompleter(lambda: self.words()),
                complete_while_typing=False,
                refresh_interval=1.0,
                key_bindings=_NO_MOUSE,  # Ctrl-Z stops the client, as in the shell (_suspend)
            )
        status = self.status
        toolbar = None if status is None else (lambda: ANSI(self._shown(status())))
        typed: Document | str = ""
        stopped = False
        while not self._pasted:
            if not await self._foreground(stopped):
                return None  # the terminal is not this client's: as a read says, EIO
            try:
                text = await self._session.prompt_async(
                    self._shown(prompt), bottom_toolbar=toolbar, default=typed
                )
            except EOFError:
                return None
            except _TERMINAL_ERRORS as exc:
                if not terminal_gone(exc):
                    raise
                return None  # the terminal is gone (hung up), or not this client's
            except _Suspended as suspended:
                self._session.app.erase_when_done = False
                typed, stopped = suspended.typed, True
                os.kill(0, signal.SIGTSTP)  # the whole job, as the shell's Ctrl-Z; fg resumes
                continue
            self._take(text)
            typed, stopped = "", False
        return self._pasted.popleft()

    async def _foreground(self, stopped: bool) -> bool:
        """Wait until the client may use the terminal: its process group is the terminal's
        foreground one (``fg``); False when it never will (the input has ended).

        A client in the background (started with ``&``, or continued after Ctrl-Z)
        that set the terminal's modes for the line editor would be stopped by the
        system (SIGTTOU) inside that call, and continued with a ``kill %1`` it would
        set them again, and be stopped again, before the signal could be handled:
        only SIGKILL ended it. It stops itself here instead, as a read would
        (SIGTTIN), at most once (``stopped``: Ctrl-Z did already); continued and still
        in the background (``bg``, or that ``kill``), it looks again every
        ``FOREGROUND_POLL_S`` seconds, while the program handles what it is sent.

        When the system does not stop it (its process group is orphaned: the shell
        that started it is gone, and no ``fg`` can come; or SIGTTIN is ignored), the
        terminal is not the client's: its reads would fail with EIO, which is the end
        of its input.
        """
        if self._stdin is None or not hasattr(os, "tcgetpgrp"):
            return True
        while True:
            try:
                if os.tcgetpgrp(self._stdin.fileno()) == os.getpgrp():
                    return True
            except (OSError, ValueError):  # not a terminal, or no more: the editor finds out
                return True
            if stopped:
                await asyncio.sleep(FOREGROUND_POLL_S)
                continue
            if not _stopped_by(signal.SIGTTIN):
                return False
            stopped = True

    def _take(self, text: str) -> None:
        """Queue what the editor returned: the line typed, or the lines of a paste that
        are not blank (``_paste``). One longer than ``LINE_LIMIT`` is not a command: it
        is dropped with a word, as from a script (``_bounded_line``)."""
        lines = [text]
        if "\n" in text:
            lines = [line for line in text.split("\n") if line.strip()] or [""]
        kept = [line for line in lines if len(line) <= LINE_LIMIT]
        if len(kept) < len(lines):
            self.complain(_("input.line_too_long", limit=f"{LINE_LIMIT:,}"))
        self._pasted.extend(kept)

    def _pump(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[str]) -> None:
        """Read standard input on a daemon thread, so Ctrl-C never waits for a line."""
        stdin = self._stdin or sys.stdin
        while True:
            try:
                line = _bounded_line(stdin)
            except (OSError, ValueError):
                line = ""
            try:
                loop.call_soon_threadsafe(queue.put_nowait, line)
            except RuntimeError:  # the loop is gone
                return
            if not line:
                return

    def _shown(self, text: str) -> str:
        """``text`` with ``STAND_INS`` for what the terminal lacks, in the line editor.

        The editor writes ``?`` for such a character (standard output's own
        errors handler is not asked), so it gets the stand-ins beforehand.
        """
        if not self.editor:
            return text
        encoding = getattr(sys.__stdout__, "encoding", None) or "utf-8"
        return text.encode(encoding, STAND_IN).decode(encoding)

    def say(self, text: str) -> None:
        out = self.out
        if out is None:  # started with standard output closed (``>&-``)
            raise OutputError(OutputError.CLOSED)
        try:
            out.write(self._shown(text) + "\n")
            out.flush()
        except BrokenPipeError:
            raise  # the reader went away: __main__ ends quietly
        except OSError as exc:  # /dev/full, a descriptor not open for writing...
            raise OutputError(exc.strerror or str(exc)) from exc

    def complain(self, text: str) -> None:
        """``scorpion: text`` on this terminal's standard error (``complain``)."""
        complain(text, self._err if self._err is not None else self._redirected)

    @property
    def unicode(self) -> bool:
        """Whether the output holds every character (UTF-8): not an ASCII terminal."""
        out = sys.__stdout__ if self.editor else self.out
        return _unicode(getattr(out, "encoding", None))

    def json(self, obj: Any) -> None:
        """``obj`` as a line of JSON; on an output that is not UTF-8 (an ASCII terminal,
        the C locale) with ``\\u`` escapes, which keep every character, not stand-ins."""
        self.say(json_line(obj, ascii_only=not self.unicode))


def json_line(obj: Any, *, ascii_only: bool = False) -> str:
    """``obj`` as one line of JSON, whatever a server put in it (``jsonable``).

    ``ascii_only``: what is not ASCII is written as ``\\u`` escapes.
    """
    return json.dumps(jsonable(obj), ensure_ascii=ascii_only, sort_keys=True, allow_nan=False)


def jsonable(value: Any) -> Any:
    """``value`` with what JSON cannot hold made so: the fields a server may add are read
    leniently (PROTOCOL.md section 2), and msgpack can carry more than JSON.

    Binary data becomes its hex digits, a msgpack extension ``{"ext": code,
    "data": hex}``, a float that is not a number ``null``, and a map key
    that is not a string its JSON text (``5`` -> ``"5"``), so that keys of
    mixed types can still be sorted.
    """
    if isinstance(value, dict):
        return {_json_key(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, msgpack.ExtType):  # a named tuple: before the tuples
        return {"ext": value.code, "data": value.data.hex()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes | bytearray):
        return bytes(key).hex()
    return json.dumps(jsonable(key), allow_nan=False)
