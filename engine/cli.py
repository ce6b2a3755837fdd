"""``scorpion-engine``: deals, replay verification and the engine benchmark.

    scorpion-engine deal --level L --number N [--json] [--reveal]
    scorpion-engine verify FILE
    scorpion-engine solve --level L (--number N | --replay FILE) [--budget-ms B] [--json]
    scorpion-engine solve-bench --level L --deals A..B [--budget-ms B] [--json]
    scorpion-engine easy-deals --count N [--seed S] [--budget-ms B]
    scorpion-engine bench [--seconds S] [--json]
    scorpion-engine --version      (and which search the solver runs)

``verify`` follows the replay format (PROTOCOL.md section 14): it prints one JSON
object and exits 0 (valid), 1 (an action the rules reject) or 2 (not a replay, or a
file it cannot read; one line on stderr).

Every command exits 0 when it did its work and 2, with one line on stderr
(``scorpion-engine: ...``), for a bad flag or value (a budget or a time that is not
a positive number, a deal number or range outside 1..MAX_DEAL), a file it cannot
use or an output it cannot write (a full disk); ``verify`` also exits 1 as above,
every command 141 when the reader of its output left, and 130 on Ctrl-C (nothing
printed). Standard output closed (``>&-``) is an output it cannot write.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, Any, Final, NoReturn

from engine.cards import card_str
from engine.deal import MAX_DEAL, DealNumberError, deal_layout
from engine.errors import ReplayFormatError
from engine.game import Game
from engine.levels import LEVEL_NAMES, get_level
from engine.replay import ReplayActionError, parse_replay, rebuild, verify
from engine.solver import native, solve
from engine.solver.bench import format_solve_bench, solve_bench
from engine.solver.easy import BudgetTooSmall, generate
from engine.state import State
from engine.version import version
from engine.view import full_layout

__all__ = ["main", "render_board"]


def render_board(state: State, reveal: bool = False) -> str:
    """A plain-text board like rules.md's example: ``?`` for a face-down card.

    With ``reveal``, face-down cards are shown in parentheses instead.
    """

    def hidden(card: int) -> str:
        return f"({card_str(card)})" if reveal else "?"

    lines = []
    if state.stock or not state.reserve:
        lines.append("stock: " + " ".join(hidden(card) for card in state.stock))
    if state.reserve:
        lines.append("reserve: " + " ".join(card_str(card) for card in state.reserve))
    for number, (col, down) in enumerate(zip(state.cols, state.down, strict=True), start=1):
        cards = [hidden(card) for card in col[:down]] + [card_str(card) for card in col[down:]]
        lines.append(f"{number}: " + " ".join(cards))
    return "\n".join(lines)


def _cmd_deal(args: argparse.Namespace) -> int:
    rules = get_level(args.level)
    try:
        deal = deal_layout(rules.layout, args.number)
    except DealNumberError as exc:
        print(f"scorpion-engine: {exc}", file=sys.stderr)
        return 2
    state = State.from_deal(deal)
    if args.json:
        out = {"level": rules.name, "deal": args.number, **full_layout(state)}
        print(json.dumps(out))
    else:
        print(f"{rules.name}, deal {args.number}")
        print(render_board(state, reveal=args.reveal))
    return 0


MAX_REPLAY_ACTIONS: Final = 100_000
"""The most actions a replay file read may hold: ten times the versions a game
reaches on a server by default (``max_versions``), each re-played in well under
a millisecond."""

MAX_REPLAY_BYTES: Final = 32 * 1024 * 1024
"""The largest replay file read: 100,000 actions with their hints' suggestions
fit, and ``verify /dev/zero`` must end rather than fill the memory."""

MAX_REPLAY_VALUES: Final = 20 * MAX_REPLAY_ACTIONS
"""The most JSON values a replay file read may hold, counted before it is read as
its commas and opening brackets (a value follows a comma, but the first in each
list or object, which follows its bracket): an action has 3 to 11 with a hint's
suggestion, and room is left for fields later versions add. 32 MiB of ``[],``
would be 11 million lists (870 MB), and of ``[[[...]]]`` nested 400 deep 1.7 GB,
with seconds of reading in C, where Ctrl-C waits."""


class _TooLarge(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' object hook: a key given twice is refused (readers that take the
    first and those that take the last would judge two games)."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} is given twice in one object")
            seen.add(key)
    return obj


def _read_replay(path: str) -> Any:
    """The JSON document in ``path``: OSError if unreadable, ValueError if not JSON
    (or beyond the caps above). A byte order mark before it is skipped, as RFC 8259
    lets a reader do (editors on Windows write one)."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_REPLAY_BYTES + 1)
    if len(data) > MAX_REPLAY_BYTES:
        raise _TooLarge(f"larger than {MAX_REPLAY_BYTES:,} bytes")
    if data.count(b",") + data.count(b"[") + data.count(b"{") > MAX_REPLAY_VALUES:
        raise _TooLarge(f"more than {MAX_REPLAY_VALUES:,} values")
    doc = json.loads(data.decode("utf-8-sig"), object_pairs_hook=_object)
    actions = doc.get("actions") if isinstance(doc, dict) else None
    if isinstance(actions, list) and len(actions) > MAX_REPLAY_ACTIONS:
        raise _TooLarge(f"more than {MAX_REPLAY_ACTIONS:,} actions")
    return doc


