"""Server settings: command-line flags over ``SCORPION_*`` environment variables over defaults.

``Settings`` is a frozen value built once by ``load_settings(argv, environ)``
in the composition root (``server.app``). Every field has a flag and an
environment variable (the field name upper-cased after ``SCORPION_``, e.g.
``--port`` and ``SCORPION_PORT``); a flag wins over the variable, which wins
over the default. Nothing else in the server reads the environment.

``load_settings`` checks every value (``problems``) and raises
``SettingsError`` listing one line per bad value, each naming the flag and
its variable; ``main`` prints them and exits with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import ipaddress
import re
import ssl
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final, NoReturn

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from protocol.constants import ABUSE_LIMIT, ABUSE_WINDOW_SECONDS, MAX_SAFE_INT
from protocol.version import version
from server.limits import LimitSettings, parse_networks, parse_rate
from server.loop import LOOPS
from server.store.database import async_url

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "OutputFailed",
    "Settings",
    "SettingsError",
    "limit_settings",
    "load_settings",
    "origins",
    "parser",
    "published_limits",
    "requested_log_format",
    "setting_label",
]

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS: Final = ("text", "json")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server can be told; see docs/server.md for the table."""

    host: str = "127.0.0.1"
    port: int = 8765
    database_url: str = ""  # empty: SQLite at <data_dir>/scorpion.db
    data_dir: str = "data"
    log_level: str = "INFO"
    log_format: str = "text"  # text or json (one object per line)
    certfile: str = ""  # PEM certificate (chain): serve wss:// and https://
    keyfile: str = ""  # its private key, if not in certfile
    db_timeout_ms: int = 5000  # most time one database step may take (connect, statement)
    db_wait_s: int = 60  # at start, how long to wait for the database to come up
    workers: int = 2  # solver processes (hints, lost-position checks)
    hint_budget_ms: int = 300
    lost_budget_ms: int = 200  # 0 disables the lost_position check
    queue_size: int = 1024  # outbound frames buffered per connection
    outbox_bytes: int = 4 * 1024 * 1024  # outbound bytes buffered per connection
    outbox_total_bytes: int = 256 * 1024 * 1024  # outbound bytes buffered in all
    drain_timeout_ms: int = 30_000  # a socket that takes longer to drain is closed (1001)
    hello_timeout_ms: int = 10_000  # a connection must say hello this soon (1008)
    idle_timeout_ms: int = 900_000  # a connection silent this long is closed (1001; 0: never)
    keepalive_ms: int = 20_000  # ping this often; no pong within as long again: 1011 (0: off)
    max_connections: int = 10_000  # open WebSocket connections in all (1013 beyond)
    listen_backlog: int = 4096  # connections waiting to be accepted (the kernel may cap it)
    max_connections_per_address: int = 64  # from one client address (1013 beyond)
    max_game_watchers: int = 32  # connections with one game open (too_many_watchers beyond)
    rate_actions: str = "30,120"  # per connection: moves, deals, undos, ... (RATE/s,BURST)
    rate_games: str = "0.2,10"  # per connection: new games (RATE/s,BURST)
    rate_hints: str = "3,20"
    rate_reads: str = "50,200"  # hello, ping, open_game, games, stats, replay, ...
    rate_registrations: str = "0.2,20"  # per address (and per connection)
    rate_auth_failures: str = "0.2,10"  # refused tokens, per address
    rate_connections: str = "20,200"  # new sockets per address, from the TCP accept
    player_rate_factor: int = 2  # a player's devices share buckets this many times larger
    address_rate_factor: int = 16  # an address's connections share buckets this much larger
    abuse_limit: int = ABUSE_LIMIT  # bad_request/rate_limited replies to one address before 1008
    abuse_window_s: int = int(ABUSE_WINDOW_SECONDS)  # ... within this many seconds
    max_versions: int = 10_000  # a game's versions: beyond, game_too_long
    history_keep: int = 500  # versions of events kept in memory per game for catch_up
    trusted_proxies: str = ""  # CIDRs whose forwarded header names the client
    forwarded_header: str = "X-Forwarded-For"
    allowed_origins: str = ""  # browser Origins accepted (comma-separated; empty: any)
    cache_size: int = 10_000  # live games kept in memory
    token_ttl_days: int = 0  # tokens older than this stop working (0: never)
    commit_batch: int = 64  # most actions per transaction (group commit; 1: one each)
    easy_pool: int = 5000  # winnable easy deals to find in the background (server.winnable_pools)
    winnable_pool: int = 200  # winnable deals per other level to find, for new_game winnable
    web_dir: str = ""  # the built web client; empty: the one installed with the server
    event_loop: str = "auto"  # auto (uvloop when installed), uvloop or asyncio (server.loop)
    migrate: bool = False  # upgrade the schema and exit
    migrate_to: str | None = None  # take the schema to this revision (up or down) and exit

    @property
    def store_url(self) -> str:
        """The database URL, the SQLite default filled in."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{Path(self.data_dir) / 'scorpion.db'}"

    @property
    def is_sqlite(self) -> bool:
        return self.store_url.startswith("sqlite")

    @property
    def tls(self) -> bool:
        return bool(self.certfile)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The server's TLS context, or None without ``certfile``."""
        if not self.certfile:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        # An encrypted key fails at once: OpenSSL would otherwise ask on the terminal.
        context.load_cert_chain(self.certfile, self.keyfile or None, password=_no_pass_phrase)
        return context


