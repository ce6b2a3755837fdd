"""Where the client keeps its players: one token per server, readable by the user only.

The file is ``credentials.json`` in the user's config directory:
``$XDG_CONFIG_HOME/scorpion/`` or ``~/.config/scorpion/`` (``%APPDATA%\\scorpion``
on Windows). It maps server URLs to ``{"name", "token"}`` and is written
with mode 0600 (the directory 0700), since a token is the player's only
credential (PROTOCOL.md section 3).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_SERVER", "Credentials", "config_dir", "load", "save"]

DEFAULT_SERVER = "ws://127.0.0.1:8765"
FILE_NAME = "credentials.json"


@dataclass(frozen=True)
class Credentials:
    """A registered player on one server."""

    name: str
    token: str


def config_dir(env: dict[str, str] | None = None) -> Path:
    """The client's configuration directory (not created here)."""
    env = dict(os.environ) if env is None else env
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "scorpion"
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "scorpion"


def _key(server: str) -> str:
    return server.rstrip("/")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(server: str, directory: Path | None = None) -> Credentials | None:
    """The player stored for ``server``, if any."""
    data = _read((directory or config_dir()) / FILE_NAME)
    entry = data.get("servers", {}).get(_key(server))
    if isinstance(entry, dict) and isinstance(entry.get("token"), str):
        return Credentials(str(entry.get("name", "")), entry["token"])
    return None


def save(server: str, credentials: Credentials, directory: Path | None = None) -> Path:
    """Store ``credentials`` for ``server``; returns the file (mode 0600)."""
    directory = directory or config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / FILE_NAME
    data = _read(path)
    servers = data.setdefault("servers", {})
    servers[_key(server)] = {"name": credentials.name, "token": credentials.token}
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
    return path
