"""The command line: ``scorpion [play|register|stats|games|replay] [options]``.

The language (``--lang``, else the locale's) is read before parsing, so the
help and every complaint about an argument are in it: the checks are ours
(``one_of``, ``deal_number``...), and argparse's few own messages are
reworded (``_reworded``); the headings are ours too.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

from websockets.exceptions import InvalidURI
from websockets.uri import parse_uri

from clients.cli.commands import number
from clients.cli.config import DEFAULT_SERVER
from clients.cli.i18n import _, use
from clients.cli.levels import info
from clients.cli.terminal import OutputError, shown_url
from clients.cli.version import VERSION
from protocol import LEVELS, LOCALES
from protocol.constants import MAX_DEAL

__all__ = [
    "Options",
    "UsageError",
    "build_parser",
    "detect_locale",
    "parse_args",
    "server_url",
]


class UsageError(Exception):
    """A bad command line; the message is one line naming the argument. ``missing``
    when it says a required argument is missing (argparse says so before it says
    that an option is unknown: ``register -x``)."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


# argparse's own complaints (Python 3.11+), reworded in the player's language.
_ARGPARSE = (
    (
        re.compile(r"^invalid choice: (?P<value>.+?) \(choose from (?P<choices>.*)\)$"),
        "args.one_of",
    ),
    (re.compile(r"^unrecognized arguments: (?P<args>.*)$"), "args.unrecognized"),
    (re.compile(r"^the following arguments are required: (?P<names>.*)$"), "args.required"),
    (re.compile(r"^expected one argument$"), "args.expected_one"),
)
_ARGUMENT = re.compile(r"^argument (?P<name>[^:]+): (?P<message>.*)$")
_REQUIRED = "the following arguments are required"


def _reworded(message: str) -> str:
    found = _ARGUMENT.match(message)
    if found is not None:
        return _("args.argument", name=found["name"], message=_reworded(found["message"]))
    for pattern, key in _ARGPARSE:
        matched = pattern.match(message)
        if matched is not None:
            return _(key, **matched.groupdict())
    return message


class _Formatter(argparse.HelpFormatter):
    """Help with its ``usage:`` heading in the player's language."""

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[argparse._MutuallyExclusiveGroup],
        prefix: str | None = None,
    ) -> None:
        # argparse passes prefix "" to spell a subcommand's prog ("scorpion play"): kept empty
        heading = _("args.usage") + " " if prefix is None else prefix
        super().add_usage(usage, actions, groups, heading)


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (in the player's language) instead of exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "add_help": False, "formatter_class": _Formatter})
        self._positionals.title = _("args.positionals")
        self._optionals.title = _("args.options")
        self.add_argument("-h", "--help", action="help", help=_("args.help_help"))

    def error(self, message: str) -> NoReturn:
        raise UsageError(_reworded(message), message.startswith(_REQUIRED))

    def _print_message(self, message: str, file: Any = None) -> None:
        """``--help`` and ``--version``: on standard output, and a failure to write is said.

        argparse itself writes to standard error when standard output is
        closed and ignores a write that fails (``>/dev/full``): both would
        exit 0 with nothing shown. ``OutputError`` (or ``BrokenPipeError``)
        reaches ``__main__`` instead, which says so as for any other output.
        """
        if not message:
            return
        out = sys.stdout if file is None or file is sys.stdout else file
        if out is None:
            raise OutputError(OutputError.CLOSED)
        try:
            out.write(message)
            out.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from exc


def _number(text: str) -> int | None:
    return number(text.strip(), MAX_DEAL)


def deal_number(text: str) -> int:
    """A deal number as the wire allows it: 1..2^53-1 (``MAX_DEAL``)."""
    number = _number(text)
    if number is None:
        raise argparse.ArgumentTypeError(_("command.bad_deal", deal=repr(text), limit=MAX_DEAL))
    return number


def game_number(text: str) -> int:
    number = _number(text)
    if number is None:
        raise argparse.ArgumentTypeError(_("args.bad_game", value=repr(text)))
    return number


def speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value == 0 or LEAST_SPEED <= value <= MAX_SPEED):
        raise argparse.ArgumentTypeError(
            _("args.bad_speed", value=repr(text), least=LEAST_SPEED, limit=MAX_SPEED)
        )
    return value


