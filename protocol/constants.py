"""Every fixed number and name of protocol version 1, in one place.

The message catalogue (``protocol.messages``), the codec, the schema and
PROTOCOL.md all read these values; nothing else in the package spells them.

``LEVELS`` and ``LOCALES`` repeat the engine's level names and message
languages because ``protocol`` imports nothing of ours (architecture.md); a
test compares them with ``engine.levels`` and ``engine.errors``.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ABUSE_LIMIT",
    "ABUSE_WINDOW_SECONDS",
    "CONTROL_FRAMES_BURST",
    "CONTROL_FRAMES_PER_S",
    "GAMES_LIST_LIMIT",
    "INT32_MAX",
    "INT32_MIN",
    "LEVELS",
    "LOCALES",
    "MAX_CARD_CHARS",
    "MAX_CLIENT_CHARS",
    "MAX_DEAL",
    "MAX_FRAME_BYTES",
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SAFE_INT",
    "MAX_SERVER_FRAME_BYTES",
    "MAX_TOKEN_CHARS",
    "MIN_OWN_TOKEN_CHARS",
    "OPEN_GAMES_LIMIT",
    "OWN_TOKEN_PATTERN",
    "PROTOCOL_VERSION",
    "RATE_KINDS",
    "REPLAY_PAGE_ACTIONS",
    "SUBPROTOCOL",
    "SUPPORTED_VERSIONS",
]

PROTOCOL_VERSION: Final = 1
SUPPORTED_VERSIONS: Final = (1,)
SUBPROTOCOL: Final = "scorpion.v1"

# Frames and abuse. A larger frame closes the connection with 1009; more than
# ABUSE_LIMIT bad_request or rate_limited replies within ABUSE_WINDOW_SECONDS to one
# address close its connection with 1008 (the server may be configured tighter or looser).
MAX_FRAME_BYTES: Final = 64 * 1024
# Server frames (a long game's catch_up or replay) may be larger, never above this.
MAX_SERVER_FRAME_BYTES: Final = 1024 * 1024
ABUSE_LIMIT: Final = 20
ABUSE_WINDOW_SECONDS: Final = 60.0
# Frames that carry no message of their own: WebSocket pings and pongs, and the pieces of
# a message sent in fragments. A connection may send CONTROL_FRAMES_PER_S a second, and
# CONTROL_FRAMES_BURST at once; one more closes it with 1008, unanswered. The server
# answers each ping with a pong at once, before any request's limit is asked: without
# this bound one connection flooding pings kept the server from everyone else.
CONTROL_FRAMES_PER_S: Final = 20
CONTROL_FRAMES_BURST: Final = 100
# A replay reply carries at most this many actions; `next` asks for the rest.
REPLAY_PAGE_ACTIONS: Final = 2000
# A games reply lists at most this many games, the newest: a summary takes up to some
# 230 bytes, so the list stays far within a server frame however many games a player has.
GAMES_LIST_LIMIT: Final = 1000
# A connection keeps at most this many games open. Past it, opening or starting one more
# closes the finished game it opened first: a player has one unfinished game at most (R17),
# and a finished game never changes again, so only its place in memory is given up.
OPEN_GAMES_LIMIT: Final = 32

# Lengths, in characters (Unicode code points).
MAX_ID_CHARS: Final = 64
MAX_CLIENT_CHARS: Final = 64
MAX_NAME_CHARS: Final = 32
MAX_CARD_CHARS: Final = 8
MAX_TOKEN_CHARS: Final = 128
MIN_OWN_TOKEN_CHARS: Final = 43  # a token a client makes itself: 32 random bytes in base64url
OWN_TOKEN_PATTERN: Final = (
    f"[A-Za-z0-9_-]{{{MIN_OWN_TOKEN_CHARS},{MAX_TOKEN_CHARS}}}"  # rotate_token's token
)

# Integer ranges. Every integer on the wire, in either direction, is within
# +-MAX_SAFE_INT (2**53 - 1): a JavaScript number holds it exactly, so a client
# with a default msgpack decoder never rounds an id, a version or a deal number.
# `to` is an int32 (its real range, 1..columns, is a rule: engine code bad_column).
MAX_SAFE_INT: Final = 2**53 - 1
INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
MAX_DEAL: Final = MAX_SAFE_INT  # the engine knows deals up to 10**20 (docs/deals.md)

LEVELS: Final = ("easy", "medium", "hard", "classic", "relaxed", "three-blind-mice")
LOCALES: Final = ("en", "fi", "ru")

# The kinds of request the server's rate limits count apart (PROTOCOL.md section 10): a
# rate_limited reply's retry_after_ms holds its kind. Every request not named is a read.
RATE_KINDS: Final = {
    "move": "action",
    "deal": "action",
    "undo": "action",
    "restart": "action",
    "resign": "action",
    "pause": "action",
    "resume": "action",
    "new_game": "game",
    "hint": "hint",
    "register": "register",
    "rotate_token": "register",
    "sign_out": "register",
}
