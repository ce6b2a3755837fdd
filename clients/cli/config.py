"""Where the client keeps its players: one token per server, readable by the user only.

The file is ``credentials.json`` in the user's config directory:
``$XDG_CONFIG_HOME/scorpion/`` or ``~/.config/scorpion/`` (``%APPDATA%\\scorpion``
on Windows). It maps server URLs to ``{"name", "token"}`` (and ``"next"``, the
new token of a rotation while its answer is awaited: ``Credentials``) and is written
with mode 0600 (the directory 0700), since a token is the player's only
credential (PROTOCOL.md section 3).

A file that cannot be read or is not of that shape raises ``Malformed``, an
entry for the server that holds no usable token ``InvalidEntry`` (both
``CredentialsError``, naming the file): the app says so and reads no player
from it, as from a missing file. ``save`` never writes over a malformed
file, since it may hold tokens the user can still recover; ``set_aside``
moves such a file out of the way first (``credentials.json.bad``...).

Two commands may save at once (``register`` for one server while ``new-token``
runs for another): each reads, changes and writes the file holding an advisory
lock on ``credentials.json.lock`` beside it, and writes through a temporary file
of its own that replaces the file whole, so neither loses the other's entry.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import urlsplit, urlunsplit

from clients.cli.i18n import _
from clients.cli.terminal import shown_url
from protocol.constants import MAX_TOKEN_CHARS, OWN_TOKEN_PATTERN

__all__ = [
    "DEFAULT_SERVER",
    "Credentials",
    "CredentialsError",
    "InvalidEntry",
    "Malformed",
    "config_dir",
    "credentials_path",
    "load",
    "os_reason",
    "save",
    "set_aside",
    "tighten",
]

DEFAULT_SERVER = "ws://127.0.0.1:8765"
FILE_NAME = "credentials.json"
LOCK_NAME = "credentials.json.lock"
MAX_FILE_BYTES = 1 << 20
"""A credentials file larger than this is not read (a token entry takes about 200 bytes)."""


class CredentialsError(Exception):
    """The credentials file, or the server's entry in it, cannot be used."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class Malformed(CredentialsError):
    """The file exists but cannot be read, or is not a credentials file."""


class InvalidEntry(CredentialsError):
    """The server's entry holds no usable name and token."""


def os_reason(exc: OSError, path: Path | str | None = None) -> str:
    """Why an operation on ``path`` failed: the system's words (and the file, if another)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None and (path is None or str(exc.filename) != str(path)):
        reason += f": {exc.filename}"
    return reason


_OWN_TOKEN = re.compile(OWN_TOKEN_PATTERN)
"""A token the client made for ``rotate_token`` (PROTOCOL.md): what the server takes."""


@dataclass(frozen=True)
class Credentials:
    """A registered player on one server. ``next``: the new token ``scorpion new-token``
    made and kept before it asked the server to rotate to it (PROTOCOL.md, Tokens); kept
    until the answer comes, so that a rotation whose answer was lost loses nothing."""

    name: str
    token: str
    next: str | None = None


def config_dir(env: dict[str, str] | None = None) -> Path:
    """The client's configuration directory (not created here)."""
    env = dict(os.environ) if env is None else env
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "scorpion"
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "scorpion"


def credentials_path(directory: Path | None = None) -> Path:
    """The credentials file in ``directory`` (the config directory by default)."""
    return (directory or config_dir()) / FILE_NAME


def _key(server: str) -> str:
    """The server's name in the file: ``WS://Host:80/`` and ``ws://host`` are one server.

    The scheme and host are lower-cased (neither tells case apart), the
    scheme's own port dropped and the trailing slash too; a URL that cannot be
    read (a hand-written key) is itself.
    """
    text = server.rstrip("/")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme, host = parts.scheme.lower(), parts.hostname
    if not scheme or not host:
        return text
    if ":" in host:  # [0:0:0:0:0:0:0:1] is [::1]
        with contextlib.suppress(ValueError):
            host = ipaddress.ip_address(host).compressed
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    user, at, _rest = parts.netloc.rpartition("@")
    if at:
        netloc = f"{user}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path, parts.query, "")).rstrip("/")


_DEFAULT_PORTS = {"ws": 80, "wss": 443}


