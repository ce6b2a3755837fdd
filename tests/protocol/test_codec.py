"""decode_request: every kind of bad frame is bad_request, with ``re`` when readable."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest

from protocol import (
    MAX_FRAME_BYTES,
    InvalidMessage,
    ProtocolError,
    Request,
    decode_request,
    encode,
    new_request,
    schema,
    validate_message,
)
from protocol.messages import REQUESTS
from tests.protocol.conftest import move


def rejection(frame: bytes | str) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode_request(frame)
    return caught.value


def raw_map(*pairs: tuple[bytes, bytes]) -> bytes:
    """A msgpack map assembled by hand (for keys msgpack.packb would not write)."""
    assert len(pairs) < 16
    return bytes([0x80 | len(pairs)]) + b"".join(key + value for key, value in pairs)


def packed(value: Any) -> bytes:
    frame: bytes = msgpack.packb(value, use_bin_type=True)
    return frame


PING = encode({"type": "ping", "id": 7})
PING_7 = ((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"))  # raw_map's pairs of that ping

# (what is wrong, the frame, the `re` the error must carry)
BAD_FRAMES: list[tuple[str, bytes | str, int | str | None]] = [
    ("text frame", "hello", None),
    ("text frame holding JSON", '{"type": "ping", "id": 7}', None),
    ("empty frame", b"", None),
    ("not msgpack", b"\xc1", None),
    ("truncated map", PING[:-1], None),
    ("invalid UTF-8 in a string", b"\x81\xa4type\xa2\xff\xfe", None),
    (
        "invalid UTF-8 in a field, the id readable",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"), (b"\xa1x", b"\xa2\xff\xfe")),
        7,
    ),
    (
        "invalid UTF-8 in a key, the id readable",
        raw_map((b"\xa2id", b"\xa1a"), (b"\xa2\xff\xfe", b"\x01")),
        "a",
    ),
    (
        "invalid UTF-8 in the id",
        raw_map(
            (b"\xa2id", b"\xa2\xff\xfe"),
        ),
        None,
    ),
    ("an array, not a map", packed([1, 2]), None),
    ("a string, not a map", packed("ping"), None),
    ("an integer, not a map", packed(7), None),
    ("nil, not a map", packed(None), None),
    ("trailing garbage", PING + b"\x00", 7),
    ("two maps in one frame", PING + PING, 7),
    ("no id", encode({"type": "ping"}), None),
    ("id is a float", encode({"type": "ping", "id": 7.0}), None),
    ("id is a bool", encode({"type": "ping", "id": True}), None),
    ("id is nil", encode({"type": "ping", "id": None}), None),
    ("id is an array", encode({"type": "ping", "id": [7]}), None),
    ("id is binary", encode({"type": "ping", "id": b"7"}), None),
    ("id is an empty string", encode({"type": "ping", "id": ""}), None),
    ("id is 65 characters", encode({"type": "ping", "id": "x" * 65}), None),
    ("no type", encode({"id": 7}), 7),
    ("type is not a string", encode({"id": 7, "type": 1}), 7),
    ("type is binary", encode({"id": 7, "type": b"ping"}), 7),
    ("unknown type", encode({"id": "a", "type": "fly"}), "a"),
    ("a server message type", encode({"id": 7, "type": "welcome"}), 7),
    ("unknown extra field", encode({"type": "ping", "id": 7, "x": 1}), 7),
    ("extra field on move", encode(move(force=True)), 7),
    ("missing required field", encode(move(card=None)), 7),
    ("mistyped field", encode(move(card=5)), 7),
    ("binary where a string is expected", encode(move(card=b"TH")), 7),
    ("bool where an int is expected", encode(move(v=True)), 7),
    ("bool as column", encode(move(to=False)), 7),
    ("float where an int is expected", encode(move(v=3.0)), 7),
    ("nil for an optional field", encode({**move(), "to": None}), 7),
    ("negative version", encode(move(v=-1)), 7),
    ("version beyond int64", encode(move(v=2**63)), 7),
    ("game 0", encode(move(game=0)), 7),
    ("column beyond int32", encode(move(to=2**31)), 7),
    ("column below int32", encode(move(to=-(2**31) - 1)), 7),
    ("card too long", encode(move(card="ten of hearts")), 7),
    ("empty card", encode(move(card="")), 7),
    ("array as a field", encode(move(card=["TH"])), 7),
    ("map as a field", encode(move(card={"rank": "T"})), 7),
    ("unknown level", encode({"type": "new_game", "id": 7, "level": "expert"}), 7),
    ("deal 0", encode({"type": "new_game", "id": 7, "level": "hard", "deal": 0}), 7),
    ("negative since", encode({"type": "open_game", "id": 7, "game": 1, "since": -1}), 7),
    ("unknown status", encode({"type": "games", "id": 7, "status": "paused"}), 7),
    ("name too long", encode({"type": "register", "id": 7, "name": "n" * 33}), 7),
    ("empty name", encode({"type": "register", "id": 7, "name": ""}), 7),
    ("control character in name", encode({"type": "register", "id": 7, "name": "a\nb"}), 7),
    ("format character in name", encode({"type": "register", "id": 7, "name": "a\u202eb"}), 7),
    ("hello without locale", encode({"type": "hello", "id": 7, "protocol": 1, "client": "c"}), 7),
    (
        "hello with an unknown locale",
        encode({"type": "hello", "id": 7, "protocol": 1, "client": "c", "locale": "de"}),
        7,
    ),
    (
        "hello with a string version",
        encode({"type": "hello", "id": 7, "protocol": "1", "client": "c", "locale": "en"}),
        7,
    ),
    (
        "integer key",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"), (b"\x01", b"\x02")),
        7,
    ),
    (
        "binary key",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"), (b"\xc4\x01k", b"\x02")),
        7,
    ),
    ("nil key", raw_map((b"\xa2id", b"\x07"), (b"\xc0", b"\x02")), 7),
    ("array key", raw_map((b"\xa2id", b"\x07"), (b"\x91\x01", b"\x02")), 7),
    (
        "duplicate key",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"), (b"\xa2id", b"\x08")),
        7,
    ),
    # msgpack bombs: sizes claimed far beyond the frame, or nesting too deep
    ("array claiming 2^32-1 items", b"\xdd\xff\xff\xff\xff", None),
    ("map claiming 2^32-1 entries", b"\xdf\xff\xff\xff\xff", None),
    ("string claiming 4 GiB", b"\xdb\xff\xff\xff\xff", None),
    ("binary claiming 4 GiB", b"\xc6\xff\xff\xff\xff", None),
    ("array nested 100000 deep", b"\x91" * 100_000 + b"\xc0", None),
    ("map nested 100000 deep", b"\x81\xa1k" * 30_000 + b"\xc0", None),
    ("a 1000-entry map", packed({f"k{i}": i for i in range(1000)}), None),
    ("a 1000-item array in a field", encode(move(card=list(range(1000)))), None),
    ("an ext type", packed(msgpack.ExtType(5, b"xy")), None),
    ("a timestamp in a field", encode(move(card=msgpack.Timestamp(0))), 7),
    ("an ext value in a field", encode(move(card=msgpack.ExtType(5, b"xy"))), 7),
    ("an ext value in a list", encode(move(card=[1, msgpack.ExtType(1, b"")])), 7),
    (
        "an ext value deep in maps and lists",
        encode(move(card=[{"a": [0, msgpack.Timestamp(1)]}])),
        7,
    ),
    ("an ext value as the id", encode(move(id=msgpack.ExtType(1, b"\x07"))), None),
    (
        "an ext value as a key",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\x07"), (b"\xd4\x05\x01", b"\x02")),
        7,
    ),
    (
        "a timestamp as a key",
        raw_map((b"\xa2id", b"\x07"), (packed(msgpack.Timestamp(1)), b"\x02")),
        7,
    ),
    ("a frame over the size limit", encode(move(card="x" * MAX_FRAME_BYTES)), None),
    # timestamps msgpack itself refuses to decode (extension type -1): 1 and 3 bytes long,
    # nanoseconds beyond 999,999,999; the id before or after them
    ("a timestamp of 1 byte", raw_map(*PING_7, (b"\xa1x", b"\xd4\xff\x00")), 7),
    ("a timestamp of 3 bytes", raw_map((b"\xa1x", b"\xc7\x03\xff\x00\x00\x00"), *PING_7), 7),
    (
        "a timestamp of 2e9 nanoseconds",
        raw_map(*PING_7, (b"\xa1x", b"\xc7\x0c\xff" + struct.pack(">Iq", 2_000_000_000, 0))),
        7,
    ),
    (
        "a bad timestamp as the id",
        raw_map((b"\xa4type", b"\xa4ping"), (b"\xa2id", b"\xd4\xff\x00")),
        None,
    ),
    ("a bad timestamp and no map", b"\xd4\xff\x00", None),
    ("a bad timestamp as a key", raw_map(*PING_7, (b"\xd4\xff\x00", b"\x01")), 7),
    ("a bad timestamp as a key before the id", raw_map((b"\xd4\xff\x00", b"\x01"), *PING_7), 7),
    (
        "a bad timestamp, then trailing bytes",
        raw_map(*PING_7, (b"\xa1x", b"\xd4\xff\x00")) + b"\x00",
        7,
    ),
    (
        "a bad timestamp, then bad UTF-8",
        raw_map(*PING_7, (b"\xa1x", b"\xd4\xff\x00"), (b"\xa1y", b"\xa1\xff")),
        7,
    ),
    (
        "an id in str 8 after a bad timestamp",
        raw_map((b"\xa1x", b"\xd4\xff\x00"), (b"\xa4type", b"\xa4ping"), (b"\xd9\x02id", b"\x07")),
        7,
    ),
    (
        "a bad timestamp, the map cut short",
        raw_map(*PING_7, (b"\xa1x", b"\xd4\xff\x00"))[:-1],
        None,
    ),
]


@pytest.mark.parametrize(
    ("frame", "re"), [case[1:] for case in BAD_FRAMES], ids=[case[0] for case in BAD_FRAMES]
)
def test_bad_frames_are_bad_request_with_re_when_readable(
    frame: bytes | str, re: int | str | None
) -> None:
    error = rejection(frame)
    assert (error.code, error.re) == ("bad_request", re)
    reply = error.to_message()
    assert reply["type"] == "error" and reply["code"] == "bad_request" and reply["message"]
    assert ("re" in reply) == (re is not None)
    for internal in ("max_", "Unpack", "codec", "exceeds", "Timestamp", "Ext", "()", "<", "0x"):
        assert internal not in reply["message"], reply["message"]


def test_a_refusal_names_the_request_type_once_a_known_one_was_read() -> None:
    """What a server counts the refusal under: never a type the client made up."""
    assert rejection(encode(move(card=5))).request_type == "move"
    games = {"type": "games", "id": 7, "status": "paused"}
    assert rejection(encode(games)).request_type == "games"
    hello = {"type": "hello", "id": 7, "protocol": 99, "client": "c", "locale": "en"}
    unsupported = rejection(encode(hello))
    assert (unsupported.code, unsupported.request_type) == ("unsupported_version", "hello")
    for frame in (
        encode({"id": 7, "type": "fly"}),
        encode({"id": 7}),
        encode({"type": "ping"}),
        PING + b"\x00",
        b"\xc1",
    ):
        assert rejection(frame).request_type is None, frame


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"to": "5"}, "move.to"),
        ({"v": -1}, "move.v"),
        ({"card": None}, "move.card"),
        ({"hurry": 1}, "hurry"),
    ],
)
def test_the_message_names_the_field(changes: dict[str, Any], names: str) -> None:
    assert names in rejection(encode(move(**changes))).message


def test_a_text_frame_is_told_to_use_binary() -> None:
    assert "binary" in rejection("{}").message


@pytest.mark.parametrize("version", [0, 2, 99, -1])
def test_an_unsupported_version_names_the_supported_ones(version: int) -> None:
    frame = encode({"type": "hello", "id": "h", "protocol": version, "client": "c"})
    error = rejection(frame)
    assert (error.code, error.re, error.extra) == ("unsupported_version", "h", {"supported": [1]})
    assert "1" in error.message
    assert error.to_message()["supported"] == [1]


@pytest.mark.parametrize("version", [2**53, -(2**53), 2**63, -(2**63), 2**64 - 1])
def test_a_version_beyond_the_safe_integers_is_a_bad_request(version: int) -> None:
    """As any integer field beyond +-(2**53 - 1) (PROTOCOL.md section 1): not a version."""
    frame = encode({"type": "hello", "id": "h", "protocol": version, "client": "c"})
    error = rejection(frame)
    assert (error.code, error.re) == ("bad_request", "h")
    assert "protocol" in error.message


def test_the_version_is_checked_before_the_other_fields() -> None:
    """A later version's hello may differ; it still learns which versions we speak."""
    frame = encode({"type": "hello", "id": 1, "protocol": 2, "capabilities": ["x"]})
    assert rejection(frame).code == "unsupported_version"


