"""The wire of the Scorpion game server: message types, msgpack codec, error codes.

Imports nothing of ours (architecture.md). A server reads frames with
``decode_request``, dispatches on ``Request.type``, answers with the
builders in ``protocol.build`` and sends them through ``encode``; a
ProtocolError becomes its reply with ``to_message()``. PROTOCOL.md is the
human description, ``schema.json`` the machine-readable one; both are
generated from the catalogue in ``messages``, ``events`` and ``shapes``.
"""

from __future__ import annotations

from protocol import build
from protocol.codec import Request, decode_request, encode, new_request, validate_message
from protocol.constants import (
    ABUSE_LIMIT,
    ABUSE_WINDOW_SECONDS,
    CONTROL_FRAMES_BURST,
    CONTROL_FRAMES_PER_S,
    GAMES_LIST_LIMIT,
    LEVELS,
    LOCALES,
    MAX_FRAME_BYTES,
    MAX_SERVER_FRAME_BYTES,
    OPEN_GAMES_LIMIT,
    PROTOCOL_VERSION,
    RATE_KINDS,
    REPLAY_PAGE_ACTIONS,
    SUBPROTOCOL,
    SUPPORTED_VERSIONS,
)
from protocol.errors import (
    CLOSE_CODES,
    CLOSE_GOING_AWAY,
    CLOSE_INTERNAL_ERROR,
    CLOSE_INVALID_DATA,
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_POLICY_VIOLATION,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_TRY_AGAIN_LATER,
    ERROR_CODES,
    RULE_CODES,
    InvalidMessage,
    ProtocolError,
    RequestId,
    error,
)
from protocol.messages import REQUESTS, SERVER_MESSAGES

__all__ = [
    "ABUSE_LIMIT",
    "ABUSE_WINDOW_SECONDS",
    "CLOSE_CODES",
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL_ERROR",
    "CLOSE_INVALID_DATA",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_POLICY_VIOLATION",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_TRY_AGAIN_LATER",
    "CONTROL_FRAMES_BURST",
    "CONTROL_FRAMES_PER_S",
    "ERROR_CODES",
    "GAMES_LIST_LIMIT",
    "LEVELS",
    "LOCALES",
    "MAX_FRAME_BYTES",
    "MAX_SERVER_FRAME_BYTES",
    "OPEN_GAMES_LIMIT",
    "PROTOCOL_VERSION",
    "RATE_KINDS",
    "REPLAY_PAGE_ACTIONS",
    "REQUESTS",
    "RULE_CODES",
    "SERVER_MESSAGES",
    "SUBPROTOCOL",
    "SUPPORTED_VERSIONS",
    "InvalidMessage",
    "ProtocolError",
    "Request",
    "RequestId",
    "build",
    "decode_request",
    "encode",
    "error",
    "new_request",
    "validate_message",
]