_HELP: dict[str, str] = {
    "host": "interface to listen on",
    "port": "TCP port (0: any free port)",
    "database_url": "sqlite+aiosqlite:///path/file.db or postgresql+asyncpg://user@host/db",
    "data_dir": "directory of the default SQLite database (unused with --database-url)",
    "log_level": "DEBUG, INFO, WARNING or ERROR",
    "log_format": "text, or json for one JSON object per line",
    "certfile": "PEM certificate (chain) file: serve wss:// and https://",
    "keyfile": "PEM private key file, when the key is not in the certificate file",
    "db_timeout_ms": "most time for one database step (connect, statement, pool wait)",
    "db_wait_s": "at start, wait this long for the database to come up (0: do not wait)",
    "workers": "solver worker processes",
    "hint_budget_ms": "solver time per hint",
    "lost_budget_ms": "solver time per lost-position check (0: off)",
    "queue_size": "outbound frames buffered per connection before it is dropped",
    "outbox_bytes": "outbound bytes buffered per connection before it is closed (1001)",
    "outbox_total_bytes": "outbound bytes buffered in all; beyond, the largest queue is closed",
    "drain_timeout_ms": "close a connection whose socket does not drain within this (1001)",
    "hello_timeout_ms": "close a connection that has not said hello within this (1008)",
    "idle_timeout_ms": "close a connection that sent no message for this long (1001; 0: never)",
    "keepalive_ms": "ping every this many ms; no pong within as long again closes (1011)",
    "max_connections": "most open WebSocket connections; beyond, new ones close with 1013",
    "listen_backlog": "connections queued by the kernel while the server is busy (its cap applies)",
    "max_connections_per_address": "most open connections from one client address (1013);"
    " 16 more sockets may be open from it (handshakes, plain HTTP)",
    "max_game_watchers": "most connections one game may be open on at this node; one more"
    " open_game is answered too_many_watchers",
    "rate_actions": "actions per connection: RATE per second,BURST (or off)",
    "rate_games": "new games per connection: RATE per second,BURST (or off)",
    "rate_hints": "hints per connection: RATE per second,BURST (or off)",
    "rate_reads": "other requests per connection: RATE per second,BURST (or off)",
    "rate_registrations": "registrations per address, token rotations and sign-outs per"
    " player (each per connection too): RATE per second,BURST (or off)",
    "rate_auth_failures": "refused tokens per address: RATE per second,BURST (or off)",
    "rate_connections": "new connections per address, WebSocket or plain HTTP, counted as"
    " they are accepted; beyond, closed at once, unread: RATE per second,BURST (or off)",
    "player_rate_factor": "a player's bucket is the connection's rate times this",
    "address_rate_factor": "an address's bucket is the connection's rate times this",
    "abuse_limit": "bad_request/rate_limited replies to one address that close it (1008)",
    "abuse_window_s": "the window of abuse_limit, in seconds",
    "max_versions": "highest version a game's actions and hints may reach; at it, game_too_long",
    "history_keep": "versions of events kept in memory per game for catch_up",
    "trusted_proxies": "CIDRs of reverse proxies whose forwarded header names the client",
    "forwarded_header": "the header a trusted proxy puts the client's address in",
    "allowed_origins": "comma-separated origins browsers may connect from, each "
    "scheme://host[:port] as a browser sends it, e.g. https://play.example.org "
    "(empty: any origin)",
    "cache_size": "games kept in memory",
    "token_ttl_days": "a token stops working this many days after it was issued (0: never)",
    "commit_batch": "most actions committed in one transaction (1: a transaction per action)",
    "easy_pool": "grow the easy level's winnable deals to this many in the background",
    "winnable_pool": "grow each other level's winnable deals to this many in the background",
    "web_dir": "directory of the built web client (default: the one installed with the server)",
    "event_loop": "auto (uvloop when installed), uvloop or asyncio",
    "migrate": "upgrade the database schema to this version and exit",
    "migrate_to": "take the database schema to this revision, older or newer, and exit "
    "(a downgrade, before an older version is started again: docs/deploy.md)",
}


def _env_name(name: str) -> str:
    return f"SCORPION_{name.upper()}"


