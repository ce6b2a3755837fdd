"""One logical connection to a Scorpion server that survives drops.

``Connection.open`` connects (offering subprotocol ``scorpion.v1``, refusing
a server that does not select it) and says hello. ``request`` sends a request
built with ``protocol.new_request`` and returns its reply, matched by ``re``
(PROTOCOL.md section 2); pushes go to the ``on_push`` callback in arrival
order.

When the connection drops, the reader reconnects with a growing delay (which
a welcome does not start again: only a reconnection that proved itself does,
``_reconnect``), says hello again with the token (or, when that one is refused, with the
``next_token`` of a rotation whose answer was lost), awaits ``on_reconnect`` (the app reopens its
game with ``since``) and then resends every request still unanswered with
the **same id** (and so the same ``v``): the server answers a retry of an
applied action with its first reply and never applies it twice (section 5).
A ``new_game``, ``resign`` or ``hint`` has no ``v`` to make that safe: once a
socket took it, it is not sent again but fails with ``Unanswered``, and the app
looks at the new ``welcome`` or the catch-up instead; one asked while the
connection was down never left, and is sent then like the others.
An ``internal`` error is retried the same way, once; a ``rate_limited`` one
the same way too (same id) after its ``retry_after_ms``, and requests of its
kind are spaced from then on (``request``). ``on_drop`` hears of a drop (the
app stops the clock it shows), and ``lost`` is set once the connection has
failed for good.

What the server sends is checked where it enters (``clients.cli.checks``,
against the protocol's catalogue, leniently): a frame that cannot be read,
and a push that breaks the protocol, are skipped and reported to
``on_skipped``; a reply that breaks it fails its request with
``InvalidServerMessage``, naming the field. The reader never dies silently:
whatever stops it fails every request still waiting (``ConnectionFailed``),
and every later one, so that nothing waits for a reply that cannot come. A
frame over the size limit (``MAX_SERVER_FRAME_BYTES``) fails them too: the
server would only send it again. Standard output gone while the reader prints
a push (``BrokenPipeError``: the reader of a pipe went away; ``OutputError``)
is no failure of the connection: the requests fail with that error itself, so
that the command ends as it does when its own task meets it (``__main__``:
quietly, with 141, for a closed pipe).

Request ids count up from a random start, so that they stay unique within a
game (section 5) across the player's devices and runs of the client: the
server takes a request that repeats the id of the action after its ``v`` for
a retry (or refuses it with ``id_reused``), never for the ``stale`` action of
another device that happened to count the same. The start leaves room below
the protocol's integer limit (2^53 - 1).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import itertools
import os
import secrets
import socket
import ssl
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import msgpack
from websockets.asyncio.client import MAX_REDIRECTS, ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    InvalidHandshake,
    InvalidStatus,
    InvalidURI,
    SecurityError,
)
from websockets.exceptions import InvalidMessage as InvalidResponse  # not protocol's
from websockets.frames import CloseCode
from websockets.typing import Subprotocol

from clients.cli.checks import check_server_message
from clients.cli.i18n import _, ngettext
from clients.cli.terminal import OutputError, printable, shown_url
from clients.cli.version import VERSION
from protocol import (
    MAX_SERVER_FRAME_BYTES,
    PROTOCOL_VERSION,
    RATE_KINDS,
    SUBPROTOCOL,
    InvalidMessage,
    encode,
    new_request,
)

__all__ = [
    "Connection",
    "ConnectionFailed",
    "InvalidServerMessage",
    "Message",
    "Reply",
    "ServerError",
    "Unanswered",
    "decode",
    "not_reached",
]

ID_START_BITS = 52  # the first id is below 2^52: 2^52 more requests fit below 2^53 - 1
RATE_RETRIES = 5  # a rate-limited request is sent again at most this many times
MAX_RATE_WAIT = 10.0  # seconds: a longer retry_after_ms is answered as it came
MAX_PACE = 2.0  # seconds: requests of a rate-limited kind are never spaced more
# A hello answered rate_limited or unavailable is said again on the same connection after
# its retry_after_ms (at most HELLO_WAIT_MAX_S), or else after each of these waits.
HELLO_WAITS_S = (1.0, 2.0, 4.0)
CLOSE_WAIT_S = 1.0  # the most closing waits for the server's answer (Ctrl-C ends at once)
HELLO_WAIT_MAX_S = 6.0
# A reconnection that stays up this long has proved itself (``_reconnect``), as one whose
# request left unanswered by the drop is answered: longer than a server that closes on a
# request takes to, and than the longest delay.
STEADY_S = 10.0
_NOT_RESENT = frozenset({"new_game", "resign", "hint"})  # no ``v``: a retry is a second one
# Requests about the token itself: refused ``unauthenticated``, never sent again signed in
# with another token (``_sign_in_again``); their commands say what the refusal means.
_ABOUT_THE_TOKEN = frozenset({"hello", "register", "rotate_token", "sign_out"})
# Standard output gone, met while printing a push: raised again as it is, not as a failure
# of the connection (``__main__`` ends quietly after a closed pipe).
OUTPUT_GONE = (BrokenPipeError, OutputError)

Message = dict[str, Any]
PushHandler = Callable[[Message], None]
ReconnectHandler = Callable[[], Awaitable[None]]
SkipHandler = Callable[[str], None]
DropHandler = Callable[[], None]


class Reply(dict[str, Any]):
    """A reply as the server sent it, with the place it arrived at among the frames.

    ``arrival`` is the connection's frame count when it arrived: a push with a
    larger one came after it, even if the reader handed that push on before
    the reply's requester ran (``GameSession.held``).
    """

    arrival: int = 0


QUOTED_CHARS = 60
"""At most this much of what a port that is not a WebSocket server answered is quoted."""
NAME_MISMATCHES = frozenset({62, 64})  # OpenSSL's verify codes: host name, IP address mismatch


class ConnectionFailed(Exception):
    """The server cannot be reached (after the reconnect attempts)."""


class Unanswered(ConnectionFailed):
    """A request a drop left unanswered that is not sent again: it may have been applied.

    ``new_game``, ``resign`` and ``hint`` carry no ``v``: the server cannot tell
    one sent again from a second one (PROTOCOL.md section 5); a second
    ``new_game`` would start another game and abandon the first, a second
    ``resign`` answer ``game_over``, a second ``hint`` count twice. Whoever sent
    it looks at the new ``welcome`` or the reconnection's catch-up (applied
    before this is raised) instead.
    """


class InvalidServerMessage(Exception):
    """A reply (or the welcome) that breaks the protocol; the text names the field."""


class ServerError(Exception):
    """An ``error`` reply, raised by ``Connection.call``."""

    def __init__(self, reply: Message) -> None:
        super().__init__(str(reply.get("message", reply.get("code", "error"))))
        self.code = str(reply.get("code", "internal"))
        self.reply = reply


def decode(frame: bytes | str) -> Message:
    """A server frame as a dict (read leniently: unknown fields are kept).

    Raises ValueError, and nothing else, for a frame that cannot be read: a
    text frame, not msgpack, not one map, or a map with an array or a map as
    a key (which msgpack refuses with TypeError: such a key cannot be hashed).
    """
    if isinstance(frame, str):
        raise ValueError(_("frame.text"))
    try:
        message = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except TypeError as exc:  # msgpack's word for an unhashable key
        raise ValueError(_("frame.array_key")) from exc
    except ValueError as exc:  # format, UTF-8, nesting, trailing bytes
        raise ValueError(_("frame.not_msgpack", reason=_reason(exc))) from exc
    if not isinstance(message, dict):
        raise ValueError(_("frame.not_map"))
    return message


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _is_loopback(host: str | None) -> bool:
    if host is None or host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return False


def _answered(exc: InvalidHandshake) -> str | None:
    """The start of the line an answer that is not HTTP/1.1 began with, as websockets'
    parser quotes it after its own (English) words (``invalid HTTP status line: SSH-2.0``),
    at most ``QUOTED_CHARS`` of it; None for an answer that was HTTP."""
    if exc.__cause__ is None:  # an HTTP answer without the upgrade's headers
        return None
    _words, colon, quoted = str(exc.__cause__).partition(": ")
    if not colon or not quoted:
        return None
    quoted = printable(quoted)
    return quoted if len(quoted) <= QUOTED_CHARS else quoted[: QUOTED_CHARS - 1] + "…"


def not_reached(url: str, exc: BaseException) -> str:
    """Why connecting to ``url`` failed, as one line saying what answered there (if anything).

    ``exc`` is what the handshake raised: an ``OSError`` (the TCP or TLS
    connection), an ``InvalidHandshake`` (an answer that is not a WebSocket
    upgrade) or a ``ConnectionClosed`` (closed before the hello's reply).
    """
    tls = urlsplit(url).scheme.lower() == "wss"
    if isinstance(exc, ConnectionRefusedError):
        local = _is_loopback(urlsplit(url).hostname)  # a server the player may start
        return _("app.no_server" if local else "app.no_server_remote", url=shown_url(url))
    if isinstance(exc, socket.gaierror):
        host = urlsplit(url).hostname
        return _("connection.unknown_host", url=shown_url(url), host=host, reason=exc.strerror)
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = exc.verify_message or _reason(exc)
        if exc.verify_code in NAME_MISMATCHES:  # trusted, but for another name
            return _("connection.wrong_name", url=shown_url(url), reason=reason)
        named = os.environ.get("SSL_CERT_FILE")
        if named:  # the advice would be to set what is set already
            try:
                with open(named, "rb"):
                    pass
            except OSError as unread:
                why = unread.strerror or _reason(unread)
                return _(
                    "connection.untrusted_no_file",
                    url=shown_url(url),
                    reason=reason,
                    path=named,
                    why=why,
                )
            return _("connection.untrusted_by_file", url=shown_url(url), reason=reason, path=named)
        return _("connection.untrusted", url=shown_url(url), reason=reason)
    if tls and isinstance(exc, ssl.SSLError | ConnectionResetError):
        reason = exc.reason if isinstance(exc, ssl.SSLError) else os.strerror(errno.ECONNRESET)
        reason = str(reason or _reason(exc)).replace("_", " ").lower()  # WRONG_VERSION_NUMBER
        return _("connection.tls_failed", url=shown_url(url), reason=reason)
    if isinstance(exc, InvalidStatus):
        return _("connection.http_status", url=shown_url(url), status=exc.response.status_code)
    if isinstance(exc, InvalidResponse) and isinstance(exc.__cause__, EOFError) and not tls:
        return _("connection.closed_unanswered", url=shown_url(url))
    if isinstance(exc, SecurityError) and str(exc) == f"more than {MAX_REDIRECTS} redirects":
        # websockets follows MAX_REDIRECTS redirects, then says so in these words alone
        limit = MAX_REDIRECTS
        return ngettext("connection.too_many_redirects", limit, url=shown_url(url), limit=limit)
    if isinstance(exc, InvalidHandshake):
        answer = _answered(exc)
        if answer is None:
            return _("connection.not_websocket", url=shown_url(url))
        return _("connection.not_websocket_answer", url=shown_url(url), answer=answer)
    if isinstance(exc, ConnectionClosed):
        return _("connection.closed_at_hello", url=shown_url(url), reason=_reason(exc))
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else _reason(exc)
    return _("connection.unreachable", url=shown_url(url), reason=reason)


class Connection:
    """A request/reply channel with pushes, reconnects and idempotent retries."""

    def __init__(
        self,
        url: str,
        *,
        locale: str = "en",
        token: str | None = None,
        next_token: str | None = None,
        client: str = f"scorpion-cli/{VERSION}",
        on_push: PushHandler | None = None,
        on_reconnect: ReconnectHandler | None = None,
        on_skipped: SkipHandler | None = None,
        on_drop: DropHandler | None = None,
        on_wait: Callable[[float], None] | None = None,
        kept_tokens: Callable[[], list[str]] | None = None,
        delays: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 5.0),
        timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.locale = locale
        self.token = token
        # The client's own new token of a rotation whose answer it may have missed: when
        # ``token`` is refused, the rotation happened, and this one signs in (``_hello``).
        self.next_token = next_token
        self.client = client
        self.on_push = on_push
        self.on_reconnect = on_reconnect
        self.on_skipped = on_skipped
        self.on_drop = on_drop
        self.on_wait = on_wait  # told the seconds of a rate limit's wait of a second or more
        # The player's tokens as kept now (another command of this computer may have
        # rotated it since): each tried once when a reconnection's hello refuses ``token``.
        self.kept_tokens = kept_tokens
        self.delays = delays
        self.timeout = timeout
        self.welcome: Message | None = None
        self.reconnects = 0
        # Reconnection attempts since the connection last proved itself, the ones the
        # server welcomed and then closed among them, and, after a reconnection, what
        # proves it: a reply to one of these requests (to any when empty); None: proved.
        self._attempts = 0
        self._closed_welcomed = 0
        self._unproved: set[Any] | None = None
        self._up_since = 0.0
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(secrets.randbelow(2**ID_START_BITS) + 1)
        self._pending: dict[Any, tuple[Message, asyncio.Future[Message], int]] = {}
        self._handed: set[Any] = set()  # ids of pending requests a socket took (maybe sent)
        self._reader: asyncio.Task[None] | None = None
        self._online = asyncio.Event()
        self._closing = False
        self._failed: ConnectionFailed | BrokenPipeError | OutputError | None = None
        self.lost = asyncio.Event()  # set once the connection has failed for good
        self.frames = 0  # frames read so far: a push's or reply's place in arrival order
        self._paces: dict[str, float] = {}  # seconds between requests of a kind (_pace)
        self._sent: dict[str, float] = {}  # when a request of each kind last went
        self._tasks: set[asyncio.Future[None]] = set()
        self._signing_in = asyncio.Lock()  # one sign-in again at a time (``_sign_in_again``)
        self._signing_in_task: asyncio.Task[Any] | None = None

    # -- lifecycle -------------------------------------------------------

    async def open(self) -> Message:
        """Connect and say hello; returns ``welcome`` (or raises ServerError)."""
        self._ws = await self._connect()
        self.welcome = await self._hello(self._ws)
        self._online.set()
        self._reader = asyncio.create_task(self._read())
        return self.welcome

    async def close(self) -> None:
        """Close, waiting for the server's answer ``CLOSE_WAIT_S`` at most: a server
        that stopped answering (a frozen process) held a Ctrl-C 10 s, websockets' wait."""
        self._closing = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await self._ws.close()
            if self._ws.transport is not None and not self._ws.transport.is_closing():
                self._ws.transport.abort()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    def drop(self) -> None:
        """Cut the network under the connection, as a failure would (for tests)."""
        if self._ws is not None and self._ws.transport is not None:
            self._ws.transport.abort()

    @property
    def online(self) -> bool:
        """Connected now (False while reconnecting, and once failed)."""
        return self._online.is_set()

    @property
    def failure(self) -> Exception | None:
        """Why the connection failed for good, once it has (``lost`` is set then).

        A ``ConnectionFailed``, or the ``OUTPUT_GONE`` error the reader met while
        printing a push, to be raised in the command's task.
        """
        failed = self._failed
        return None if failed is None else _again(failed)

    # -- requests --------------------------------------------------------

    async def request(self, type_: str, **fields: Any) -> Message:
        """Send one request and return its reply (``error`` replies included).

        A ``rate_limited`` reply (nothing was applied) is not the answer: the
        request is sent again after its ``retry_after_ms`` (PROTOCOL.md section
        10), and from then on requests of its kind are spaced (``_pace``), so
        that a script sending commands at machine speed is slowed down rather
        than refused: every ``rate_limited`` reply is a strike against the
        address, and too many close the connection.
        """
        if self._failed is not None:
            raise _again(self._failed)
        kind = _rate_kind(type_)
        message = new_request(type_, next(self._ids), **fields).to_message()
        token = self.token
        reply = await self._answer(message, kind)
        if (
            reply.get("code") == "unauthenticated"
            and type_ not in _ABOUT_THE_TOKEN
            and await self._sign_in_again(token)
        ):
            # refused, nothing was applied: the same request again, signed in anew
            reply = await self._answer(message, kind)
        return reply

    async def _answer(self, message: Message, kind: str) -> Message:
        """``message``'s reply, sent again after each ``rate_limited`` (``request``)."""
        await self._pace(kind)
        reply = await self._request_once(message)
        for _retry in range(RATE_RETRIES):
            wait = _retry_after(reply)
            if wait is None:
                break
            self._paces[kind] = min(MAX_PACE, max(2 * self._paces.get(kind, 0.0), wait))
            if wait >= 1 and self.on_wait is not None:  # a wait a person would notice
                self.on_wait(wait)
            await asyncio.sleep(wait)
            await self._pace(kind)
            reply = await self._request_once(message)
        return reply

    async def _sign_in_again(self, refused: str | None) -> bool:
        """After a request signed in with the token ``refused`` was answered
        ``unauthenticated``: signed in with another token kept now for this player
        (``kept_tokens``), on the same connection; whether the request may go again.

        Another command of this computer (``scorpion new-token``) rotated the token:
        the server signed this connection out and closed its games (PROTOCOL.md
        section 3), but the credentials file holds the new token, which a
        reconnection would sign in with (``_hello``). Signed in, the game is opened
        again (``on_reconnect``) before the refused request goes again. Requests
        refused meanwhile wait for this one sign-in and go again after it.
        """
        if self.welcome is None or self.kept_tokens is None:
            return False
        if self._signing_in_task is asyncio.current_task():
            return False  # a request of the sign-in itself (the game opened again)
        async with self._signing_in:
            if self.token != refused:
                return True  # signed in again meanwhile
            for token in [each for each in self.kept_tokens() if each != refused]:
                hello = new_request("hello", next(self._ids), **self._hello_fields(token))
                reply = await self._request_once(hello.to_message())
                if reply.get("type") == "welcome":
                    self.token, self.next_token, self.welcome = token, None, reply
                    break
            else:
                return False
            self._signing_in_task = asyncio.current_task()
            try:
                if self.on_reconnect is not None:
                    with contextlib.suppress(
                        ConnectionFailed, TimeoutError, ServerError, InvalidServerMessage
                    ):
                        await self.on_reconnect()
            finally:
                self._signing_in_task = None
        return True

    async def _pace(self, kind: str) -> None:
        """Wait until a request of ``kind`` may go, once the server has said to slow down."""
        loop = asyncio.get_running_loop()
        pace = self._paces.get(kind)
        if pace:
            due = self._sent.get(kind, 0.0) + pace
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
        self._sent[kind] = loop.time()

    async def _request_once(self, message: Message) -> Message:
        """Send ``message`` and await its reply.

        A request sent again after ``rate_limited`` is the same message, with
        the same id (and ``v``): the server limits before it recognises a retry
        (PROTOCOL.md section 5), so the limited attempt may have been the resend
        of an action applied before a drop; sent again the same, it answers that
        action's first reply instead of ``stale``, and applies nothing twice.
        """
        if self._failed is not None:
            raise _again(self._failed)
        request_id = message["id"]
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (message, future, 0)
        if self._online.is_set():
            await self._send(message)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout)
        finally:
            self._pending.pop(request_id, None)
            self._handed.discard(request_id)

    async def call(self, type_: str, **fields: Any) -> Message:
        """Like ``request``, but an ``error`` reply raises ServerError."""
        reply = await self.request(type_, **fields)
        if reply.get("type") == "error":
            raise ServerError(reply)
        return reply

    async def _send(self, message: Message) -> None:
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(ConnectionClosed):  # a drop leaves it pending: resent later
            await ws.send(encode(message))
            if message["id"] in self._pending:
                self._handed.add(message["id"])

    # -- reading ---------------------------------------------------------

    async def _read(self) -> None:
        """Read until closed; whatever else ends it fails the requests waiting."""
        try:
            await self._read_frames()
        except (ConnectionFailed, *OUTPUT_GONE) as exc:
            self._fail(exc)
        except Exception as exc:  # a bug: nobody may wait for a reply that cannot come
            self._fail(ConnectionFailed(_("connection.reader_failed", reason=_reason(exc))))
        finally:
            if not self._closing and self._failed is None:  # cancelled from outside
                self._fail(ConnectionFailed(_("connection.lost", url=shown_url(self.url))))

    async def _read_frames(self) -> None:
        while not self._closing:
            ws = self._ws
            assert ws is not None
            with contextlib.suppress(ConnectionClosed):
                async for frame in ws:
                    self._take(frame)
            if self._closing:
                return
            _check_frame_size(ws)
            self._online.clear()
            if self._unproved is not None:  # a reconnection closed before it proved itself
                if asyncio.get_running_loop().time() - self._up_since >= STEADY_S:
                    self._proved()
                else:
                    self._closed_welcomed += 1
            if self.on_drop is not None:
                self.on_drop()
            try:
                await self._reconnect()
            except Exception as exc:  # gave up: fail everyone waiting
                raise ConnectionFailed(_reason(exc)) from exc

    def _fail(self, exc: ConnectionFailed | BrokenPipeError | OutputError) -> None:
        """Fail every request waiting, and every later one, with ``exc`` (``_again``)."""
        if self._failed is not None:
            return  # the first reason stands
        self._failed = exc
        self._online.clear()
        self.lost.set()
        for _message, future, _tries in list(self._pending.values()):
            if not future.done():
                future.set_exception(_again(exc))

    def _take(self, frame: bytes | str) -> None:
        """One frame: decoded, checked, then dispatched (or skipped, or failing its request)."""
        self.frames += 1
        try:
            message = decode(frame)
        except ValueError as exc:
            self._skip(str(exc))
            return
        try:
            check_server_message(message)
        except InvalidMessage as exc:
            entry = self._pending.get(_reply_to(message))
            if entry is not None and not entry[1].done():
                entry[1].set_exception(InvalidServerMessage(str(exc)))
            else:  # a push, or a reply nobody waits for: skipped like a frame
                self._skip(str(exc))
            return
        self._dispatch(message)

    def _skip(self, reason: str) -> None:
        if self.on_skipped is not None:
            self.on_skipped(reason)

    def _dispatch(self, message: Message) -> None:
        re = _reply_to(message)
        entry = self._pending.get(re) if re is not None else None
        if entry is not None:
            request, future, tries = entry
            if message.get("code") == "internal" and "v" in request and tries == 0:
                self._pending[re] = (request, future, 1)
                self._spawn(self._send(request))  # section 9: resend to find out
                return
            if not future.done():
                reply = Reply(message)
                reply.arrival = self.frames
                future.set_result(reply)
            unproved = self._unproved
            if (
                unproved is not None
                and request["type"] != "hello"
                and (re in unproved or not unproved)
            ):
                self._proved()
            return
        if message.get("re") is None and self.on_push is not None:
            self.on_push(message)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _proved(self) -> None:
        """The connection works again: the next drop gets every reconnection attempt."""
        self._attempts = self._closed_welcomed = 0
        self._unproved = None

    async def _reconnect(self) -> None:
        """Connect and say hello again, after the next of ``delays``; raise when none is left.

        A welcome does not start the delays again: a server that closes the
        connection whenever a request arrives (a proxy that chokes on it) would
        be reconnected to for ever, at the first delay. The attempts go on being
        counted until the connection proves itself: a request unanswered at the
        drop is answered (any request, when none was), or it stays up
        ``STEADY_S``.
        """
        last: Exception = ConnectionFailed(_("connection.lost", url=shown_url(self.url)))
        if self._attempts >= len(self.delays) and self._closed_welcomed:
            count = self._closed_welcomed
            said = ngettext(
                "connection.closed_each_time", count, url=shown_url(self.url), count=count
            )
            raise ConnectionFailed(said)
        while self._attempts < len(self.delays):
            delay = self.delays[self._attempts]
            self._attempts += 1
            await asyncio.sleep(delay)
            try:
                ws = await self._connect()
                self.welcome = await self._hello(ws)
            except (OSError, ConnectionClosed, InvalidHandshake, TimeoutError) as exc:
                last = exc
                continue
            except ServerError as exc:
                if exc.code in ("rate_limited", "unavailable"):  # later may do: try again
                    last = exc
                    continue
                if exc.code == "unauthenticated":  # the token is refused: no point retrying
                    refused = _("connection.refused", url=shown_url(self.url))
                    raise ConnectionFailed(f"{refused}; {_('app.register_again')}") from exc
                raise ConnectionFailed(
                    _("connection.hello_refused", url=shown_url(self.url), code=printable(exc.code))
                ) from exc
            self._ws = ws
            self.reconnects += 1
            retries = [message for message, _future, _tries in self._pending.values()]
            self._unproved = {message["id"] for message in retries}
            self._up_since = asyncio.get_running_loop().time()
            self._online.set()
            self._spawn(self._resync(retries))
            return
        raise ConnectionFailed(_("connection.lost", url=shown_url(self.url))) from last

    async def _resync(self, retries: list[Message]) -> None:
        if self.on_reconnect is not None:
            try:
                await self.on_reconnect()
            except (ConnectionFailed, TimeoutError, ServerError, InvalidServerMessage):
                pass
            except OUTPUT_GONE as exc:  # printing the catch-up: the command ends
                self._fail(exc)
                return
        for message in retries:
            entry = self._pending.get(message["id"])
            sent = message["id"] in self._handed  # or asked while offline: never sent
            if message["type"] in _NOT_RESENT and entry is not None and sent:
                if self._unproved is not None:  # never answered now: proves nothing
                    self._unproved.discard(message["id"])
                if not entry[1].done():
                    entry[1].set_exception(
                        Unanswered(_("connection.lost", url=shown_url(self.url)))
                    )
                continue
            await self._send(message)

    # -- handshake -------------------------------------------------------

    async def _connect(self) -> ClientConnection:
        try:
            ws = await connect(
                self.url,
                subprotocols=[Subprotocol(SUBPROTOCOL)],
                compression=None,
                max_size=MAX_SERVER_FRAME_BYTES,
                open_timeout=self.timeout,
            )
        except InvalidURI as exc:
            if exc.uri != self.url:  # a redirect's Location (websockets follows them)
                said = _(
                    "connection.redirected_away",
                    url=shown_url(self.url),
                    target=shown_url(printable(exc.uri)),
                )
                raise ConnectionFailed(said) from exc
            raise ConnectionFailed(_("connection.bad_url", url=shown_url(self.url))) from exc
        except ValueError as exc:  # a redirect's Location that is no URL (`ws://h:99999/`);
            # the URL given was read as one before (`server_url`). A certificate that is
            # not trusted is a ValueError too, and an OSError: said by `not_reached`.
            if isinstance(exc, OSError):
                raise
            said = _(
                "connection.redirected_unreadable",
                url=shown_url(self.url),
                reason=printable(str(exc)),
            )
            raise ConnectionFailed(said) from exc
        if ws.subprotocol != SUBPROTOCOL:
            await ws.close()
            raise ConnectionFailed(
                _("connection.not_scorpion", url=shown_url(self.url), subprotocol=SUBPROTOCOL)
            )
        return ws

    def _hello_fields(self, token: str | None) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "client": self.client,
            "locale": self.locale,
        }
        if token is not None:
            fields["token"] = token
        return fields

    async def _hello(self, ws: ClientConnection) -> Message:
        fields = self._hello_fields(self.token)
        waits = iter(HELLO_WAITS_S)
        tried: set[str | None] = set()  # tokens refused (``kept_tokens``)
        while True:
            message = await self._say_hello(ws, fields)
            if message.get("type") != "error":
                return message
            if message.get("code") == "unauthenticated" and self.next_token is not None:
                # the rotation happened, its answer lost: the new token is this player's
                self.token, self.next_token = self.next_token, None
                fields["token"] = self.token
                continue
            if message.get("code") == "unauthenticated" and self.kept_tokens and self.welcome:
                # rotated since this client read it (``scorpion new-token``): kept there
                tried.add(fields.get("token"))
                fresh = [each for each in self.kept_tokens() if each not in tried]
                if fresh:
                    self.token = fields["token"] = fresh[0]
                    continue
            wait = next(waits, None)
            if wait is None or message.get("code") not in ("rate_limited", "unavailable"):
                raise ServerError(message)
            # Told to wait (a limit, or an outage): the connection stays, and so may we.
            told = message.get("retry_after_ms")
            await asyncio.sleep(min(HELLO_WAIT_MAX_S, told / 1000) if told else wait)

    async def _say_hello(self, ws: ClientConnection, fields: dict[str, Any]) -> Message:
        """One ``hello`` and its reply, checked."""
        hello_id = next(self._ids)
        await ws.send(encode(new_request("hello", hello_id, **fields).to_message()))
        async with asyncio.timeout(self.timeout):
            while True:
                try:
                    message = decode(await ws.recv())
                except ValueError as exc:
                    self._skip(str(exc))
                    continue
                except ConnectionClosed:
                    _check_frame_size(ws)  # a welcome over the limit: not a server gone
                    raise
                if _reply_to(message) == hello_id:
                    break
        try:
            check_server_message(message)
        except InvalidMessage as exc:
            raise InvalidServerMessage(str(exc)) from exc
        return message


