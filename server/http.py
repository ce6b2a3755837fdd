"""Plain HTTP on the WebSocket port: health, readiness, metrics, a start page.

Theory of operation
-------------------
Every connection to the server's port starts as an HTTP request. One that
asks to upgrade to a WebSocket (``Upgrade: websocket``) goes on to the
protocol (``server.connection``); any other GET is answered here, without
``websockets`` (``server.connection`` turns an ``HttpReply`` into its
response and is still the only module that imports it):

- ``/healthz``: 200 while the process serves at all (liveness);
- ``/readyz``: 200 once the database answered within ``timeout`` seconds
  and its schema is this code's (on PostgreSQL, and the locks a move's write
  takes were had within ``PROBE_LOCK_MS``; after a write failed for the database,
  a write of its own went through: ``Store.readiness``; one probe at a
  time, its answer reused for ``READY_REUSE_S``); 503 with a
  one-line reason otherwise, so a
  load balancer stops sending players to a node that cannot store a move
  (also when its SQLite file was removed or replaced under it: logged, since
  what it writes then is gone at the next start);
- ``/metrics``: ``server.metrics`` in Prometheus' text format (a rendering serves the
  scrapes of the next ``METRICS_REUSE_S`` too);
- ``/`` (and ``/index.html``): the web client (``server.webclient``) when it is built, else a short
  page naming the server, its endpoints and how to build the client;
- ``/assets/<name>``: the built client's files, cached for a year (their
  names change with their content);
  the client's files, the page among them, carry an ``ETag``, and a request
  whose ``If-None-Match`` names it is answered 304 with no body;
- anything else: 404.

GET and HEAD are answered (HEAD with GET's headers and no body, which
``server.connection`` leaves out); any other method gets 405 with ``Allow``.
The query string is ignored, and a request target in absolute form
(``http://host/healthz``) is answered as its path. A request's body, if it has one, is read and
dropped by ``server.connection`` and answered as the same request without
it. Of the request's headers only ``Accept-Encoding`` and ``If-None-Match``
are read (for the client's files), so a probe costs one trip to the
database (``/readyz``) at most.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from server.metrics import CONTENT_TYPE, Metrics
from server.store import (
    DatabaseReplaced,
    SchemaNewer,
    SchemaStatus,
    StoreError,
    StoreUnavailable,
    TablesLocked,
    WritesFailing,
)
from server.webclient import ASSET_CACHE, INDEX_CACHE, Asset, WebClient

__all__ = ["HttpReply", "HttpRoutes"]

log = logging.getLogger(__name__)

TEXT: Final = "text/plain; charset=utf-8"
HTML: Final = "text/html; charset=utf-8"


METHODS: Final = ("GET", "HEAD")
READY_REUSE_S: Final = 0.5  # a readiness answer serves the probes of this long after it
METRICS_REUSE_S: Final = 0.5  # a rendered /metrics serves the scrapes of this long after it


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    body: bytes
    content_type: str = TEXT
    cache_control: str = "no-store"
    allow: str | None = None  # the methods a 405 names
    content_encoding: str | None = None  # "gzip" when the body is gzipped
    vary: bool = False  # the body depends on Accept-Encoding
    etag: str | None = None  # the entity tag of the client's file sent (or not modified)


def _file(asset: Asset, cache_control: str, accept_encoding: str, if_none_match: str) -> HttpReply:
    """One of the built client's files, gzipped if it has that form and the client takes
    it; 304 with no body if ``If-None-Match`` names the tag of the form chosen. Either
    way the reply varies with Accept-Encoding (for caches between)."""
    if asset.gzipped is not None and accepts_gzip(accept_encoding):
        body, encoding, etag = asset.gzipped, "gzip", asset.gzipped_etag
    else:
        body, encoding, etag = asset.body, None, asset.etag
    if if_none_match and names_tag(if_none_match, etag):
        return HttpReply(304, b"", asset.content_type, cache_control, None, encoding, True, etag)
    return HttpReply(200, body, asset.content_type, cache_control, None, encoding, True, etag)


_ENTITY_TAG: Final = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
_TAG_LIST: Final = re.compile(rf"[ \t]*{_ENTITY_TAG}[ \t]*(?:,[ \t]*{_ENTITY_TAG}[ \t]*)*")


def names_tag(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` value is ``*`` or a list of entity tags naming
    ``etag`` (RFC 9110 13.1.2: the weak comparison, so ``W/"x"`` names ``"x"``). A value
    of neither form names nothing (``"a", *`` is no list; ``"a,*"`` is one tag)."""
    if if_none_match.strip() == "*":
        return True
    if not _TAG_LIST.fullmatch(if_none_match):
        return False
    return any(tag.removeprefix("W/") == etag for tag in re.findall(_ENTITY_TAG, if_none_match))