class SettingsError(Exception):
    """Bad settings: ``lines`` holds one message per bad value."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        super().__init__("; ".join(self.lines))


class OutputFailed(Exception):
    """``--help`` or ``--version`` could not be written to standard output: ``reason``;
    ``reader_left`` when it went to a pipe whose reader had gone (``| head -1``)."""

    def __init__(self, reason: str, reader_left: bool = False) -> None:
        self.reason = reason
        self.reader_left = reader_left
        super().__init__(f"cannot write to standard output ({reason})")


def schema_revisions() -> list[str]:
    """The revisions of the migrations this build carries, oldest first, by their
    files' numbers (``0011_...``); read without Alembic, which settings do not load."""
    versions = Path(__file__).resolve().parent / "store" / "migrations" / "versions"
    return sorted(path.name[:4] for path in versions.glob("[0-9][0-9][0-9][0-9]_*.py"))


def schema_revision() -> str:
    """The revision of the newest migration this build carries: the schema it needs.
    Builds of one version may need different ones, so ``--version`` names it."""
    numbers = schema_revisions()
    return numbers[-1] if numbers else "none"


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _label(name: str) -> str:
    return f"{_flag(name)} ({_env_name(name)})"


def setting_label(name: str) -> str:
    """How a line names the setting ``name``: ``--data-dir (SCORPION_DATA_DIR)``."""
    return _label(name)


_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"", "0", "false", "no", "off"})


def _convert(kind: Any, raw: str, name: str) -> Any:
    if kind in (bool, "bool"):
        word = raw.strip().lower()
        if word not in _TRUE | _FALSE:  # a typo must not switch a setting off unseen
            raise SettingsError(
                [f"{_label(name)} must be 1, true, yes or on (or 0, false, no, off), not {raw!r}"]
            )
        return word in _TRUE
    if kind in (int, "int"):
        try:
            return _integer(raw)
        except ValueError:
            raise SettingsError([f"{_label(name)} must be an integer, not {raw!r}"]) from None
    return raw


def _integer(text: str) -> int:
    """``int(text)`` of ASCII digits (after an optional ``-``) only. Python's ``int``
    takes any script's digits (``"\u0663"`` is 3), underscores (``1_0`` is 10), a
    ``+`` and spaces around: such a port or count is no typo a host would see."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"invalid int value: {text!r}")
    return int(text)


_INTEGER: Final = re.compile(r"-?[0-9]+")


def _int_flag(text: str) -> int:
    """``_integer`` for argparse, which words its failure as it does for ``int``."""
    try:
        return _integer(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


# The least value of each integer setting; a few also have a greatest.
_AT_LEAST: Final = {
    "port": 0,
    "workers": 1,
    "hint_budget_ms": 1,
    "lost_budget_ms": 0,
    "queue_size": 1,
    "cache_size": 1,
    "token_ttl_days": 0,
    "commit_batch": 1,
    "easy_pool": 0,
    "winnable_pool": 0,
    "db_timeout_ms": 1,
    "db_wait_s": 0,
    "outbox_bytes": 65536,
    "outbox_total_bytes": 65536,
    "drain_timeout_ms": 1,
    "hello_timeout_ms": 1,
    "idle_timeout_ms": 0,
    "keepalive_ms": 0,
    "max_connections": 1,
    "listen_backlog": 1,
    "max_connections_per_address": 1,
    "max_game_watchers": 1,
    "player_rate_factor": 1,
    "address_rate_factor": 1,
    "abuse_limit": 1,
    "abuse_window_s": 1,
    "max_versions": 1,
    "history_keep": 1,
}

_AT_MOST: Final = {
    "port": 65535,
    "workers": 1024,  # a typo (20000 for 2) must not fork thousands of processes
    "db_timeout_ms": 86_400_000,  # a day; SQLite's busy timeout is an int of ms (2**31 is 0)
    "hint_budget_ms": 60_000,  # a search that long holds a worker, and a player waits for it
    "lost_budget_ms": 60_000,
    "listen_backlog": 65535,  # the kernel caps it lower still (net.core.somaxconn)
    "token_ttl_days": 36500,  # a hundred years: beyond, the expiry is no date at all
    "player_rate_factor": 1_000_000,  # beyond, a bucket's size may not be a float
    "address_rate_factor": 1_000_000,
    # Told in every welcome (``published_limits``), whose integers the protocol keeps
    # within 2^53-1: beyond 2^64 the welcome could not even be encoded (every hello 1011).
    **dict.fromkeys(
        (
            "hello_timeout_ms",
            "idle_timeout_ms",
            "abuse_limit",
            "abuse_window_s",
            "max_game_watchers",
            "max_versions",
        ),
        MAX_SAFE_INT,
    ),
}

_PATHS: Final = ("data_dir", "certfile", "keyfile", "web_dir")
"""Settings naming a file or directory: a leading ``~`` is the user's home, as in a shell."""

RATES: Final = {
    "action": "rate_actions",
    "game": "rate_games",
    "hint": "rate_hints",
    "read": "rate_reads",
    "register": "rate_registrations",
    "auth": "rate_auth_failures",
}
"""Request kind (``server.limits.KINDS``) -> the setting holding its rate."""


KEEPALIVE_LEAST_MS: Final = 100
"""The shortest keepalive interval: the clients' pongs to it count as control frames
(PROTOCOL.md section 10, 20 a second), and faster ones would close every client."""