def _check_frame_size(ws: ClientConnection) -> None:
    """Raise ``ConnectionFailed`` when ``ws`` was closed by the client for a frame over the
    size limit (1009): the server would only send it again after a reconnect."""
    sent = ws.protocol.close_sent
    if sent is not None and sent.code == CloseCode.MESSAGE_TOO_BIG:
        limit = MAX_SERVER_FRAME_BYTES
        raise ConnectionFailed(ngettext("connection.frame_too_big", limit, limit=limit))


def _again(failed: ConnectionFailed | BrokenPipeError | OutputError) -> Exception:
    """What a request raises once the connection has failed with ``failed``.

    Standard output gone is raised as it is, for ``__main__`` to end the
    command as it always does for it; a failure of the connection as a new
    ``ConnectionFailed`` with its reason.
    """
    if isinstance(failed, OUTPUT_GONE):
        return failed
    return ConnectionFailed(str(failed))


def _rate_kind(type_: str) -> str:
    """The kind of request the server counts ``type_`` as (PROTOCOL.md section 10): a
    new game is a kind of its own, so that one limited does not pace every move."""
    return RATE_KINDS.get(type_, "read")


def _retry_after(reply: Message) -> float | None:
    """Seconds to wait before sending again after ``rate_limited``; None: do not resend.

    A wait longer than ``MAX_RATE_WAIT`` is not waited for: the reply is the answer.
    """
    if reply.get("code") != "rate_limited":
        return None
    wait_ms = reply.get("retry_after_ms")
    if not isinstance(wait_ms, int) or isinstance(wait_ms, bool) or wait_ms < 0:
        wait_ms = 1000
    wait = wait_ms / 1000
    return wait if wait <= MAX_RATE_WAIT else None


def _reply_to(message: Message) -> int | str | None:
    """The request id a message answers (``re``), if it is one an id can be."""
    re = message.get("re")
    return re if isinstance(re, int | str) and not isinstance(re, bool) else None
