"""The protocol repeats what the engine defines (levels, locales, rule codes,
events, views) because it may not import it; these tests keep the copies true.

Only tests may import both packages (tests/architecture).
"""

from __future__ import annotations

import functools

import pytest

from engine import events as engine_events
from engine.errors import LOCALES as ENGINE_LOCALES
from engine.errors import ReplayFormatError, RuleViolation
from engine.game import Game
from engine.levels import LEVEL_NAMES, LEVELS
from engine.replay import export_replay, verify
from engine.solver.plan import REASONS as HINT_REASONS
from engine.view import public_view
from protocol import LEVELS as PROTOCOL_LEVELS
from protocol import LOCALES as PROTOCOL_LOCALES
from protocol import RULE_CODES, build, validate_message
from protocol.events import ENGINE_EVENTS, EVENT
from protocol.messages import EXAMPLE_VIEW
from protocol.replay import REPLAY, VERIFY_INVALID, VERIFY_VALID
from protocol.shapes import HINT_REASON, VIEW
from tests.helpers import hint_player_win

SAMPLES: dict[type, engine_events.Event] = {
    engine_events.Moved: engine_events.Moved(card=0, src=0, dst=3, count=1),
    engine_events.Flipped: engine_events.Flipped(column=2, card=51),
    engine_events.Unflipped: engine_events.Unflipped(column=2),
    engine_events.Dealt: engine_events.Dealt(cards=(1, 2, 3)),
    engine_events.Undealt: engine_events.Undealt(count=3),
    engine_events.SuitRemoved: engine_events.SuitRemoved(suit=3, column=1, slot=4),
    engine_events.SuitRestored: engine_events.SuitRestored(suit=0, column=7, slot=1),
    engine_events.Undone: engine_events.Undone(action="deal"),
    engine_events.Restarted: engine_events.Restarted(
        columns=((3, (0, 13)), (0, ())), stock=3, reserve=(7,)
    ),
    engine_events.Hinted: engine_events.Hinted(action="move", card=12, to=10),
    engine_events.Score: engine_events.Score(
        score=0, moves=0, undos=0, hints=0, earned=0, undo_depth=0, stuck=False
    ),
    engine_events.Won: engine_events.Won(
        moves=1, time_ms=0, score=600010, suits=4, hints=0, undos=0, deal=7
    ),
    engine_events.Stuck: engine_events.Stuck(),
}


def test_levels_locales_and_rule_codes_match_the_engine() -> None:
    assert PROTOCOL_LEVELS == LEVEL_NAMES
    assert PROTOCOL_LOCALES == ENGINE_LOCALES
    assert set(RULE_CODES) == {cls.code for cls in RuleViolation.__subclasses__()}


def test_the_hint_reasons_are_the_planners() -> None:
    """The planner's reasons, and ``lost``, which earlier versions recorded in hints."""
    assert HINT_REASON.choices == ("lost", *HINT_REASONS)


def test_every_engine_event_is_declared() -> None:
    classes = {getattr(engine_events, name) for name in engine_events.__all__ if name != "Event"}
    assert classes == SAMPLES.keys()
    declared = {spec.type for spec in ENGINE_EVENTS}
    assert {event.to_dict()["type"] for event in SAMPLES.values()} == declared
    for event in SAMPLES.values():
        EVENT.check(event.to_dict(), "event")
    for hint in (engine_events.Hinted("deal"), engine_events.Hinted("none")):
        EVENT.check(hint.to_dict(), "event")


def test_the_example_view_is_hard_deal_1() -> None:
    assert public_view(Game(LEVELS["hard"], 1)) == EXAMPLE_VIEW


@functools.cache
def played() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Events and views of real play: a won game replayed; the same game up to its last
    action, undone to the deal, hinted and restarted; every level's opening view."""
    won = hint_player_win()
    events: list[dict[str, object]] = []
    views = [public_view(Game(rules, 5)) for rules in LEVELS.values()]
    again = Game(won.rules, won.deal_number)
    for action in won.actions:
        events += [event.to_dict() for event in again.play(action)]
        views.append(public_view(again))
    again = Game(won.rules, won.deal_number)
    for action in won.actions[:-1]:
        again.play(action)
    t = won.actions[-1].t
    while again.undo_depth:
        events += [event.to_dict() for event in again.undo(t)]
        views.append(public_view(again))
    events += [event.to_dict() for event in (*again.hint(t), *again.restart(t))]
    return events, views


def test_real_engine_events_are_valid_pushes() -> None:
    events, _ = played()
    kinds = {event["type"] for event in events}
    assert {"moved", "flipped", "unflipped", "suit_removed", "suit_restored", "won"} <= kinds
    validate_message(build.events(game=1, v=len(events), events=events))


def test_real_engine_views_are_valid() -> None:
    _, views = played()
    for view in views:
        VIEW.check(view, "view")
        validate_message(build.game(1, game=1, v=0, view=view))


def test_the_engine_exports_and_verifies_replays_as_section_14_declares() -> None:
    won = hint_player_win()
    document = export_replay(won)
    REPLAY.check(document, "replay")
    assert {action["type"] for action in document["actions"]} >= {"move", "deal"}
    every_kind = Game(LEVELS["hard"], 1)
    every_kind.hint(100)
    every_kind.move("7C", 5, 200)
    every_kind.undo(300)
    every_kind.deal(400)
    every_kind.restart(500)
    REPLAY.check(export_replay(every_kind), "replay")
    assert [a["type"] for a in export_replay(every_kind)["actions"]] == [
        "hint", "move", "undo", "deal", "restart",
    ]  # fmt: skip
    status, result = verify(document)
    assert (status, result["valid"], result["won"]) == (0, True, True)
    VERIFY_VALID.check(result, "verify")
    illegal = {**document, "actions": [{"type": "undo"}]}
    status, rejected = verify(illegal)
    assert (status, rejected["index"], rejected["code"]) == (1, 0, "nothing_to_undo")
    VERIFY_INVALID.check(rejected, "verify")
    for broken in ({**document, "format": "other"}, {**document, "deal": "1"}):
        with pytest.raises(ReplayFormatError):
            verify(broken)