def file_name(text: str) -> str:
    """A file to write (``-``: standard output); not the empty string, which names nothing."""
    if not text:
        raise argparse.ArgumentTypeError(_("args.bad_file", value=repr(text)))
    return text


def server_url(text: str) -> str:
    """A ``ws://`` or ``wss://`` URL naming a host, with a port in range if it has one."""
    if _undecoded(text):
        raise argparse.ArgumentTypeError(
            _("args.bad_server", value=_shown(text), reason=_("args.url_bytes"))
        )
    if any(char.isspace() or not char.isprintable() for char in text):
        # urllib keeps them (and websockets sends them): the server answers 400
        raise argparse.ArgumentTypeError(
            _("args.bad_server", value=_shown(text), reason=_("args.url_space"))
        )
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        # urllib's English ("Port could not be cast to integer value as '-1'"): ours
        if "Port" in str(exc):
            reason = _("args.url_port")
        elif "Invalid IPv6 URL" in str(exc):
            reason = _("args.url_ipv6")
        elif "IPv6" in str(exc):  # "'zz' does not appear to be an IPv4 or IPv6 address"
            reason = _("args.url_not_ipv6")
        else:
            reason = str(exc)
    else:
        if parts.scheme.lower() not in ("ws", "wss"):
            reason = _("args.url_scheme")
        elif not parts.hostname:
            reason = _("args.url_host")
        elif parts.port == 0:
            reason = _("args.url_port_zero")
        else:
            problem = _websocket_uri_problem(text, parts.hostname)
            if problem is None:
                return text
            reason = problem
    raise argparse.ArgumentTypeError(_("args.bad_server", value=_shown(text), reason=reason))


def _undecoded(text: str) -> bool:
    """Whether ``text`` holds bytes that were not UTF-8 (``os.fsdecode``'s surrogates)."""
    return any("\udc80" <= char <= "\udcff" for char in text)


def _shown(text: str) -> str:
    """``text`` quoted, with the bytes of an argument that is not UTF-8 (which Python
    keeps as surrogates) as the bytes they were: ``'ws://\\xff/'``."""
    text = shown_url(text, refused=True)  # a password in it as ***
    if _undecoded(text):
        return repr(os.fsencode(text).decode("utf-8", "backslashreplace")).replace("\\\\", "\\")
    return repr(text)