def problems(settings: Settings) -> list[str]:
    """One line per bad value in ``settings``, naming the setting; empty when all are good."""
    low = [name for name, least in _AT_LEAST.items() if getattr(settings, name) < least]
    high = [name for name, most in _AT_MOST.items() if getattr(settings, name) > most]
    found = [
        f"{_label(name)} must be at least {_AT_LEAST[name]}, not {getattr(settings, name)}"
        for name in low
    ]
    found += [
        f"{_label(name)} must be at most {_AT_MOST[name]}, not {getattr(settings, name)}"
        for name in high
    ]
    if 0 < settings.keepalive_ms < KEEPALIVE_LEAST_MS:  # its pongs would pass the frame limit
        found.append(
            f"{_label('keepalive_ms')} must be 0 (off) or at least {KEEPALIVE_LEAST_MS}, "
            f"not {settings.keepalive_ms}"
        )
    if (
        settings.outbox_total_bytes < settings.outbox_bytes  # the per-connection bound unmet
        and not {"outbox_bytes", "outbox_total_bytes"} & {*low, *high}  # one line per value
    ):
        found.append(
            f"{_label('outbox_total_bytes')} must be at least {_label('outbox_bytes')} "
            f"({settings.outbox_bytes}), not {settings.outbox_total_bytes}"
        )
    if settings.log_level.upper() not in LOG_LEVELS:
        found.append(
            f"{_label('log_level')} must be one of {', '.join(LOG_LEVELS)}, "
            f"not {settings.log_level!r}"
        )
    if settings.log_format not in LOG_FORMATS:
        found.append(f"{_label('log_format')} must be text or json, not {settings.log_format!r}")
    if settings.event_loop not in LOOPS:
        found.append(
            f"{_label('event_loop')} must be one of {', '.join(LOOPS)}, not {settings.event_loop!r}"
        )
    if settings.event_loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
        found.append(f"{_label('event_loop')}: uvloop is not installed (the server extra)")
    if not settings.host:
        found.append(f"{_label('host')} must name an interface")
    elif settings.host.startswith("[") and settings.host.endswith("]"):
        found.append(
            f"{_label('host')}: write an IPv6 address without brackets, not {settings.host!r}"
        )
    elif _not_a_host_name(settings.host):
        found.append(
            f"{_label('host')} must be an address or a host name, not {settings.host!r} "
            "(a part of the name is empty or longer than 63 characters, the name longer "
            "than 253, or not text, or it holds a space or a control character)"
        )
    found += _looked_at(_database_problems, settings, "database_url", "data_dir")
    found += _looked_at(_web_dir_problems, settings, "web_dir")
    found += _looked_at(_tls_problems, settings, "certfile", "keyfile")
    found += _limit_problems(settings)
    found += _origin_problems(settings)
    if settings.migrate_to is not None:  # given empty ("$REV" unset): no revision either
        known = schema_revisions()
        if settings.migrate:
            found.append(f"{_label('migrate')} and {_label('migrate_to')}: give one of them")
        elif settings.migrate_to not in known:
            found.append(
                f"{_label('migrate_to')}: this version knows no revision "
                f"{settings.migrate_to!r} (it has {known[0]} to {known[-1]})"
            )
    return found


def _database_problems(settings: Settings) -> list[str]:
    """What is wrong with where the database is, found before anything is opened or made.

    A URL must parse and name a supported backend. An SQLite URL must name a
    plain file path: not an in-memory database (each of the server's
    connections would get one of its own, and all of it would be gone at
    exit), not an SQLite URI filename (``file:...``, ``?uri=true``: the
    server's own connections open the path as a plain file name, so they
    would open another database), no query parameters (those connections
    would not see them either), not a directory. The default file in
    ``data_dir`` is checked the same way.
    """
    if not settings.database_url:
        if not settings.data_dir.strip():
            return [f"{_label('data_dir')} must name a directory ('.' for the current one)"]
        data_dir = Path(settings.data_dir)
        if data_dir.exists() and not data_dir.is_dir():
            return [f"{_label('data_dir')}: {data_dir} is not a directory"]
        if (data_dir / "scorpion.db").is_dir():
            return [
                f"{_label('data_dir')}: {data_dir / 'scorpion.db'} is a directory, "
                "not a database file"
            ]
        return []
    label = _label("database_url")
    port = _HOST_PORT.match(settings.database_url)
    if port is not None and not (
        port[1].isascii() and port[1].isdigit() and 1 <= int(port[1]) <= 65535
    ):
        return [f"{label}: port must be a number 1..65535, not {port[1]!r}"]
    try:
        url = async_url(settings.database_url)
    except (ArgumentError, ValueError):  # unparsable, or another backend
        return [f"{label} must be a sqlite+aiosqlite:// or postgresql+asyncpg:// URL"]
    if url.get_backend_name() != "sqlite":
        problem = _postgresql_problem(make_url(settings.database_url))  # as written
        return [f"{label}{problem}"] if problem else []
    problem = _sqlite_problem(url)
    return [f"{label}{problem}"] if problem else []


