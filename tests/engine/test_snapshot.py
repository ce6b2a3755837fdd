"""Snapshots: a game written as plain data and restored continues exactly as the original.

A restored game's log holds no actions until they are filled in (``ActionLog``'s
missing prefix); everything else, the undo history included, is the original's.
``Game.restore`` reads data from a database: anything malformed is a ValueError.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import errors
from engine.deal import MAX_DEAL
from engine.events import Event
from engine.game import SNAPSHOT_FORMAT, Action, Game
from engine.levels import LEVEL_NAMES, LEVELS, Rules
from engine.moves import legal_moves
from engine.replay import export_replay
from engine.shared import ActionLog
from tests.engine.conftest import make_deal
from tests.helpers import hint_player_win

# -- random play -------------------------------------------------------------------

# Moves dominate so games get somewhere; "good" follows the hint, so sets are removed
# and games are won now and then; "any" is mostly rejected (errors must agree too).
KINDS = (
    ("move",) * 10
    + ("good",) * 14
    + ("auto",) * 3
    + ("any",) * 2
    + ("deal",) * 2
    + ("undo",) * 5
    + ("hint",) * 2
    + ("restart",)
)
# Mostly following the hint: suits are removed and games won more often.
GREEDY_KINDS = ("good",) * 40 + ("move", "auto", "any", "undo", "hint")


def random_action(game: Game, rng: random.Random, t: int, kind: str | None = None) -> Action:
    """One action for ``game``'s position, drawn with ``rng`` (moves from the engine's own
    move generation, the hint's move, an auto-move, any card anywhere, deal, undo,
    restart, hint)."""
    kind = kind or rng.choice(KINDS)
    state = game.state
    if kind == "move" and (options := legal_moves(state, game.rules)):
        src, index, dst = rng.choice(options)
        card = state.reserve[index] if src < 0 else state.cols[src][index]
        return Action("move", card, dst + 1, t)
    if kind == "good":
        hint = game.suggestion()
        if hint.action == "move" and hint.card is not None:
            return Action("move", hint.card, hint.to, t)
        return Action("deal" if hint.action == "deal" else "undo", t=t)
    if kind == "auto":
        up = [card for col in state.cols for card in col[-3:]] + state.reserve
        if up:
            return Action("move", rng.choice(up), None, t)
    if kind == "any":
        return Action("move", rng.randrange(52), rng.randrange(len(state.cols) + 2), t)
    if kind in ("deal", "undo", "restart"):
        return Action(kind, t=t)
    return Action("hint", t=t)


Outcome = list[Event] | str  # the events, or the code of the rule the action broke


def attempt(game: Game, action: Action) -> Outcome:
    try:
        return game.play(action)
    except errors.RuleViolation as exc:
        return exc.code


def undo_entries(game: Game) -> list[Any]:
    """The undo history, top first, read by popping a copy (independent of snapshots)."""
    history = game.history.copy()
    return [history.pop() for _ in range(len(history))]


def assert_equal_games(restored: Game, game: Game) -> None:
    """Equal in every respect but the loaded actions of the log."""
    assert restored.state == game.state
    assert restored.state.key() == game.state.key()
    assert (restored.moves, restored.undos, restored.hints) == (game.moves, game.undos, game.hints)
    assert (restored.earned, restored.time, restored.won_at) == (
        game.earned,
        game.time,
        game.won_at,
    )
    assert restored.won == game.won
    assert restored.stuck == game.stuck
    assert restored.results() == game.results()
    assert restored.results(game.time + 95_000) == game.results(game.time + 95_000)
    assert restored.score() == game.score()
    assert restored.undo_depth == game.undo_depth
    assert restored.history.limit == game.history.limit
    assert undo_entries(restored) == undo_entries(game)
    assert len(restored.actions) == len(game.actions)
    assert restored.suggestion() == game.suggestion()
    assert (restored.rules, restored.deal_number, restored.layout) == (
        game.rules,
        game.deal_number,
        game.layout,
    )


def through_json(game: Game) -> list[Any]:
    data = game.snapshot()
    plain = json.loads(json.dumps(data))
    assert plain == data  # nothing but lists, ints, bools and None
    return data


def restored_from(game: Game) -> Game:
    restored = Game.restore(game.rules, game.deal_number, through_json(game))
    assert_equal_games(restored, game)
    assert restored.actions.missing == len(game.actions)
    assert restored.snapshot() == game.snapshot()
    return restored


def continue_both(game: Game, restored: Game, rng: random.Random, t: int) -> int:
    """Play the same actions on both and require the same outcome each time: random
    ones, then undo all the way down the history (and once more), restart, deal, hint,
    then random ones again."""
    plan = [None] * rng.randrange(0, 25) + ["undo"] * (game.undo_depth + 1)
    plan += ["restart", "deal", "hint", "good"] + [None] * rng.randrange(0, 25)
    for kind in plan:
        t += rng.randrange(0, 4_000)
        action = random_action(game, rng, t, kind)
        assert attempt(restored, action) == attempt(game, action), action
        assert restored.stuck == game.stuck
        assert restored.undo_depth == game.undo_depth
    assert_equal_games(restored, game)
    return t


def deal_for(rng: random.Random) -> int:
    """A deal number from either generator of R6 (the LCG below 32000, MT19937 above)."""
    return rng.randrange(1, 32_000) if rng.random() < 0.5 else rng.randrange(32_000, MAX_DEAL)


def played_games(level: str, seeds: range) -> Iterator[tuple[Game, random.Random, int]]:
    """Random games of ``level`` (every other one greedy), yielded at a few points along
    each (and at its end) with the generator and play time to go on with."""
    rules = LEVELS[level]
    for seed in seeds:
        rng = random.Random(f"{level}/{seed}")
        kinds = GREEDY_KINDS if seed % 2 else KINDS
        game, t = Game(rules, deal_for(rng)), 0
        yield game, rng, t
        length = rng.choice([3, 30, 120, 260])
        for _ in range(length):
            if game.won:
                break
            t += rng.randrange(0, 4_000)
            attempt(game, random_action(game, rng, t, rng.choice(kinds)))
            if rng.random() < 4 / length:
                yield game, rng, t
        yield game, rng, t


# -- properties ------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVEL_NAMES)
def test_a_restored_game_continues_exactly_as_the_original(level: str) -> None:
    kinds: set[str] = set()
    checked = 0
    for game, rng, t in played_games(level, range(50)):
        kinds |= {action.type for action in game.actions}
        restored = restored_from(game)
        original = game.fork()  # the walk goes on from ``game`` as it is
        logged = len(original.actions)
        continue_both(original, restored, rng, t)
        assert restored.actions[logged:] == original.actions[logged:]
        restored.actions.fill(original.actions[:logged])
        assert restored.actions == original.actions
        checked += 1
    dealt = {"deal"} if level != "three-blind-mice" else set()  # it has no stock (R5)
    assert kinds == {"move", "undo", "restart", "hint"} | dealt
    assert checked > 200


def test_a_restored_game_replays_the_rest_of_a_log_as_the_original_did() -> None:
    """What the server does: restore at some version, then replay what came after."""
    for walked, rng, t in played_games("three-blind-mice", range(6)):
        game = walked.fork()
        data = through_json(game)
        logged = len(game.actions)
        for _ in range(rng.randrange(1, 40)):
            t += rng.randrange(0, 4_000)
            attempt(game, random_action(game, rng, t))
        restored = Game.restore(game.rules, game.deal_number, data)
        restored.replay(game.actions[logged:])
        assert_equal_games(restored, game)
        restored.actions.fill(game.actions[:logged])
        assert restored.actions == game.actions
        assert export_replay(restored) == export_replay(game)


def test_a_restored_won_game_is_won_and_takes_no_more() -> None:
    won = hint_player_win()
    restored = restored_from(won)
    assert restored.won and restored.won_at == won.won_at
    assert restored.score(won.time + 99_000) == won.score(won.time + 99_000)
    for action in (Action("deal", t=won.time), Action("undo"), Action("hint"), Action("restart")):
        with pytest.raises(errors.GameOver):
            restored.play(action)


def test_a_won_games_snapshot_whose_win_is_not_at_its_last_action_is_refused() -> None:
    """The win is the last action (nothing is taken after it): a snapshot that says it
    came at another time would restore with a score R24 never gave."""
    won = hint_player_win()
    data = won.snapshot()
    assert data[7] == data[6] == won.time  # won_at, then time
    for other in (won.time - 1, won.time + 1):
        changed = copy.deepcopy(data)
        changed[7] = other
        with pytest.raises(ValueError, match="won_at is the time of its last action"):
            Game.restore(won.rules, won.deal_number, changed)


def moves_only(game: Game, rng: random.Random, count: int, t: int) -> None:
    """Play ``count`` random legal moves or deals (never an undo or a restart)."""
    for _ in range(count):
        action = random_action(
            game, rng, t, "move" if legal_moves(game.state, game.rules) else "deal"
        )
        game.play(action)


def undo_outcome(game: Game, t: int) -> Outcome:
    return attempt(game, Action("undo", t=t))


def test_a_restored_game_undoes_as_far_as_the_original_under_the_undo_limit() -> None:
    """R18's example on relaxed, which keeps the last 100 moves: after 150 moves, 60
    undos and 30 more moves, 70 undos remain, on the original and on restored games."""
    rules, rng, t = LEVELS["relaxed"], random.Random(100), 5_000
    game = Game(rules, 1)
    moves_only(game, rng, 150, t)
    assert game.undo_depth == rules.undo_limit == 100
    restored = restored_from(game)
    for step in range(60):
        assert undo_outcome(restored, t) == undo_outcome(game, t), step
    for _ in range(30):
        action = random_action(game, rng, t, "move")
        assert action.type == "move" and attempt(restored, action) == attempt(game, action)
    assert game.undo_depth == restored.undo_depth == 70
    again = restored_from(game)
    depth = 0
    while not isinstance(outcome := undo_outcome(game, t), str):
        assert undo_outcome(again, t) == undo_outcome(restored, t) == outcome
        depth += 1
    assert depth == 70
    assert undo_outcome(again, t) == undo_outcome(restored, t) == outcome == "nothing_to_undo"
    assert_equal_games(again, game)
    assert_equal_games(restored, game)


def test_a_history_deeper_than_the_undo_limit_is_refused() -> None:
    rules = LEVELS["relaxed"]
    game = Game(rules.with_options(undo_limit=None), 1)
    moves_only(game, random.Random(5), 101, 0)
    data = game.snapshot()
    with pytest.raises(ValueError, match="undo limit"):
        Game.restore(rules, 1, data)
    assert Game.restore(game.rules, 1, data).undo_depth == 101


def test_a_restored_game_forks_as_any_game_does() -> None:
    rules = LEVELS["hard"]
    game = Game(rules, 3)
    rng = random.Random(3)
    for t in range(0, 40_000, 1_000):
        attempt(game, random_action(game, rng, t))
    restored = restored_from(game)
    fork = restored.fork()
    assert_equal_games(fork, game)
    action = random_action(game, rng, 41_000, "move")
    assert attempt(fork, action) == attempt(game.fork(), action)
    assert_equal_games(restored, game)  # the fork's move left it as it was
    assert fork.actions.missing == restored.actions.missing == len(game.actions)


def test_a_restored_game_lays_out_a_given_deal() -> None:
    game = hint_player_win().fork()
    layout = game.layout
    data = game.snapshot()
    restored = Game.restore(game.rules, 999, data, layout)
    assert restored.layout is layout and restored.deal_number == 999
    small = make_deal(["KS QS", "JS TS", "9S 8S", "7S 6S", "5S 4S", "3S 2S", "AS"])
    with pytest.raises(ValueError, match="cards"):
        Game.restore(game.rules, 7, Game(game.rules, 7).snapshot(), small)
    assert Game.restore(game.rules, 7, Game(game.rules, 7, small).snapshot(), small).layout is small


# -- the log's missing prefix ----------------------------------------------------


def test_a_log_with_its_first_entries_missing_refuses_to_read_them() -> None:
    log: ActionLog[str] = ActionLog.unloaded(3)
    assert len(log) == 3 and log.missing == 3
    log.append("d")
    assert len(log) == 4 and log[-1] == "d" and log[3] == "d"
    assert log[3:] == ["d"] and log[-1:] == ["d"] and log[5:] == []
    reads: list[Callable[[], object]] = [
        lambda: log[0],
        lambda: log[2],
        lambda: log[-2],
        lambda: log[-4],
        lambda: log[2:],
        lambda: log[:],
        lambda: log[::-1],
        lambda: list(log),
        lambda: iter(log),
        lambda: log == ["a", "b", "c", "d"],
        lambda: ActionLog(["a", "b", "c", "d"]) == log,
        lambda: "a" in log,
    ]
    for read in reads:
        with pytest.raises(LookupError, match="first 3 actions are not loaded") as caught:
            read()
        # Not an IndexError: nothing that iterates by index may stop there quietly.
        assert not isinstance(caught.value, IndexError)
    with pytest.raises(IndexError):
        log[4]
    with pytest.raises(IndexError):
        log[-5]
    assert "3 not loaded" in repr(log)


def test_filling_the_missing_entries_makes_a_whole_log() -> None:
    log: ActionLog[str] = ActionLog.unloaded(3)
    log.append("d")
    before = log.copy()
    for wrong in ([], ["a", "b"], ["a", "b", "c", "d"]):
        with pytest.raises(ValueError, match="3"):
            log.fill(wrong)
    log.fill(["a", "b", "c"])
    assert log.missing == 0 and list(log) == ["a", "b", "c", "d"] and log == log.copy()
    assert log[0:2] == ["a", "b"] and log[-4] == "a"
    log.append("e")
    assert list(log) == ["a", "b", "c", "d", "e"]
    assert before.missing == 3 and len(before) == 4  # a copy made earlier is still partial
    with pytest.raises(LookupError):
        before[0]
    with pytest.raises(ValueError, match="0"):
        log.fill(["x"])
    log.fill([])


def test_copies_of_a_partial_log_share_it_and_see_only_their_own_appends() -> None:
    log: ActionLog[int] = ActionLog.unloaded(2)
    log.append(2)
    kept = log.copy()
    kept.append(3)
    dropped = log.copy()
    dropped.append(4)
    assert (kept[-2:], dropped[-2:], log[-1:]) == ([2, 3], [2, 4], [2])
    assert kept.missing == dropped.missing == 2
    dropped.fill([0, 1])
    assert list(dropped) == [0, 1, 2, 4] and kept[-1] == 3 and kept.missing == 2
    empty: ActionLog[int] = ActionLog.unloaded(0)
    assert empty.missing == 0 and list(empty) == [] and empty == []


# -- untrusted snapshots ---------------------------------------------------------


def sample_games() -> list[Game]:
    """Games whose snapshots cover every part of the format: a reserve, a dealt stock,
    removed suits with flips, a won game, a long history, an untouched deal."""
    games = [hint_player_win(), Game(LEVELS["hard"], 2)]
    for level, seed in (("three-blind-mice", 1), ("classic", 2), ("medium", 3)):
        rng = random.Random(seed)
        game, t = Game(LEVELS[level], 1 + seed), 0
        while len(game.actions) < 150 and not game.won:
            t += 700
            attempt(game, random_action(game, rng, t, "good" if rng.random() < 0.7 else None))
        games.append(game)
    mice = Game(LEVELS["three-blind-mice"], 4)  # a move from the reserve, a card left there
    while not any(record[1] < 0 for record, _points in undo_entries(mice)) or mice.moves < 5:
        options = legal_moves(mice.state, mice.rules)
        src, index, dst = min(options)  # a reserve move first when there is one
        mice.move(mice.state.reserve[index] if src < 0 else mice.state.cols[src][index], dst + 1)
    games.append(mice)
    won = hint_player_win()  # back to where two suits are found: a history with removals
    for cut in range(len(won.actions), 0, -1):
        partly = Game(won.rules, won.deal_number)
        partly.replay(won.actions[:cut])
        if len(partly.state.found) == 2:
            games.append(partly)
            break
    return games


SAMPLES = [(game.rules, game.deal_number, game.snapshot()) for game in sample_games()]


def test_the_samples_cover_every_part_of_a_snapshot() -> None:
    assert any(data[7] is not None for _, _, data in SAMPLES)  # won
    assert any(data[12] for _, _, data in SAMPLES)  # a reserve
    assert any(data[11] for _, _, data in SAMPLES)  # a stock
    assert any(len(data[13]) in (1, 2, 3) for _, _, data in SAMPLES)  # some suits removed
    history = [entry for _, _, data in SAMPLES for entry in data[14]]
    assert {entry[0] for entry in history} == {0, 1}  # moves and deals
    assert any(entry[1] == -1 for entry in history)  # a move from the reserve
    assert any(entry[5] for entry in history)  # a flip
    assert any(entry[6] for entry in history)  # removals


GARBAGE: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    52,
    2**64,
    -(2**70),
    10**400,
    1.0,
    float("nan"),
    "",
    "1",
    b"\x01",
    [],
    [0],
    [None],
    [[[[[]]]]],
    {},
    {"0": 1},
    (1, 2),
]


def paths(value: Any, prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """The path (indices) of every element at any depth of nested lists."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from paths(item, (*prefix, index))


