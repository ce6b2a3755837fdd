"""The events an ``events`` push (and a ``catch_up`` reply) carries.

The first thirteen are the engine's (``engine.events``, each event's
``to_dict()``), in the order the engine documents: a played action yields its
own events (moved / dealt, flipped, suit_removed), then ``score``, then ``won``
or ``stuck``; an undo yields ``undone`` and the inverse events in reverse
order. The server adds ``clock``, ``lost_position`` and ``game_lost``, and a
``stats`` row to ``won``. A test feeds real engine events through these specs.
"""

from __future__ import annotations

from protocol.fields import AnyOf, Bool, Field, Int, ListOf, Obj, Shape, Str, Tagged
from protocol.shapes import (
    CARD,
    COLUMN,
    COLUMN_VIEW,
    COUNT,
    DEAL,
    EXAMPLE_VIEW,
    HINT_ACTION,
    HINT_REASON,
    MILLISECONDS,
    STATS_ROW,
    SUIT,
    VERSION,
    VIEW,
)
from protocol.spec import Kind, MessageSpec

__all__ = ["ENGINE_EVENTS", "EVENT", "EVENTS", "EVENT_BATCH", "SERVER_EVENTS"]

_PLACE = AnyOf((COLUMN, Str(choices=("reserve",))))
_SLOT = Int(1, 4)


def _event(type_: str, doc: str, example: dict[str, object], *fields: Field) -> MessageSpec:
    return MessageSpec(type_, Kind.EVENT, fields, doc, ({"type": type_, **example},))


def _suit_event(type_: str, doc: str, column: str, example: dict[str, object]) -> MessageSpec:
    return _event(
        type_,
        doc,
        example,
        Field("suit", SUIT, "The suit's letter."),
        Field("column", COLUMN, column),
        Field("slot", _SLOT, "The foundation slot, 1..4 (R3)."),
    )


def _counters() -> tuple[Field, ...]:
    return (
        Field("score", COUNT, "The score (R23, R24)."),
        Field("moves", COUNT, "Moves (R25)."),
        Field("undos", COUNT, "Undos (R25)."),
        Field("hints", COUNT, "Hints (R20)."),
    )


ENGINE_EVENTS: tuple[MessageSpec, ...] = (
    _event(
        "moved",
        "`count` cards, `card` at the bottom, went from column `from` to column `to` "
        '(R7); `"reserve"` names the three-blind-mice reserve (R5).',
        {"card": "4H", "from": 2, "to": 7, "count": 3},
        Field("card", CARD, "The bottom card of the moved group."),
        Field("from", _PLACE, "Source column, or `reserve`."),
        Field("to", _PLACE, "Destination column (`reserve` only when an undo puts it back)."),
        Field("count", Int(1), "How many cards moved."),
        Field(
            "index",
            Int(1),
            'With `to: "reserve"`: the card\'s 1-based place in the reserve, where the '
            "undone move took it from (the cards after it move one place on).",
            required=False,
        ),
    ),
    _event(
        "flipped",
        "The top card of `column` turned face up (R12): the first time this card is sent.",
        {"column": 4, "card": "QS"},
        Field("column", COLUMN, "The column."),
        Field("card", CARD, "The card now face up."),
    ),
    _event(
        "unflipped",
        "An undo turned the top card of `column` face down again; forget its name.",
        {"column": 4},
        Field("column", COLUMN, "The column."),
    ),
    _event(
        "dealt",
        "The stock went out (R13): `cards[i]` landed face up on column i + 1.",
        {"cards": ["7D", "KC", "2S"]},
        Field("cards", ListOf(CARD), "The dealt cards, for columns 1, 2, 3."),
    ),
    _event(
        "undealt",
        "An undo took the dealt cards back into the stock: the top card of each of "
        "columns 1..`count`.",
        {"count": 3},
        Field("count", COUNT, "How many cards went back."),
    ),
    _suit_event(
        "suit_removed",
        "K..A of one suit left `column` for foundation `slot` (R14).",
        "The column the 13 cards left.",
        {"suit": "H", "column": 3, "slot": 1},
    ),
    _suit_event(
        "suit_restored",
        "An undo put a removed suit back on `column` from foundation `slot`.",
        "The column the 13 cards went back to (face up, K at the bottom).",
        {"suit": "H", "column": 3, "slot": 1},
    ),
    _event(
        "undone",
        "The last move or deal was taken back (R18); its inverse events follow.",
        {"action": "move"},
        Field("action", Str(choices=("move", "deal")), "What was undone."),
    ),
    _event(
        "restarted",
        "The game went back to its deal (R19): the view's `columns`, `stock`, `reserve` and "
        "`foundations` (now []) become the deal's, as given here; `score` follows.",
        {
            "columns": [
                {"down": 3, "cards": ["AS", "4H", "TH", "8D"]},
                {"down": 0, "cards": ["7C", "QC", "JS", "QH", "4S", "8S", "6S"]},
            ],
            "stock": 3,
            "reserve": [],
        },
        Field("columns", ListOf(Obj(COLUMN_VIEW)), "Every column as at the deal."),
        Field("stock", COUNT, "How many cards the stock holds again."),
        Field("reserve", ListOf(CARD), "The reserve as at the deal (three-blind-mice); else []."),
    ),
    _event(
        "hint",
        "A hint was given (R20): move `card` to column `to`, deal the stock, or none.",
        {"action": "move", "card": "9C", "to": 5},
        Field("action", HINT_ACTION, "What the hint suggests."),
        Field("card", CARD, "The card to move (action `move` only).", required=False),
        Field("to", COLUMN, "The column to move it to (action `move` only).", required=False),
        Field(
            "reason",
            HINT_REASON,
            "With action `none`, why (the `hint` reply's `reason`).",
            required=False,
        ),
    ),
    _event(
        "score",
        "Score, counters and position state after the action: every field replaces the "
        "view's field of the same name.",
        {
            "score": 40,
            "moves": 4,
            "undos": 0,
            "hints": 1,
            "earned": 40,
            "undo_depth": 4,
            "stuck": False,
        },
        *_counters(),
        Field("earned", COUNT, "What the actions so far earned, before time (section 6)."),
        Field("undo_depth", COUNT, "How many moves and deals undo can now take back (R18)."),
        Field("stuck", Bool(), "Whether the position is now stuck (R16); false clears it."),
    ),
    _event(
        "won",
        "All four suits are removed (R15): the game's results and, from the server, the "
        "level's statistics after this win.",
        {
            "moves": 151,
            "time_ms": 402000,
            "score": 2652,
            "suits": 4,
            "hints": 0,
            "undos": 2,
            "deal": 1,
            "stats": {
                "level": "hard",
                "winnable": False,
                "games": 12,
                "wins": 5,
                "losses": 7,
                "win_rate": 0.4166666666666667,
                "current_streak": 2,
                "best_streak": 2,
                "best_score": 2652,
                "fastest_win_ms": 402000,
                "fewest_moves": 151,
            },
        },
        Field("moves", COUNT, "Moves (R25)."),
        Field("time_ms", MILLISECONDS, "Play time at the win (R22)."),
        Field("score", COUNT, "Final score (R23, R24)."),
        Field("suits", Int(0, 4), "Suits removed (4)."),
        Field("hints", COUNT, "Hints (R20)."),
        Field("undos", COUNT, "Undos (R25)."),
        Field("deal", DEAL, "The deal number, shown from now on on every level (section 7)."),
        Field(
            "stats",
            Obj(STATS_ROW),
            "The level's statistics after the win, as read when the event was built: a "
            "`won` built again later (a catch-up on another node or after a restart) "
            "reads them then, and they may count later games too.",
            required=False,
        ),
    ),
    _event(
        "stuck",
        "No useful move is left and the stock is gone (R16): undo, restart or start anew.",
        {},
    ),
)