_SQLITE_EXAMPLE: Final = "sqlite+aiosqlite:///path/to/scorpion.db"
# A URL's port after its host (``scheme://[user[:password]@]host:PORT``), as written.
# The user part, when there is one, and the host are each taken whole (``?+``, ``(?>``):
# given back, a password with no port after the host read as the port of a host named
# as the user, and ``[::1]`` with none as host ``[`` with port ``:1]``.
_HOST_PORT: Final = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?+(?>\[[^\]/]*\]|[^:/?#]*):([^/?#]*)"
)
_HEADER_NAME: Final = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # RFC 9110's token


def _sqlite_problem(url: URL) -> str:
    """What keeps the SQLite ``url`` from naming one database file, or ''."""
    database = url.database or ""
    query = {key.lower(): str(value).lower() for key, value in url.query.items()}
    if url.username or url.password or url.host or url.port:
        return f": an SQLite URL names a file, not a host ({_SQLITE_EXAMPLE})"
    if (
        database in ("", ":memory:")
        or query.get("mode") == "memory"
        or (database.startswith("file:") and ":memory:" in database)
    ):
        return (
            f" must name an SQLite file ({_SQLITE_EXAMPLE}), not an in-memory database: "
            "the server's connections would not share it, and it would not survive the server"
        )
    if database.startswith("file:") or "uri" in query:
        return (
            ": SQLite URI filenames (file:..., uri=true) are not supported; "
            f"give the file's path ({_SQLITE_EXAMPLE})"
        )
    if url.query:
        return (
            f": an SQLite URL takes no query parameters ({_SQLITE_EXAMPLE}); "
            "see --db-timeout-ms for the busy timeout"
        )
    if "\x00" in database:  # %00: no file name can hold it
        return f": the file's path holds a NUL character (%00) ({_SQLITE_EXAMPLE})"
    if Path(database).is_dir():
        return f": {database} is a directory, not a database file"
    if Path(database).exists() and not Path(database).is_file():  # /dev/null, a FIFO
        return f": {database} is not a regular file, so it cannot hold a database"
    return ""


def _postgresql_problem(url: URL) -> str:
    """What keeps the PostgreSQL ``url`` from being used as it is, or ''.

    Its query parameters reach asyncpg's ``connect()`` as arguments (SQLAlchemy's
    pool) and the change listener's connection alike (``server.store.notify``):
    only those both understand are let through, each value checked, so a typo
    is one line at start rather than a traceback or a node that never hears
    the others.
    """
    if url.password and "\x00" in url.password:  # PostgreSQL's startup message cannot carry it
        return ": its password holds a NUL character"
    hosts = url.query.get("host", ())
    named = [
        ("user", url.username),
        ("database name", url.database),
        ("host", url.host),
        *(("host", each) for each in ([hosts] if isinstance(hosts, str) else hosts)),
    ]
    for part, text in named:  # no such name can be, nor said on one line
        if text and not text.isprintable():
            return f": its {part} holds a control character ({text!r})"
    for key, value in url.query.items():
        values = [value] if isinstance(value, str) else list(value)
        if key not in PG_QUERY:
            return (
                f": a PostgreSQL URL takes only {', '.join(sorted(PG_QUERY))} as query "
                f"parameters, not {key!r}"
            )
        if len(values) != 1 and key != "host":
            return f": {key} is given {len(values)} times"
        allowed = PG_QUERY[key]
        bad = [each for each in values if (allowed and each not in allowed) or not each]
        if bad:
            one_of = f"one of {', '.join(allowed)}" if allowed else "not empty"
            return f": {key} must be {one_of}, not {bad[0]!r}"
        if key == "port" and not (
            values[0].isascii() and values[0].isdigit() and 1 <= int(values[0]) <= 65535
        ):
            return f": port must be a number 1..65535, not {values[0]!r}"
        if key == "port" and "host" in url.query:
            return ": with host in the query, give each port there (host=name:port), not as port"
    if "ssl" in url.query and "sslmode" in url.query:  # one is the other's name
        return ": give ssl or sslmode, not both"
    try:  # several hosts: SQLAlchemy's own rules (each with its port, ports numbers)
        pool_url = url.set(drivername="postgresql+asyncpg")
        pool_url.get_dialect()().create_connect_args(pool_url)
    except (ArgumentError, ValueError) as exc:
        return f": {exc}"
    return ""


_SSL_MODES: Final = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
PG_QUERY: Final[dict[str, tuple[str, ...]]] = {
    "ssl": _SSL_MODES,
    "sslmode": _SSL_MODES,  # libpq's name; the store passes it on as ssl
    "host": (),  # a Unix socket's directory, or host:port (repeated for several hosts)
    "port": (),  # 1..65535, checked apart
    "passfile": (),  # a .pgpass file, as PGPASSFILE names one
    # Which of several hosts to use (a failover URL): asyncpg's values, libpq's name.
    "target_session_attrs": (
        "any",
        "primary",
        "standby",
        "prefer-standby",
        "read-write",
        "read-only",
    ),
}
"""The query parameters a PostgreSQL URL may have, each with its values (any: empty)."""


