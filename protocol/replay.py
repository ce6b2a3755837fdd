"""The replay document and the ``verify`` contract, declared like every message.

A finished game's ``replay`` reply carries a replay document: the level, the
deal number, the play time the game ended at and every action the player took,
in order, with its play time.
``scorpion-engine verify`` reads the same document from a file and prints one
of the two ``verify`` results. These shapes are the schema's ``replay``,
``replay_action`` and ``verify_*`` definitions and PROTOCOL.md's section 14;
a test checks the engine's exports and ``verify``'s output against them.

Readers ignore fields they do not know, so every shape here is extensible.
Deal numbers on the wire stay within 2^53-1 like every integer; a replay file
given to ``verify`` may name any deal the rules know (up to 10^20).
"""

from __future__ import annotations

from protocol.errors import RULE_CODES
from protocol.fields import Bool, Choice, Field, Int, ListOf, Obj, Shape, Str, Tagged
from protocol.shapes import CARD, COLUMN, COUNT, DEAL, HINT_ACTION, HINT_REASON, LEVEL, MILLISECONDS

__all__ = [
    "HINT_SUGGESTION",
    "REPLAY",
    "REPLAY_ACTION",
    "REPLAY_ACTIONS",
    "REPLAY_EXAMPLE",
    "REPLAY_SHAPES",
    "VERIFY_INVALID",
    "VERIFY_VALID",
]

_T = Field(
    "t",
    MILLISECONDS,
    "Play time (R22) when it happened; never decreases; left out, the previous action's "
    "(0 for the first).",
    required=False,
)


def _action(type_: str, doc: str, *fields: Field) -> Shape:
    tag = Field("type", Str(choices=(type_,)), f"Always `{type_}`.")
    return Shape(
        f"replay_action-{type_}",
        f"{type_} replay action",
        (tag, *fields, _T),
        doc,
        extensible=True,
    )


HINT_SUGGESTION = Shape(
    "hint_suggestion",
    "hint suggestion",
    (
        Field("action", HINT_ACTION, "What the hint suggested."),
        Field("card", CARD, "The card to move (action `move`).", required=False),
        Field("to", COLUMN, "The column to move it to (action `move`).", required=False),
        Field(
            "reason",
            HINT_REASON,
            "Why `none` (the `hint` event's `reason`).",
            required=False,
        ),
    ),
    "A hint as the `hint` event gives it, without its `type`.",
    extensible=True,
)

REPLAY_ACTIONS: tuple[Shape, ...] = (
    _action(
        "move",
        "The named face-up card (in a column, or in the reserve) with everything on it goes "
        "to column `to`; without `to`, an auto-move (R11).",
        Field("card", CARD, "The card (exports use the canonical form; R2)."),
        Field("to", COLUMN, "The destination column, 1-based (R3).", required=False),
    ),
    _action("deal", "The stock is dealt onto columns 1, 2, 3 (R13)."),
    _action("undo", "The last move or deal is taken back (R18)."),
    _action("restart", "The game goes back to its deal (R19)."),
    _action(
        "hint",
        "A hint was requested (R20): counted, changes no card.",
        Field(
            "suggested",
            Obj(HINT_SUGGESTION),
            "What the hint said (exports carry it when the server stored it: for every hint "
            "given since schema revision 0003); re-playing gives that hint again. Without it "
            "(older files, hints stored before 0003) a re-play computes the engine's heuristic "
            "hint for the position.",
            required=False,
        ),
    ),
)

REPLAY_ACTION = Tagged("replay_action", "replay action", REPLAY_ACTIONS)

REPLAY = Shape(
    "replay",
    "replay",
    (
        Field("format", Str(choices=("scorpion-replay",)), "Always `scorpion-replay`."),
        Field("version", Int(choices=(1,)), "The replay format's version: 1."),
        Field("level", LEVEL, "The level (rules.md, level table)."),
        Field("deal", DEAL, "The deal number (R6, docs/deals.md)."),
        Field(
            "end_t",
            MILLISECONDS,
            "Play time (R22) when the game ended: the winning action's `t`, or when it was "
            "resigned or abandoned, which may be after its last action. `verify` gives the "
            "score at it as `score_at_end`, beside `score` at the last action's `t`. Never "
            "less than that `t`. Exports of finished games always carry it.",
            required=False,
        ),
        Field("actions", ListOf(REPLAY_ACTION), "Every action, in the order played."),
    ),
    "A whole game: re-playing `actions` from deal `deal` of `level` gives its result.",
    extensible=True,
)

_CARDS = ListOf(CARD)

VERIFY_VALID = Shape(
    "verify_valid",
    "verify result (valid)",
    (
        Field("valid", Bool(), "Always true: every action was legal."),
        Field("won", Bool(), "Whether the replay wins the game (R15)."),
        Field("score", COUNT, "The score at the last action's `t` (R23, R24, R25)."),
        Field(
            "score_at_end",
            COUNT,
            "With `end_t`: the score at it, the one the server recorded for the game (a game "
            "resigned or abandoned after its last action may score less, R24).",
            required=False,
        ),
        Field("moves", COUNT, "Moves (R25)."),
        Field("undos", COUNT, "Undos (R25)."),
        Field("hints", COUNT, "Hints (R20)."),
        Field("suits_removed", Int(0, 4), "Suits on the foundations (R14)."),
        Field("columns", ListOf(_CARDS), "Every column, bottom to top, face-down cards included."),
        Field("face_down", ListOf(COUNT), "How many of each column's bottom cards are face down."),
        Field("stock", _CARDS, "The undealt stock, in the order it would go to columns 1, 2, 3."),
        Field("reserve", _CARDS, "The reserve (three-blind-mice, R5); else []."),
    ),
    "`scorpion-engine verify` on a valid replay (exit status 0).",
    extensible=True,
)

VERIFY_INVALID = Shape(
    "verify_invalid",
    "verify result (rejected action)",
    (
        Field("valid", Bool(), "Always false."),
        Field("index", COUNT, "The 0-based index in `actions` of the first rejected action."),
        Field(
            "code",
            Choice("rule code", "9-errors", RULE_CODES),
            "Its rule code (R10).",
        ),
        Field("message", Str(1), "Readable, in English."),
    ),
    "`scorpion-engine verify` on a replay with an action the rules reject (exit status 1).",
    extensible=True,
)

REPLAY_SHAPES: tuple[Shape, ...] = (
    REPLAY,
    *REPLAY_ACTIONS,
    HINT_SUGGESTION,
    VERIFY_VALID,
    VERIFY_INVALID,
)

REPLAY_EXAMPLE: dict[str, object] = {
    "format": "scorpion-replay",
    "version": 1,
    "level": "hard",
    "deal": 1,
    "end_t": 47000,
    "actions": [
        {"type": "move", "card": "7C", "to": 5, "t": 5300},
        {"type": "move", "card": "7D", "t": 9100},
        {"type": "deal", "t": 12000},
        {"type": "undo", "t": 15000},
        {"type": "hint", "suggested": {"action": "move", "card": "5S", "to": 1}, "t": 16000},
        {"type": "restart", "t": 20000},
    ],
}