def _entry_key(servers: dict[str, Any], server: str) -> str:
    """The key ``server``'s entry is under: its own, or one written another way
    (by hand, or by an older client) that names the same server."""
    key = _key(server)
    if key in servers:
        return key
    return next((each for each in servers if _key(each) == key), key)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes; ``Malformed`` for what is not a regular file of a sane size.

    A FIFO would block the client and ``/dev/zero`` (or a symlink to it) fill
    its memory: only a regular file is read, and at most ``MAX_FILE_BYTES``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)  # non-blocking: opening a FIFO must not wait for a writer
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            directory = stat.S_ISDIR(info.st_mode)
            raise Malformed(
                path, os.strerror(errno.EISDIR) if directory else _("saved.not_regular")
            )
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise Malformed(path, _("saved.too_large", limit=MAX_FILE_BYTES))
    return data


def _read(path: Path) -> dict[str, Any]:
    """The file's contents ({} if there is none); ``Malformed`` if it is not a credentials file."""
    try:
        text = _read_bytes(path).decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}  # no file there (a directory above it may be a file: save says so)
    except OSError as exc:
        raise Malformed(path, os_reason(exc, path)) from exc
    except UnicodeDecodeError as exc:
        raise Malformed(path, _("saved.not_utf8")) from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Malformed(path, _("saved.not_json", reason=exc)) from exc
    except RecursionError as exc:  # arrays nested thousands deep
        raise Malformed(path, _("saved.too_deep")) from exc
    if not isinstance(data, dict):
        raise Malformed(path, _("saved.not_object"))
    if not isinstance(data.get("servers", {}), dict):
        raise Malformed(path, _("saved.servers_not_object"))
    return data


def load(server: str, directory: Path | None = None) -> Credentials | None:
    """The player stored for ``server``, if any (``CredentialsError`` if unusable)."""
    path = credentials_path(directory)
    servers = _read(path).get("servers", {})
    entry = servers.get(_entry_key(servers, server))
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise InvalidEntry(path, _("saved.entry_not_object", server=shown_url(_key(server))))
    name, token = entry.get("name", ""), entry.get("token")
    if not _text(token) or not 1 <= len(token) <= MAX_TOKEN_CHARS:
        limit = f"1..{MAX_TOKEN_CHARS}"
        raise InvalidEntry(path, _("saved.bad_token", server=shown_url(_key(server)), limit=limit))
    if not _text(name):
        raise InvalidEntry(path, _("saved.bad_name", server=shown_url(_key(server))))
    following = entry.get("next")  # one rotate_token would refuse, or the token itself, is none
    usable = isinstance(following, str) and _OWN_TOKEN.fullmatch(following) and following != token
    return Credentials(name, token, following if usable else None)


def tighten(directory: Path | None = None) -> list[tuple[Path, int, int | None]]:
    """Take from other users what they may do with the credentials file and its directory
    (a file written by hand with the usual umask is 0644, in a 0755 directory: then 0600
    and 0700); each one other users could use, as (path, mode before, mode now), the mode
    now None where it could not be changed (another user's, a read-only file system).

    What is not a regular file or a directory is left as it is; on Windows, whose modes
    say nothing of that, nothing is done."""
    if sys.platform == "win32":
        return []
    path = credentials_path(directory)
    found: list[tuple[Path, int, int | None]] = []
    for each, kind in ((path.parent, stat.S_ISDIR), (path, stat.S_ISREG)):
        try:
            before = os.stat(each).st_mode
        except OSError:
            continue
        if not kind(before) or not before & 0o077:
            continue
        mode = stat.S_IMODE(before) & 0o700
        try:
            os.chmod(each, mode)
        except OSError:
            found.append((each, stat.S_IMODE(before), None))
        else:
            found.append((each, stat.S_IMODE(before), mode))
    return found


def forget(server: str, directory: Path | None = None, *, revoked: bool = False) -> Path | None:
    """Take ``server``'s entry out of ``servers``; the file, or None if it had none.

    A token that still works goes to the ``"replaced"`` list, as when another
    player replaces it (``save``): signing out loses no player. A ``revoked``
    one opens nothing any more, and goes.
    """
    path = credentials_path(directory)
    with _locked(path):
        data = _read(path)
        servers = data.get("servers", {})
        key = _entry_key(servers, server)
        if key not in servers:
            return None
        before = servers.pop(key)
        if not revoked:
            _keep_replaced(data, server, before)
        _write(path, data)
    return path


