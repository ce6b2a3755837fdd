"""Field types and objects shared by several messages.

Scalars first (game ids, versions, cards...), then the objects replies nest:
``player``, ``game_summary``, ``stats_row``, ``result`` and the game ``view``
with its ``column``. The view mirrors ``engine.view.public_view``; a test
checks real engine views against it.
"""

from __future__ import annotations

from typing import Any

from protocol.constants import (
    LEVELS,
    LOCALES,
    MAX_CARD_CHARS,
    MAX_DEAL,
    MAX_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_SAFE_INT,
)
from protocol.fields import AnyOf, Bool, Field, Float, Int, ListOf, Null, Obj, Shape, Str

__all__ = [
    "CARD",
    "CARD_INPUT",
    "COLUMN",
    "COLUMN_VIEW",
    "COUNT",
    "DEAL",
    "EXAMPLE_VIEW",
    "GAME_ID",
    "GAME_SUMMARY",
    "HINT_ACTION",
    "HINT_REASON",
    "LEVEL",
    "LIMITS",
    "LOCALE",
    "MILLISECONDS",
    "NAME",
    "PLAYER",
    "PLAYER_ID",
    "REQUEST_ID",
    "RESULT",
    "SHARED_SHAPES",
    "STATS_ROW",
    "STATUS",
    "SUIT",
    "TIMESTAMP",
    "VERSION",
    "VIEW",
]

GAME_ID = Int(1, MAX_SAFE_INT)
PLAYER_ID = Int(1, MAX_SAFE_INT)
VERSION = Int(0, MAX_SAFE_INT)
COUNT = Int(0)
MILLISECONDS = Int(0)
DEAL = Int(1, MAX_DEAL)
COLUMN = Int(1)
REQUEST_ID = AnyOf((Int(), Str(1, MAX_ID_CHARS, no_nul=True)))
LEVEL = Str(choices=LEVELS)
LOCALE = Str(choices=LOCALES)
STATUS = Str(choices=("active", "won", "lost"))
SUIT = Str(choices=("S", "H", "D", "C"))
NAME = Str(1, MAX_NAME_CHARS, printable=True)
# Canonical (R2): what the server sends.
CARD = Str(pattern="[A2-9TJQK][SHDC]", label="card", anchor="8-cards-columns-and-levels")
CARD_INPUT = Str(1, MAX_CARD_CHARS)  # any spelling; the engine parses it (R2)
TIMESTAMP = Str(
    pattern=r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
    format="date-time",
)

PLAYER = Shape(
    "player",
    "player",
    (
        Field("id", PLAYER_ID, "The player's id."),
        Field("name", NAME, "The name the player registered with."),
    ),
    "A registered player.",
    extensible=True,
)

GAME_SUMMARY = Shape(
    "game_summary",
    "game summary",
    (
        Field("game", GAME_ID, "The game's id."),
        Field("level", LEVEL, "The game's level (rules.md, level table)."),
        Field("status", STATUS, "`active` (unfinished), `won` or `lost` (R17)."),
        Field("v", VERSION, "The game's current version."),
        Field("moves", COUNT, "Moves so far (R25)."),
        Field("score", COUNT, "Score so far (R23, R24)."),
        Field("time_ms", MILLISECONDS, "Play time so far (R22)."),
        Field(
            "deal",
            AnyOf((DEAL, Null())),
            "The deal number; null while the game is unfinished and its deal was drawn by the "
            "server (section 7).",
        ),
        Field("started", TIMESTAMP, "When the game was created (UTC)."),
        Field("updated", TIMESTAMP, "When the game last changed (UTC)."),
        Field(
            "winnable",
            Bool(),
            "`true` for a game asked for as winnable on a level other than easy (absent "
            "otherwise: on easy every deal is a winnable one, and its games share one "
            "stats row).",
            required=False,
        ),
    ),
    "One line of a player's game list.",
    extensible=True,
)

_OPTIONAL_INT = AnyOf((Int(0), Null()))

