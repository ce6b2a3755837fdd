"""``Game.replay``: a logged game rebuilt without events ends as ``play`` leaves it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine import errors
from engine.cards import parse_card
from engine.game import Action, Game
from engine.levels import LEVELS, Rules
from engine.moves import legal_moves


def random_play(rules: Rules, deal: int, rng: random.Random, actions: int) -> Game:
    """Random legal actions of every kind: moves (auto-moves too), deals, undos,
    restarts, hints; up to ``actions`` of them or the end of the game."""
    game, t = Game(rules, deal), 0
    while len(game.actions) < actions and not game.won:
        t += rng.randrange(0, 3000)
        roll = rng.random()
        options = legal_moves(game.state, rules)
        if roll < 0.1 and game.history:
            game.undo(t)
        elif roll < 0.13:
            game.restart(t)
        elif roll < 0.18:
            game.hint(t)
        elif game.state.stock and (not options or roll < 0.25):
            game.deal(t)
        elif options:
            src, index, dst = rng.choice(options)
            card = game.state.reserve[index] if src < 0 else game.state.cols[src][index]
            try:
                game.move(card, None if roll < 0.3 else dst + 1, t)  # None: auto-move
            except errors.RuleViolation:
                game.move(card, dst + 1, t)  # no auto-move for this card: name the column
        else:
            break
    return game


def everything(game: Game) -> dict[str, Any]:
    history = game.history.copy()
    entries = []
    while len(history):
        entries.append(history.pop())
    return {
        "state": (game.state.cols, game.state.down, game.state.stock, game.state.reserve),
        "found": game.state.found,
        "history": entries,
        "actions": list(game.actions),
        "counters": (game.moves, game.undos, game.hints, game.earned, game.time),
        "end": (game.won_at, game.stuck, game.score(), game.results()),
    }


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_replay_ends_where_play_does(level: str) -> None:
    rules, rng = LEVELS[level], random.Random(level)
    for deal in range(1, 9):
        played = random_play(rules, deal, rng, rng.choice([1, 5, 40, 300]))
        again = Game(rules, deal)
        again.replay(played.actions)
        assert everything(again) == everything(played), (level, deal)


def test_replay_of_each_prefix_is_plays_and_continues_alike() -> None:
    rules = LEVELS["three-blind-mice"]  # a reserve: moves from it too
    played = random_play(rules, 7, random.Random(7), 120)
    for cut in range(len(played.actions) + 1):
        one, other = Game(rules, 7), Game(rules, 7)
        one.replay(played.actions[:cut])
        for action in played.actions[:cut]:
            other.play(action)
        assert everything(one) == everything(other), cut
        rest = played.actions[cut : cut + 3]
        assert [one.play(action) for action in rest] == [other.play(action) for action in rest]


def test_a_won_game_replayed_is_won_and_takes_no_more() -> None:
    from tests.helpers import hint_player_win

    won = hint_player_win()
    again = Game(won.rules, won.deal_number)
    again.replay(won.actions)
    assert again.won and everything(again) == everything(won)
    with pytest.raises(errors.GameOver):
        again.replay([Action("deal", t=won.time)])


@pytest.mark.parametrize(
    ("log", "error"),
    [
        ([Action("undo", t=1)], errors.NothingToUndo),
        ([Action("move", parse_card("KH"), 2, t=1)], errors.NotFaceUp),  # face down on deal 1
        ([Action("deal", t=1), Action("deal", t=2)], errors.StockEmpty),
    ],
)
def test_a_log_that_breaks_a_rule_fails_as_play_does(
    log: list[Action], error: type[Exception]
) -> None:
    rules = LEVELS["hard"]
    with pytest.raises(error):
        Game(rules, 1).replay(log)
    played = Game(rules, 1)
    with pytest.raises(error):
        for action in log:
            played.play(action)


def test_time_may_not_go_back_nor_a_move_lack_its_card() -> None:
    rules = LEVELS["hard"]
    with pytest.raises(ValueError, match="backwards"):
        Game(rules, 1).replay([Action("deal", t=5), Action("hint", t=4)])
    with pytest.raises(ValueError, match="names a card"):
        Game(rules, 1).replay([Action("move", None, 1, t=1)])
    with pytest.raises(ValueError, match="unknown action"):
        Game(rules, 1).replay([Action("shuffle", t=1)])


def test_the_log_keeps_the_actions_given_when_they_are_what_play_logs() -> None:
    rules, rng, kinds = LEVELS["easy"], random.Random(3), set()
    for deal in range(1, 9):
        played = random_play(rules, deal, rng, 300)
        again = Game(rules, deal)
        again.replay(played.actions)
        pairs = zip(again.actions, played.actions, strict=True)
        assert all(mine is theirs for mine, theirs in pairs)
        kinds |= {action.type for action in played.actions}
    assert kinds == {"move", "deal", "undo", "restart", "hint"}


def test_actions_that_carry_more_than_their_kind_are_logged_as_play_logs_them() -> None:
    rules = LEVELS["hard"]
    start = Game(rules, 1)
    src, index, dst = legal_moves(start.state, rules)[0]
    card, hinted = start.state.cols[src][index], start.suggestion()
    log = [
        Action("move", card, dst + 1, t=3, hinted=hinted),
        Action("undo", card, 2, t=None),  # type: ignore[arg-type]  # no time: the last one
        Action("deal", to=1, t=4, hinted=hinted),
        Action("hint", card, t=5),
        Action("restart", card, 1, t=6),
        Action("hint", t=7, hinted=hinted),
    ]
    replayed, played = Game(rules, 1), Game(rules, 1)
    replayed.replay(log)
    for action in log:
        played.play(action)
    assert everything(replayed) == everything(played)
    assert [action.t for action in replayed.actions] == [3, 3, 4, 5, 6, 7]
    assert replayed.actions[0] == Action("move", card, dst + 1, t=3)
    assert replayed.actions[5] is log[5]


def test_actions_of_another_class_are_logged_as_plain_actions() -> None:
    class Mine(Action):
        pass

    rules = LEVELS["hard"]
    log = [Mine("deal", t=1), Mine("undo", t=2), Mine("hint", t=3)]
    replayed, played = Game(rules, 1), Game(rules, 1)
    replayed.replay(log)
    for action in log:
        played.play(action)
    assert everything(replayed) == everything(played)
    assert {type(action) for action in replayed.actions} == {Action}
