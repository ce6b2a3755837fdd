"""``server.hint_plan``: a winning line followed, else a step forward; never a bare shuttle."""

from __future__ import annotations

from engine.cards import parse_card
from engine.events import Hinted
from engine.game import Game
from engine.levels import LEVELS
from engine.moves import Move, legal_moves
from engine.state import State, apply_move
from server.hint_plan import candidates, is_bare_shuttle, plan_hint

HARD, MEDIUM = LEVELS["hard"], LEVELS["medium"]
NOTHING: frozenset[bytes] = frozenset()


def cards(*names: str) -> list[int]:
    return [parse_card(name) for name in names]


def test_a_won_position_hints_the_lines_first_step_and_returns_the_line() -> None:
    state = Game(HARD, 5).state  # won by the solver
    answer = plan_hint(state, HARD, frozenset({state.key()}), NOTHING, 2000)
    assert answer.line and answer.line[0] == (state.key(), answer.hinted)
    keys = [key for key, _step in answer.line]
    assert len(set(keys)) == len(keys)  # the line never meets a position twice
    game = Game(HARD, 5)
    for key, step in answer.line:
        assert game.state.key() == key
        game.deal() if step.action == "deal" else game.move(step.card or 0, step.to)
    assert game.won


def test_a_lost_position_hints_none_with_its_reason() -> None:
    state = Game(HARD, 1).state  # proved lost at the deal
    answer = plan_hint(state, HARD, frozenset({state.key()}), NOTHING, 1000)
    assert answer.hinted == Hinted("none", reason="lost") and state.key() in answer.lost


def test_the_fallback_passes_over_seen_and_lost_positions() -> None:
    state = Game(MEDIUM, 3).state
    options = candidates(state, MEDIUM)
    first, second, third = (child.key() for _hint, child in options[:3])
    seen = frozenset({state.key(), first})
    answer = plan_hint(state, MEDIUM, seen, frozenset({second}), 0, search=False)
    assert answer.hinted == options[2][0] and third not in seen


def test_none_when_every_move_goes_back_or_loses() -> None:
    state = Game(MEDIUM, 3).state
    children = [child.key() for _hint, child in candidates(state, MEDIUM)]
    seen = frozenset({state.key(), children[0]})
    lost = frozenset(children[1:])
    answer = plan_hint(state, MEDIUM, seen, lost, 0, search=False)
    assert answer.hinted == Hinted("none", reason="seen")
    answer = plan_hint(
        state, MEDIUM, frozenset({state.key()}), frozenset(children), 0, search=False
    )
    assert answer.hinted == Hinted("none", reason="lost") and state.key() in answer.lost


def test_none_stuck_without_a_move_or_a_stock() -> None:
    state = State([cards("KS", "2H"), cards("KH", "2S")], [0, 0])
    assert plan_hint(state, HARD, NOTHING, NOTHING, 0).hinted == Hinted("none", reason="stuck")


def whole_column_moves(state: State) -> list[Move]:
    return [m for m in legal_moves(state, MEDIUM) if m.start == 0 and not state.cols[m.dst]]


def test_a_whole_column_into_an_empty_one_is_a_bare_shuttle_unless_the_deal_lands_differently() -> (
    None
):
    cols = [[], cards("KS"), [], [], cards("QH"), [], cards("7D")]
    before = State(cols, [0] * 7, stock=cards("2C", "3C", "4C"))
    shuttles = {(m.src, m.dst): is_bare_shuttle(before, m) for m in whole_column_moves(before)}
    assert shuttles[(1, 0)] is False  # the deal covers column 1 and 2: it lands differently
    assert shuttles[(4, 3)] is True  # columns 5 and 4 get no stock card: nothing changes
    assert shuttles[(6, 0)] is False
    after = State(cols, [0] * 7)
    assert all(is_bare_shuttle(after, m) for m in whole_column_moves(after))
    hinted = {(h.card, h.to) for h, _child in candidates(after, MEDIUM)}
    assert (parse_card("KS"), 1) not in hinted and (parse_card("QH"), 4) not in hinted


def test_candidates_lead_where_they_say() -> None:
    state = Game(MEDIUM, 3).state
    for hinted, child in candidates(state, MEDIUM):
        game = Game(MEDIUM, 3)
        game.deal() if hinted.action == "deal" else game.move(hinted.card or 0, hinted.to)
        assert game.state.key() == child.key()
    moved = state.copy()
    apply_move(moved, *legal_moves(state, MEDIUM)[0])
    assert moved.key() != state.key()