_QVALUE: Final = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` header's value takes gzip (RFC 9110 12.5.3): named
    with a weight above 0, or not named while ``*`` is. A weight not of the form RFC 9110
    12.4.2 gives (0 to 1, three decimals at most; ``q=inf`` is not one) refuses."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *parameters = (part.strip() for part in item.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":  # "q=" with no space about the "=" (12.4.2)
                weight = float(value) if name == name.rstrip() and _QVALUE.fullmatch(value) else 0.0
        if coding:
            weights[coding.lower()] = weight
    if "gzip" in weights:
        return weights["gzip"] > 0
    return weights.get("*", 0.0) > 0


def _text(status: int, text: str) -> HttpReply:
    return HttpReply(status, (text + "\n").encode())


def _origin_form(target: str) -> str:
    """The path of a request target: ``http://host/x`` (absolute form, which RFC 9112
    says a server must accept, and a forward proxy sends) is ``/x``."""
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return target
    _, slash, path = rest.partition("/")
    return slash + path if slash else "/"


class HttpRoutes:
    """Answers the plain-HTTP requests (module docstring)."""

    def __init__(
        self,
        metrics: Metrics,
        schema_status: Callable[[], Awaitable[SchemaStatus]],
        *,
        timeout: float,
        name: str,
        web: WebClient | None = None,
    ) -> None:
        self.web = web if web is not None else WebClient()
        self.metrics = metrics
        self._schema_status = schema_status
        self.timeout = timeout
        self.name = name
        self._probing: asyncio.Future[HttpReply] | None = None
        self._ready: tuple[float, HttpReply] | None = None  # the last answer, and when
        self._rendered: tuple[float, bytes] | None = None  # the last /metrics, and when

    async def answer(
        self, path: str, method: str = "GET", accept_encoding: str = "", if_none_match: str = ""
    ) -> HttpReply:
        """The reply to ``method path`` (a request that does not ask for a WebSocket);
        for HEAD, the GET reply, whose body is not sent. ``accept_encoding`` and
        ``if_none_match``: the request's headers, for the built client's files."""
        if method not in METHODS:
            allowed = ", ".join(METHODS)
            return replace(_text(405, f"This port answers {allowed} only."), allow=allowed)
        path = _origin_form(path.split("?", 1)[0])
        if path == "/healthz":
            return _text(200, "ok")
        if path == "/readyz":
            return await self.ready()
        if path == "/metrics":
            return HttpReply(200, self._metrics_text(), CONTENT_TYPE)
        if path in ("/", "/index.html"):  # the page by the name its file has, too
            if self.web.page is not None:
                return _file(self.web.page, INDEX_CACHE, accept_encoding, if_none_match)
            return _text(200, self._index())
        asset = self.web.assets.get(path)
        if asset is not None:
            return _file(asset, ASSET_CACHE, accept_encoding, if_none_match)
        return _text(404, "not found")

    def _metrics_text(self) -> bytes:
        """The metrics, rendered at most once every ``METRICS_REUSE_S``: a render takes
        milliseconds of the event loop, and a flood of ``/metrics`` from one address (the
        port is public) took a core and a half and slowed every player's moves."""
        now = asyncio.get_running_loop().time()
        if self._rendered is None or now >= self._rendered[0] + METRICS_REUSE_S:
            self._rendered = (now, self.metrics.render())
        return self._rendered[1]

    async def ready(self) -> HttpReply:
        """200 if the database answers in time with a current schema, else 503 and why.

        The probe holds a database connection while it runs (and on PostgreSQL may wait
        for a lock): probes that come while one runs share its answer, and an answer
        serves the probes of the next ``READY_REUSE_S`` too, so a flood of ``/readyz``
        (the port is public) costs the database one probe at a time.
        """
        now = asyncio.get_running_loop().time()
        if self._ready is not None and now < self._ready[0] + READY_REUSE_S:
            return self._ready[1]
        if self._probing is None or self._probing.done():
            self._probing = asyncio.ensure_future(self._probe())
        reply = await asyncio.shield(self._probing)
        self._ready = (asyncio.get_running_loop().time(), reply)
        return reply

    async def _probe(self) -> HttpReply:
        check = asyncio.ensure_future(self._schema_status())
        try:
            status = await asyncio.wait_for(asyncio.shield(check), self.timeout)
        except TimeoutError:
            # Cancelled, it cleans up in the background (a statement cancelled, its
            # connection closed: seconds more when the database stopped answering).
            check.cancel()
            check.add_done_callback(_settled)
            return _text(503, f"not ready: the database did not answer within {self.timeout:g} s")
        except DatabaseReplaced as exc:
            log.error("%s", exc)  # what the node writes now is lost at its restart
            return _text(503, f"not ready: {exc}")
        except TablesLocked as exc:
            return _text(503, f"not ready: {exc}")
        except (WritesFailing, SchemaNewer) as exc:
            return _text(503, f"not ready: {exc}")
        except StoreUnavailable as exc:  # its words name no table, query or value
            return _text(503, f"not ready: {exc}")
        except StoreError:
            return _text(503, "not ready: the database is unavailable")
        if status is not SchemaStatus.CURRENT:
            return _text(503, f"not ready: the database schema is {status.value}; run --migrate")
        return _text(200, "ready")

    def _index(self) -> str:
        return (
            f"{self.name}\n\n"
            "This port speaks the Scorpion protocol over WebSocket (subprotocol scorpion.v1);\n"
            "see protocol/PROTOCOL.md. Plain HTTP: /healthz, /readyz, /metrics.\n\n"
            "The web client is not built. In a source checkout, run `make web` (needs\n"
            "Node.js 20 and npm), then restart the server and open this page again.\n"
            "Installed from a wheel built without it: build the wheel after `make web`,\n"
            "or serve a build with --web-dir (SCORPION_WEB_DIR)."
        )


def _settled(task: asyncio.Future[Any]) -> None:
    """A probe given up: what it ended with is of no use now (and so not an error)."""
    if not task.cancelled():
        task.exception()