def some_paths(data: list[Any]) -> Iterator[tuple[int, ...]]:
    """``paths``, but of the undo history only its first two entries and its last one
    (the rest are alike, and a long history would make the test slow)."""
    last = len(data[14]) - 1
    for path in paths(data):
        if path[0] != 14 or len(path) == 1 or path[1] in (0, 1, last):
            yield path


def at(data: Any, path: tuple[int, ...]) -> list[Any]:
    """The list that holds the element at ``path``."""
    for index in path[:-1]:
        data = data[index]
    assert isinstance(data, list)
    return data


def mutations(data: list[Any]) -> Iterator[Any]:
    """``data`` with one element replaced, dropped or doubled, or one list cut short or
    grown, anywhere in it."""
    yield from GARBAGE
    for path in some_paths(data):
        for replacement in GARBAGE:
            changed = copy.deepcopy(data)
            at(changed, path)[path[-1]] = replacement
            yield changed
        for change in ("drop", "double", "cut", "grow"):
            changed = copy.deepcopy(data)
            holder, index = at(changed, path), path[-1]
            if change == "drop":
                del holder[index]
            elif change == "double":
                holder.insert(index, holder[index])
            elif change == "cut":
                del holder[index:]
            elif isinstance(holder[index], list):
                holder[index].append(holder[index][-1] if holder[index] else 0)
            yield changed


