"""The newer pruning rules of ``engine.solver.prune`` on hand-picked and random positions.

``test_soundness`` checks every rule against an unpruned search; these tests pin
what each rule decides and that the shortcuts the search takes (one derivation
for all moves into the last empty column) agree with the plain check.
"""

from __future__ import annotations

import random

from engine.cards import parse_card
from engine.levels import LEVELS
from engine.solver import solve
from engine.solver.prune import (
    fillings_that_never_empty,
    is_blocked,
    is_deadlocked,
    kings_that_block,
    never_empties,
)
from engine.solver.search import DEAL_MOVE, candidate_moves
from engine.state import State, apply_deal, apply_move, undo
from tests.engine.solver.test_soundness import small_position

HARD = LEVELS["hard"]
MEDIUM = LEVELS["medium"]


def position(columns: str, down: list[int], found: list[int]) -> State:
    """Columns bottom to top, separated by ``|``."""
    cols = [[parse_card(card) for card in col.split()] for col in columns.split("|")]
    return State(cols, down, found=found)


def test_unreachable_removal_decides_what_the_circular_wait_misses() -> None:
    # Found by comparing with an unpruned search (lost after 99 positions).
    state = position(
        "TH 7D QH AD 6H|KD 4D KH 2D 8D|5D 7H 8H 4H|2H 5H 9D|6D 3H JD|3D QD 9H|AH TD JH",
        [3, 3, 0, 0, 2, 1, 1],
        [0, 3],
    )
    assert is_blocked(state) and not is_deadlocked(state)
    assert solve(state, HARD, budget_ms=None, max_nodes=30_000, prune=False).result == "lost"
    assert (solve(state, HARD).result, solve(state, HARD).nodes) == ("lost", 0)


def test_a_column_that_can_never_empty_loses_with_any_card_to_empty_columns() -> None:
    state = position(
        "7H 3H 5S 6S 5H|6H 2S AH 9S JH|9H 7S TS KH|KS 3S QS|4S 8S QH|JS 8H TH|2H AS 4H",
        [2, 3, 2, 2, 2, 1, 1],
        [2, 3],
    )
    assert never_empties(state)
    assert solve(state, MEDIUM, budget_ms=None, max_nodes=30_000, prune=False).result == "lost"
    assert solve(state, MEDIUM).nodes == 0


def _into_last_empty_column(state: State, kings_only: bool) -> list[tuple[int, int, int]]:
    if state.cols.count([]) != 1:
        return []
    return [
        (column, index, col[index])
        for column, col in enumerate(state.cols)
        for index in range(max(state.down[column], 1), len(col))
        if not kings_only or col[index] % 13 == 12
    ]


def test_one_derivation_answers_for_every_move_into_the_last_empty_column() -> None:
    rng = random.Random("last-empty-column")
    checked = {HARD.name: 0, MEDIUM.name: 0}
    for rules in (HARD, MEDIUM):
        for _ in range(1500):
            state = small_position(rng, rules)
            apply_deal(state)
            if rules.kings_only and is_blocked(state):
                continue
            moves = _into_last_empty_column(state, rules.kings_only)
            if not moves:
                continue
            cards = [card for _column, _index, card in moves]
            if rules.kings_only:
                predicted = kings_that_block(state, cards)
            else:
                predicted = fillings_that_never_empty(state, cards)
            empty = state.cols.index([])
            for column, index, card in moves:
                record = apply_move(state, column, index, empty)
                real = is_blocked(state) if rules.kings_only else never_empties(state)
                undo(state, record)
                assert real == (card in predicted), (rules.name, state, card)
                checked[rules.name] += 1
    assert all(count > 100 for count in checked.values()), checked


def test_a_whole_column_moves_before_the_deal_only_where_the_stock_lands() -> None:
    state = position("|9S|8S|KH QH|KS|QS|JS", [0] * 7, [2, 3])
    state.stock = [parse_card("2S"), parse_card("3S"), parse_card("4S")]
    moves = candidate_moves(state, HARD)
    assert (3, 0, 0) in moves and (4, 0, 0) in moves  # lands the stock card elsewhere
    assert DEAL_MOVE in moves
    state.stock = []  # with no stock to land, moving a whole column changes nothing
    assert not any(index == 0 for _src, index, dst in candidate_moves(state, HARD) if dst == 0)
