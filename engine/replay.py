"""Replay documents (shared replay format, version 1; see protocol/PROTOCOL.md section 14).

- ``export_replay(game)``: the document of a game's accepted actions (with
  ``end_t``, the play time the game ended at, when that is known).
- ``parse_replay(doc)``: the checked reader; anything that is not a replay
  raises ``ReplayFormatError`` (``scorpion-engine verify`` exits 2).
- ``rebuild(replay)``: plays the actions into a new ``Game``; the first action
  the rules reject raises ``ReplayActionError`` with its index (exit 1).
- ``verify(doc)``: the exit code and JSON object of ``scorpion-engine verify``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.cards import CardParseError, parse_card
from engine.deal import DealNumberError, deal_layout
from engine.errors import ReplayFormatError, RuleViolation
from engine.events import Hinted
from engine.game import ACTION_TYPES, Action, Game
from engine.levels import Rules, UnknownLevel, get_level
from engine.view import full_layout

__all__ = [
    "FORMAT",
    "VERSION",
    "Replay",
    "ReplayActionError",
    "export_replay",
    "parse_replay",
    "rebuild",
    "verify",
]

HINT_ACTIONS = ("move", "deal", "none")
FORMAT = "scorpion-replay"
VERSION = 1


@dataclass(frozen=True, slots=True)
class Replay:
    rules: Rules
    deal: int
    actions: tuple[Action, ...]
    end_t: int | None = None  # the play time the game ended at; None: its last action's


class ReplayActionError(Exception):
    """Action ``index`` (0-based) of a replay was rejected by the rules."""

    def __init__(self, index: int, violation: RuleViolation) -> None:
        self.index = index
        self.violation = violation
        super().__init__(f"action {index}: {violation.code}: {violation}")


def export_replay(
    game: Game, actions: Sequence[Action] | None = None, end_t: int | None = None
) -> dict[str, Any]:
    """The replay document of everything ``game`` accepted so far.

    With ``actions`` (a slice of ``game.actions``), the document holds only those:
    one page of a long game's replay, which the reader appends to the others.
    ``end_t``: the play time the game ended at (a game resigned or abandoned ends
    after its last action, and timed scoring counts that time too).
    """
    chosen = game.actions if actions is None else actions
    document: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "level": game.rules.name,
        "deal": game.deal_number,
    }
    if end_t is not None:
        document["end_t"] = end_t
    document["actions"] = [action.to_dict() for action in chosen]
    return document


def _require(condition: bool, reason: str) -> None:
    if not condition:
        raise ReplayFormatError(reason)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_LARGEST = 2**53 - 1  # the format's integers, as JSON readers everywhere hold them exactly


def _is_count(value: object, least: int) -> bool:
    """An integer from ``least`` to 2^53-1, as replay-format.md's schema says."""
    return _is_int(value) and least <= value <= _LARGEST  # type: ignore[operator]


def _parse_action(index: int, raw: object, previous_t: int) -> Action:
    where = f"action {index}"
    _require(isinstance(raw, dict), f"{where} is not an object")
    assert isinstance(raw, dict)
    kind = raw.get("type")
    _require(kind in ACTION_TYPES, f"{where} has an unknown type {kind!r}")
    t = raw.get("t", previous_t)
    _require(_is_count(t, 0), f"{where} has a bad t {t!r}")
    _require(t >= previous_t, f"{where}: t decreases ({t} < {previous_t})")
    if kind == "hint" and "suggested" in raw:
        return Action("hint", t=t, hinted=_parse_suggested(where, raw["suggested"]))
    if kind != "move":
        return Action(str(kind), t=t)
    _require("card" in raw, f"{where} is a move without a card")
    try:
        card = parse_card(raw["card"])
    except CardParseError as exc:
        raise ReplayFormatError(f"{where}: {exc}") from exc
    to = raw.get("to")  # left out: an auto-move; null is no column
    _require("to" not in raw or _is_count(to, 1), f"{where} has a 'to' that is no column {to!r}")
    return Action("move", card, to, t)