def _limit_problems(settings: Settings) -> list[str]:
    found = []
    for name in (*RATES.values(), "rate_connections"):
        try:
            parse_rate(getattr(settings, name))
        except ValueError as exc:
            found.append(f"{_label(name)} {exc}, not {getattr(settings, name)!r}")
    try:
        networks = parse_networks(settings.trusted_proxies)
    except ValueError as exc:
        found.append(f"{_label('trusted_proxies')}: {exc}")
    else:
        if settings.trusted_proxies and not networks:  # " " or ",": a typo, not "none"
            found.append(
                f"{_label('trusted_proxies')}: {settings.trusted_proxies!r} lists no address; "
                "leave it empty to trust no proxy"
            )
    if not _HEADER_NAME.fullmatch(settings.forwarded_header):
        found.append(
            f"{_label('forwarded_header')} must name a header (letters, digits, '-'), "
            f"not {settings.forwarded_header!r}"
        )
    return found


def limit_settings(settings: Settings) -> LimitSettings:
    """The abuse controls of ``settings`` (which ``load_settings`` has checked)."""
    return LimitSettings(
        rates={kind: parse_rate(getattr(settings, name)) for kind, name in RATES.items()},
        player_factor=settings.player_rate_factor,
        address_factor=settings.address_rate_factor,
        abuse_limit=settings.abuse_limit,
        abuse_window=float(settings.abuse_window_s),
        max_per_address=settings.max_connections_per_address,
        max_total=settings.max_connections,
        connections=parse_rate(settings.rate_connections),
    )


def published_limits(settings: Settings) -> dict[str, Any]:
    """The limits a ``welcome`` tells every client (protocol ``limits``), from ``settings``."""
    limits = limit_settings(settings)
    rates = limits.rates
    return {
        "hello_timeout_ms": settings.hello_timeout_ms,
        "idle_timeout_ms": settings.idle_timeout_ms,
        "rates": {
            kind: None if rate is None else {"per_s": rate.per_s, "burst": rate.burst}
            for kind, rate in {**rates, "connect": limits.connections}.items()
        },
        "player_factor": settings.player_rate_factor,
        "address_factor": settings.address_rate_factor,
        "abuse_limit": settings.abuse_limit,
        "abuse_window_s": settings.abuse_window_s,
        "max_game_watchers": settings.max_game_watchers,
        "max_versions": settings.max_versions,
    }


def origins(settings: Settings) -> list[str] | None:
    """The allowed ``Origin`` values, or None when any origin may connect."""
    allowed = [origin.strip() for origin in settings.allowed_origins.split(",") if origin.strip()]
    return allowed or None


_ORIGIN: Final = re.compile(r"([a-z][a-z0-9+.-]*)://([a-z0-9_.-]+|\[[0-9a-f:.]+\])(?::([1-9]\d*))?")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _is_origin(value: str) -> bool:
    """Whether ``value`` is an origin as a browser's ``Origin`` header gives it:
    scheme://host[:port], in lower case, without a path or a default port."""
    match = _ORIGIN.fullmatch(value)
    if match is None:
        return False
    scheme, host, port = match.groups()
    if not _canonical_address(host):
        return False
    return port is None or (int(port) < 65536 and int(port) != _DEFAULT_PORTS.get(scheme))


def _canonical_address(host: str) -> bool:
    """An IP address is written as browsers write it (127.0.0.1, [::1]); a host whose
    last label is a number is one, so ``127.1`` or ``0x7f.0.0.1`` never match."""
    if host.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]" == host
        except ValueError:
            return False
    last = host.rsplit(".", 1)[-1]
    if not (last.isdigit() or last.startswith("0x")):
        return True  # a name
    try:
        return str(ipaddress.IPv4Address(host)) == host
    except ValueError:
        return False


def _origin_problems(settings: Settings) -> list[str]:
    """A browser's ``Origin`` is compared as it is: a value that is not one never matches."""
    given = origins(settings) or []
    if settings.allowed_origins and (not given or "*" in given):  # " ", ",": any origin in
        what = "'*' is not an origin" if given else f"{settings.allowed_origins!r} lists no origin"
        return [
            f"{_label('allowed_origins')}: {what}; to let any origin connect, "
            "leave it empty (the default)"
        ]
    bad = [value for value in given if not _is_origin(value)]
    if not bad:
        return []
    listed = ", ".join(repr(value) for value in bad)
    verb = "is not an origin" if len(bad) == 1 else "are not origins"
    return [
        f"{_label('allowed_origins')}: {listed} {verb}; an origin is "
        "scheme://host[:port] as a browser sends it (lower case, no path, not even a "
        "trailing slash, no default port), e.g. https://play.example.org or "
        "http://localhost:5173"
    ]