def _keep_replaced(data: dict[str, Any], server: str, entry: object) -> None:
    """Append a player's ``entry`` (if it is one) to the file's ``"replaced"`` list: kept
    in the file, never shown, so that it can be put back under ``servers`` by hand."""
    if isinstance(entry, dict):
        kept = data.get("replaced", [])
        kept = kept if isinstance(kept, list) else [kept]
        data["replaced"] = [*kept, {"server": _key(server), **entry}]


def _text(value: object) -> TypeGuard[str]:
    """A string that has UTF-8: JSON's ``"\\ud800"`` (a lone surrogate) has none, and
    could be neither sent nor shown."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def set_aside(directory: Path | None = None) -> Path | None:
    """Move a malformed credentials file to a free ``credentials.json.bad*`` name; that name."""
    path = credentials_path(directory)
    with _locked(path):
        try:
            _read(path)
        except Malformed:
            pass
        else:
            return None
        for number in range(1000):
            aside = path.with_name(f"{FILE_NAME}.bad{number or ''}")
            if not aside.exists() and not aside.is_symlink():
                os.replace(path, aside)
                return aside
    raise Malformed(path, _("saved.no_free_name"))


def save(
    server: str, credentials: Credentials, directory: Path | None = None, *, rotated: bool = False
) -> Path:
    """Store ``credentials`` for ``server``; returns the file (mode 0600).

    The entry of another player it replaces is appended to the file's
    ``"replaced"`` list (with ``"server"``), so that registering another name
    loses no player and shows no token; a token ``rotated`` into this one opens
    nothing any more, and goes.

    Raises ``OSError`` if the file cannot be written, and ``Malformed`` rather
    than write over a malformed file (``set_aside`` moves one away).
    """
    directory = directory or config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = credentials_path(directory)
    with _locked(path):
        data = _read(path)
        servers = data.setdefault("servers", {})
        before = servers.pop(_entry_key(servers, server), None)  # kept under one key from now on
        if isinstance(before, dict) and before.get("token") != credentials.token and not rotated:
            _keep_replaced(data, server, before)  # another player replaces it: not lost
        servers[_key(server)] = {"name": credentials.name, "token": credentials.token}
        if credentials.next is not None:
            servers[_key(server)]["next"] = credentials.next
        _write(path, data)
    return path


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the advisory lock of the credentials file ``path`` (another command that
    changes it waits). Where there is no ``flock`` (Windows), or the lock file cannot
    be made (no directory yet, a read-only one), or taken (a file system without locks),
    there is no lock: the write that follows, if any, says what is wrong."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path.with_name(LOCK_NAME), flags, 0o600)
    except OSError:
        yield
        return
    try:
        # A file system without locks (NFS with no lock daemon, some FUSE) raises.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _text_of(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _within_limit(path: Path, data: dict[str, Any]) -> str:
    """``data`` as the file's text, of ``MAX_FILE_BYTES`` at most, which it would refuse
    to read: the oldest entries of its ``"replaced"`` list go (as few as make room), since
    each player replaced and each sign-out adds one there; the file's players are never
    dropped: ``OSError`` (EFBIG) if they alone take more."""
    text = _text_of(data)
    kept = data.get("replaced")
    if len(text.encode()) <= MAX_FILE_BYTES or not isinstance(kept, list):
        if len(text.encode()) > MAX_FILE_BYTES:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
        return text
    # the fewest of the oldest entries whose leaving makes room: a binary search
    fewest, most = 1, len(kept)
    while fewest < most:
        middle = (fewest + most) // 2
        if len(_text_of({**data, "replaced": kept[middle:]}).encode()) <= MAX_FILE_BYTES:
            most = middle
        else:
            fewest = middle + 1
    data["replaced"] = kept[fewest:]
    text = _text_of(data)
    if len(text.encode()) > MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
    return text


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to the credentials file at once (mode 0600), or not at all: through
    a temporary file of this write's own (mode 0600 from the start) beside it. A file
    the client would refuse to read is never written (``_within_limit``).

    A credentials file that is a symbolic link (to a file kept with the user's other
    dotfiles) stays one: its target is the file replaced, by a temporary file beside
    it; replacing the link would leave the target stale, read nowhere any more.
    """
    text = _within_limit(path, data)
    target = Path(os.path.realpath(path))  # path itself unless it is a link (or in a linked dir)
    fd, name = tempfile.mkstemp(prefix=f".{FILE_NAME}.", suffix=".tmp", dir=target.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise
