"""Error codes, close codes and the protocol's exceptions.

::

    ProtocolError       a request the protocol layer rejects; carries the stable
                        ``code`` (bad_request, unsupported_version), the readable
                        ``message``, the request id ``re`` when it could be read
                        and extra reply fields; ``to_message()`` is the reply.
    InvalidMessage      (a ValueError) a value does not match its declared
                        field; ``path`` names the field, e.g. ``move.to``.
                        ``decode_request`` turns it into ProtocolError(bad_request).

``ERROR_CODES`` maps every code a peer may receive to a one-line English
description (PROTOCOL.md and the schema print them). Codes never change once
published; descriptions may. The rule codes repeat the engine's (rules.md R10)
so that this package stays free of engine imports; a test compares them.
Readable per-request messages in the client's locale are the server's job.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "CLOSE_CODES",
    "CLOSE_GOING_AWAY",
    "CLOSE_INTERNAL_ERROR",
    "CLOSE_INVALID_DATA",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_POLICY_VIOLATION",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_TRY_AGAIN_LATER",
    "ERROR_CODES",
    "PROTOCOL_CODES",
    "RULE_CODES",
    "InvalidMessage",
    "ProtocolError",
    "RequestId",
    "error",
]

RequestId = int | str

PROTOCOL_CODES: Final[dict[str, str]] = {
    "bad_request": "The frame is not a valid request: not a binary msgpack map, an unknown type "
    "or field, a missing, mistyped or out-of-range field, or a card that names no card (R2).",
    "hello_required": "The first request on a connection must be hello.",
    "unsupported_version": "The server does not speak the protocol version named in hello, "
    "or the connection did not offer subprotocol `scorpion.v1`; `supported` lists the "
    "versions the server speaks.",
    "already_signed_in": "The connection already acts as a player: register, and a hello "
    "naming another player or none, are refused; use a new connection.",
    "not_open": "The game is not open on this connection: send open_game first.",
    "id_reused": "The request repeats the id of an applied request but asks for something "
    "else; nothing was applied. Use a new id for every new request, new within the game "
    "across all the player's connections and devices (section 2).",
    "not_found": "No such game.",
    "forbidden": "Not allowed here: a deal number chosen on the easy level.",
    "stale": "The request's `v` is not the game's current version (nothing was applied); "
    "`v` carries the current version.",
    "paused": "The game is paused: move, deal, undo, restart and hint wait for `resume`.",
    "duplicate_name": "Another player already has that name.",
    "unauthenticated": "The request needs a player: register, or hello with a valid token.",
    "rate_limited": "Too many requests of this kind; nothing was applied. Retry after "
    "`retry_after_ms` milliseconds (section 10).",
    "game_too_long": "The game is at the highest version a game may reach on this server "
    "(section 10): no more moves, deals, undos, restarts or hints; resign or start a new game.",
    "too_many_watchers": "The game is open on as many connections to this server as one "
    "game may be (section 10): close it on a connection that no longer uses it, then open "
    "it again.",
    "unavailable": "The server cannot serve the request right now (starting, stopping, "
    "storage unavailable or too slow, or, for a request without `v` such as `new_game`, "
    "`hint` or `resign`, the game changed by another device of the player before each of "
    "the server's tries to write it); retry later. Not applied, unless the database "
    "commits it all the same (as the server stops waiting, or later when the network to it "
    "stalled; its events then reach the game's watchers as any commit's do): resend it with "
    "the same id and v to know.",
    "internal": "An unexpected server error; the request may have been applied: resend it "
    "with the same id and v.",
}

# The engine's rejection codes (rules.md R10), in its order of precedence first.
RULE_CODES: Final[dict[str, str]] = {
    "not_face_up": "The named card is not a face-up card on the table (R7).",
    "bad_column": "There is no column with that number (R3).",
    "same_column": "The card is already in that column.",
    "empty_column_kings_only": "An empty column takes only a king on this level (R9).",
    "not_one_lower": "The card must go onto a card exactly one rank higher (R8).",
    "same_suit_required": "The card must go onto a card of its own suit (R8).",
    "no_destination": "Auto-move found no column for the card (R11).",
    "stock_empty": "The stock has already been dealt, or this level has none (R13).",
    "stock_not_allowed": "The stock may be dealt only when no other move is left (R13 "
    "option). Every level has this option off, so no game meets it.",
    "nothing_to_undo": "There is nothing left to undo (R18).",
    "game_over": "The game is over: won (R15), resigned or abandoned (R17).",
}

ERROR_CODES: Final[dict[str, str]] = {**PROTOCOL_CODES, **RULE_CODES}

# WebSocket close codes (RFC 6455 section 7.4.1) the server sends.
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_INVALID_DATA: Final = 1007
CLOSE_POLICY_VIOLATION: Final = 1008
CLOSE_MESSAGE_TOO_BIG: Final = 1009
CLOSE_INTERNAL_ERROR: Final = 1011
CLOSE_TRY_AGAIN_LATER: Final = 1013

CLOSE_CODES: Final[dict[int, str]] = {
    CLOSE_GOING_AWAY: (
        "The server is shutting down; or this client fell behind: its outgoing frames "
        "exceeded the per-connection (or the server's total) byte budget, or it did not "
        "read them within the drain timeout; or it sent nothing for the idle timeout. "
        "Reconnect (to another node) and resync."
    ),
    CLOSE_PROTOCOL_ERROR: "The client did not offer subprotocol scorpion.v1 (its first frame "
    "was answered with unsupported_version), or broke the WebSocket protocol (a malformed or "
    "unmasked frame, a bad opcode or fragment).",
    CLOSE_INVALID_DATA: "A text frame that is not valid UTF-8.",
    CLOSE_POLICY_VIOLATION: (
        "Abuse: too many `bad_request` or `rate_limited` replies to one address in a short "
        "time (a connection from that address is closed again at once until they decay), "
        "or no `hello` within the hello deadline, or more WebSocket pings, pongs or "
        "fragments than the control frame limit allows."
    ),
    CLOSE_MESSAGE_TOO_BIG: "A frame was larger than the frame size limit.",
    CLOSE_INTERNAL_ERROR: "The client did not answer the keepalive ping in time (it stopped "
    "reading, or the network is gone), or an unexpected server error.",
    CLOSE_TRY_AGAIN_LATER: "Too many connections: from this address, or to this server in "
    "all; retry later with a growing delay.",
}


def error(code: str, message: str, re: RequestId | None = None, **extra: Any) -> dict[str, Any]:
    """The ``error`` reply: ``{type, re?, code, message, **extra}``.

    ``re`` is left out when the request id could not be read. Raises
    ValueError for a code that is not in ERROR_CODES (a server bug).
    """
    if code not in ERROR_CODES:
        raise ValueError(f"unknown error code {code!r}")
    reply: dict[str, Any] = {"type": "error"}
    if re is not None:
        reply["re"] = re
    reply.update(code=code, message=message, **extra)
    return reply


class ProtocolError(Exception):
    """A request the protocol rejects; ``to_message()`` is its ``error`` reply.

    ``request_type``: the frame's request type, when it was read that far and is one of
    the catalogue's (``decode_request`` sets it for a request whose fields are wrong),
    so a server counts the refusal under that type; None for a frame that was not one.
    It is not part of the reply.
    """

    def __init__(self, code: str, message: str, re: RequestId | None = None, **extra: Any) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.re = re
        self.extra = extra
        self.request_type: str | None = None

    def to_message(self) -> dict[str, Any]:
        return error(self.code, self.message, self.re, **self.extra)

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in self.extra.items())
        return f"ProtocolError({self.code!r}, {self.message!r}, re={self.re!r}{extra})"


class InvalidMessage(ValueError):
    """``path`` (e.g. ``move.to`` or ``events.events[2].card``) breaks its declaration."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem
