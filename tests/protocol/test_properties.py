"""Hypothesis properties of the codec.

* every valid request survives encode -> decode unchanged;
* no input, however broken, raises anything but ProtocolError;
* the decoder and the published schema agree on what a valid request is.
"""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from protocol import MAX_FRAME_BYTES, ProtocolError, codec, decode_request, encode
from protocol.fields import AnyOf, Bool, FieldType, Int, Str
from protocol.messages import REQUESTS
from protocol.shapes import REQUEST_ID
from protocol.spec import MessageSpec
from tests.protocol.schema_check import SchemaChecker

# Characters str.isprintable() accepts and the schema's pattern cannot tell
# apart from the rest: letters, marks, numbers, punctuation, symbols, space.
PRINTABLE = st.characters(categories=("L", "M", "N", "P", "S"), include_characters=" ")
MSGPACK_INT = st.integers(-(2**63), 2**64 - 1)


def values(kind: FieldType) -> st.SearchStrategy[Any]:
    """Valid values of a request field type."""
    match kind:
        case Int(choices=choices) if choices:
            return st.sampled_from(choices)
        case Int(min=low, max=high):
            top = 2**64 - 1 if high is None else min(high, 2**64 - 1)  # msgpack's largest
            return st.integers(-(2**63) if low is None else low, top)
        case Str(choices=choices) if choices:
            return st.sampled_from(choices)
        case Str(pattern=str(pattern)):
            return st.from_regex(pattern, fullmatch=True)
        case Str(printable=True, min_len=low, max_len=high):
            return st.text(PRINTABLE, min_size=low, max_size=high)
        case Str(no_nul=True, min_len=low, max_len=high):
            return st.text(
                st.characters(exclude_characters="\x00", codec="utf-8"), min_size=low, max_size=high
            )
        case Str(min_len=low, max_len=high):
            return st.text(min_size=low, max_size=high)
        case AnyOf(options=options):
            return st.one_of([values(option) for option in options])
        case Bool():
            return st.booleans()
    raise NotImplementedError(kind)


@st.composite
def requests(draw: st.DrawFn, spec: MessageSpec | None = None) -> dict[str, Any]:
    """A valid request of ``spec`` (or of any type), optional fields sometimes present."""
    spec = spec or draw(st.sampled_from(list(REQUESTS.values())))
    message: dict[str, Any] = {"type": spec.type, "id": draw(values(REQUEST_ID))}
    for field in spec.fields:
        if field.required or draw(st.booleans()):
            message[field.name] = draw(values(field.type))
    return message


_WILD_SCALARS = [None, True, False, 0, -1, 1, 5, 2**31, 2**63, -(2**63), 2**64 - 1, 1.5, 1.0]
_WILD_OTHERS = ["", "x", "x" * 65, "a\x00", "TH", "easy", "active", "move", "en", [], {}, b"x"]
WILD = st.sampled_from([*_WILD_SCALARS, *_WILD_OTHERS])


