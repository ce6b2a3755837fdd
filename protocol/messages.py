"""The message catalogue of protocol version 1: every message type, as data.

``REQUESTS`` (client -> server), ``REPLIES`` and ``PUSHES`` (server ->
client) map a type to its ``MessageSpec``; ``SERVER_MESSAGES`` is the two
server dictionaries together (a type may name both a request and a reply:
``hint``, ``games``, ``stats``, ``replay``). Events live in
``protocol.events``. The codec validates against these specs, ``schema.py``
and ``docs.py`` render them, and every example is checked by the tests.

The running example is one session: player 7 ("ada") plays game 42 on level
hard, deal 1; the view below is that deal's real opening position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.constants import (
    GAMES_LIST_LIMIT,
    INT32_MAX,
    INT32_MIN,
    MAX_CLIENT_CHARS,
    MAX_TOKEN_CHARS,
    MIN_OWN_TOKEN_CHARS,
    OWN_TOKEN_PATTERN,
    REPLAY_PAGE_ACTIONS,
    SUPPORTED_VERSIONS,
)
from protocol.errors import ERROR_CODES
from protocol.events import EVENT, EVENT_BATCH
from protocol.fields import AnyOf, Bool, Choice, Field, Int, ListOf, Null, Obj, Str
from protocol.replay import REPLAY
from protocol.shapes import (
    CARD,
    CARD_INPUT,
    COLUMN,
    DEAL,
    EXAMPLE_VIEW,
    GAME_ID,
    GAME_SUMMARY,
    HINT_ACTION,
    HINT_REASON,
    LEVEL,
    LIMITS,
    LOCALE,
    MILLISECONDS,
    NAME,
    PLAYER,
    REQUEST_ID,
    RESULT,
    STATS_ROW,
    STATUS,
    VERSION,
    VIEW,
)
from protocol.spec import Kind, MessageSpec
from protocol.version import version

__all__ = [
    "ALL_MESSAGES",
    "EXAMPLE_VIEW",
    "PUSHES",
    "REPLIES",
    "REQUESTS",
    "SERVER_MESSAGES",
]

_RULES_MOVE = (
    "not_face_up",
    "bad_column",
    "same_column",
    "empty_column_kings_only",
    "not_one_lower",
    "same_suit_required",
    "no_destination",
)
_GAME_ACCESS = ("unauthenticated", "not_found")
_OPEN_ACCESS = (*_GAME_ACCESS, "not_open")
_ACTION_ERRORS = (*_OPEN_ACCESS, "stale", "id_reused", "game_over", "paused", "game_too_long")
_TOKEN = Str(1, MAX_TOKEN_CHARS)
_OWN_TOKEN = Str(pattern=OWN_TOKEN_PATTERN)
_PROTOCOL = Int(choices=SUPPORTED_VERSIONS)
HINT_REASON_DOC = (
    "With action `none`, why: `seen` (every move leads back to a position this game has "
    "already been in: undo or restart to try another way), `stuck` (no move and no stock, "
    "R16); `lost` (the solver proved that no sequence of actions wins from here) only in "
    "hints recorded by earlier versions of the server, which gave no move there."
)


def _game() -> Field:
    return Field("game", GAME_ID, "The game's id.")


def _v(doc: str = "The game version the client last saw.") -> Field:
    return Field("v", VERSION, doc)


def _request(
    type_: str, doc: str, replies: tuple[str, ...], errors: tuple[str, ...], *examples: Any
) -> Callable[..., MessageSpec]:
    """Curried: ``_request(...)(*fields)`` reads like the table it becomes."""

    def with_fields(*fields: Field) -> MessageSpec:
        return MessageSpec(type_, Kind.REQUEST, fields, doc, examples, replies, errors)

    return with_fields


REQUEST_SPECS: tuple[MessageSpec, ...] = (
    _request(
        "hello",
        "The first request on every connection: states the protocol version, the client "
        "and its language, and (with a token) who the player is. Once the connection acts as "
        "a player, only a hello with that player's token is answered (section 3).",
        ("welcome",),
        ("unsupported_version", "unauthenticated", "already_signed_in"),
        {
            "type": "hello",
            "id": 1,
            "protocol": 1,
            "client": f"scorpion-cli/{version()}",
            "locale": "en",
        },
        {
            "type": "hello",
            "id": "h1",
            "protocol": 1,
            "client": "web/2.3",
            "locale": "fi",
            "token": "sq7Hc1cX0hO3tqX2mYd8ZgK4vN6bW1eR9tY3uI5oP7a",
        },
    )(
        Field("protocol", _PROTOCOL, "The protocol version the client speaks."),
        Field("client", Str(1, MAX_CLIENT_CHARS), "The client's name and version."),
        Field("locale", LOCALE, "The language of error messages."),
        Field("token", _TOKEN, "A token from `registered`: act as that player.", required=False),
    ),
    _request(
        "register",
        "Creates a player, makes this connection act as it, and returns its token. "
        "The token is shown once: keep it to say hello as this player later. A connection "
        "that already acts as a player cannot register (section 3).",
        ("registered",),
        ("duplicate_name", "already_signed_in"),
        {"type": "register", "id": 2, "name": "ada"},
    )(
        Field(
            "name",
            NAME,
            "The player's name, unique among players. It is stored trimmed of leading and "
            "trailing space and in Unicode NFC, so show the reply's `player.name`. Its length "
            "bound holds as sent and again for that stored form, which NFC may make "
            "longer: U+0958 DEVANAGARI LETTER QA is two code points in NFC, so a name of 20 of "
            "them counts 40 and is `bad_request`. Two names "
            "that differ only in case or Unicode compatibility form (`EVE`, `eve`, `ｅｖｅ`) "
            "are the same name (`duplicate_name`). No character of a name may show as nothing: "
            "none of Unicode's Default_Ignorable_Code_Point (such as U+034F COMBINING GRAPHEME "
            "JOINER, U+200B ZERO WIDTH SPACE, a variation selector after a Latin, Greek or "
            "Cyrillic letter or an ASCII character) and no blank one (the Hangul fillers "
            "U+115F, U+1160, U+3164 and U+FFA0, U+2800 BRAILLE PATTERN BLANK); such a name is "
            "`bad_request`. A variation selector right after a character past U+052F (an "
            "emoji, a kanji, a Mongolian letter) or in a keycap (`1` U+FE0F U+20E3) changes "
            "how that character shows, and is taken.",
        ),
    ),
    _request(
        "new_game",
        "Starts a game and opens it on this connection. Without `deal` the server picks one "
        "(on easy, always one the solver has won, dealt to no other game: choosing it there "
        "is `forbidden`). With `winnable: true` it deals, on any level, a deal the solver "
        "has won under that level's rules, chosen the same way; such games keep statistics "
        "of their own (a stats row with `winnable: true`), and their deal number is withheld "
        "until they end. When the server has no such deal ready (a fresh server, or all "
        "dealt) it searches for one for up to 3 s, then answers `unavailable`: retry "
        "shortly. "
        "Abandoning an unfinished game loses it (R17), so a `new_game` is not a retry of "
        "itself: sent again after a lost reply, it starts a second game and loses the first. "
        "Reconnect instead: the game it started, if it did, is the unfinished game in "
        "`welcome`'s `games` that you did not know (section 5, Retries).",
        ("game",),
        ("unauthenticated", "forbidden", "unavailable"),
        {"type": "new_game", "id": 3, "level": "hard", "deal": 1},
        {"type": "new_game", "id": 4, "level": "easy"},
        {"type": "new_game", "id": 5, "level": "relaxed", "winnable": True},
    )(
        Field("level", LEVEL, "The level (rules.md, level table)."),
        Field("deal", DEAL, "The deal number (docs/deals.md).", required=False),
        Field(
            "winnable",
            Bool(),
            "Deal a deal the solver has won under this level's rules (no `deal` with it: "
            "`forbidden`). On easy every deal is one already.",
            required=False,
        ),
    ),
    _request(
        "open_game",
        "Watches a game on this connection (its events are pushed here) and returns it: a "
        "`game` snapshot, or with `since` the `catch_up` of what happened after that version "
        "(a snapshot when the server cannot give those events, section 5: among other "
        "cases, when `since` is more than 500 versions behind, by default).",
        ("game", "catch_up"),
        (*_GAME_ACCESS, "too_many_watchers"),
        {"type": "open_game", "id": 5, "game": 42},
        {"type": "open_game", "id": 6, "game": 42, "since": 1},
    )(
        _game(),
        Field("since", VERSION, "The last version the client saw.", required=False),
    ),
    _request(
        "close_game",
        "Stops watching a game on this connection (its clock stops when nobody watches).",
        ("ack",),
        _GAME_ACCESS,
        {"type": "close_game", "id": 7, "game": 42},
    )(_game()),
    _request(
        "move",
        "Moves a face-up card with everything on it (R7) to column `to`; without `to` the "
        "server picks the destination (auto-move, R11).",
        ("ack",),
        (*_ACTION_ERRORS, *_RULES_MOVE),
        {"type": "move", "id": 8, "game": 42, "v": 1, "card": "7C", "to": 5},
        {"type": "move", "id": 9, "game": 42, "v": 2, "card": "10h"},
    )(
        _game(),
        _v(),
        Field(
            "card",
            CARD_INPUT,
            "The card, in any spelling R2 accepts (`TH`, `th`, `10h`), with no white space "
            "around it (section 8).",
        ),
        Field(
            "to",
            Int(INT32_MIN, INT32_MAX),
            "Destination column, 1-based (R3); a column that does not exist is `bad_column`.",
            required=False,
        ),
    ),
    _request(
        "deal",
        "Deals the stock onto columns 1, 2 and 3 (R13).",
        ("ack",),
        (*_ACTION_ERRORS, "stock_empty", "stock_not_allowed"),
        {"type": "deal", "id": 10, "game": 42, "v": 2},
    )(_game(), _v()),
    _request(
        "undo",
        "Takes back the last move or deal with everything it caused (R18).",
        ("ack",),
        (*_ACTION_ERRORS, "nothing_to_undo"),
        {"type": "undo", "id": 11, "game": 42, "v": 3},
    )(_game(), _v()),
    _request(
        "restart",
        "Rewinds the game to its deal (R19).",
        ("ack",),
        _ACTION_ERRORS,
        {"type": "restart", "id": 12, "game": 42, "v": 4},
    )(_game(), _v()),
    _request(
        "hint",
        "Asks for one useful move (R20). Hints are counted and recorded, so the version grows. "
        "Where the solver has a winning line the hint is its next step, so following the hints "
        "wins without meeting a position twice; otherwise it is the best move by the heuristic "
        "that does not lead back to a position this game has been in, one not proved lost "
        "before one that is. A position proved lost still gets a move while it has one (that "
        "it is lost is said by `lost_position`); `none` (with a `reason`) only when every move "
        "leads back, or there is none. A whole column is never "
        "hinted into an empty column, unless the stock is still to come and one of the two "
        "columns is among those the deal covers. Asked again at a position the game was in "
        "before (after an undo), the hint is the same winning step again: a client offering "
        '"another hint" should undo further, or restart. A hint has no `v` and is not '
        "recognised when resent: one answered `internal` or `unavailable` may have been "
        "recorded all the same (the database committed it as the server stopped waiting, or "
        "later), "
        "and its `hint` event then reaches the game's watchers; asking again records another.",
        ("hint",),
        (*_OPEN_ACCESS, "game_over", "paused", "game_too_long"),
        {"type": "hint", "id": 13, "game": 42},
    )(_game()),
    _request(
        "pause",
        "Stops the game's clock (R22) until `resume`; the game stays open. While paused, "
        "move, deal, undo, restart and hint are refused with `paused`. A paused game "
        "stays paused when its connections close, on every device, and across server restarts. "
        "Pausing a paused game, or a finished one (whose clock has stopped), is acknowledged "
        "and changes nothing.",
        ("ack",),
        _OPEN_ACCESS,
        {"type": "pause", "id": 14, "game": 42},
    )(_game()),
    _request(
        "resume",
        "Restarts a paused game's clock. Resuming a game that is not paused, or a finished "
        "one, is acknowledged and changes nothing.",
        ("ack",),
        _OPEN_ACCESS,
        {"type": "resume", "id": 15, "game": 42},
    )(_game()),
    _request(
        "resign",
        "Gives the game up: it is lost (R17).",
        ("ack",),
        (*_OPEN_ACCESS, "game_over"),
        {"type": "resign", "id": 16, "game": 42},
    )(_game()),
    _request(
        "games",
        "Lists the player's games, newest first (by `started`), optionally only those of "
        f"one status. There is no paging: a reply holds the newest {GAMES_LIST_LIMIT} (of "
        "that status), and older ones are not listed.",
        ("games",),
        ("unauthenticated",),
        {"type": "games", "id": 17},
        {"type": "games", "id": 18, "status": "active"},
    )(Field("status", STATUS, "Only games of this status.", required=False)),
    _request(
        "stats",
        "The player's statistics: one row for every level, in the level table's order "
        "(easy, medium, hard, classic, relaxed, three-blind-mice), or only the given level's; "
        "a level on which the player finished a game asked for as winnable has a second row "
        "for those, right after (`winnable: true`).",
        ("stats",),
        ("unauthenticated",),
        {"type": "stats", "id": 19, "level": "hard"},
    )(Field("level", LEVEL, "Only this level.", required=False)),
    _request(
        "replay",
        "A game's replay document and result; both null while the game is unfinished. "
        f"A reply holds at most {REPLAY_PAGE_ACTIONS} actions: while it has a `next`, "
        "ask again with `from` set to it and append the page's `actions`.",
        ("replay",),
        _GAME_ACCESS,
        {"type": "replay", "id": 20, "game": 41},
        {"type": "replay", "id": 21, "game": 41, "from": REPLAY_PAGE_ACTIONS},
    )(
        _game(),
        Field(
            "from",
            Int(0, INT32_MAX),
            "The index of the first action wanted (the `next` of the previous page); "
            "0 when left out. At or past the end, the page's `actions` is [] and the "
            "reply has no `next`.",
            required=False,
        ),
    ),
    _request(
        "ping",
        "Checks that the server answers (after hello, like every request).",
        ("pong",),
        (),
        {"type": "ping", "id": 21},
    )(),
    _request(
        "rotate_token",
        "Replaces the token this connection signed in with (hello or register) by a new one: "
        "the old token stops working at once, on every node (a hello with it is refused), "
        "and every other connection signed in with it is signed out: on this node at once, "
        "on another node as soon as that node hears of it (section 3, Tokens). Keep the new "
        "one. When that "
        "token no longer works (another device rotated it, it was revoked, or it expired: an "
        "expired token is never made a fresh one), the reply is `unauthenticated`, as a hello "
        "with it gets, and the connection is signed out, as after a refused hello. "
        "With `token`, the new token is the client's own: it keeps it before it asks, so "
        "that a reply lost on the way loses nothing (section 3, Tokens).",
        ("token",),
        ("unauthenticated", "bad_request"),
        {"type": "rotate_token", "id": 22},
        {"type": "rotate_token", "id": 22, "token": "q1Xw0Vb8Kd3Lm6Np9Rs2Tu5Wy7Za4Bc0De3Fg6Hj8Ik"},
    )(
        Field(
            "token",
            _OWN_TOKEN,
            f"The new token, made by the client: {MIN_OWN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} "
            "characters of the URL-safe base64 alphabet, from a secure random source (32 "
            "random bytes make 43). `bad_request` if the server has it already: a token in "
            "use, or one rotated away or revoked, of any player (revoked tokens are kept, "
            "hashed, so that no one takes up a leaked one). Make each new one from fresh "
            "random bytes. Sent again on a connection "
            "signed in with it, the reply is the same and nothing changes (a retry; so the "
            "token the connection signed in with, given as the new one, rotates nothing).",
            required=False,
        ),
    ),
    _request(
        "sign_out",
        "Signs this connection out: its games are closed, and requests that need a player "
        "answer `unauthenticated`. The token it signed in with keeps working: a player's "
        "other devices may use the same token (it is entered on each), and this device may "
        "sign in with it again; a client forgets it. With `everywhere`, every token of the "
        "player is revoked and every connection of the player is signed out too, on another "
        "server node as soon as it hears of it (section 3, Tokens): use it for a token that may "
        "have leaked, knowing that no device can "
        "sign in as the player again (`rotate_token` replaces a token and keeps the player).",
        ("signed_out",),
        ("unauthenticated",),
        {"type": "sign_out", "id": 23},
        {"type": "sign_out", "id": 24, "everywhere": True},
    )(
        Field("everywhere", Bool(), "Revoke every token of the player.", required=False),
    ),
)

_PLAYER_EXAMPLE = {"id": 7, "name": "ada"}
_SUMMARY_EXAMPLE = {
    "game": 42,
    "level": "hard",
    "status": "active",
    "v": 2,
    "moves": 1,
    "score": 10,
    "time_ms": 5300,
    "deal": 1,
    "started": "2025-03-01T09:30:00.000Z",
    "updated": "2025-03-01T09:31:12.250Z",
}
# The server's default limits (a test holds them to server.config's defaults).
_LIMITS_EXAMPLE = {
    "hello_timeout_ms": 10_000,
    "idle_timeout_ms": 900_000,
    "rates": {
        "action": {"per_s": 30.0, "burst": 120.0},
        "game": {"per_s": 0.2, "burst": 10.0},
        "hint": {"per_s": 3.0, "burst": 20.0},
        "read": {"per_s": 50.0, "burst": 200.0},
        "register": {"per_s": 0.2, "burst": 20.0},
        "auth": {"per_s": 0.2, "burst": 10.0},
        "connect": {"per_s": 20.0, "burst": 200.0},
    },
    "player_factor": 2,
    "address_factor": 16,
    "abuse_limit": 20,
    "abuse_window_s": 60,
    "max_game_watchers": 32,
    "max_versions": 10_000,
}
_RESIGNED_SUMMARY = {  # resigned: listed by games, not by welcome (its unfinished game only)
    **_SUMMARY_EXAMPLE,
    "game": 41,
    "level": "easy",
    "status": "lost",
    "v": 4,
    "moves": 3,
    "score": 0,
    "time_ms": 61000,
    "deal": 877,
}
_STATS_EXAMPLE = {
    "level": "hard",
    "winnable": False,
    "games": 11,
    "wins": 4,
    "losses": 7,
    "win_rate": 0.36363636363636365,
    "current_streak": 1,
    "best_streak": 2,
    "best_score": 2410,
    "fastest_win_ms": 515000,
    "fewest_moves": 160,
}
_MOVED = {"type": "moved", "card": "7C", "from": 7, "to": 5, "count": 7}
_SCORE = {
    "type": "score",
    "score": 10,
    "moves": 1,
    "undos": 0,
    "hints": 1,
    "earned": 10,
    "undo_depth": 1,
    "stuck": False,
}
_REPLAY_DOC = {
    "format": "scorpion-replay",
    "version": 1,
    "level": "hard",
    "deal": 7,
    "end_t": 41000,
    "actions": [{"type": "move", "card": "4H", "to": 7, "t": 5300}, {"type": "deal", "t": 9100}],
}
_RESULT_EXAMPLE = {
    "won": False,
    "score": 0,
    "moves": 2,
    "undos": 0,
    "hints": 0,
    "suits_removed": 0,
    "time_ms": 41000,
}


def _reply(type_: str, doc: str, *examples: dict[str, Any]) -> Callable[..., MessageSpec]:
    def with_fields(*fields: Field) -> MessageSpec:
        return MessageSpec(type_, Kind.REPLY, fields, doc, examples)

    return with_fields


REPLY_SPECS: tuple[MessageSpec, ...] = (
    _reply(
        "welcome",
        "Answers hello: the server's version, and the player with their unfinished games "
        "(player null and games [] without a token).",
        {
            "type": "welcome",
            "re": 1,
            "server": f"scorpion-server {version()}",
            "protocol": 1,
            "player": None,
            "games": [],
            "limits": _LIMITS_EXAMPLE,
        },
        {
            "type": "welcome",
            "re": "h1",
            "server": f"scorpion-server {version()}",
            "protocol": 1,
            "player": _PLAYER_EXAMPLE,
            "games": [_SUMMARY_EXAMPLE],
            "limits": _LIMITS_EXAMPLE,
        },
    )(
        Field(
            "server",
            Str(1, 64),
            "The server's name and version (this server: `scorpion-server` and its"
            " version, e.g. `scorpion-server 0.1.0`); a client tells what it may send by"
            " `protocol`, and by this only what section 11 lists as added in a later"
            " version.",
        ),
        Field("protocol", _PROTOCOL, "The protocol version of this connection."),
        Field("player", AnyOf((Obj(PLAYER), Null())), "Who the connection acts as, or null."),
        Field(
            "games",
            ListOf(Obj(GAME_SUMMARY)),
            "The player's unfinished games: at most one, since starting a game abandons "
            "the unfinished one (R17).",
        ),
        Field(
            "limits",
            Obj(LIMITS),
            "This server node's limits (section 10): its timeouts and rates as its operator "
            "set them. Sent by this version on; absent from an older server's welcome (its "
            "limits are then the defaults of section 10 or unknown).",
            required=False,
        ),
    ),
    _reply(
        "registered",
        "Answers register. The connection now acts as the new player.",
        {
            "type": "registered",
            "re": 2,
            "player": _PLAYER_EXAMPLE,
            "token": "sq7Hc1cX0hO3tqX2mYd8ZgK4vN6bW1eR9tY3uI5oP7a",
        },
    )(
        Field("player", Obj(PLAYER), "The new player."),
        Field("token", _TOKEN, "The player's secret; sent this once only."),
    ),
    _reply(
        "game",
        "A game's full snapshot: answers new_game, and open_game without `since` (or when "
        "the server cannot catch up from `since`, section 5).",
        {"type": "game", "re": 3, "game": 42, "v": 0, "view": EXAMPLE_VIEW},
        {"type": "game", "re": 4, "game": 43, "v": 0, "view": EXAMPLE_VIEW, "lost": 42},
    )(
        _game(),
        _v("The game's current version."),
        Field("view", Obj(VIEW), "The position and record."),
        Field("lost", GAME_ID, "A game this new_game abandoned, now lost (R17).", required=False),
    ),
    _reply(
        "catch_up",
        "Answers open_game with `since`: every version after `since`, oldest first, with the "
        "events that produced it (`events` is empty when nothing happened).",
        {
            "type": "catch_up",
            "re": 6,
            "game": 42,
            "v": 2,
            "events": [{"v": 2, "events": [_MOVED, _SCORE]}],
            "time_ms": 5300,
            "running": False,
            "paused": False,
        },
    )(
        _game(),
        _v("The game's current version."),
        Field("events", ListOf(Obj(EVENT_BATCH)), "One batch per version after `since`."),
        Field("time_ms", MILLISECONDS, "The play time now (batches hold no `clock` events)."),
        Field("running", Bool(), "Whether play time is counting now (section 6)."),
        Field(
            "paused",
            Bool(),
            "Whether the player paused the game (the view's `paused`; absent from an older "
            "server's).",
            required=False,
        ),
    ),
    _reply(
        "ack",
        "The request was applied (or, for close_game, pause and resume, taken note of); "
        "its events are pushed separately.",
        {"type": "ack", "re": 8, "game": 42, "v": 2},
    )(_game(), _v("The game's version after the request.")),
    _reply(
        "hint",
        "Answers hint (R20): `move` card `card` to column `to`, `deal` the stock, or `none`.",
        {"type": "hint", "re": 13, "game": 42, "v": 1, "action": "move", "card": "7C", "to": 5},
        {"type": "hint", "re": 13, "game": 42, "v": 9, "action": "none", "reason": "seen"},
    )(
        _game(),
        _v("The game's version after the hint."),
        Field("action", HINT_ACTION, "What the hint suggests."),
        Field("card", CARD, "The card to move (action `move`).", required=False),
        Field("to", COLUMN, "The column to move it to (action `move`).", required=False),
        Field("reason", HINT_REASON, HINT_REASON_DOC, required=False),
    ),
    _reply(
        "games",
        "Answers games.",
        {"type": "games", "re": 17, "games": [_SUMMARY_EXAMPLE, _RESIGNED_SUMMARY]},
    )(
        Field(
            "games",
            ListOf(Obj(GAME_SUMMARY)),
            f"The games, newest first: at most the newest {GAMES_LIST_LIMIT}.",
        )
    ),
    _reply(
        "stats",
        "Answers stats: one row for every level in the level table's order, zeros (and nulls) "
        "for a level with no finished game, each followed by the level's winnable games' row "
        "when there is one; with `level`, that level's rows only.",
        {"type": "stats", "re": 19, "stats": [_STATS_EXAMPLE]},
    )(Field("stats", ListOf(Obj(STATS_ROW)), "The rows.")),
    _reply(
        "replay",
        "Answers replay. A replay reveals every card, so only finished games have one.",
        {
            "type": "replay",
            "re": 20,
            "game": 41,
            "replay": _REPLAY_DOC,
            "result": _RESULT_EXAMPLE,
        },
        {"type": "replay", "re": 20, "game": 42, "replay": None, "result": None},
    )(
        _game(),
        Field(
            "replay",
            AnyOf((Obj(REPLAY), Null())),
            "The replay document (section 14); null while unfinished.",
        ),
        Field("result", AnyOf((Obj(RESULT), Null())), "The final record; null while unfinished."),
        Field(
            "next",
            Int(0, INT32_MAX),
            "The `from` of the next page of actions; absent on the last page (and while "
            "the game is unfinished).",
            required=False,
        ),
    ),
    _reply("pong", "Answers ping.", {"type": "pong", "re": 21})(),
    _reply(
        "token",
        "Answers rotate_token: the player's new token (the old one no longer works); the "
        "client's own when it gave one.",
        {"type": "token", "re": 22, "token": "Zb4J0x1mL9qQwErTy6UiOpLk2Hs8Dn5Fg3Jm7Qc1Vx9"},
    )(Field("token", _TOKEN, "The new secret; sent this once only.")),
    _reply(
        "signed_out",
        "Answers sign_out: how many tokens were revoked (0 without `everywhere`).",
        {"type": "signed_out", "re": 23, "revoked": 1},
    )(Field("revoked", Int(0), "Tokens that no longer work.")),
    _reply(
        "error",
        "The request was refused or failed; nothing was applied, except after `internal` "
        "or `unavailable`, which may come for a request the database committed all the same "
        "(section 9 says how to know). `re` is absent when the request's id could not be read.",
        {
            "type": "error",
            "re": 10,
            "code": "stale",
            "message": "The game is at version 3, not 2.",
            "v": 3,
        },
        {
            "type": "error",
            "re": 9,
            "code": "no_destination",
            "message": "TH has nowhere to go.",
        },
        {
            "type": "error",
            "re": 1,
            "code": "unsupported_version",
            "message": "protocol 2 is not supported; this server speaks 1",
            "supported": [1],
        },
        {
            "type": "error",
            "re": 11,
            "code": "rate_limited",
            "message": "Too many read requests; retry in 250 ms.",
            "retry_after_ms": 250,
        },
        {
            "type": "error",
            "code": "bad_request",
            "message": "a request needs an id (an int, or a string of 1..64 characters)",
        },
    )(
        Field("re", REQUEST_ID, "The request's id, when it could be read.", required=False),
        Field("code", Choice("error code", "9-errors", ERROR_CODES), "A stable code."),
        Field("message", Str(), "Readable, in the hello's locale when the server has one."),
        Field("v", VERSION, "With `stale`: the game's current version.", required=False),
        Field(
            "supported",
            ListOf(Int(1)),
            "With `unsupported_version`: the versions the server speaks.",
            required=False,
        ),
        Field(
            "retry_after_ms",
            Int(0, INT32_MAX),
            "With `rate_limited`: wait at least this long before sending that kind again.",
            required=False,
        ),
    ),
)

PUSH_SPECS: tuple[MessageSpec, ...] = (
    MessageSpec(
        "events",
        Kind.PUSH,
        (
            _game(),
            _v("The game's version after the change."),
            Field("events", ListOf(EVENT), "What happened, in order."),
        ),
        "Pushed to every connection that has the game open, the acting one included, "
        "after each change.",
        (
            {"type": "events", "game": 42, "v": 2, "events": [_MOVED, _SCORE]},
            {
                "type": "events",
                "game": 42,
                "v": 2,
                "events": [{"type": "clock", "running": True, "time_ms": 5300, "paused": False}],
            },
        ),
    ),
)

REQUESTS: dict[str, MessageSpec] = {spec.type: spec for spec in REQUEST_SPECS}
REPLIES: dict[str, MessageSpec] = {spec.type: spec for spec in REPLY_SPECS}
PUSHES: dict[str, MessageSpec] = {spec.type: spec for spec in PUSH_SPECS}
SERVER_MESSAGES: dict[str, MessageSpec] = {**REPLIES, **PUSHES}
ALL_MESSAGES: tuple[MessageSpec, ...] = REQUEST_SPECS + REPLY_SPECS + PUSH_SPECS
