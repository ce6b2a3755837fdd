"""The built web client (clients/web), served on the server's own port.

Theory of operation
-------------------
``make web`` builds the client into ``server/web/`` (``index.html`` and
``assets/`` with content-hashed names), which ships in the wheel as package
data. ``WebClient.load`` reads that directory once, at start: the files are
small, and a request then costs no disk access and cannot name anything
outside it (only ``/`` and ``/assets/<name>`` of a file that was there are
served; no path is joined from the request).

Caching: an asset's name changes with its content, so assets may be kept a
year (``immutable``); ``index.html``, which names the current assets, is
``no-cache`` so a new build reaches the browser on its next load. Each file,
and its gzipped form apart, has an entity tag made from its bytes
(``Asset.etag``): a browser that asks again with ``If-None-Match`` naming it
is answered 304 with no body (``server.http``), so a reload of an unchanged
page costs a round trip, not the page.

Compression: each text file is also gzipped once, at load (``Asset.gzipped``),
and sent so to a browser that accepts gzip (``server.http``): the client's
script travels at about a quarter of its size. A file that gzip does not make smaller by a
tenth is kept as it is.

Without a build (a checkout where Node.js never ran) ``index`` is None and the
start page says how to build the client instead.

Security headers: every answer of the port carries ``SECURITY_HEADERS`` and a
``Content-Security-Policy`` (``content_security_policy``): the page loads
scripts, styles and images from its own origin only (no inline script or
style: the built page has none, and the client sets its styles through the
CSSOM), may connect only to its own origin's WebSocket, and may be framed by
no site (it holds the player's token), with ``X-Frame-Options`` for browsers
that predate ``frame-ancestors``.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = [
    "ASSET_CACHE",
    "INDEX_CACHE",
    "SECURITY_HEADERS",
    "WEB_DIR",
    "Asset",
    "WebClient",
    "content_security_policy",
]

WEB_DIR: Final = Path(__file__).with_name("web")
ASSET_CACHE: Final = "public, max-age=31536000, immutable"
INDEX_CACHE: Final = "no-cache"
_ASSET_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TYPES: Final = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".map": "application/json",
}


_COMPRESSED_TYPES: Final = ("text/", "image/svg+xml", "application/json")

SECURITY_HEADERS: Final = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)
_POLICY: Final = (
    "default-src 'self'",
    "img-src 'self' data:",  # the page's icon is data:, (no request for /favicon.ico)
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
)
_HOST: Final = re.compile(r"[A-Za-z0-9.-]+(?::[0-9]{1,5})?")
"""A Host a CSP source can name: a host name or IPv4 address, and a port. CSP's grammar
has no IPv6 literal (``[::1]``): browsers ignore such a source and say so in the console,
so an IPv6 Host is left to ``'self'``."""


def content_security_policy(host: str | None) -> str:
    """The page's Content-Security-Policy, for a request that named ``host`` (its Host
    header; None without one, or with two). The page connects to ``ws://`` or ``wss://``
    and the host it was loaded from, which ``'self'`` covers only in browsers of CSP
    level 3, so the policy names both schemes with the host too; a Host that is not a
    host name or an IPv4 address and a port is named nowhere (its bytes stay out of the
    header), and the page is left to ``'self'``."""
    sockets = "connect-src 'self'"
    if host is not None and _HOST.fullmatch(host):
        sockets += f" ws://{host} wss://{host}"
    return "; ".join((*_POLICY, sockets))


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    gzipped: bytes | None = None  # the body gzipped, if that made it smaller by a tenth
    etag: str = '""'  # the body's entity tag (RFC 9110 8.8.3), quotes included
    gzipped_etag: str = '""'  # the gzipped form's: another representation, another tag

    @classmethod
    def of(cls, body: bytes, content_type: str) -> Asset:
        """``body``, with its gzipped form when its type is text and gzip pays."""
        packed = None
        if content_type.startswith(_COMPRESSED_TYPES):
            packed = gzip.compress(body, compresslevel=9, mtime=0)
            if len(packed) > 0.9 * len(body):
                packed = None
        tag = hashlib.sha256(body).hexdigest()[:20]
        return cls(body, content_type, packed, f'"{tag}"', f'"{tag}-gzip"')


@dataclass(frozen=True, slots=True)
class WebClient:
    """The built client's files, keyed by URL path; ``page`` is None without a build."""

    page: Asset | None = None
    assets: dict[str, Asset] = field(default_factory=dict)

    @property
    def index(self) -> bytes | None:
        """``index.html``, None without a build."""
        return None if self.page is None else self.page.body

    @classmethod
    def load(cls, directory: Path = WEB_DIR) -> WebClient:
        index_file = directory / "index.html"
        if not index_file.is_file():
            return cls()
        assets: dict[str, Asset] = {}
        asset_dir = directory / "assets"
        if asset_dir.is_dir():
            for path in sorted(asset_dir.iterdir()):
                if path.is_file() and _ASSET_NAME.fullmatch(path.name):
                    body = path.read_bytes()
                    assets[f"/assets/{path.name}"] = Asset.of(body, _content_type(path))
        return cls(Asset.of(index_file.read_bytes(), _TYPES[".html"]), assets)


def _content_type(path: Path) -> str:
    known = _TYPES.get(path.suffix)
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"