def test_a_valid_move_decodes() -> None:
    request = decode_request(encode(move()))
    assert request == Request("move", 7, {"game": 42, "v": 3, "card": "TH", "to": 5})
    assert request.get_int("game") == 42
    assert request.get_str("card") == "TH"
    assert request.opt_int("to") == 5
    assert request.opt_str("card") == "TH"


def test_a_string_id_holding_nul_is_refused() -> None:
    """PostgreSQL stores no NUL in text: an action whose id held one was answered
    ``internal``, and so was every retry of it. Such an id is refused as the request is
    read, with no ``re`` (it is not a valid id)."""
    for request_id in ("a\x00b", "\x00"):
        refused = rejection(packed(move(id=request_id)))
        assert refused.code == "bad_request" and refused.re is None, refused
        assert "NUL" in str(refused), refused
    assert decode_request(encode(move(id="a\x01b \u200d"))).id == "a\x01b \u200d"


def test_optional_fields_may_be_left_out() -> None:
    request = decode_request(encode(move(to=None)))
    assert request.opt_int("to") is None
    assert decode_request(encode({"type": "ping", "id": "p"})) == Request("ping", "p", {})


def test_the_int32_bounds_are_inclusive() -> None:
    for to in (-(2**31), 2**31 - 1, 0, 99):
        assert decode_request(encode(move(to=to))).get_int("to") == to


