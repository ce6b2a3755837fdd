"""The programs behind ``scorpion``: play, register, stats, games (replay: ``replay.py``).

``run(options, terminal)`` connects, makes sure there is a player (asking
for a name and registering the first time, again until a name is taken),
and runs the command. The play loop reads one command per line (from the
line editor, or from a script when standard input is not a terminal),
sends it, waits for its reply and for the events of the version it
produced, and prints what happened. Restart, resign and a new game that
abandons an unfinished one ask first (``!`` skips the question).

Error replies are shown in the player's language: the rule violations
(``RULE_CODES``) with the server's own message, which the server already
writes in the hello's ``locale``; every other code from the client's
catalogue (``error.<code>``), filled in with what the client asked for
(the game, the name). The codes are stable (PROTOCOL.md), the client knows
the context, and so the server needs no catalogue of its own for them.

A server message that breaks the protocol is named (``app.invalid_message``:
a reply, and the command fails; ``app.frame_skipped``: a push or a frame
that cannot be read, and play goes on).

A failure to connect says what answered at the server's URL instead of a
Scorpion server, if anything (``NoServer``, ``connection.not_reached``); a
file the client cannot read or write is named with the system's reason.

Standard output carries the session, the server's rejections included: they
are its replies. A failure that ends the command, and a credentials file that
cannot be used, are a line on standard error instead (``fail``), with
``--json`` too. A player registered
whose token cannot be saved is not lost: the token and the file's entry are
printed before the command gives up (``Unsaved``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import secrets
from pathlib import Path
from typing import Any, Final

from websockets.exceptions import ConnectionClosed, InvalidHandshake

from clients.cli import config
from clients.cli.commands import (
    COMMAND_WORDS,
    Command,
    CommandError,
    asks_new_game,
    help_text,
    number,
    parse,
)
from clients.cli.connection import (
    Connection,
    ConnectionFailed,
    InvalidServerMessage,
    Message,
    ServerError,
    Unanswered,
    not_reached,
)
from clients.cli.game import GameSession
from clients.cli.guide import guide_text, menu_line
from clients.cli.i18n import _, catalogue, ngettext, use
from clients.cli.levels import LEVEL_ORDER, info, level_name
from clients.cli.options import Options
from clients.cli.render import Style, card_text, cards_in_text, render_games, render_stats
from clients.cli.terminal import Terminal, printable, shown_url, terminal_gone
from clients.cli.version import VERSION
from protocol import RULE_CODES, InvalidMessage
from protocol.constants import MAX_DEAL, MAX_NAME_CHARS
from protocol.names import invisible

__all__ = ["DEFAULT_LEVEL", "App", "NoServer", "Unsaved", "error_text", "run"]

DEFAULT_LEVEL = "medium"
CLIENT = f"scorpion-cli/{VERSION}"
YES = frozenset({"y", "yes", "k", "kyllä", "kylla", "д", "да"})
NAME_TRIES = 5
WINNABLE = frozenset({"w", "v", "р"})  # "winnable", "voitettava", "решаемый"
SIZE_POLL_SECONDS = 0.25
# ``new_game`` answered ``unavailable`` (no winnable deal ready yet, or the store down for a
# moment) is asked again after each of these waits, then the refusal is shown.
NEW_GAME_RETRY_S = (1.0, 2.0, 4.0)


class NoServer(Exception):
    """No Scorpion server could be reached at the URL; the text says what is there instead."""


class SignedOut(Exception):
    """A request answered ``unauthenticated`` after the hello was welcomed: another device
    replaced or revoked the token this connection signed in with (PROTOCOL.md section 3)."""


class Unsaved(Exception):
    """A player was registered but its token could not be saved (the user has been told)."""


async def run(
    options: Options,
    terminal: Terminal,
    *,
    connection_class: type[Connection] = Connection,
    config_dir: Path | None = None,
) -> int:
    """Run one ``scorpion`` command; the exit status (0 ok, 1 failure, 2 bad input)."""
    use(options.lang)
    app = App(options, terminal, connection_class, config_dir)
    try:
        with terminal.session():
            return await app.main()
    except ConnectionFailed as exc:
        app.fail("app.connection_failed", reason=exc)
        return 1
    except InvalidServerMessage as exc:
        app.fail("app.invalid_message", reason=exc)
        return 1
    except NoServer as exc:
        terminal.complain(str(exc))
        return 1
    except ServerError as exc:  # hello refused (rate_limited, unavailable, a protocol...)
        app.fail("app.hello_refused", url=shown_url(options.server), reason=error_text(exc.reply))
        return 1
    except SignedOut:
        app.terminal.complain(f"{_('app.signed_out_elsewhere')}; {_('app.register_again')}")
        return 1
    except Unsaved:
        return 1
    except TimeoutError:
        app.fail("app.no_answer", url=shown_url(options.server))
        return 1
    finally:
        await app.close()


def error_text(reply: Message, **context: Any) -> str:
    """An ``error`` reply as one line in the player's language."""
    code = str(reply.get("code", "internal"))
    message = str(reply.get("message", ""))
    if code in RULE_CODES and message:
        text = cards_in_text(message)  # the server wrote it in the hello's locale
    elif f"error.{code}" in catalogue("en"):
        fields = {"game": "?", "name": "?", "v": reply.get("v", "?"), **context}
        text = _(f"error.{code}", **fields)
    else:
        text = message or code
    return printable(_("app.rejected", code=code, message=text))  # the server's words