def _websocket_uri_problem(text: str, host: str) -> str | None:
    """Why websockets would refuse ``text``, or its host cannot be looked up; None if neither.

    Said in the player's language: the library's and the codec's reasons are English.
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            encoded = host.encode("idna")  # a label empty (a..b) or over 63 characters
        except UnicodeError:
            return _("args.url_label")
        if not all(encoded.removesuffix(b".").split(b".")):  # "⒈.com" encodes as "1..com"
            return _("args.url_label")
    try:
        parse_uri(text)  # it encodes a host that is not ASCII itself: after the check above
    except InvalidURI as exc:
        if "fragment" in str(exc):
            return _("args.url_fragment")
        if "password" in str(exc):
            return _("args.url_user")
        return str(exc).split(": ", 1)[-1]  # "ws://x isn't a valid URI: ..."
    return None


def one_of(choices: Sequence[str]) -> Callable[[str], str]:
    """An argument type accepting only ``choices`` (argparse's own message is English)."""

    def check(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(
                _("args.one_of", value=repr(text), choices=", ".join(choices))
            )
        return text

    return check


def game_status(text: str) -> str:
    """A game status for ``games --status``: the protocol's word (``active``, ``won``,
    ``lost``) or the one the games table shows in the player's language (``playing``)."""
    statuses = ("active", "won", "lost")
    shown = {_fold(_(f"status.{status}")): status for status in statuses}
    shown |= {status: status for status in statuses}
    found = shown.get(_fold(text))
    if found is None:
        choices = ", ".join(dict.fromkeys([*statuses, *(_(f"status.{each}") for each in statuses)]))
        raise argparse.ArgumentTypeError(_("args.one_of", value=repr(text), choices=choices))
    return found


def _fold(word: str) -> str:
    """A word as typed in any case, Russian ё as е (it is often written so)."""
    return word.casefold().replace("ё", "е")


MAX_SPEED = 1000
LEAST_SPEED = 0.01  # a step every 100 s; slower (1e-300) waited without end


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
    winnable: bool = False
    new: bool = False
    name: str | None = None
    status: str | None = None
    game: int | None = None
    speed: float = 1.0
    export: str | None = None
    everywhere: bool = False


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
    parser.add_argument(
        "--server",
        type=server_url,
        default=default,
        metavar=_("args.metavar_server"),
        help=_("args.help_server"),
    )
    parser.add_argument(
        "--lang",
        type=one_of(LOCALES),
        metavar="|".join(LOCALES),
        default=default,
        help=_("args.help_lang"),
    )
    parser.add_argument(
        "--no-color",
        dest="no_color",
        action="store_true",
        default=default or False,
        help=_("args.help_no_color"),
    )
    parser.add_argument(
        "--json", action="store_true", default=default or False, help=_("args.help_json")
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser, its help in the current language (``i18n.use``)."""
    parser = _Parser(
        prog="scorpion", description=_("args.description"), epilog=_("args.exit_status")
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"scorpion-cli {VERSION}",
        help=_("args.help_version"),
    )
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar=_("args.command"))
    levels = {"type": one_of(LEVELS), "metavar": _("args.metavar_level"), "help": ", ".join(LEVELS)}
    play = sub.add_parser("play", help=_("args.help_play"))
    _common(play, top=False)
    play.add_argument("--level", **levels)  # type: ignore[arg-type]
    play.add_argument(
        "--deal", type=deal_number, metavar=_("args.metavar_deal"), help=_("args.help_deal")
    )
    play.add_argument("--winnable", action="store_true", help=_("args.help_winnable"))
    play.add_argument("--new", action="store_true", help=_("args.help_new"))
    register = sub.add_parser("register", help=_("args.help_register"))
    _common(register, top=False)
    register.add_argument("name", metavar=_("args.metavar_name"), help=_("args.help_name"))
    stats = sub.add_parser("stats", help=_("args.help_stats"))
    _common(stats, top=False)
    stats.add_argument("--level", **levels)  # type: ignore[arg-type]
    games = sub.add_parser("games", help=_("args.help_games"))
    _common(games, top=False)
    statuses = ("active", "won", "lost")
    # the words the games table shows for them, which are taken too (``game_status``)
    shown = ", ".join(
        word
        for word in dict.fromkeys(_(f"status.{each}") for each in statuses)
        if word not in statuses
    )
    games.add_argument(
        "--status",
        type=game_status,
        metavar="|".join(statuses),
        help=_("args.help_status", shown=shown),
    )
    replay = sub.add_parser("replay", help=_("args.help_replay"))
    _common(replay, top=False)
    replay.add_argument(
        "game", type=game_number, metavar=_("args.metavar_game"), help=_("args.help_game")
    )
    replay.add_argument(
        "--speed",
        type=speed,
        default=1.0,
        metavar=_("args.metavar_speed"),
        help=_("args.help_speed"),
    )
    replay.add_argument(
        "--export", type=file_name, metavar=_("args.metavar_file"), help=_("args.help_export")
    )
    new_token = sub.add_parser("new-token", help=_("args.help_new_token"))
    _common(new_token, top=False)
    sign_out = sub.add_parser("sign-out", help=_("args.help_sign_out"))
    _common(sign_out, top=False)
    sign_out.add_argument("--everywhere", action="store_true", help=_("args.help_everywhere"))
    return parser


def _unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The words of ``argv`` (before a ``--``) that look like options and are none of the
    command's (nor a prefix of one, as argparse takes them)."""
    known = set(parser._option_string_actions)
    for word in argv:
        command = _subcommands(parser).get(word)
        if command is not None:
            known |= set(command._option_string_actions)
            break
    words = argv[: argv.index("--")] if "--" in argv else argv
    return [
        word
        for word in words
        if word.startswith("-")
        and word != "-"
        and not any(option.startswith(word.partition("=")[0]) for option in known)
    ]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _dashes(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with its ``--`` where argparse (3.11) takes it: after the command.

    ``--`` ends the options, and what follows is positional, the command
    first when it has not come yet: ``scorpion -- stats`` is ``scorpion stats``,
    ``scorpion -- register -x`` is ``scorpion register -- -x``. argparse took a
    ``--`` before the command for the command itself, and one with nothing
    after it (``scorpion stats --``) for an unknown argument: that one is
    dropped. What is no command (``scorpion -- -x``) is left to argparse to refuse.
    """
    if "--" not in argv:
        return argv
    at = argv.index("--")
    before, after = argv[:at], argv[at + 1 :]
    valued = [
        option for option, action in parser._option_string_actions.items() if action.nargs != 0
    ]
    commands = _subcommands(parser)
    skip = False
    for word in before:  # is the command among the words before the `--`?
        if skip:
            skip = False
        elif not word.startswith("-") or word == "-":
            if word in commands:
                return argv if after else before
            break  # not a command: argparse says so
        elif "=" not in word:  # an option (`--la` for `--lang`) whose value is the next word
            matches = [
                option for option in parser._option_string_actions if option.startswith(word)
            ]
            skip = bool(matches) and all(option in valued for option in matches)
    else:
        if not after:
            return before
        if not after[0].startswith("-"):  # the command is the first word after it
            rest = [] if after[1:] == ["--"] else after[1:]  # `-- stats --`: naming nothing
            return [*before, after[0], *(["--", *rest] if rest else [])]
    return argv


def _lang(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """The language asked for, read before parsing so that parsing speaks it: ``--lang``
    as argparse takes it (``--la fi``, ``--lang=fi``; the last one given), not after a
    ``--``."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    asked = None
    for index, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if len(flag) < 3 or not "--lang".startswith(flag):
            continue
        if not equals:
            value = words[index + 1] if index + 1 < len(words) else ""
        if value in LOCALES:
            asked = value
    return asked or detect_locale(env)


def parse_args(argv: Sequence[str] | None, env: Mapping[str, str] | None = None) -> Options:
    env = os.environ if env is None else env
    argv = list(sys.argv[1:] if argv is None else argv)
    use(_lang(argv, env))
    parser = build_parser()
    argv = _dashes(parser, argv)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        strays = _unknown_options(parser, argv) if exc.missing else []
        if not strays:
            raise
        # `register -x`: the option is what is wrong, not the missing name (which may
        # start with a dash, written after `--`; a game's number never does)
        unknown = _("args.unrecognized", args=" ".join(strays))
        hint = f" {_('args.after_dashes')}" if "register" in argv else ""
        raise UsageError(unknown + hint) from None
    # A terminal that says it is dumb (or says nothing) may show colour sequences as text.
    dumb = env.get("TERM", "") in ("", "dumb")
    no_color = bool(getattr(args, "no_color", False)) or bool(env.get("NO_COLOR")) or dumb
    server = getattr(args, "server", None)
    if server is None and env.get("SCORPION_SERVER"):
        try:
            server = server_url(env["SCORPION_SERVER"])
        except argparse.ArgumentTypeError as exc:
            raise UsageError(_("args.environment", name="SCORPION_SERVER", message=exc)) from exc
    if getattr(args, "winnable", False) and getattr(args, "deal", None) is not None:
        raise UsageError(_("args.winnable_deal"))
    level = info(getattr(args, "level", None) or "")
    if level is not None and level.winnable_only and getattr(args, "deal", None) is not None:
        raise UsageError(_("args.easy_deal"))  # before any connection: the server would refuse it
    return Options(
        command=args.command or "play",
        server=server or DEFAULT_SERVER,
        lang=getattr(args, "lang", None) or detect_locale(env),
        color=not no_color,
        json=bool(getattr(args, "json", False)),
        level=getattr(args, "level", None),
        deal=getattr(args, "deal", None),
        winnable=bool(getattr(args, "winnable", False)),
        new=bool(getattr(args, "new", False)),
        name=getattr(args, "name", None),
        status=getattr(args, "status", None),
        game=getattr(args, "game", None),
        speed=float(getattr(args, "speed", 1.0)),
        export=getattr(args, "export", None),
        everywhere=bool(getattr(args, "everywhere", False)),
    )
