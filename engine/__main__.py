"""``scorpion-engine``: deals, replay verification and the engine benchmark.

    scorpion-engine deal --level L --number N [--json] [--reveal]
    scorpion-engine verify FILE
    scorpion-engine bench [--seconds S] [--json]

``verify`` follows replay.md: it prints one JSON object and exits 0 (valid),
1 (an action the rules reject) or 2 (not a replay; one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from engine.cards import card_str
from engine.deal import DealNumberError, deal_layout
from engine.errors import ReplayFormatError
from engine.levels import LEVEL_NAMES, get_level
from engine.replay import verify
from engine.state import State
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
    except (OSError, ValueError, RecursionError, ReplayFormatError) as exc:
        # ValueError covers bad JSON and UTF-8, and integers too long for Python to read;
        # RecursionError, JSON nested too deeply. Either way: not a replay (exit 2).
        print(f"scorpion-engine: not a replay: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return code


def _cmd_bench(args: argparse.Namespace) -> int:
    from engine.benchmark import format_report, run_benchmark

    report = run_benchmark(seconds=args.seconds, seed=args.seed)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scorpion-engine", description=__doc__.split("\n")[0])
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

    bench = commands.add_parser("bench", help="measure the engine's speed")
    bench.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    bench.add_argument("--seed", type=int, default=1)
    bench.add_argument("--json", action="store_true")
    bench.set_defaults(run=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