@st.composite
def near_misses(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request with one thing perhaps broken: a field dropped, added or replaced."""
    message = draw(requests())
    mutation = draw(st.sampled_from(["none", "drop", "add", "replace"]))
    if mutation == "drop":
        del message[draw(st.sampled_from(sorted(message)))]
    elif mutation == "add":
        message[draw(st.sampled_from(["x", "since", "to", "level", "token", "Type"]))] = draw(WILD)
    elif mutation == "replace":
        message[draw(st.sampled_from(sorted(message)))] = draw(WILD)
    return message


msgpack_values = st.recursive(
    st.none() | st.booleans() | MSGPACK_INT | st.floats() | st.text() | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | MSGPACK_INT, inner, max_size=5)
    ),
    max_leaves=20,
)


def decodes(frame: bytes | str) -> bool:
    """True when the frame is a valid request; ProtocolError is the only other outcome."""
    try:
        decode_request(frame)
    except ProtocolError:
        return False
    return True


@given(requests())
def test_valid_requests_round_trip(message: dict[str, Any]) -> None:
    request = decode_request(encode(message))
    assert (request.type, request.id) == (message["type"], message["id"])
    assert request.to_message() == message


@given(st.binary(max_size=256))
def test_random_bytes_raise_only_protocol_errors(frame: bytes) -> None:
    decodes(frame)


@given(st.text(max_size=64))
def test_text_frames_are_always_refused(frame: str) -> None:
    assert not decodes(frame)


@given(msgpack_values)
def test_random_msgpack_raises_only_protocol_errors(value: Any) -> None:
    decodes(msgpack.packb(value, use_bin_type=True))


@given(requests(), st.data())
def test_damaged_frames_raise_only_protocol_errors(
    message: dict[str, Any], data: st.DataObject
) -> None:
    frame = bytearray(encode(message))
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.integers(0, len(frame) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            frame[where] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del frame[where:]
            if not frame:
                break
        else:
            frame[where:where] = data.draw(st.binary(min_size=1, max_size=4))
    decodes(bytes(frame))


@given(near_misses())
def test_the_decoder_and_the_schema_agree(checker: SchemaChecker, message: dict[str, Any]) -> None:
    by_schema = checker.valid(message, checker.definition("client_message"))
    assert decodes(encode(message)) == by_schema, message


@given(st.binary(min_size=1, max_size=32))
def test_frames_over_the_limit_are_refused_unread(tail: bytes) -> None:
    frame = encode({"type": "ping", "id": 1}) + b"\x00" * MAX_FRAME_BYTES + tail
    assert not decodes(frame)


def test_a_float_version_is_no_version(checker: SchemaChecker) -> None:
    """1.0 is not the integer 1 on the wire; the schema must say so too (a found case)."""
    message = {"type": "hello", "id": 0, "protocol": 1.0, "client": "0", "locale": "en"}
    assert not decodes(encode(message))
    assert not checker.valid(message, checker.definition("client_message"))


# Maps of a few keys (repeats and non-string keys among them) to scalars, extension
# values, nested maps and arrays, written pair by pair so a key can appear twice.
_KEYS = st.one_of(st.sampled_from(["type", "id", "game", "v", "card"]), st.text(max_size=3))
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    MSGPACK_INT,
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=4)),
    st.just(msgpack.Timestamp(1, 0)),
    st.lists(MSGPACK_INT, max_size=2),
    st.dictionaries(st.text(max_size=2), MSGPACK_INT, max_size=2),
)


def _map_frame(pairs: list[tuple[Any, Any]]) -> bytes:
    packer = msgpack.Packer(use_bin_type=True)
    header: bytes = packer.pack_map_header(len(pairs))
    return header + b"".join(packer.pack(each) for pair in pairs for each in pair)


@given(
    st.lists(
        st.tuples(st.one_of(_KEYS, MSGPACK_INT, st.binary(max_size=2)), _VALUES), max_size=17
    ).map(lambda pairs: [item for pair in pairs for item in pair])
)
def test_the_fast_decode_agrees_with_the_full_one(items: list[Any]) -> None:
    """``_unpack_flat`` (msgpack's C code alone) takes a frame only when the full decode
    (``_Map``, which finds repeated and non-string keys) reads it without a problem, and
    gives the same map."""
    frame = _map_frame(list(zip(items[::2], items[1::2], strict=True)))
    flat = codec._unpack_flat(frame)
    if flat is not None:
        assert flat == _full_decode(frame)


def test_a_usual_request_takes_the_fast_decode() -> None:
    frame = encode({"type": "move", "id": 3, "game": 9, "v": 4, "card": "AS", "to": 2})
    assert codec._unpack_flat(frame) == {
        "type": "move", "id": 3, "game": 9, "v": 4, "card": "AS", "to": 2
    }  # fmt: skip
    assert codec._unpack_flat(frame[:1] + frame[1:] + b"\xc0") is None  # trailing bytes
    assert codec._unpack_flat(_map_frame([("id", 1), ("id", 2)])) is None


def _full_decode(frame: bytes) -> dict[str, Any]:
    data = msgpack.unpackb(
        frame, object_pairs_hook=codec._Map, ext_hook=codec._extension, **codec._UNPACK_OPTIONS
    )
    assert isinstance(data, codec._Map) and data.problem is None
    assert not codec._has_extension(data)
    return data