STATS_ROW = Shape(
    "stats_row",
    "stats row",
    (
        Field("level", LEVEL, "The level these figures are for."),
        Field(
            "winnable",
            Bool(),
            "`true`: the row of games asked for as winnable (`new_game` with `winnable`); "
            "`false`: the row of the level's other games (random or chosen deals; on easy, "
            "every game). The two rows never mix: a winnable streak is not the level's streak.",
        ),
        Field("games", COUNT, "Finished games (won + lost)."),
        Field("wins", COUNT, "Games won."),
        Field("losses", COUNT, "Games lost (resigned or abandoned, R17)."),
        Field("win_rate", Float(0.0, 1.0), "wins / games; 0 when no game is finished."),
        Field("current_streak", COUNT, "Wins in a row up to the latest finished game."),
        Field("best_streak", COUNT, "The longest run of wins."),
        Field(
            "best_score",
            _OPTIONAL_INT,
            "The best score of a finished game, won or lost; null before the first one ends.",
        ),
        Field("fastest_win_ms", _OPTIONAL_INT, "The shortest won game's play time, or null."),
        Field("fewest_moves", _OPTIONAL_INT, "The fewest moves of a won game, or null."),
    ),
    "A player's statistics on one level.",
    extensible=True,
)

RESULT = Shape(
    "result",
    "result",
    (
        Field("won", Bool(), "Whether the game was won."),
        Field("score", COUNT, "Final score."),
        Field("moves", COUNT, "Moves (R25)."),
        Field("undos", COUNT, "Undos (R25)."),
        Field("hints", COUNT, "Hints requested (R20)."),
        Field("suits_removed", Int(0, 4), "Suits moved to the foundations (R14)."),
        Field("time_ms", MILLISECONDS, "Play time (R22)."),
    ),
    "The record of a finished game.",
    extensible=True,
)

_PER_SECOND = Float(0)

RATE = Shape(
    "rate",
    "rate",
    (
        Field("per_s", _PER_SECOND, "Requests a second, on average."),
        Field("burst", _PER_SECOND, "Requests at once after a quiet spell (the bucket's size)."),
    ),
    "A request rate limit: a token bucket that refills at `per_s` a second up to `burst`.",
)

_RATE_OR_OFF = AnyOf((Obj(RATE), Null()))

RATES = Shape(
    "rates",
    "rates",
    (
        Field(
            "action",
            _RATE_OR_OFF,
            "`move`, `deal`, `undo`, `restart`, `resign`, `pause`, `resume`; null: unlimited.",
        ),
        Field("game", _RATE_OR_OFF, "`new_game`; null: unlimited."),
        Field("hint", _RATE_OR_OFF, "`hint`; null: unlimited."),
        Field("read", _RATE_OR_OFF, "Every other request, `ping` included; null: unlimited."),
        Field(
            "register",
            _RATE_OR_OFF,
            "`register` (per connection and address), `rotate_token` and `sign_out` (per "
            "connection and player); null: unlimited.",
        ),
        Field(
            "auth",
            _RATE_OR_OFF,
            "`hello`s whose token is refused, per address; null: unlimited.",
        ),
        Field(
            "connect",
            _RATE_OR_OFF,
            "New connections (WebSocket or plain HTTP) per address, counted as they are "
            "accepted; one beyond is closed at once, unanswered (through a trusted proxy: "
            "answered HTTP 429 with Retry-After). Null: unlimited.",
        ),
    ),
    "The rate limits (section 10): of each kind of request, per connection (shared at the "
    "limits' factors) unless said otherwise, and of new connections per address.",
    extensible=True,
)

LIMITS = Shape(
    "limits",
    "limits",
    (
        Field(
            "hello_timeout_ms",
            Int(1),
            "A connection that has not said `hello` this long after it opened is closed (1008).",
        ),
        Field(
            "idle_timeout_ms",
            Int(0),
            "A connection that sends no message for this long is closed (1001); 0: never. "
            "Send `ping` more often than this to stay connected while nobody plays.",
        ),
        Field(
            "rates",
            Obj(RATES),
            "Each kind's rate: per connection, and shared by a player's connections and "
            "an address's at the factors below (section 10 says which kinds are counted where).",
        ),
        Field(
            "player_factor",
            Int(1),
            "A player's connections share buckets this many times a connection's.",
        ),
        Field(
            "address_factor",
            Int(1),
            "An address's connections share buckets this many times a connection's.",
        ),
        Field(
            "abuse_limit",
            Int(1),
            "More `bad_request` or early `rate_limited` replies than this to one address "
            "within `abuse_window_s` close its connection (1008).",
        ),
        Field("abuse_window_s", Int(1), "The window of `abuse_limit`, in seconds."),
        Field(
            "max_game_watchers",
            Int(1),
            "Connections one game may be open on at this node (`too_many_watchers` beyond).",
        ),
        Field(
            "max_versions",
            Int(1),
            "The highest version a game may reach by its actions and hints (`game_too_long` "
            "beyond; `resign` is still taken).",
        ),
    ),
    "This server node's limits (section 10), as its operator set them.",
    extensible=True,
)