UNCHECKED: Final = -1
"""``_unfinished_elsewhere`` when the server refused the list (no game has this id)."""


def _game_ids(welcome: Message | None) -> list[int]:
    """The unfinished games a ``welcome`` lists."""
    return [int(game["game"]) for game in (welcome or {}).get("games", [])]


def _style(options: Options, terminal: Terminal) -> Style:
    tty = terminal.isatty() or terminal.editor
    color = options.color and tty and terminal.interactive and not options.json
    return Style(color=color, width=terminal.size()[0])


class App:
    """One invocation: options, terminal, connection and (for play) the game."""

    def __init__(
        self,
        options: Options,
        terminal: Terminal,
        connection_class: type[Connection],
        config_dir: Path | None,
    ) -> None:
        self.options = options
        self.terminal = terminal
        self.connection_class = connection_class
        self.config_dir = config_dir or config.config_dir()
        self.session = GameSession(terminal, _style(options, terminal), options.json)
        self.session.refused = self._open_refused
        self.conn: Connection | None = None
        self._seen_unfinished: set[int] = set()  # the player's games other devices play
        self.input_ended = False  # a question's answer was the end of input
        terminal.status = self.session.status
        terminal.words = self.words

    async def main(self) -> int:
        command = self.options.command
        if command == "register":
            return await self.register(self.options.name or "")
        if command == "new-token":
            return await self.new_token()
        if command == "sign-out":
            return await self.sign_out(self.options.everywhere)
        if command == "replay":  # a game of the player kept here: a new one has none
            from clients.cli.replay import replay

            signed_in = await self._as_stored()
            if signed_in is None:
                return 1
            return await replay(signed_in[0], self.terminal, self.session.style, self.options)
        conn = await self.connect()
        if conn is None:
            return 1
        if command == "stats":
            return await self.stats(self.options.level)
        if command == "games":
            return await self.games(self.options.status)
        return await self.play()

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    # -- output ------------------------------------------------------------

    def say(self, text: str) -> None:
        self.terminal.say(text)

    def notice(self, key: str, **fields: Any) -> None:
        """A message of the client's own: a line, or with ``--json`` a JSON object."""
        self.tell(key, _(key, **fields))

    def fail(self, key: str, **fields: Any) -> None:
        """A failure that ends the command, or a local file it cannot use: on standard error."""
        self.terminal.complain(_(key, **fields))

    def tell(self, kind: str, text: str, **fields: Any) -> None:
        """``text`` as lines, or with ``--json`` as one ``notice`` object (never plain text);
        with ``replay --export -`` on standard error, which holds the document alone."""
        if self.options.json:
            self.terminal.json({"type": "notice", "notice": kind, "text": text, **fields})
        elif self.options.export == "-":
            self.terminal.complain(text)
        else:
            self.say(text)

    def rejected(self, reply: Message, **context: Any) -> None:
        """An ``error`` reply said; one that says this connection was signed out ends the
        command (``SignedOut``): every later request would be refused the same."""
        if self.options.json:
            self.terminal.json(reply)
        elif reply.get("code") != "unauthenticated":
            self.say(error_text(reply, **context))
        if reply.get("code") == "unauthenticated":
            raise SignedOut

    def _open_refused(self, reply: Message) -> None:
        """A resync's or a snapshot's ``open_game`` refused: said (``too_many_watchers``,
        say). A sign-out is left to the next request, which ends the command; raised
        here it would end a background task, not the command."""
        if reply.get("code") != "unauthenticated":
            self.rejected(reply, game=self.session.game)

    def waiting(self, seconds: float) -> None:
        """The server asked to wait before a request goes again (``rate_limited``): said,
        so that a wait of seconds (a new game past the game rate) is not a silent freeze."""
        self.notice("app.rate_wait", seconds=math.ceil(seconds))

    def skipped(self, reason: str) -> None:
        """A frame the connection could not read, or a push that breaks the protocol."""
        self.notice("app.frame_skipped", reason=reason)

    async def readline(self, prompt: str) -> str | None:
        """The next line typed, or None at the end of input.

        A connection that fails for good while the player types (the server went
        away and did not come back) ends the command at once with the reason
        (``ConnectionFailed``), instead of waiting for a line that cannot be sent.
        """
        conn = self.conn
        if conn is None:
            return await self.terminal.readline(prompt)
        reading = asyncio.ensure_future(self._read_interruptible(prompt))
        lost = asyncio.ensure_future(conn.lost.wait())
        try:
            await asyncio.wait({reading, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            if not reading.done():
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reading
        if reading.done() and not reading.cancelled():
            line, interrupt = reading.result()
            if interrupt is not None:
                raise interrupt  # here, in the command's task: exit status 130
            return line
        raise conn.failure or ConnectionFailed(
            _("connection.lost", url=shown_url(self.options.server))
        )

    async def _read_interruptible(self, prompt: str) -> tuple[str | None, KeyboardInterrupt | None]:
        """The line, or the Ctrl-C the line editor raised: a task must not raise it.

        Raised inside a task, it leaves that task's exception unretrieved, and
        Python prints a traceback of it when the program ends.
        """
        try:
            return await self.terminal.readline(prompt), None
        except KeyboardInterrupt as interrupt:
            return None, interrupt
        except Exception as exc:
            # The terminal hung up as the line editor was cancelled (the program ending
            # on SIGHUP), its modes not to be set back: the end of input, not a traceback
            # of a task no one awaits any more.
            if terminal_gone(exc):
                return None, None
            raise

    def words(self) -> list[str]:
        """What Tab completes: the face-up cards, the commands and the levels."""
        board = self.session.board
        cards: list[str] = []
        if board is not None:
            for column in board.columns:
                cards += [card_text(card).lower() for card in column.cards if card != "??"]
            cards += [card_text(card).lower() for card in board.reserve]
        return [*cards, *COMMAND_WORDS, *LEVEL_ORDER]

    # -- players -----------------------------------------------------------

    def _connection(self, token: str | None, next_token: str | None = None) -> Connection:
        return self.connection_class(
            self.options.server,
            locale=self.options.lang,
            token=token,
            next_token=next_token,
            client=CLIENT,
            on_push=self.session.on_push,
            on_reconnect=self.session.resync,
            on_skipped=self.skipped,
            on_drop=self.session.dropped,
            on_wait=self.waiting,
            kept_tokens=self._kept_tokens,
        )

    def _kept_tokens(self) -> list[str]:
        """The tokens kept now for the player this client signed in as (the entry's, then
        the ``next`` of a rotation whose answer was lost): ``scorpion new-token`` may have
        rotated it since the file was read. Empty for another player's entry, or for an
        entry that cannot be used."""
        welcome = self.conn.welcome if self.conn is not None else None
        player = (welcome or {}).get("player") or {}
        try:
            kept = config.load(self.options.server, self.config_dir)
        except (OSError, config.CredentialsError):
            return []
        if kept is None or kept.name != player.get("name"):
            return []
        return [kept.token] if kept.next is None else [kept.token, kept.next]

    async def _open(self, conn: Connection) -> Message:
        """``conn.open()``; no WebSocket server (or none that says hello) raises ``NoServer``."""
        try:
            return await conn.open()
        except TimeoutError:
            raise  # the server does not answer
        except (OSError, InvalidHandshake, ConnectionClosed) as exc:
            raise NoServer(not_reached(self.options.server, exc)) from exc

    def _stored(self) -> config.Credentials | None:
        """The stored player; a credentials file that cannot be used is named, and read as none.
        One other users may read is made the user's only first, and that is said."""
        for path, before, after in config.tighten(self.config_dir):
            if after is None:
                self.fail("app.credentials_readable", path=path, before=f"{before:o}")
            else:
                self.fail(
                    "app.credentials_tightened", path=path, before=f"{before:o}", after=f"{after:o}"
                )
        try:
            return config.load(self.options.server, self.config_dir)
        except config.InvalidEntry as exc:
            self.fail("app.credentials_invalid", path=exc.path, reason=exc.reason)
        except config.CredentialsError as exc:
            self.fail("app.credentials_malformed", path=exc.path, reason=exc.reason)
        return None

    async def connect(self) -> Connection | None:
        """Connected and acting as the stored player (registering one if needed)."""
        stored = self._stored()
        conn = self._connection(*((stored.token, stored.next) if stored else (None, None)))
        self.conn = self.session.conn = conn
        try:
            welcome = await self._open(conn)
        except ServerError as exc:
            if exc.code != "unauthenticated":
                raise  # not about the token: ``run`` names it
            refused = _("app.token_refused", reason=error_text(exc.reply))
            # one line ("...: register first." ends a sentence the advice goes on from)
            self.terminal.complain(f"{refused.rstrip('.')}; {_('app.register_again')}")
            return None
        if stored is not None:
            self._rotated_meanwhile(conn, stored)
        if welcome.get("player") is None and not await self._ask_name(conn):
            return None
        return conn

    async def _ask_name(self, conn: Connection) -> bool:
        """Ask for a name until one is registered (or input ends)."""
        for _attempt in range(NAME_TRIES):
            line = await self.readline(_("app.name_prompt"))
            if line is None:
                self.fail("app.no_name")
                return False
            name = line.strip()
            problem = self._name_problem(name)
            if problem is not None:
                self.tell("name", f"{problem}; {_('app.name_again')}")  # asked again
                continue
            if await self._register(conn, name):
                return True
        self.terminal.complain(ngettext("app.names_refused", NAME_TRIES, tries=NAME_TRIES))
        return False

    @staticmethod
    def _name_problem(name: str) -> str | None:
        if not name:
            return _("app.name_empty")
        if len(name) > MAX_NAME_CHARS:
            return ngettext("app.name_long", MAX_NAME_CHARS, limit=MAX_NAME_CHARS)
        # Bytes of standard input that are not UTF-8 are read as U+FFFD (tolerate_encodings):
        # not a name, as they are refused as one given to ``register`` (options.py).
        if not name.isprintable() or invisible(name) or "\N{REPLACEMENT CHARACTER}" in name:
            return _("app.name_unprintable")
        return None

    async def _register(self, conn: Connection, name: str) -> bool:
        reply = await conn.request("register", name=name)
        if reply.get("code") == "bad_request" and not self.options.json:
            self.notice("app.name_refused", name=name)  # the server's rules for names
            return False
        if reply.get("type") != "registered":
            self.rejected(reply, name=name)
            return False
        conn.token = str(reply["token"])
        credentials = config.Credentials(name, conn.token)
        previous = self._previous()
        try:
            aside = config.set_aside(self.config_dir)
            path = config.save(self.options.server, credentials, self.config_dir)
        except (OSError, config.CredentialsError) as exc:
            self.unsaved(credentials, exc)
            raise Unsaved(name) from exc
        if aside is not None:
            self.notice("app.set_aside", path=path, aside=aside)
        self.notice("app.registered", name=name, path=path)
        if previous is not None and previous.token != credentials.token:
            self.replaced(previous, path)
        return True

    def _previous(self) -> config.Credentials | None:
        """The player stored for the server before a registration (None if none is usable)."""
        try:
            return config.load(self.options.server, self.config_dir)
        except config.CredentialsError:
            return None  # said already, and set aside or replaced now

    def replaced(self, previous: config.Credentials, path: Path) -> None:
        """The player a registration replaced, and where its entry is kept (``config.save``).

        Its token is not shown: on a shared screen, or in a log of the output,
        anyone reading it could play as that player.
        """
        # A name written by hand may be blank, or hold what a terminal would act on.
        name = previous.name if previous.name.isprintable() else repr(previous.name)
        key = "app.replaced_player" if name.strip() else "app.replaced_unnamed"
        text = _(key, path=path, old=name, server=shown_url(self.options.server))
        self.tell(key, text, name=previous.name, path=str(path))

    def unsaved(
        self, credentials: config.Credentials, exc: Exception, key: str = "app.not_saved"
    ) -> None:
        """The token that could not be saved, and how to store it by hand: nothing is lost.
        ``key``: what happened to it (registered, or rotated)."""
        path = config.credentials_path(self.config_dir)
        if isinstance(exc, config.CredentialsError):
            reason = exc.reason
        else:
            reason = config.os_reason(exc, path) if isinstance(exc, OSError) else str(exc)
        name, token, server = credentials.name, credentials.token, self.options.server
        entry = {"servers": {server.rstrip("/"): {"name": name, "token": token}}}
        fields = {"name": name, "token": token, "server": server, "path": str(path)}
        self.tell(key, _(key, reason=reason, **fields), **fields)
        self.tell("app.keep_token", _("app.keep_token", **fields), **fields)
        text = json.dumps(entry, ensure_ascii=not self.terminal.unicode)  # a name as \u00e4
        self.tell("app.store_token", _("app.store_token", entry=text, **fields), **fields)

    async def register(self, name: str) -> int:
        name = name.strip()
        problem = self._name_problem(name)
        if problem is not None:
            self.terminal.complain(problem)  # a bad argument
            return 2
        stored = self._stored()
        if stored is not None and stored.name == name:
            self.notice("app.already_registered", name=name, server=shown_url(self.options.server))
            return 0
        conn = self._connection(None)
        self.conn = conn
        await self._open(conn)
        return 0 if await self._register(conn, name) else 1

    # -- the stored player's token ----------------------------------------

    async def _as_stored(self) -> tuple[Connection, config.Credentials] | None:
        """Connected as the stored player; None, said, if there is none or its token is refused.

        Never registers: these commands (new-token, sign-out, replay) are about the
        player kept here.
        """
        stored = self._stored()
        if stored is None:
            self.fail("app.no_player", server=shown_url(self.options.server))
            return None
        conn = self._connection(stored.token, stored.next)
        self.conn = conn
        try:
            await self._open(conn)
        except ServerError as exc:
            if exc.code != "unauthenticated":
                raise  # not about the token: ``run`` names it
            self.terminal.complain(_("app.token_refused", reason=error_text(exc.reply)))
            return None
        return conn, self._rotated_meanwhile(conn, stored)

    def _rotated_meanwhile(
        self, conn: Connection, stored: config.Credentials
    ) -> config.Credentials:
        """``stored``, or, when its token was refused and the ``next`` one of a rotation
        whose answer was lost signed in instead, that one, saved in its place."""
        if stored.next is None or conn.token != stored.next:
            return stored  # an unanswered rotation that did not happen keeps its ``next``:
            # it may still be on its way to the server, and is harmless if it never lands
        rotated = config.Credentials(stored.name, stored.next)
        try:
            path = config.save(self.options.server, rotated, self.config_dir, rotated=True)
        except (OSError, config.CredentialsError) as exc:
            self.unsaved(rotated, exc, "app.rotated_not_saved")
            return rotated
        self.notice("app.rotation_finished", name=self._shown_name(stored.name), path=path)
        return rotated

    @staticmethod
    def _shown_name(name: str) -> str:
        """A stored name as said: one written by hand may hold what a terminal would act on."""
        return name if name.isprintable() and name.strip() else repr(name)

    async def new_token(self) -> int:
        """``rotate_token``: the stored token replaced by a new one, kept in its place."""
        signed_in = await self._as_stored()
        if signed_in is None:
            return 1
        conn, stored = signed_in
        # Once asked, the old token is gone: a Ctrl-C before the new one is saved (or shown)
        # would lose the player. The rotation finishes first; the interrupt ends the command after.
        rotation = asyncio.ensure_future(self._rotate(conn, stored))
        try:
            return await asyncio.shield(rotation)
        except asyncio.CancelledError:
            await rotation
            raise

    async def _rotate(self, conn: Connection, stored: config.Credentials) -> int:
        # The new token is made here and kept before the server is asked: an answer lost
        # on the way then loses nothing (the next sign-in finds which token works). One
        # kept from a rotation still unanswered is sent again, never replaced: that request
        # may yet reach the server, and its token would then be kept nowhere.
        new = stored.next or secrets.token_urlsafe(32)
        try:
            config.save(
                self.options.server,
                config.Credentials(stored.name, stored.token, new),
                self.config_dir,
            )
        except (OSError, config.CredentialsError) as exc:
            path = config.credentials_path(self.config_dir)
            reason = config.os_reason(exc, path) if isinstance(exc, OSError) else exc.reason
            self.fail("app.cannot_keep_next", path=path, reason=reason)  # nothing asked
            return 1
        conn.next_token = new  # a drop before the answer: the reconnect signs in either way
        reply = await conn.request("rotate_token", token=new)
        if reply.get("code") == "unauthenticated" and await self._signs_in(new):
            # the same token's earlier request (a new-token interrupted) reached the server
            # after this connection's hello, and signed it out: the rotation is done
            reply = {"type": "token", "token": new}
        if reply.get("type") != "token":
            self.rejected(reply)
            if reply.get("code") == "bad_request":  # a token it will not take: make another
                with contextlib.suppress(OSError, config.CredentialsError):
                    kept = config.Credentials(stored.name, stored.token)
                    config.save(self.options.server, kept, self.config_dir)
            return 1
        conn.token, conn.next_token = new, None
        credentials = config.Credentials(stored.name, conn.token)
        try:
            path = config.save(self.options.server, credentials, self.config_dir, rotated=True)
        except (OSError, config.CredentialsError) as exc:
            # the old token is gone: the new one is shown, not lost
            self.unsaved(credentials, exc, "app.rotated_not_saved")
            return 1
        self.notice("app.token_rotated", name=self._shown_name(stored.name), path=path)
        return 0

    async def _signs_in(self, token: str) -> bool:
        """Whether ``token`` signs in (on a connection of its own, closed after)."""
        conn = self._connection(token)
        try:
            await self._open(conn)
        except ServerError:
            return False
        finally:
            await conn.close()
        return True

    async def sign_out(self, everywhere: bool) -> int:
        """The stored player forgotten here (its entry kept under ``replaced``); with
        ``everywhere``, every token of the player revoked first (``sign_out``)."""
        if everywhere:
            signed_in = await self._as_stored()
            if signed_in is None:
                return 1
            conn, stored = signed_in
            reply = await conn.request("sign_out", everywhere=True)
            if reply.get("type") != "signed_out":
                self.rejected(reply)
                return 1
            self.notice("app.signed_out_everywhere", name=self._shown_name(stored.name))
            return 0 if self._forget(revoked=True) else 1  # its token opens nothing any more
        kept = self._stored()
        if kept is None:
            self.fail("app.no_player", server=shown_url(self.options.server))
            return 1
        path = self._forget(revoked=False)
        if path is None:
            return 1
        name = self._shown_name(kept.name)
        self.notice("app.signed_out", name=name, server=shown_url(self.options.server), path=path)
        return 0

    def _forget(self, revoked: bool) -> Path | None:
        """``config.forget`` for the server: the file; None, said, if it cannot be written."""
        path = config.credentials_path(self.config_dir)
        try:
            return config.forget(self.options.server, self.config_dir, revoked=revoked) or path
        except config.CredentialsError as exc:
            reason = exc.reason
        except OSError as exc:
            reason = config.os_reason(exc, path)
        self.fail(
            "app.cannot_forget", path=path, server=shown_url(self.options.server), reason=reason
        )
        return None

    # -- lists -------------------------------------------------------------

    async def _stats_rows(self, level: str | None) -> list[dict[str, Any]] | None:
        assert self.conn is not None
        fields: dict[str, Any] = {} if level is None else {"level": level}
        reply = await self.conn.request("stats", **fields)
        if reply.get("type") != "stats":
            self.rejected(reply)
            return None
        if self.options.json:
            self.terminal.json(reply)
        return list(reply["stats"])

    async def stats(self, level: str | None) -> int:
        rows = await self._stats_rows(level)
        if rows is None:
            return 1
        if not self.options.json:
            self.say(render_stats(rows, self.terminal.table_width()))
        return 0

    async def games(self, status: str | None) -> int:
        assert self.conn is not None
        fields: dict[str, Any] = {} if status is None else {"status": status}
        reply = await self.conn.request("games", **fields)
        if reply.get("type") != "games":
            self.rejected(reply)
            return 1
        if self.options.json:
            self.terminal.json(reply)
        else:
            self.say(render_games(list(reply["games"]), status, self.terminal.table_width()))
        return 0

    # -- playing -----------------------------------------------------------

    async def play(self) -> int:
        assert self.conn is not None
        welcome = self.conn.welcome or {}
        unfinished = list(welcome.get("games", []))
        first: str | None = None  # a script's first line, read before its game was started
        if unfinished and not self.options.new:
            if not await self._open_game(int(unfinished[0]["game"])):
                return 1
            if self.options.level or self.options.deal or self.options.winnable:
                self.notice("app.continuing")
        else:
            level, deal = self.options.level, self.options.deal
            winnable = self.options.winnable  # play --winnable
            kept: int | None = None
            if (
                level is None
                and deal is None
                and not winnable
                and self.terminal.editor
                and not self.options.json
            ):
                chosen = await self.menu()
                if chosen is None:  # input ended: as after ``q``, with no game started
                    return 0
                level, deal, winnable = chosen
                kept = await self._played_instead(ask=True)  # started while the menu waited
            elif not self.terminal.interactive:
                first, command = await self._first_command()
                if command is None and first is not None and asks_new_game(first):
                    # The script's own game, refused here (a level or deal no server
                    # has): nothing is played, as when the server refuses it.
                    try:
                        parse(first)
                    except CommandError as exc:
                        self.tell("command", printable(str(exc)))
                    return 1
                if command is not None and command.kind == "new":
                    # The script starts its own game: starting another before it would
                    # only have this one abandon it, a loss nobody played.
                    level, deal, winnable = command.level or self._level(), command.deal, False
                    first = None
                    if self._deal_not_chosen(level, deal):  # as the server would refuse it
                        return 1
                    if not command.force:  # ``n`` asks, as it does later
                        kept = await self._played_instead(ask=True)
                else:  # started elsewhere while the first line was awaited: continued
                    kept = await self._played_instead(ask=False)
            if self.input_ended:  # at a question: as ``q`` there, with no game started
                return 0
            if kept == UNCHECKED:  # told not to start one, and no game known to continue
                return 0
            if kept is not None:
                if not await self._open_game(kept):
                    return 1
                self.notice("app.continuing")
            elif not await self.new_game(level, deal, winnable=winnable):
                return 1
        if self.terminal.interactive:
            self.notice("app.help_hint")
        follow = asyncio.create_task(self.follow_size()) if self.terminal.editor else None
        try:
            await self.loop(first)
        finally:
            if follow is not None:
                follow.cancel()
        if self.session.game is not None and self.conn.online:
            # While reconnecting, not waited for: the server closed the game with the
            # connection it lost, and ``q`` quits now, not after the reconnect gives up.
            await self.conn.request("close_game", game=self.session.game)
        return 0

    async def follow_size(self) -> None:
        """Draw the board again, for the new size, whenever the terminal is resized."""
        last = self.terminal.size()
        while True:
            await asyncio.sleep(SIZE_POLL_SECONDS)
            size = self.terminal.size()
            if size != last and self.session.board is not None:
                last = size
                self.session.show()  # below what the old size garbled (no clear: see terminal)

    async def _first_command(self) -> tuple[str | None, Command | None]:
        """A script's first line that is not blank, and its command (None: not one).

        Read before the script's game is started: a first ``n`` starts it instead.
        """
        while True:
            line = await self.readline("> ")
            if line is None:
                return None, None
            try:
                command = parse(line)
            except CommandError:
                return line, None  # said by ``loop``, once the game is shown
            if command is not None:
                return line, command

    async def loop(self, first: str | None = None) -> None:
        """Read and run commands until ``q`` or the end of input (``first``: read already)."""
        while True:
            line: str | None = first
            if first is not None:
                first = None
            else:
                line = await self.readline("> ")
            if line is None:
                return
            try:
                command = parse(line)
            except CommandError as exc:
                self.tell("command", printable(str(exc)))  # it may quote what was typed
                continue
            if command is None:
                continue
            if command.kind == "quit":
                return
            await self.execute(command)

    async def menu(self) -> tuple[str, int | None, bool] | None:
        """The level menu: each level with the player's statistics, then the deal.

        None when input ends at either question.
        """
        # The level's own row (games dealt as winnable have one of their own, `stats`),
        # or where it has no games, that of its winnable deals
        rows: dict[str, dict[str, Any]] = {}
        for row in sorted(
            await self._stats_rows(None) or [], key=lambda row: bool(row.get("winnable"))
        ):
            if row.get("games"):
                rows.setdefault(str(row["level"]), row)
        self.say(_("menu.title"))
        width = self.terminal.table_width()
        for place, each in enumerate(LEVEL_ORDER, 1):
            # "  3  " before the first line, as many spaces before the others
            text = menu_line(each, rows.get(each), None if width is None else width - 5)
            first, *more = text.split("\n")
            self.say("\n".join([f"  {place}  {first}", *(f"     {line}" for line in more)]))
        level: str | None = None
        while level is None:  # a typo is asked again, not taken for the default
            chosen = await self._ask(_("menu.level_prompt", default=level_name(DEFAULT_LEVEL)))
            if chosen is None:
                return None
            level = _menu_level(chosen)
            if level is None:
                self.notice("menu.bad_level", count=len(LEVEL_ORDER))
        if level == "easy":
            self.notice("menu.easy_winnable")
            return level, None, False
        while True:
            answer = await self._ask(_("menu.deal_prompt"))
            if answer is None:
                return None
            if (deal := number(answer, MAX_DEAL)) is not None:
                return level, deal, False
            if not answer or answer in WINNABLE:
                return level, None, answer in WINNABLE
            self.notice("menu.bad_deal", limit=MAX_DEAL)

    async def _ask(self, question: str) -> str | None:
        answer = await self.readline(question)
        return None if answer is None else answer.strip().lower()

    async def confirm(self, key: str, **fields: Any) -> bool:
        """Ask a yes/no question (no is the default); False at the end of input."""
        self.tell(key, _(key, **fields) + " " + _("app.yes_no"))
        answer = await self.readline("? ")
        self.input_ended = answer is None
        if (answer or "").strip().lower() in YES:
            return True
        self.notice("app.kept")
        return False

    async def _open_game(self, game: int) -> bool:
        """Open the player's unfinished ``game`` and play it here, its board shown; False
        (said) if refused."""
        assert self.conn is not None
        with self.session.held():
            reply = await self.conn.request("open_game", game=game)
            if reply.get("type") == "game":
                self.session.take(reply)
                self.session.show()  # before the pushes held meanwhile are said
        if reply.get("type") != "game":
            self.rejected(reply, game=game)
            return False
        return True

    async def _may_abandon(self) -> bool:
        """Whether a new game may go ahead: asked when it abandons the game played here,
        or one the player has on another device (or may have: the list was refused)."""
        if not self.session.finished and self.session.game is not None:
            return await self.confirm("app.confirm_new")
        kept = await self._unfinished_elsewhere()
        if kept == UNCHECKED:
            return await self.confirm("app.confirm_new_unchecked")
        return kept is None or await self.confirm("app.confirm_new_elsewhere", game=kept)

    async def _played_instead(self, ask: bool) -> int | None:
        """At the start of ``play``, before its new game: an unfinished game the player
        started on another device since the welcome (which listed none), to be played
        here instead, as the welcome's would have been; with ``ask`` (a new game was
        chosen), only if the player says no to abandoning it. None: start the new game
        (also with ``--new``, or, not asked, when the list cannot be had: the welcome had
        none). ``UNCHECKED``: asked, when the list cannot be had, and told no."""
        if self.options.new:
            return None
        kept = await self._unfinished_elsewhere()
        if kept is None or (kept == UNCHECKED and not ask):
            return None
        if kept == UNCHECKED:
            return None if await self.confirm("app.confirm_new_unchecked") else UNCHECKED
        if ask and await self.confirm("app.confirm_new_elsewhere", game=kept):
            return None
        return kept

    async def _unfinished_elsewhere(self) -> int | None:
        """The player's unfinished game that this client is not playing (another device
        started it): a new game would abandon it, a loss played elsewhere. None when
        there is none; ``UNCHECKED`` when the server's list cannot be had (refused)."""
        assert self.conn is not None
        reply = await self.conn.request("games", status="active")
        if reply.get("type") != "games":
            return UNCHECKED
        others = [int(each["game"]) for each in reply.get("games", [])]
        self._seen_unfinished.update(others)  # none of them is a game a new_game started
        return next((each for each in others if each != self.session.game), None)

    async def new_game(
        self, level: str | None, deal: int | None, *, winnable: bool = False
    ) -> bool:
        """Start a game on ``deal``, or a random one (a deal the solver has won if
        ``winnable``), and show its board before what the pushes held meanwhile say (that
        the deal cannot be won was said before the board of the game it was said of)."""
        assert self.conn is not None
        fields: dict[str, Any] = {"level": level or self._level()}
        if winnable:
            fields["winnable"] = True
        elif deal is not None:
            fields["deal"] = deal
        known = {self.session.game, *_game_ids(self.conn.welcome), *self._seen_unfinished}
        with self.session.held():  # the new game's first clock push waits for its reply
            try:
                reply = await self._start(fields)
            except InvalidMessage:  # this protocol version has no winnable option
                reply = {"type": "error", "code": "bad_request"}
            if reply.get("code") == "bad_request" and fields.pop("winnable", False):
                self.notice("menu.no_winnable")  # a server without the option: a random deal
                reply = await self._start(fields)
            for wait in NEW_GAME_RETRY_S:  # PROTOCOL.md: "unavailable: retry shortly"
                if reply.get("code") != "unavailable":
                    break
                key = "menu.winnable_retry" if fields.get("winnable") else "menu.new_game_retry"
                self.notice(key, seconds=f"{wait:g}")
                await asyncio.sleep(wait)
                reply = await self._start_again(fields, known)
            if reply.get("type") != "game":
                self.rejected(reply)
                return False
            if reply.get("lost") is not None:
                self.notice("app.abandoned", game=reply["lost"])
            self.session.take(reply)
            self.session.show()
        return True

    async def _start(self, fields: dict[str, Any]) -> Message:
        """``new_game``; if a drop left it unanswered, the game it started, if it did.

        The reconnection's welcome lists the player's unfinished game: one other
        than the games known before (the one played, the unfinished one the
        connection's welcome listed, one seen on another device since) is the
        one this request started, and it is opened; with none, nothing was
        started, and it is asked for again.
        Sending it again blindly would start a second game and abandon that one.
        """
        assert self.conn is not None
        known = {self.session.game, *_game_ids(self.conn.welcome), *self._seen_unfinished}
        try:
            return await self.conn.request("new_game", **fields)
        except Unanswered:
            started = [game for game in _game_ids(self.conn.welcome) if game not in known]
            if started:
                return await self.conn.request("open_game", game=started[0])
            return await self.conn.request("new_game", **fields)

    async def _start_again(self, fields: dict[str, Any], known: set[int | None]) -> Message:
        """``new_game`` once more after one answered ``unavailable``, unless that one
        started a game after all (its commit landed as the server gave up waiting):
        an unfinished game not known before is that one, and is opened. A new request
        would abandon it, a loss the player never played. When the list cannot be
        read either, its refusal is the answer (waited for again, or shown)."""
        assert self.conn is not None
        listed = await self.conn.request("games", status="active")
        if listed.get("type") != "games":
            return listed
        started = [int(g["game"]) for g in listed.get("games", []) if g["game"] not in known]
        if started:
            return await self.conn.request("open_game", game=started[0])
        return await self._start(fields)

    def _level(self) -> str:
        board = self.session.board
        return board.level if board is not None else self.options.level or DEFAULT_LEVEL

    async def execute(self, command: Command) -> None:
        kind = command.kind
        if kind == "move":
            fields: dict[str, Any] = {"card": command.card}
            if command.to is not None:
                fields["to"] = command.to
            await self.act("move", **fields)
        elif kind in ("deal", "undo"):
            await self.act(kind)
        elif kind == "restart":
            if self._playing() and (command.force or await self.confirm("app.confirm_restart")):
                await self.act("restart")
        elif kind == "resign":
            if self._playing() and (command.force or await self.confirm("app.confirm_resign")):
                await self.act("resign", versioned=False)
        elif kind == "hint":
            await self.hint()
        elif kind in ("pause", "resume", "pause_or_resume"):
            if self._playing():  # a finished game's clock has stopped: nothing to pause
                await self.pause(kind)
        elif kind == "new":
            await self.start_over(command)
        else:
            await self.show(kind)

    async def show(self, kind: str) -> None:
        if kind == "stats":
            await self.stats(None)
        elif kind == "games":
            await self.games(None)
        elif kind == "board":
            self.session.show()
        elif kind == "guide":
            self.tell("guide", self.guide())
        elif kind == "help":
            self.tell("help", help_text(self.terminal.size()[0]))

    def guide(self) -> str:
        """The rules of the level being played, then the tips, wrapped to the terminal."""
        return guide_text(self._level(), self.terminal.size()[0] - 1)

    def _playing(self) -> bool:
        """A game is open and not finished (else say why nothing happens)."""
        if self.session.game is None:
            self.notice("game.none_open")
            return False
        if self.session.finished:
            self.notice("error.game_over")
            return False
        return True

    async def act(self, type_: str, versioned: bool = True, **fields: Any) -> None:
        """Send an action with the version last seen; wait for its events."""
        session = self.session
        assert self.conn is not None and session.game is not None
        if versioned:
            fields["v"] = session.v
        try:
            reply = await self.conn.request(type_, game=session.game, **fields)
        except Unanswered:  # a resign a drop left unanswered: the catch-up says if it was applied
            if session.finished:
                return
            reply = await self.conn.request(type_, game=session.game, **fields)
        if reply.get("type") == "ack":
            await session.until(int(reply["v"]))
            return
        board = session.board
        limited = reply.get("code") == "nothing_to_undo" and board and board.undo_limit_reached
        found = info(board.level) if board is not None else None
        limit = found.undo_limit if found is not None else None
        if limited and limit is not None and not self.options.json:
            self.tell("app.undo_limit", ngettext("app.undo_limit", limit, limit=limit))
        else:
            self.rejected(reply, game=session.game)
        await self.reopen_if(reply)
        if reply.get("code") == "stale":
            self.notice("app.changed_elsewhere")
            session.show()

    async def reopen_if(self, reply: Message) -> None:
        """After ``stale`` or ``id_reused`` catch up; after ``not_open`` open the game here again.
        After ``paused`` the game is known to be paused (``p`` then resumes it).

        ``open_game`` with ``since`` does both (PROTOCOL.md sections 4 and 5).
        """
        if reply.get("code") in ("stale", "id_reused", "not_open"):
            await self.session.resync()
        elif reply.get("code") == "paused" and not self.session.paused:
            self.session.set_paused(True)

    async def hint(self) -> None:
        session = self.session
        assert self.conn is not None and session.game is not None
        board = session.board
        hints = None if board is None else board.hints
        try:
            reply = await self.conn.request("hint", game=session.game)
        except Unanswered:  # a drop: the catch-up printed its hint event if it was recorded
            board = session.board
            if board is not None and board.hints == hints and session.game is not None:
                self.say(_("hint.lost"))
            return
        if reply.get("type") != "hint":
            self.rejected(reply, game=session.game)
            await self.reopen_if(reply)
            return
        await session.until(int(reply["v"]))  # its hint event prints the advice

    async def pause(self, kind: str) -> None:
        """``pause``, ``resume``, or (``p``) the one the game is not in."""
        session = self.session
        assert self.conn is not None and session.game is not None
        type_ = kind if kind != "pause_or_resume" else "resume" if session.paused else "pause"
        reply = await self.conn.request(type_, game=session.game)
        if reply.get("type") != "ack":
            self.rejected(reply, game=session.game)
            await self.reopen_if(reply)
            return
        session.set_paused(type_ == "pause")
        self.notice("app.paused" if session.paused else "app.resumed")

    async def start_over(self, command: Command) -> None:
        level = command.level or self._level()
        if self._deal_not_chosen(level, command.deal):  # before asking to give a game up
            return
        if not command.force and not await self._may_abandon():
            return
        await self.new_game(level, command.deal)

    def _deal_not_chosen(self, level: str, deal: int | None) -> bool:
        """A deal number on a level whose deals the server chooses (easy, as the level menu
        knows): said, and True. The server would refuse it (``forbidden``)."""
        found = info(level)
        if deal is None or found is None or not found.winnable_only:
            return False
        self.notice("app.easy_no_deal")
        return True


def _menu_level(chosen: str) -> str | None:
    """The level the menu's answer names (its number, key or name in the language shown;
    Enter: the default); None for anything else."""
    if not chosen:
        return DEFAULT_LEVEL
    if (index := number(chosen, len(LEVEL_ORDER))) is not None:
        return LEVEL_ORDER[index - 1]
    if chosen in LEVEL_ORDER:
        return chosen
    names = {level_name(each).lower(): each for each in LEVEL_ORDER}
    return names.get(chosen)
