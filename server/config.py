"""Server settings: command-line flags over ``SCORPION_*`` environment variables over defaults.

``Settings`` is a frozen value built once by ``load_settings(argv, environ)``
in the composition root (``server.app``). Every field has a flag and an
environment variable (the field name upper-cased after ``SCORPION_``, e.g.
``--port`` and ``SCORPION_PORT``); a flag wins over the variable, which wins
over the default. Nothing else in the server reads the environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

__all__ = ["Settings", "load_settings", "parser"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server can be told; see docs/server.md for the table."""

    host: str = "127.0.0.1"
    port: int = 8765
    database_url: str = ""  # empty: SQLite at <data_dir>/scorpion.db
    data_dir: str = "data"
    log_level: str = "INFO"
    workers: int = 2  # solver processes (hints, lost-position checks)
    hint_budget_ms: int = 300
    lost_budget_ms: int = 200  # 0 disables the lost_position check
    queue_size: int = 1024  # outbound frames buffered per connection
    cache_size: int = 10_000  # live games kept in memory
    commit_batch: int = 64  # most actions per transaction (group commit; 1: one each)
    easy_pool: int = 5000  # winnable easy deals to find in the background (server.easy_pool)
    migrate: bool = False  # upgrade the schema and exit

    @property
    def store_url(self) -> str:
        """The database URL, the SQLite default filled in."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{Path(self.data_dir) / 'scorpion.db'}"

    @property
    def is_sqlite(self) -> bool:
        return self.store_url.startswith("sqlite")


_HELP: dict[str, str] = {
    "host": "interface to listen on",
    "port": "TCP port (0: any free port)",
    "database_url": "SQLAlchemy URL: sqlite+aiosqlite:///path or postgresql+asyncpg://...",
    "data_dir": "directory of the default SQLite database",
    "log_level": "DEBUG, INFO, WARNING or ERROR",
    "workers": "solver worker processes",
    "hint_budget_ms": "solver time per hint",
    "lost_budget_ms": "solver time per lost-position check (0: off)",
    "queue_size": "outbound frames buffered per connection before it is dropped",
    "cache_size": "games kept in memory",
    "commit_batch": "most actions committed in one transaction (1: a transaction per action)",
    "easy_pool": "grow the easy level's winnable deals to this many in the background",
    "migrate": "upgrade the database schema to this version and exit",
}


def _env_name(name: str) -> str:
    return f"SCORPION_{name.upper()}"


def _convert(kind: Any, raw: str, name: str) -> Any:
    if kind in (bool, "bool"):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if kind in (int, "int"):
        try:
            return int(raw)
        except ValueError:
            raise SystemExit(f"{_env_name(name)} must be an integer, not {raw!r}") from None
    return raw


def parser() -> argparse.ArgumentParser:
    """The command line of ``scorpion-server``."""
    cli = argparse.ArgumentParser(
        prog="scorpion-server", description="The Scorpion solitaire game server."
    )
    for each in fields(Settings):
        flag = "--" + each.name.replace("_", "-")
        env = _env_name(each.name)
        if each.type in (bool, "bool"):
            cli.add_argument(flag, action="store_true", default=None, help=f"{_HELP[each.name]}")
            continue
        kind = int if each.type in (int, "int") else str
        cli.add_argument(flag, type=kind, default=None, help=f"{_HELP[each.name]} (env {env})")
    return cli


def load_settings(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Settings from ``argv`` (flags) and ``environ`` (``SCORPION_*``), then defaults."""
    environ = {} if environ is None else environ
    flags = vars(parser().parse_args(argv))
    values: dict[str, Any] = {}
    for each in fields(Settings):
        if flags.get(each.name) is not None:
            values[each.name] = flags[each.name]
        elif _env_name(each.name) in environ:
            values[each.name] = _convert(each.type, environ[_env_name(each.name)], each.name)
    return Settings(**values)