def restore_or_refuse(rules: Rules, deal: int, data: Any) -> Game | None:
    """Restore, allowing only ValueError; a snapshot accepted must write back as given."""
    try:
        game = Game.restore(rules, deal, data)
    except ValueError as exc:
        assert str(exc) and len(str(exc)) < 200
        return None
    assert game.snapshot() == data
    game.results(), game.suggestion(), game.fork()
    return game


def test_every_mutation_of_a_snapshot_is_refused_with_a_value_error_or_restores_as_given() -> None:
    refused = accepted = 0
    for rules, deal, data in SAMPLES:
        for changed in mutations(data):
            if restore_or_refuse(rules, deal, changed) is None:
                refused += 1
            else:
                accepted += 1
    # Most of those accepted put back the value that was there (0 for 0), or change what
    # no snapshot can check without the log (the time, undos under timed scoring).
    assert refused > 10 * accepted


garbage_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-2, 60)
    | st.floats()
    | st.text(max_size=3)
    | st.binary(max_size=3),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_garbage_anywhere_in_a_snapshot_is_refused_with_a_value_error(data: st.DataObject) -> None:
    rules, deal, snapshot = data.draw(st.sampled_from(SAMPLES))
    changed = copy.deepcopy(snapshot)
    all_paths = list(paths(changed))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(all_paths))
        if path in set(paths(changed)):  # else an earlier change replaced what held it
            at(changed, path)[path[-1]] = data.draw(garbage_values)
    restore_or_refuse(rules, deal, changed)
    restore_or_refuse(rules, deal, data.draw(garbage_values))


