"""``scorpion-engine``: deals, replay verification and the engine benchmark.

    scorpion-engine deal --level L --number N [--json] [--reveal]
    scorpion-engine verify FILE
    scorpion-engine solve --level L (--number N | --replay FILE) [--budget-ms B] [--json]
    scorpion-engine solve-bench --level L --deals A..B [--budget-ms B] [--json]
    scorpion-engine easy-deals --count N [--seed S] [--budget-ms B]
    scorpion-engine bench [--seconds S] [--json]
    scorpion-engine --version      (and which search the solver runs)

``verify`` follows replay.md: it prints one JSON object and exits 0 (valid),
1 (an action the rules reject) or 2 (not a replay, or a file it cannot read; one line
on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from engine.cards import card_str
from engine.deal import DealNumberError, deal_layout
from engine.errors import ReplayFormatError
from engine.game import Game
from engine.levels import LEVEL_NAMES, get_level
from engine.replay import ReplayActionError, parse_replay, rebuild, verify
from engine.solver import native, solve
from engine.solver.bench import format_solve_bench, solve_bench
from engine.solver.easy import generate
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


def _cmd_verify(args: argparse.Namespace) -> int:
    try:
        with open(args.file, encoding="utf-8") as handle:
            doc = json.load(handle)
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


def _load_replay(path: str) -> Game:
    with open(path, encoding="utf-8") as handle:
        return rebuild(parse_replay(json.load(handle)))


def _cmd_solve(args: argparse.Namespace) -> int:
    rules = get_level(args.level)
    try:
        if args.replay:
            game = _load_replay(args.replay)
            rules = game.rules
        else:
            game = Game(rules, args.number)
    except (OSError, ValueError, RecursionError, ReplayFormatError, ReplayActionError) as exc:
        print(f"scorpion-engine: {exc}", file=sys.stderr)
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
        return range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A..B, got {text!r}") from None


def _cmd_solve_bench(args: argparse.Namespace) -> int:
    report = solve_bench(get_level(args.level), args.deals, args.budget_ms)
    print(json.dumps(report) if args.json else format_solve_bench(report))
    return 0


def _cmd_easy_deals(args: argparse.Namespace) -> int:
    for number in generate(args.count, args.seed, args.budget_ms):
        print(number, flush=True)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from engine.benchmark import format_report, run_benchmark

    report = run_benchmark(seconds=args.seconds, seed=args.seed)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scorpion-engine", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--version",
        action="version",
        version=f"scorpion-engine {version()} ({native.describe()})",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    deal = commands.add_parser("deal", help="print a deal's starting layout")
    deal.add_argument("--level", choices=LEVEL_NAMES, default="classic")
    deal.add_argument("--number", type=int, required=True)
    deal.add_argument("--json", action="store_true", help="one JSON object (replay.md)")
    deal.add_argument("--reveal", action="store_true", help="show face-down cards")
    deal.set_defaults(run=_cmd_deal)

    check = commands.add_parser("verify", help="re-play a replay file and print its result")
    check.add_argument("file")
    check.set_defaults(run=_cmd_verify)

    solver = commands.add_parser("solve", help="decide a deal or a replay's position")
    solver.add_argument("--level", choices=LEVEL_NAMES, default="hard")
    source = solver.add_mutually_exclusive_group(required=True)
    source.add_argument("--number", type=int)
    source.add_argument("--replay", help="solve from the position this replay reaches")
    solver.add_argument("--budget-ms", type=float, default=2000)
    solver.add_argument("--json", action="store_true")
    solver.set_defaults(run=_cmd_solve)

    sbench = commands.add_parser("solve-bench", help="solve a range of deals, report figures")
    sbench.add_argument("--level", choices=LEVEL_NAMES, default="hard")
    sbench.add_argument("--deals", type=_deal_range, default=range(1, 101), help="A..B")
    sbench.add_argument("--budget-ms", type=float, default=2000)
    sbench.add_argument("--json", action="store_true")
    sbench.set_defaults(run=_cmd_solve_bench)

    easy = commands.add_parser("easy-deals", help="print deal numbers won under easy rules")
    easy.add_argument("--count", type=int, default=10)
    easy.add_argument("--seed", type=int, default=1)
    easy.add_argument("--budget-ms", type=float, default=1000)
    easy.set_defaults(run=_cmd_easy_deals)

    bench = commands.add_parser("bench", help="measure the engine's speed")
    bench.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `scorpion-engine solve ... | head`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