COLUMN_VIEW = Shape(
    "column",
    "column",
    (
        Field(
            "down",
            COUNT,
            "How many face-down cards lie at the bottom (their names are never sent).",
        ),
        Field("cards", ListOf(CARD), "The face-up cards, bottom to top."),
    ),
    "One tableau column as a player sees it.",
    extensible=True,
)

VIEW = Shape(
    "view",
    "view",
    (
        Field("level", LEVEL, "The game's level."),
        Field(
            "deal",
            AnyOf((DEAL, Null())),
            "The deal number; null while the game is unfinished and its deal was drawn by the "
            "server (section 7).",
        ),
        Field("columns", ListOf(Obj(COLUMN_VIEW)), "Columns 1..7 (10 on three-blind-mice)."),
        Field(
            "stock",
            COUNT,
            "How many cards the stock holds: 3 until it is dealt, then 0; always 0 on "
            "three-blind-mice, which has no stock (R5).",
        ),
        Field("reserve", ListOf(CARD), "The face-up reserve (three-blind-mice, R5); else []."),
        Field("foundations", ListOf(SUIT), "Removed suits in slot order (R14)."),
        Field("score", COUNT, "Score at the view's play time (R23, R24)."),
        Field("moves", COUNT, "Moves (R25)."),
        Field("undos", COUNT, "Undos (R25)."),
        Field("hints", COUNT, "Hints (R20)."),
        Field("time_ms", MILLISECONDS, "Play time (R22) when the view was taken."),
        Field(
            "running",
            Bool(),
            "Whether play time is counting: add the time elapsed since (section 6).",
        ),
        Field(
            "paused",
            Bool(),
            "The player paused the game (R22, section 6): its clock stands until `resume`, "
            "and move, deal, undo, restart and hint are refused with `paused`. A view "
            "whose `running` is false and `paused` false is of a game whose clock starts "
            "with the `clock` event that follows the opening. False once the game is over "
            "(a `won` or `game_lost` event ends the pause too). Sent by this version on; "
            "absent from an older server's view (read it as false).",
            required=False,
        ),
        Field("undo_depth", COUNT, "How many moves and deals undo can still take back (R18)."),
        Field("won", Bool(), "The game is won (R15)."),
        Field("stuck", Bool(), "No useful move is left and the stock is gone (R16)."),
        Field("status", STATUS, "`active` (unfinished), `won` or `lost` (R17)."),
        Field(
            "scoring",
            Str(choices=("points", "timed")),
            "The level's scoring: `points` (R23) or `timed` (R24); section 6 computes it.",
        ),
        Field("earned", COUNT, "What the actions so far earned, before time (section 6)."),
    ),
    "A game's position and record as its player sees it: no face-down or stock card.",
    extensible=True,
)

SHARED_SHAPES = (PLAYER, GAME_SUMMARY, STATS_ROW, RESULT, VIEW, COLUMN_VIEW, LIMITS, RATES, RATE)

# The view of hard deal 1 before the first move (a real engine view; a test checks it).
EXAMPLE_VIEW: dict[str, Any] = {
    "level": "hard",
    "deal": 1,
    "columns": [
        {"down": 3, "cards": ["AS", "4H", "TH", "8D"]},
        {"down": 3, "cards": ["AH", "AC", "8H", "QS"]},
        {"down": 3, "cards": ["3C", "4D", "2C", "6C"]},
        {"down": 3, "cards": ["4C", "7S", "JH", "3D"]},
        {"down": 0, "cards": ["5D", "5S", "9D", "5C", "3S", "7D", "8C"]},
        {"down": 0, "cards": ["7H", "AD", "QD", "TS", "TD", "6D", "TC"]},
        {"down": 0, "cards": ["7C", "QC", "JS", "QH", "4S", "8S", "6S"]},
    ],
    "stock": 3,
    "reserve": [],
    "foundations": [],
    "score": 0,
    "moves": 0,
    "undos": 0,
    "hints": 0,
    "time_ms": 0,
    "running": False,
    "paused": False,
    "undo_depth": 0,
    "won": False,
    "stuck": False,
    "status": "active",
    "scoring": "timed",
    "earned": 0,
}

HINT_ACTION = Str(choices=("move", "deal", "none"))
"""What a hint suggests (the ``hint`` reply and event, a replay's suggestion)."""
HINT_REASON = Str(choices=("lost", "seen", "stuck"))
"""Why a hint is ``none``: the planner's reasons (``engine.solver.plan``)."""