SAFE = 2**53 - 1  # the largest integer a JavaScript number holds exactly


def test_integers_stop_at_the_javascript_safe_range() -> None:
    """Section 1: |n| <= 2^53-1 for every integer, ids included; beyond is bad_request."""
    assert decode_request(encode({"type": "ping", "id": SAFE})).id == SAFE
    assert decode_request(encode({"type": "ping", "id": -SAFE})).id == -SAFE
    new = {"type": "new_game", "id": 1, "level": "hard", "deal": SAFE}
    assert decode_request(encode(new)).get_int("deal") == SAFE
    for too_large in (SAFE + 1, 2**63 - 1, 2**64 - 1, -SAFE - 1, -(2**63)):
        assert rejection(encode({"type": "ping", "id": too_large})).code == "bad_request"
        error = rejection(encode({**new, "deal": too_large}))
        assert (error.code, error.re) == ("bad_request", 1)
        ack = {"type": "ack", "re": 1, "game": too_large, "v": 0}
        with pytest.raises(InvalidMessage):
            validate_message(ack)


def test_no_integer_in_the_schema_leaves_the_safe_range() -> None:
    def integers(node: object) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            if node.get("type") == "integer":
                yield node
            for value in node.values():
                yield from integers(value)
        elif isinstance(node, list):
            for value in node:
                yield from integers(value)

    found = list(integers(schema.generate()))
    assert found
    for node in found:
        values = [node[key] for key in ("minimum", "maximum", "const") if key in node]
        values += node.get("enum", [])
        assert values and all(-SAFE <= value <= SAFE for value in values), node


