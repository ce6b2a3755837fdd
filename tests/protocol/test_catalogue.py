"""The message catalogue: complete, consistent, its examples valid, its builders exact."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from protocol import (
    CLOSE_CODES,
    ERROR_CODES,
    RULE_CODES,
    InvalidMessage,
    build,
    decode_request,
    encode,
    error,
    validate_message,
)
from protocol.errors import PROTOCOL_CODES
from protocol.events import EVENT, EVENTS
from protocol.messages import ALL_MESSAGES, PUSHES, REPLIES, REQUESTS
from protocol.spec import Kind, MessageSpec
from protocol.version import version
from tests.protocol.schema_check import SchemaChecker

REQUEST_TYPES = {
    "hello", "register", "new_game", "open_game", "close_game", "move", "deal", "undo",
    "restart", "hint", "pause", "resume", "resign", "games", "stats", "replay", "ping",
    "rotate_token", "sign_out",
}  # fmt: skip
REPLY_TYPES = {
    "welcome", "registered", "game", "catch_up", "ack", "hint", "games", "stats", "replay",
    "pong", "token", "signed_out", "error",
}  # fmt: skip
EVENT_TYPES = {
    "moved", "flipped", "unflipped", "dealt", "undealt", "suit_removed", "suit_restored",
    "undone", "restarted", "hint", "score", "won", "stuck", "clock", "lost_position",
    "game_lost", "snapshot",
}  # fmt: skip


def examples(specs: Any) -> list[tuple[MessageSpec, dict[str, Any]]]:
    return [(spec, example) for spec in specs for example in spec.examples]


def test_the_catalogue_has_exactly_the_agreed_types() -> None:
    assert REQUESTS.keys() == REQUEST_TYPES
    assert REPLIES.keys() == REPLY_TYPES
    assert PUSHES.keys() == {"events"}
    assert EVENTS.keys() == EVENT_TYPES


def test_every_message_and_event_has_an_example() -> None:
    for spec in (*ALL_MESSAGES, *EVENTS.values()):
        assert spec.examples, spec.type
        assert all(example["type"] == spec.type for example in spec.examples)


def test_requests_name_real_replies_and_codes() -> None:
    for spec in REQUESTS.values():
        assert spec.replies and set(spec.replies) <= REPLIES.keys(), spec.type
        assert set(spec.errors) <= ERROR_CODES.keys(), spec.type


@pytest.mark.parametrize(
    ("spec", "example"), examples(REQUESTS.values()), ids=lambda value: getattr(value, "type", "")
)
def test_request_examples_decode(
    checker: SchemaChecker, spec: MessageSpec, example: dict[str, Any]
) -> None:
    assert decode_request(encode(example)).to_message() == example
    assert checker.problem(example, checker.definition(spec.shape.ref)) is None


@pytest.mark.parametrize(
    ("spec", "example"),
    examples((*REPLIES.values(), *PUSHES.values())),
    ids=lambda value: getattr(value, "type", ""),
)
def test_server_examples_are_valid(
    checker: SchemaChecker, spec: MessageSpec, example: dict[str, Any]
) -> None:
    validate_message(example)
    assert checker.problem(example, checker.definition("server_message")) is None


@pytest.mark.parametrize(
    ("spec", "example"), examples(EVENTS.values()), ids=lambda value: getattr(value, "type", "")
)
def test_event_examples_are_valid(
    checker: SchemaChecker, spec: MessageSpec, example: dict[str, Any]
) -> None:
    EVENT.check(example, "event")
    assert checker.problem(example, checker.definition("event")) is None


def test_validate_message_is_strict_about_server_messages() -> None:
    with pytest.raises(InvalidMessage, match="unknown field"):
        validate_message({"type": "ack", "re": 1, "game": 1, "v": 1, "extra": 0})
    with pytest.raises(InvalidMessage, match="not a server message"):
        validate_message({"type": "move", "id": 1})
    with pytest.raises(InvalidMessage, match=r"events\.events"):
        validate_message({"type": "events", "game": 1, "v": 1, "events": [{"type": "teleported"}]})


def test_the_schema_allows_unknown_fields_only_from_the_server(checker: SchemaChecker) -> None:
    reply = {"type": "ack", "re": 1, "game": 1, "v": 1, "later": True}
    request = {"type": "ping", "id": 1, "later": True}
    assert checker.valid(reply, checker.definition("server_message"))
    assert not checker.valid(request, checker.definition("client_message"))


def test_error_codes_are_described_and_disjoint() -> None:
    assert not PROTOCOL_CODES.keys() & RULE_CODES.keys()
    assert set(ERROR_CODES) == {
        "bad_request", "hello_required", "unsupported_version", "not_found", "forbidden",
        "stale", "paused", "duplicate_name", "unauthenticated", "rate_limited", "unavailable",
        "internal", "already_signed_in", "not_open", "id_reused", "game_too_long",
        "too_many_watchers", *RULE_CODES,
    }  # fmt: skip
    for code, description in ERROR_CODES.items():
        assert code.isidentifier() and code.islower()
        assert description.endswith(".") and "\n" not in description
    assert set(CLOSE_CODES) == {1001, 1002, 1007, 1008, 1009, 1011, 1013}


def test_error_replies() -> None:
    assert error("stale", "old", 9, v=3) == {
        "type": "error", "re": 9, "code": "stale", "message": "old", "v": 3
    }  # fmt: skip
    assert error("bad_request", "no id") == {
        "type": "error", "code": "bad_request", "message": "no id"
    }  # fmt: skip
    with pytest.raises(ValueError):
        error("illegal_move", "not a published code")


# -- builders: each reproduces the catalogue's example exactly ------------------------

STARTED = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
UPDATED = datetime(2025, 3, 1, 11, 31, 12, 250000, tzinfo=timezone(timedelta(hours=2)))


def example(spec: MessageSpec, index: int = 0) -> dict[str, Any]:
    return spec.examples[index]


def summary(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "game": 42, "level": "hard", "status": "active", "v": 2, "moves": 1, "score": 10,
        "time_ms": 5300, "deal": 1, "started": STARTED, "updated": UPDATED,
    }  # fmt: skip
    return build.summary(**{**fields, **changes})


def test_object_builders() -> None:
    welcome = example(REPLIES["welcome"], 1)
    assert build.player(7, "ada") == welcome["player"]
    assert [summary()] == welcome["games"]  # its unfinished game: at most one (R17)
    resigned = summary(
        game=41, level="easy", status="lost", v=4, moves=3, score=0, time_ms=61000, deal=877
    )
    assert [summary(), resigned] == example(REPLIES["games"], 0)["games"]
    row = build.stats_row(
        level="hard", wins=4, losses=7, current_streak=1, best_streak=2,
        best_score=2410, fastest_win_ms=515000, fewest_moves=160,
    )  # fmt: skip
    assert row == example(REPLIES["stats"])["stats"][0]
    results = example(REPLIES["replay"])["result"]
    assert build.result(**results) == results


def test_a_stats_row_before_any_finished_game() -> None:
    row = build.stats_row(
        level="easy", wins=0, losses=0, current_streak=0, best_streak=0,
        best_score=None, fastest_win_ms=None, fewest_moves=None,
    )  # fmt: skip
    assert (row["games"], row["win_rate"], row["best_score"]) == (0, 0.0, None)
    validate_message(build.stats(1, stats=[row]))


def test_reply_builders() -> None:
    server = f"scorpion-server {version()}"
    welcome = example(REPLIES["welcome"])
    assert build.welcome(1, server=server, player=None, games=[], limits=welcome["limits"]) == (
        welcome
    )
    registered = example(REPLIES["registered"])
    assert build.registered(2, player=build.player(7, "ada"), token=registered["token"]) == (
        registered
    )
    view = example(REPLIES["game"])["view"]
    assert build.game(3, game=42, v=0, view=view) == example(REPLIES["game"])
    assert build.game(4, game=43, v=0, view=view, lost=42) == example(REPLIES["game"], 1)
    assert build.ack(8, game=42, v=2) == example(REPLIES["ack"])
    assert build.hint(13, game=42, v=1, action="move", card="7C", to=5) == example(REPLIES["hint"])
    assert build.hint(13, game=42, v=9, action="none", reason="seen") == example(REPLIES["hint"], 1)
    assert build.games(17, games=example(REPLIES["games"])["games"]) == example(REPLIES["games"])
    assert build.pong(21) == example(REPLIES["pong"])
    unfinished = build.replay(20, game=42, replay=None, result=None)
    assert unfinished == example(REPLIES["replay"], 1)


def test_catch_up_and_events_builders() -> None:
    pushed = example(PUSHES["events"])
    assert build.events(game=42, v=2, events=pushed["events"]) == pushed
    batches = [build.batch(2, pushed["events"])]
    caught_up = build.catch_up(6, game=42, v=2, events=batches, time_ms=5300, running=False)
    assert caught_up == example(REPLIES["catch_up"])
    clock = build.events(game=42, v=2, events=[build.clock(running=True, time_ms=5300)])
    assert clock == example(PUSHES["events"], 1)


def test_server_event_builders() -> None:
    assert build.game_lost("resigned", 1) == example(EVENTS["game_lost"])
    assert build.lost_position(from_deal=False) == example(EVENTS["lost_position"])
    assert build.clock(running=False, time_ms=83000, paused=True) == example(EVENTS["clock"])
    won = example(EVENTS["won"])
    engine_won = {key: value for key, value in won.items() if key != "stats"}
    assert build.with_stats(engine_won, won["stats"]) == won
    with pytest.raises(ValueError):
        build.with_stats({"type": "score"}, won["stats"])


def test_iso8601_is_utc_with_milliseconds() -> None:
    assert build.iso8601(UPDATED) == "2025-03-01T09:31:12.250Z"
    with pytest.raises(ValueError):
        build.iso8601(datetime(2025, 3, 1))


def test_every_kind_has_its_envelope() -> None:
    for spec in ALL_MESSAGES:
        names = [field.name for field in spec.shape.fields]
        envelope = {Kind.REQUEST: ["type", "id"], Kind.REPLY: ["type", "re"], Kind.PUSH: ["type"]}
        assert names[: len(envelope[spec.kind])] == envelope[spec.kind], spec.type