def mutate(level_data: list[Any], change: str) -> list[Any]:
    data = copy.deepcopy(level_data)
    exec(change, {}, {"data": data})
    return data


# Malformed snapshots of sample 2 (three-blind-mice, a reserve, a history with a
# reserve move) and what the message must mention.
MALFORMED = [
    ("data[0] = 0", "format"),
    ("data[0] = True", "format"),
    ("data[0] = 2", "format"),
    ("data[1] += 1", "counters"),
    ("data[1] = -1", "logged"),
    ("data[2] = -1", "moves"),
    ("data[2] = True", "moves"),
    ("data[5] = 2**63", "earned"),
    ("data[6] = '5'", "time"),
    ("data[7] = data[6]", "won"),
    ("data[8] = 0", "stuck"),
    ("data[9][0][0] = 51 - data[9][0][0]", "cards"),
    ("data[9][0].append(data[9][0][-1])", "cards"),
    ("data[9].append([])", "columns"),
    ("data[9][0][0] = 52", "card"),
    ("data[9][0][0] = False", "card"),
    ("data[10][0] = len(data[9][0]) + 1", "face-down"),
    ("data[10][0] = -1", "face-down"),
    ("data[10].pop()", "face-down"),
    ("data[12] = [0, 1, 2]", "reserve"),
    ("data[13] = [4]", "found"),
    ("data[13] = [-1]", "found"),
    ("data[14] = [[0, 0, 0, 0, 1, False, [], 0]]", "history"),
    ("data[14] = [[0, 10, 0, 1, 1, False, [], 0]]", "history"),
    ("data[14] = [[0, 0, 0, 0, 1, 0, [], 0]]", "history"),
    ("data[14] = [[0, 0, 1, 1, 1, False, [[10, False]], 0]]", "history"),
    ("data[14] = [[0, 0, 1, 1, 1, False, [[1, 1]], 0]]", "history"),
    ("data[14] = [[0, 0, 1, 1, 1, False, [], -1]]", "history"),
    ("data[14] = [[2, 0, 1, 1, 1, False, [], 0]]", "history"),
    ("data[14] = [[0, -1, 5, 1, 1, False, [], 0]]", "history"),
    ("data[14] = [[0, 0, 1, 1, 1, False, []]]", "history"),
    ("data[14] = [[1, 3, 0, 0, 0, False, [], 0]]", "history"),
    ("data.append(0)", "15"),
    ("del data[3]", "15"),
]


@pytest.mark.parametrize(("change", "mentions"), MALFORMED)
def test_a_malformed_snapshot_is_refused_with_a_message(change: str, mentions: str) -> None:
    rules, deal, data = SAMPLES[2]
    assert rules.layout == "three-blind-mice"
    Game.restore(rules, deal, data)
    with pytest.raises(ValueError, match=mentions):
        Game.restore(rules, deal, mutate(data, change))


def test_the_format_number_is_the_first_element() -> None:
    assert SNAPSHOT_FORMAT == 1
    assert Game(LEVELS["easy"], 1).snapshot()[0] == SNAPSHOT_FORMAT


def _hidden_shuffled(game: Game) -> Iterator[tuple[str, list[Any]]]:
    """``game``'s snapshot with the cards it holds in the stock or reserve put in another
    order, or changed for a face-up card: every card is still the deal's."""
    data = game.snapshot()
    for part, name in ((11, "stock"), (12, "reserve")):
        if len(data[part]) > 1:
            changed = copy.deepcopy(data)
            changed[part].reverse()
            yield f"{name} reordered", changed
        if data[part]:
            changed = copy.deepcopy(data)
            top = next(col for col in changed[9] if col)
            changed[part][0], top[-1] = top[-1], changed[part][0]
            yield f"{name} card changed", changed


@pytest.mark.parametrize("level", ["hard", "three-blind-mice"])
def test_a_stock_or_reserve_not_the_deals_is_refused(level: str) -> None:
    """The stock, until dealt, is the deal's, in its order; the reserve keeps the deal's
    cards that have not left it, in their order. Another would deal or show cards the
    game never held there, and the check needs no log."""
    game = Game(LEVELS[level], 7)
    changes = list(_hidden_shuffled(game))
    assert changes
    for what, changed in changes:
        with pytest.raises(ValueError):
            Game.restore(LEVELS[level], 7, changed)
            pytest.fail(f"a snapshot with its {what} was restored")


def test_a_history_that_undoes_a_deal_into_another_stock_is_refused() -> None:
    """After a deal, the dealt cards are face up on the columns: two of them swapped is a
    position play can reach, but undoing the deal would make a stock not the deal's."""
    game = Game(LEVELS["classic"], 7)
    game.deal(0)
    data = game.snapshot()
    cols = data[9]
    cols[0][-1], cols[1][-1] = cols[1][-1], cols[0][-1]
    with pytest.raises(ValueError, match="stock"):
        Game.restore(LEVELS["classic"], 7, data)