def _cmd_verify(args: argparse.Namespace) -> int:
    try:
        doc = _read_replay(args.file)
        code, out = verify(doc)
    except OSError as exc:  # no file to judge: say why, not that it is no replay
        print(f"scorpion-engine: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except (ValueError, RecursionError, ReplayFormatError) as exc:
        # ValueError covers bad JSON and UTF-8, and integers too long for Python to read;
        # RecursionError, JSON nested too deeply. Either way: not a replay (exit 2).
        print(f"scorpion-engine: not a replay: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return code


SOLVE_LEVEL: Final = "hard"


def _cmd_solve(args: argparse.Namespace) -> int:
    # a level beside a replay would be ignored: the replay names its level
    if args.replay is not None and args.level is not None:
        print(
            "scorpion-engine: --level does not go with --replay: the replay names its level",
            file=sys.stderr,
        )
        return 2
    rules = get_level(args.level or SOLVE_LEVEL)
    try:
        if args.replay is not None:
            game = rebuild(parse_replay(_read_replay(args.replay)))
            rules = game.rules
        else:
            game = Game(rules, args.number)
    except OSError as exc:
        print(f"scorpion-engine: cannot read {args.replay}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ReplayActionError as exc:  # the position it names is never reached
        print(f"scorpion-engine: {args.replay}: the rules refuse {exc}", file=sys.stderr)
        return 2
    except DealNumberError as exc:
        print(f"scorpion-engine: {exc}", file=sys.stderr)
        return 2
    except (ValueError, RecursionError, ReplayFormatError) as exc:
        print(f"scorpion-engine: not a replay: {exc}", file=sys.stderr)
        return 2
    verdict = solve(game.state, rules, budget_ms=args.budget_ms)
    if args.json:
        print(json.dumps(verdict.to_dict()))
        return 0
    print(f"{verdict.result}: {verdict.nodes:,} positions in {verdict.ms:,} ms")
    for action in verdict.actions:
        print(f"  {action}")
    return 0


def _deal_range(text: str) -> range:
    first, _, last = text.partition("..")
    try:
        deals = range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A..B, got {text!r}") from None
    if not deals or deals.start < 1 or deals.stop - 1 > MAX_DEAL:
        raise argparse.ArgumentTypeError(f"expected A..B with 1 <= A <= B <= {MAX_DEAL}")
    return deals


def _positive(text: str) -> float:
    """A budget or a time: a finite number above 0 (nan, inf, 0 and below are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text!r}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a malformed command line said in one line (exit status 2); the
    benchmarks' commands use it too (``bench.common``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an error writing --help or --version (a full disk: exit 0,
        # nothing written); the caller's main says it, as for any output it cannot write
        if message:
            out: IO[str] = file or sys.stderr
            out.write(message)
            out.flush()


def _cmd_solve_bench(args: argparse.Namespace) -> int:
    report = solve_bench(get_level(args.level), args.deals, args.budget_ms)
    print(json.dumps(report) if args.json else format_solve_bench(report))
    return 0


def _cmd_easy_deals(args: argparse.Namespace) -> int:
    try:
        for number in generate(args.count, args.seed, args.budget_ms):
            print(number, flush=True)
    except BudgetTooSmall as exc:
        print(f"scorpion-engine: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from engine.benchmark import format_report, run_benchmark

    report = run_benchmark(seconds=args.seconds, seed=args.seed)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="scorpion-engine",
        description=__doc__.split("\n")[0],
        epilog="Exit status: 0 done; 1 verify: an action the rules reject; 2 a bad flag, "
        "value or file, or an output it cannot write (one line on standard error); 130 "
        "Ctrl-C; 141 the reader of the output left (| head).",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"scorpion-engine {version()} ({native.describe()})",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    deal = commands.add_parser("deal", help="print a deal's starting layout")
    deal.add_argument("--level", choices=LEVEL_NAMES, default="classic")
    deal.add_argument("--number", type=int, required=True)
    deal.add_argument(
        "--json", action="store_true", help="one JSON object (PROTOCOL.md section 14)"
    )
    deal.add_argument("--reveal", action="store_true", help="show face-down cards")
    deal.set_defaults(run=_cmd_deal)

    check = commands.add_parser("verify", help="re-play a replay file and print its result")
    check.add_argument("file")
    check.set_defaults(run=_cmd_verify)

    solver = commands.add_parser("solve", help="decide a deal or a replay's position")
    solver.add_argument(
        "--level", choices=LEVEL_NAMES, help=f"with --number (default {SOLVE_LEVEL})"
    )
    source = solver.add_mutually_exclusive_group(required=True)
    source.add_argument("--number", type=int)
    source.add_argument("--replay", help="solve from the position this replay reaches")
    solver.add_argument("--budget-ms", type=_positive, default=2000)
    solver.add_argument("--json", action="store_true")
    solver.set_defaults(run=_cmd_solve)

    sbench = commands.add_parser("solve-bench", help="solve a range of deals, report figures")
    sbench.add_argument("--level", choices=LEVEL_NAMES, default="hard")
    sbench.add_argument("--deals", type=_deal_range, default=range(1, 101), help="A..B")
    sbench.add_argument("--budget-ms", type=_positive, default=2000)
    sbench.add_argument("--json", action="store_true")
    sbench.set_defaults(run=_cmd_solve_bench)

    easy = commands.add_parser("easy-deals", help="print deal numbers won under easy rules")
    easy.add_argument("--count", type=_count, default=10)
    easy.add_argument("--seed", type=int, default=1)
    easy.add_argument("--budget-ms", type=_positive, default=1000)
    easy.set_defaults(run=_cmd_easy_deals)

    bench = commands.add_parser("bench", help="measure the engine's speed")
    bench.add_argument("--seconds", type=_positive, default=2.0, help="per measurement")
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=_cmd_bench)
    return parser


def _interruptible(command: Callable[[], int]) -> int:
    """``command()`` run on a thread of its own while this one waits: Ctrl-C raises
    KeyboardInterrupt here at once. (In the compiled search the command's thread is
    in C, which Python interrupts only when the search returns: seconds, or its
    whole budget.) Its exception, if any, is raised here; the thread is left to the
    process's end."""
    outcome: list[int] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(command())
        except BaseException as exc:  # raised again on the main thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="command", daemon=True)
    worker.start()
    worker.join()  # a signal interrupts the wait
    if failure:
        raise failure[0]
    return outcome[0]


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stdout is None:  # started with it closed (`>&-`): every command writes there
        print(
            "scorpion-engine: cannot write the output: standard output is closed", file=sys.stderr
        )
        return 2
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exc:  # --help or --version printed, or a bad flag said
            return exc.code if isinstance(exc.code, int) else 2
        code = _interruptible(lambda: args.run(args))
        sys.stdout.flush()
    except KeyboardInterrupt:  # Ctrl-C in a long solve or bench: as the shell's own
        return 130
    except BrokenPipeError:  # `scorpion-engine solve ... | head`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # the output cannot be written (a full disk): say so in one line
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        print(f"scorpion-engine: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
