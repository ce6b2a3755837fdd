"""``scorpion-engine bench``: how fast the engine plays, on one core.

Two figures, each the median of several rounds:

- **unchecked apply+undo pairs per second**: the solver's fast path
  (``engine.state.apply_move`` then ``undo``), over every legal move of the
  positions met in random legal games on every level;
- **checked actions per second**: ``Game.play`` on recorded random games
  (validation, events, scoring, dead-end detection: all a server does per
  action), replayed into fresh games.

Random games are reproducible from ``seed``.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from engine.game import Game
from engine.levels import LEVELS, Rules
from engine.moves import Move, legal_moves
from engine.state import State, apply_move, undo

__all__ = ["format_report", "random_game", "run_benchmark"]

ROUNDS = 5


def random_game(rules: Rules, deal: int, rng: random.Random, max_actions: int = 300) -> Game:
    """A game played by random legal actions (some deals, undos, hints)."""
    game = Game(rules, deal)
    t = 0
    while len(game.actions) < max_actions and not game.won:
        t += rng.randrange(200, 4000)
        roll = rng.random()
        if roll < 0.08 and game.history:
            game.undo(t)
            continue
        if roll < 0.1:
            game.hint(t)
            continue
        options = legal_moves(game.state, rules, useful_only=True)
        if game.state.stock and (not options or roll < 0.15):
            game.deal(t)
        elif options:
            src, index, dst = rng.choice(options)
            card = game.state.reserve[index] if src < 0 else game.state.cols[src][index]
            game.move(card, dst + 1, t)
        else:
            break
    return game


def _positions(rng: random.Random, games: int) -> list[tuple[State, list[Move]]]:
    """Positions (with their legal moves) met in random games on every level."""
    found = []
    for number in range(games):
        rules = list(LEVELS.values())[number % len(LEVELS)]
        game = random_game(rules, rng.randrange(1, 32000), rng, max_actions=120)
        replayed = Game(rules, game.deal_number)
        for action in game.actions:
            replayed.play(action)
            moves = legal_moves(replayed.state, rules)
            if moves:
                found.append((replayed.state.copy(), moves))
    return found


def _pairs_per_second(positions: list[tuple[State, list[Move]]]) -> float:
    pairs = 0
    start = time.perf_counter()
    for state, moves in positions:
        for src, index, dst in moves:
            undo(state, apply_move(state, src, index, dst))
        pairs += len(moves)
    return pairs / (time.perf_counter() - start)


def _actions_per_second(games: list[Game]) -> float:
    count = 0
    start = time.perf_counter()
    for game in games:
        fresh = Game(game.rules, game.deal_number)
        play = fresh.play
        for action in game.actions:
            play(action)
        count += len(game.actions)
    return count / (time.perf_counter() - start)


def _timed_rounds(measure: Any, argument: Any, seconds: float) -> list[float]:
    rates = []
    for _ in range(ROUNDS):
        deadline = time.perf_counter() + seconds / ROUNDS
        samples = [measure(argument)]
        while time.perf_counter() < deadline:
            samples.append(measure(argument))
        rates.append(statistics.median(samples))
    return rates


def run_benchmark(seconds: float = 2.0, seed: int = 1) -> dict[str, Any]:
    """Measure both figures for about ``seconds`` each; returns the report."""
    rng = random.Random(seed)
    positions = _positions(rng, games=24)
    games = [
        random_game(rules, rng.randrange(1, 32000), rng)
        for rules in LEVELS.values()
        for _ in range(4)
    ]
    pairs = _timed_rounds(_pairs_per_second, positions, seconds)
    actions = _timed_rounds(_actions_per_second, games, seconds)
    return {
        "seed": seed,
        "rounds": ROUNDS,
        "positions": len(positions),
        "moves": sum(len(moves) for _state, moves in positions),
        "actions": sum(len(game.actions) for game in games),
        "unchecked_pairs_per_s": round(statistics.median(pairs)),
        "unchecked_pairs_per_s_range": [round(min(pairs)), round(max(pairs))],
        "checked_actions_per_s": round(statistics.median(actions)),
        "checked_actions_per_s_range": [round(min(actions)), round(max(actions))],
    }


def format_report(report: dict[str, Any]) -> str:
    low, high = report["unchecked_pairs_per_s_range"]
    checked_low, checked_high = report["checked_actions_per_s_range"]
    return "\n".join(
        [
            f"unchecked apply+undo: {report['unchecked_pairs_per_s']:,} pairs/s "
            f"(median of {report['rounds']} rounds, {low:,}..{high:,}; "
            f"{report['moves']:,} moves in {report['positions']:,} positions)",
            f"checked actions:      {report['checked_actions_per_s']:,} actions/s "
            f"(median of {report['rounds']} rounds, {checked_low:,}..{checked_high:,}; "
            f"{report['actions']:,} actions in recorded random games)",
        ]
    )