def _not_a_host_name(host: str) -> bool:
    """Whether ``host`` is no IP address and no name the resolver could be asked for
    (``a..b``, a label over 63 characters, bytes that were not UTF-8): the IDNA codec
    refuses it, which ended in "the server failed unexpectedly"; nor one with a space or
    a control character, which the codec lets through to fail as the server listens."""
    if not host.isprintable() or any(char.isspace() for char in host):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            encoded = host.encode("idna")
        except UnicodeError:
            return True
        name = encoded.removesuffix(b".")
        return len(name) > 253 or not all(name.split(b"."))  # "⒈.com" is "1..com"
    return False


def _looked_at(
    check: Callable[[Settings], list[str]], settings: Settings, *names: str
) -> list[str]:
    """``check(settings)``; a path the system will not even look at (a name part over 255
    bytes, a loop of symbolic links: ``OSError`` from ``stat``) is said as such, naming
    the first of the settings ``names`` that is set (a traceback before)."""
    try:
        return check(settings)
    except OSError as exc:
        name = next((each for each in names if getattr(settings, each)), names[0])
        return [f"{_label(name)}: cannot use {exc.filename!r} ({exc.strerror or exc})"]


def _web_dir_problems(settings: Settings) -> list[str]:
    if not settings.web_dir:
        return []
    if not Path(settings.web_dir).is_dir():
        what = "not a directory" if Path(settings.web_dir).exists() else "no such directory"
        return [f"{_label('web_dir')}: {what} {settings.web_dir!r}"]
    if not (Path(settings.web_dir) / "index.html").is_file():
        return [f"{_label('web_dir')}: no index.html in {settings.web_dir!r} (make web builds one)"]
    try:
        (Path(settings.web_dir) / "index.html").read_bytes()
    except OSError as exc:
        return [f"{_label('web_dir')}: cannot read its index.html ({exc.strerror})"]
    return []


def _tls_problems(settings: Settings) -> list[str]:
    if settings.keyfile and not settings.certfile:
        return [f"{_label('keyfile')} needs {_label('certfile')} too"]
    for name in ("certfile", "keyfile"):
        path = getattr(settings, name)
        if path and not Path(path).is_file():
            what = "not a file" if Path(path).exists() else "no such file"
            return [f"{_label(name)}: {what} {path!r}"]
        if path:
            try:
                Path(path).read_bytes()
            except OSError as exc:
                return [f"{_label(name)}: cannot read {path!r} ({exc.strerror or exc})"]
    try:
        settings.ssl_context()
    except (OSError, ssl.SSLError) as exc:
        name, reason = _tls_reason(settings, exc)
        return [f"{_label(name)}: cannot load the certificate and key ({reason})"]
    return []


def _tls_reason(settings: Settings, exc: OSError) -> tuple[str, str]:
    """Why ``load_cert_chain`` refused the files, in words (OpenSSL's are ``PEM lib``),
    and the setting of the file at fault (``keyfile`` when the key is given apart)."""
    key = "keyfile" if settings.keyfile else "certfile"
    key_path = settings.keyfile or settings.certfile
    cert_text = Path(settings.certfile).read_bytes()
    key_text = Path(key_path).read_bytes()
    if isinstance(exc, _EncryptedKey) or b"ENCRYPTED" in key_text:
        return key, f"the private key in {key_path!r} is encrypted; give it without a pass phrase"
    if b"-----BEGIN CERTIFICATE-----" not in cert_text:
        return "certfile", f"no PEM certificate in {settings.certfile!r}"
    if b"PRIVATE KEY-----" not in key_text:
        where = "" if settings.keyfile else "; give the key with --keyfile"
        return key, f"no PEM private key in {key_path!r}{where}"
    if getattr(exc, "reason", None) == "KEY_VALUES_MISMATCH":
        return key, f"the private key in {key_path!r} does not match the certificate"
    return "certfile", str(getattr(exc, "reason", None) or exc.strerror or exc)


class _EncryptedKey(OSError):
    """The private key asks for a pass phrase (which the server never reads from a terminal)."""


def _no_pass_phrase() -> str:
    raise _EncryptedKey("the private key is encrypted")


class _Parser(argparse.ArgumentParser):
    """argparse, with a malformed flag raised as a ``SettingsError`` of one line (exit code 2
    in ``main``, in the log format asked for)."""

    def error(self, message: str) -> NoReturn:
        if message.endswith("expected one argument"):  # a value starting with '-' is no value
            message += " (a value that starts with '-' is written --flag=VALUE)"
        raise SettingsError([f"{message} (see --help)"])

    def _print_message(self, message: str, file: Any = None) -> None:
        """``--help`` and ``--version``: a write that fails (``>/dev/full``) is
        ``OutputFailed``, where argparse ignores it and exits 0 with nothing shown."""
        if not message:
            return
        out = file or sys.stdout or sys.stderr
        try:
            out.write(message)
            out.flush()
        except OSError as exc:
            reader_left = isinstance(exc, BrokenPipeError)
            raise OutputFailed(exc.strerror or str(exc), reader_left) from None


