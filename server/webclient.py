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
``no-cache`` so a new build reaches the browser on its next load.

Without a build (a checkout where Node.js never ran) ``index`` is None and the
start page says how to build the client instead.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["ASSET_CACHE", "INDEX_CACHE", "WEB_DIR", "Asset", "WebClient"]

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


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str


@dataclass(frozen=True, slots=True)
class WebClient:
    """The built client's files, keyed by URL path; ``index`` is None without a build."""

    index: bytes | None = None
    assets: dict[str, Asset] = field(default_factory=dict)

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
                    assets[f"/assets/{path.name}"] = Asset(path.read_bytes(), _content_type(path))
        return cls(index_file.read_bytes(), assets)


def _content_type(path: Path) -> str:
    known = _TYPES.get(path.suffix)
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"