SERVER_EVENTS: tuple[MessageSpec, ...] = (
    _event(
        "clock",
        "The game's clock started or stopped (R22), or, running, was set: on a server of "
        "several nodes, to the play time another node counted (section 6); `time_ms` is "
        "the play time now.",
        {"running": False, "time_ms": 83000, "paused": True},
        Field("running", Bool(), "Whether play time is counting."),
        Field("time_ms", MILLISECONDS, "Play time when the clock changed."),
        Field(
            "paused",
            Bool(),
            "Whether the game is paused now: the view's `paused` (absent from an older "
            "server's event).",
            required=False,
        ),
    ),
    _event(
        "lost_position",
        "The solver proved that the position can no longer be won. Checked when a game "
        "starts (so a deal that cannot be won is said at once), after each action and at the "
        "first open_game of a game the server had not checked; a connection that opens a "
        "game already proved lost at its current version is told again. A hint leaves the "
        "position as it was: after a hint in a position proved lost, it is said again, of "
        "the hint's version, and a verdict found after hints were asked is said of the "
        "last one's.",
        {"from_deal": False},
        Field(
            "from_deal",
            Bool(),
            "`true`: the deal itself is proved lost, whatever is played (say so: no move "
            "spoiled it). `false`: the deal is not proved lost (the solver won it, or did not "
            "decide it): the position was lost by the moves since, and undo may still help.",
        ),
    ),
    _event(
        "game_lost",
        "The game is lost (R17): the player resigned, or abandoned it for a new game.",
        {"reason": "resigned", "deal": 1},
        Field("reason", Str(choices=("resigned", "abandoned")), "Why."),
        Field("deal", DEAL, "The deal number, shown from now on on every level (section 7)."),
    ),
    _event(
        "snapshot",
        "The whole position at this push's `v`, replacing what the client has, whatever "
        "version it saw before: sent instead of the events that led here when those would "
        "name a card that is face down again (section 5).",
        {"view": EXAMPLE_VIEW},
        Field("view", Obj(VIEW), "The game's view, as in a `game` reply."),
    ),
)

EVENTS: dict[str, MessageSpec] = {spec.type: spec for spec in ENGINE_EVENTS + SERVER_EVENTS}

EVENT = Tagged("event", "event", tuple(spec.shape for spec in EVENTS.values()))

EVENT_BATCH = Shape(
    "event_batch",
    "event batch",
    (
        Field("v", VERSION, "The game version this action produced."),
        Field("events", ListOf(EVENT), "The action's events, in order."),
    ),
    "The events of one action, as catch_up replays them.",
    extensible=True,
)