def requested_log_format(argv: Sequence[str] | None, environ: Mapping[str, str]) -> str:
    """The log format asked for, read leniently: for the lines that say the settings are bad.

    ``--log-format`` (or ``SCORPION_LOG_FORMAT``) may be the one good value among bad
    ones, or the command line may not parse at all; a deployment that asked for JSON
    still gets its refusal as a JSON line. ``text`` unless ``json`` is asked for.
    """
    flags = list(sys.argv[1:] if argv is None else argv)
    given = environ.get(_env_name("log_format"))
    for index, flag in enumerate(flags):
        if flag == "--":
            break
        if flag == _flag("log_format") and index + 1 < len(flags):
            given = flags[index + 1]
        elif flag.startswith(_flag("log_format") + "="):
            given = flag.partition("=")[2]
    return "json" if given is not None and given.lower() == "json" else "text"


def parser() -> argparse.ArgumentParser:
    """The command line of ``scorpion-server``."""
    cli = _Parser(
        prog="scorpion-server",
        description="The Scorpion solitaire game server.",
        epilog="Exit status: 0 stopped (SIGTERM, SIGINT, SIGHUP) or migrated; 1 the "
        "database or the port cannot be used; 2 a bad setting, or a database of the wrong "
        "schema or of another program; 130 Ctrl-C during --migrate(-to), 143 SIGTERM, 129 "
        "SIGHUP; 141 --help or --version to a pipe whose reader left (docs/server.md).",
        allow_abbrev=False,  # only the flags as documented: --log-form is no --log-format
    )
    cli.add_argument(
        "--version",
        action="version",
        version=f"scorpion-server {version()} (schema {schema_revision()})",
    )
    for each in fields(Settings):
        flag = _flag(each.name)
        env = _env_name(each.name)
        if each.type in (bool, "bool"):
            cli.add_argument(
                flag, action="store_true", default=None, help=f"{_HELP[each.name]} (env {env}=1)"
            )
            continue
        kind = _int_flag if each.type in (int, "int") else str
        cli.add_argument(flag, type=kind, default=None, help=f"{_HELP[each.name]} (env {env})")
    return cli


OTHER_VARIABLES: Final = frozenset({"SCORPION_SERVER", "SCORPION_DEBUG", "SCORPION_PURE_PYTHON"})
"""``SCORPION_*`` variables that other programs of the project read: the terminal
client's server and tracebacks, the solver's pure-Python search."""

OTHER_PREFIXES: Final = (
    "SCORPION_TEST_",
    "SCORPION_BENCH_",
    "SCORPION_REQUIRE_",
    "SCORPION_FUZZ_",
    "SCORPION_UPDATE_",
    "SCORPION_CHROMIUM",
    "SCORPION_PYTHON",
)
"""Prefixes of the variables the tests and the benchmarks read."""


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """A warning for each ``SCORPION_*`` variable in ``environ`` that no setting and no
    other program of the project reads (a typo would otherwise go unnoticed), naming the
    setting's variable it is close to."""
    words = [each.name.upper() for each in fields(Settings)]
    known = [f"SCORPION_{word}" for word in words]
    lines = []
    for name in sorted(environ):
        if (
            not name.startswith("SCORPION_")
            or name in known
            or name in OTHER_VARIABLES
            or name.startswith(OTHER_PREFIXES)
        ):
            continue
        line = f"{name} is not a setting of the server: ignored"
        if near := difflib.get_close_matches(name.removeprefix("SCORPION_"), words, n=1):
            line += f" (did you mean SCORPION_{near[0]}?)"
        lines.append(line)
    return lines


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from ``argv`` (flags) and ``environ`` (``SCORPION_*``), then defaults.

    Raises ``SettingsError``: every bad value at once, or the one line argparse has
    on a malformed command line. ``--help`` and ``--version`` exit (code 0).
    """
    environ = {} if environ is None else environ
    flags = vars(parser().parse_args(argv))
    values: dict[str, Any] = {}
    bad: list[str] = []
    for each in fields(Settings):
        if flags.get(each.name) is not None:
            values[each.name] = flags[each.name]
        elif each.name == "migrate_to" and not environ.get(_env_name(each.name)):
            continue  # an empty variable is unset: --migrate-to "" is refused (problems)
        elif _env_name(each.name) in environ:
            try:
                values[each.name] = _convert(each.type, environ[_env_name(each.name)], each.name)
            except SettingsError as exc:
                bad += exc.lines
    if bad:
        raise SettingsError(bad)
    for name in _PATHS:  # "~/data" from an environment file no shell expanded
        if isinstance(values.get(name), str) and values[name].startswith("~"):
            try:
                values[name] = str(Path(values[name]).expanduser())
            except RuntimeError:  # ~someone, and no such user (or no home at all)
                bad.append(f"{_label(name)}: no home directory for {values[name]!r}")
    if bad:
        raise SettingsError(bad)
    for name in ("log_format", "event_loop"):  # words, read as --log-level is: any case
        if isinstance(values.get(name), str):
            values[name] = values[name].lower()
    settings = Settings(**values)
    if found := problems(settings):
        raise SettingsError(found)
    return settings
