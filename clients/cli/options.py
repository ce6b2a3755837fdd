"""The command line: ``scorpion [play|register|stats|games|replay] [options]``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from clients.cli import VERSION
from clients.cli.config import DEFAULT_SERVER
from protocol import LEVELS, LOCALES
from protocol.constants import MAX_DEAL

__all__ = ["Options", "UsageError", "build_parser", "detect_locale", "parse_args"]


class UsageError(Exception):
    """A bad command line; the message is one line naming the argument."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def deal_number(text: str) -> int:
    """A deal number as the wire allows it: 1..2^63-1."""
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_DEAL:
        raise argparse.ArgumentTypeError(f"{text!r} is not a deal number (1..{MAX_DEAL})")
    return int(text)


def game_number(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_DEAL:
        raise argparse.ArgumentTypeError(f"{text!r} is not a game number")
    return int(text)


def speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a speed (0..1000 steps a second)")
    return value


@dataclass(frozen=True)
class Options:
    """What the user asked for, with defaults and the environment applied."""

    command: str = "play"
    server: str = DEFAULT_SERVER
    lang: str = "en"
    color: bool = True
    json: bool = False
    level: str | None = None
    deal: int | None = None
    new: bool = False
    name: str | None = None
    status: str | None = None
    game: int | None = None
    speed: float = 1.0
    export: str | None = None


def detect_locale(env: Mapping[str, str]) -> str:
    """``en``, ``fi`` or ``ru`` from LC_ALL, LC_MESSAGES or LANG; else ``en``."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            code = value[:2].lower()
            return code if code in LOCALES else "en"
    return "en"


def _common(parser: argparse.ArgumentParser, top: bool) -> None:
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--server", default=default, help="ws:// or wss:// URL of the server")
    parser.add_argument("--lang", choices=LOCALES, default=default, help="language of messages")
    parser.add_argument(
        "--no-color",
        dest="no_color",
        action="store_true",
        default=default or False,
        help="no ANSI colours (also with NO_COLOR set)",
    )
    parser.add_argument(
        "--json", action="store_true", default=default or False, help="one JSON object per event"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scorpion", description="Play Scorpion solitaire.")
    parser.add_argument("--version", action="version", version=f"scorpion-cli {VERSION}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    play = sub.add_parser("play", help="continue the unfinished game or start one (default)")
    _common(play, top=False)
    play.add_argument("--level", choices=LEVELS)
    play.add_argument("--deal", type=deal_number, help="deal number (not on easy)")
    play.add_argument("--new", action="store_true", help="start a new game even if one is open")
    register = sub.add_parser("register", help="register a player and keep its token")
    _common(register, top=False)
    register.add_argument("name")
    stats = sub.add_parser("stats", help="your statistics per level")
    _common(stats, top=False)
    stats.add_argument("--level", choices=LEVELS)
    games = sub.add_parser("games", help="your games, newest first")
    _common(games, top=False)
    games.add_argument("--status", choices=("active", "won", "lost"))
    replay = sub.add_parser("replay", help="play a finished game back, or export it")
    _common(replay, top=False)
    replay.add_argument("game", type=game_number)
    replay.add_argument("--speed", type=speed, default=1.0, help="steps per second; 0: no pause")
    replay.add_argument("--export", metavar="FILE", help="write the replay document to FILE")
    return parser


def parse_args(argv: Sequence[str] | None, env: Mapping[str, str] | None = None) -> Options:
    env = os.environ if env is None else env
    args = build_parser().parse_args(argv)
    no_color = bool(getattr(args, "no_color", False)) or bool(env.get("NO_COLOR"))
    return Options(
        command=args.command or "play",
        server=getattr(args, "server", None) or env.get("SCORPION_SERVER") or DEFAULT_SERVER,
        lang=getattr(args, "lang", None) or detect_locale(env),
        color=not no_color,
        json=bool(getattr(args, "json", False)),
        level=getattr(args, "level", None),
        deal=getattr(args, "deal", None),
        new=bool(getattr(args, "new", False)),
        name=getattr(args, "name", None),
        status=getattr(args, "status", None),
        game=getattr(args, "game", None),
        speed=float(getattr(args, "speed", 1.0)),
        export=getattr(args, "export", None),
    )