def test_the_size_limit_is_checked_before_anything_else() -> None:
    """A frame of exactly MAX_FRAME_BYTES is read (and judged on its fields); one more is not."""
    length = MAX_FRAME_BYTES - len(encode(move(card=""))) - 2  # str16 header: 3 bytes, not 1
    at_limit = encode(move(card="x" * length))
    assert len(at_limit) == MAX_FRAME_BYTES
    assert "move.card" in rejection(at_limit).message
    over = encode(move(card="x" * (length + 1)))
    assert "limit" in rejection(over).message


def test_bytearray_and_memoryview_frames_are_read() -> None:
    frame = encode(move())
    assert decode_request(bytearray(frame)).type == "move"  # type: ignore[arg-type]
    assert decode_request(memoryview(frame)).type == "move"  # type: ignore[arg-type]


def test_printable_names_include_letters_of_any_script_and_spaces() -> None:
    for name in ("ada", "Åsa Öberg", "Пётр", "李雷", "x" * 32, "♠ ace ♠"):
        frame = encode({"type": "register", "id": 1, "name": name})
        assert decode_request(frame).get_str("name") == name


def test_every_request_type_round_trips() -> None:
    for spec in REQUESTS.values():
        for example in spec.examples:
            request = decode_request(encode(example))
            assert request.to_message() == example
            assert request.type == spec.type


def test_new_request_checks_like_the_server() -> None:
    request = new_request("move", 1, game=42, v=0, card="7C", to=5)
    assert decode_request(encode(request.to_message())) == request
    with pytest.raises(InvalidMessage) as caught:
        new_request("move", 1, game=42, v=0, card="7C", to="5")
    assert caught.value.path == "move.to"
    with pytest.raises(InvalidMessage):
        new_request("teleport", 1)


def test_accessors_fail_loudly_on_server_bugs() -> None:
    request = Request("move", 1, {"game": 42, "card": "TH"})
    with pytest.raises(KeyError):
        request.get_int("v")
    with pytest.raises(TypeError):
        request.get_int("card")
    with pytest.raises(TypeError):
        request.get_str("game")


def test_encode_writes_strings_as_str_and_bytes_as_bin() -> None:
    frame = encode({"type": "x", "data": b"\x00"})
    assert msgpack.unpackb(frame, raw=True) == {b"type": b"x", b"data": b"\x00"}
    assert frame == b"\x82\xa4type\xa1x\xa4data\xc4\x01\x00"


def test_encode_after_a_message_it_could_not_encode_starts_afresh() -> None:
    # encode keeps one packer per thread: what a failed message packed must not lead the next.
    message = {"type": "x", "data": b"\x00"}
    for unencodable in ({"a": 1, "b": object()}, {"n": [1, 2**70]}):
        with pytest.raises((TypeError, OverflowError)):
            encode(unencodable)
        assert encode(message) == msgpack.packb(message, use_bin_type=True)


def test_protocol_error_rejects_unknown_codes() -> None:
    with pytest.raises(ValueError):
        ProtocolError("oops", "no such code")
    assert "stale" in repr(ProtocolError("stale", "old", re=1, v=3))
