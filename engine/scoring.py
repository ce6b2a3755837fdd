"""The two scoring schemes (R23 points, R24 timed), as pure arithmetic.

A game keeps ``earned``: the sum of what its played actions earned, less what
undo took back. The score at play time ``t`` (milliseconds) follows from it.
"""

from __future__ import annotations

from engine.levels import Rules

__all__ = [
    "FLIP_POINTS",
    "MOVE_POINTS_TIMED",
    "PENALTY_PERIOD_MS",
    "PENALTY_POINTS",
    "SAME_SUIT_POINTS",
    "SET_POINTS",
    "SET_POINTS_TIMED",
    "WIN_BONUS_NUMERATOR",
    "earned_by",
    "score_at",
]

# R23, points
SAME_SUIT_POINTS = 5
FLIP_POINTS = 5
SET_POINTS = 100
# R24, timed
MOVE_POINTS_TIMED = 10
SET_POINTS_TIMED = 10
PENALTY_POINTS = 30
PENALTY_PERIOD_MS = 30_000
WIN_BONUS_NUMERATOR = 600_000


def earned_by(rules: Rules, same_suit: bool, flips: int, sets: int) -> int:
    """What one move or stock deal earns.

    ``same_suit``: the moved card landed on a card of its own suit (never true
    for a deal); ``flips``: cards it turned face up; ``sets``: suits it removed.
    """
    if rules.scoring == "points":
        return SAME_SUIT_POINTS * same_suit + FLIP_POINTS * flips + SET_POINTS * sets
    return MOVE_POINTS_TIMED + SET_POINTS_TIMED * sets


def score_at(rules: Rules, earned: int, t: int, won_at: int | None) -> int:
    """The score at play time ``t`` ms, for a game won at ``won_at`` (or not won)."""
    if rules.scoring == "points":
        return earned
    score = max(0, earned - PENALTY_POINTS * (t // PENALTY_PERIOD_MS))
    if won_at is not None:
        score += WIN_BONUS_NUMERATOR // max(1, won_at // 1000)
    return score
