"""Deals for the easy level: only deal numbers the solver has won under easy rules.

Seed 004's easy level offers only deals "that the computer player has already
solved". Starting a game must never wait for a search, so the deals come from a
list verified ahead of time:

- ``easy_deals.txt`` (beside this module) ships deal numbers that
  ``scorpion-engine easy-deals`` found winnable under the easy rules; a test
  re-verifies a sample of them;
- ``WinnableDeals`` draws from that list at random and can grow it:
  ``find_winnable`` tries fresh random numbers with a time budget and returns
  one the solver has won, for a server to call off its event loop and
  ``add`` to the pool.

Deal numbers are drawn from ``1 .. DRAW_LIMIT``: beyond PySolFC's 32,000
classic deals, and small enough for any client's 64-bit integers.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Iterator
from importlib import resources

from engine.deal import deal_layout
from engine.levels import LEVELS, Rules
from engine.solver.search import solve
from engine.state import State

__all__ = [
    "DRAW_LIMIT",
    "BudgetTooSmall",
    "WinnableDeals",
    "find_winnable",
    "generate",
    "shipped_easy_deals",
    "verify_deal",
]

DRAW_LIMIT = 2**53
FIND_BUDGET_MS = 1000


def shipped_easy_deals() -> list[int]:
    """The deal numbers shipped in ``easy_deals.txt`` (one per line, # comments)."""
    text = resources.files("engine.solver").joinpath("easy_deals.txt").read_text("utf-8")
    return [int(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def verify_deal(number: int, rules: Rules | None = None, budget_ms: float = FIND_BUDGET_MS) -> bool:
    """Whether the solver wins deal ``number`` under ``rules`` (easy) within the budget."""
    rules = rules or LEVELS["easy"]
    state = State.from_deal(deal_layout(rules.layout, number))
    return solve(state, rules, budget_ms=budget_ms).result == "won"


def find_winnable(
    rng: random.Random, budget_ms: float = FIND_BUDGET_MS, attempts: int = 20
) -> int | None:
    """A random deal number the solver wins under easy rules, or None after ``attempts``."""
    for _ in range(attempts):
        number = rng.randrange(1, DRAW_LIMIT)
        if verify_deal(number, budget_ms=budget_ms):
            return number
    return None


GIVE_UP_AFTER = 100
"""Deals in a row ``generate`` tries in vain before it gives up: with a budget that
decides a deal, some 86% of easy deals are won (docs/benchmarks.md), so a hundred
misses in a row mean a budget too small to decide any."""


class BudgetTooSmall(ValueError):
    """``generate`` won none of ``GIVE_UP_AFTER`` deals in a row within its budget."""


def generate(count: int, seed: int, budget_ms: float = FIND_BUDGET_MS) -> Iterator[int]:
    """``count`` winnable easy deal numbers, reproducibly from ``seed``; raises
    ``BudgetTooSmall`` after ``GIVE_UP_AFTER`` deals in a row not won (it searched
    for ever, printing nothing, given a budget that decides no deal)."""
    rng = random.Random(seed)
    found = missed = 0
    while found < count:
        number = find_winnable(rng, budget_ms, attempts=1)
        if number is None:
            missed += 1
            if missed >= GIVE_UP_AFTER:
                raise BudgetTooSmall(
                    f"none of {missed} deals in a row was won within {budget_ms:g} ms each: "
                    "give the search a larger --budget-ms"
                )
            continue
        missed = 0
        found += 1
        yield number


class WinnableDeals:
    """A pool of winnable easy deals to draw from."""

    def __init__(self, numbers: Iterable[int] | None = None) -> None:
        self._numbers = list(shipped_easy_deals() if numbers is None else numbers)
        self._known = set(self._numbers)
        if not self._numbers:
            raise ValueError("a pool of winnable deals needs at least one deal")

    def __len__(self) -> int:
        return len(self._numbers)

    def __contains__(self, number: object) -> bool:
        return number in self._known

    def draw(self, rng: random.Random, avoid: Collection[int] = ()) -> int:
        """A deal at random, not one of ``avoid`` (say, the player's past deals) if any is left."""
        for _ in range(8):  # cheap while ``avoid`` is a small part of the pool
            number = rng.choice(self._numbers)
            if number not in avoid:
                return number
        fresh = [number for number in self._numbers if number not in avoid]
        return rng.choice(fresh or self._numbers)

    def add(self, number: int) -> None:
        """Add a deal the solver has won (see ``find_winnable``)."""
        if number not in self._known:
            self._known.add(number)
            self._numbers.append(number)

    def discard(self, number: int) -> None:
        """Take ``number`` out of the pool, if it is there (a server deals each once)."""
        if number in self._known:
            self._known.discard(number)
            self._numbers.remove(number)