def _parse_suggested(where: str, raw: object) -> Hinted:
    """A hint action's ``suggested`` object: what the hint said (replay-format.md)."""
    _require(isinstance(raw, dict), f"{where}: 'suggested' is not an object")
    assert isinstance(raw, dict)
    action = raw.get("action")
    _require(action in HINT_ACTIONS, f"{where}: 'suggested' has an unknown action {action!r}")
    reason = raw.get("reason")
    _require(reason is None or isinstance(reason, str), f"{where}: a non-text reason {reason!r}")
    if action != "move":
        return Hinted(str(action), reason=reason)
    try:
        card = parse_card(raw.get("card"))  # type: ignore[arg-type]
    except (CardParseError, TypeError) as exc:
        raise ReplayFormatError(f"{where}: 'suggested' names no card: {exc}") from exc
    to = raw.get("to")
    _require(_is_count(to, 1), f"{where}: 'suggested' has a 'to' that is no column {to!r}")
    return Hinted("move", card, to, reason)


def parse_replay(doc: object) -> Replay:
    """Check that ``doc`` is a replay document and read it."""
    _require(isinstance(doc, dict), "a replay is a JSON object")
    assert isinstance(doc, dict)
    _require(doc.get("format") == FORMAT, f"'format' is not {FORMAT!r}")
    version = doc.get("version")
    _require(_is_int(version) and version == VERSION, f"unsupported version {version!r}")
    try:
        rules = get_level(doc.get("level"))  # type: ignore[arg-type]
    except UnknownLevel as exc:
        raise ReplayFormatError(str(exc)) from exc
    deal = doc.get("deal")
    _require(_is_int(deal), f"'deal' is not an integer: {deal!r}")
    assert isinstance(deal, int)
    try:
        deal_layout(rules.layout, deal)
    except DealNumberError as exc:
        raise ReplayFormatError(str(exc)) from exc
    raw_actions = doc.get("actions")
    _require(isinstance(raw_actions, list), "'actions' is not a list")
    assert isinstance(raw_actions, list)
    actions = []
    t = 0
    for index, raw in enumerate(raw_actions):
        action = _parse_action(index, raw, t)
        t = action.t
        actions.append(action)
    end_t = doc.get("end_t")
    if "end_t" in doc:
        _require(_is_count(end_t, 0), f"'end_t' is not a non-negative integer: {end_t!r}")
        assert isinstance(end_t, int)
        _require(end_t >= t, f"'end_t' is before the last action's t ({end_t} < {t})")
    return Replay(rules, deal, tuple(actions), end_t)


def rebuild(replay: Replay) -> Game:
    """A game with every action of ``replay`` played; raises ReplayActionError."""
    game = Game(replay.rules, replay.deal)
    for index, action in enumerate(replay.actions):
        try:
            game.play(action)
        except RuleViolation as exc:
            raise ReplayActionError(index, exc) from exc
    return game


def verify(doc: object) -> tuple[int, dict[str, Any]]:
    """``scorpion-engine verify``'s exit code and output for a parsed JSON ``doc``.

    Raises ReplayFormatError when ``doc`` is not a replay (exit 2).
    """
    replay = parse_replay(doc)
    try:
        game = rebuild(replay)
    except ReplayActionError as exc:
        return 1, {
            "valid": False,
            "index": exc.index,
            "code": exc.violation.code,
            "message": exc.violation.message("en"),
        }
    results = game.results()  # the score at the last action's t (shared/spec/replay.md)
    at_end = {} if replay.end_t is None else {"score_at_end": game.score(replay.end_t)}
    return 0, {
        "valid": True,
        "won": results.won,
        "score": results.score,
        **at_end,
        "moves": results.moves,
        "undos": results.undos,
        "hints": results.hints,
        "suits_removed": results.suits,
        **full_layout(game.state),
    }
