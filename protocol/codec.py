"""Frames in, requests out; messages in, frames out. Bytes only, no I/O.

``decode_request`` is the one checked entry point for what a peer sends. It
reads a frame in this order, and the first failure raises ProtocolError
(code bad_request unless noted), with ``re`` set once the id could be read
and ``request_type`` once the type could (steps 6 and 7):

1. a text frame, or more than MAX_FRAME_BYTES: rejected unread;
2. msgpack, under unpack limits (string, array, map and nesting sizes) so a
   small frame cannot expand into a large object; trailing bytes after the
   first object are an error. Extension values (timestamps included) are read
   as opaque markers, so that refusing them can still name the request id;
   the messages say what is wrong in the protocol's terms, never in the
   decoder's;
3. one map with string keys, none repeated;
4. ``id``: an int or a string of 1..64 characters;
5. ``type``: a request type;
6. hello only: ``protocol`` a supported version, else unsupported_version
   (before the other fields, which a later version may change);
7. the fields: each declared one present when required and of its type,
   range, length or choices; no undeclared field (strict: a typo is an error,
   not a silently ignored option).

``encode`` trusts its caller (the server's own messages, built with
``protocol.build``); ``validate_message`` checks one against the catalogue,
for tests. ``Request`` is what the server dispatches on: ``type``, ``id`` and
the checked ``fields`` (the envelope removed), with typed accessors.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgpack

from protocol.constants import MAX_FRAME_BYTES, MAX_SAFE_INT, SUPPORTED_VERSIONS
from protocol.errors import InvalidMessage, ProtocolError, RequestId
from protocol.fields import show
from protocol.messages import REQUESTS, SERVER_MESSAGES
from protocol.shapes import REQUEST_ID

__all__ = [
    "Request",
    "decode_request",
    "encode",
    "new_request",
    "validate_message",
]

_ENVELOPE = frozenset({"type", "id"})

# Requests hold a handful of scalars; these bounds only stop a frame that
# claims (or nests) far more than any request needs from being unpacked.
_UNPACK_OPTIONS: dict[str, Any] = {
    "raw": False,
    "strict_map_key": False,  # keys are checked by _Map, so the error can carry `re`
    "max_str_len": MAX_FRAME_BYTES,
    "max_bin_len": MAX_FRAME_BYTES,
    "max_array_len": 256,
    "max_map_len": 64,
    "max_ext_len": MAX_FRAME_BYTES,
}


class _Extension:
    """An extension value from a frame: never accepted, noted so the error can carry ``re``."""

    __slots__ = ()


def _extension(code: int, data: bytes) -> _Extension:
    return _Extension()


_PLAIN: Final = frozenset({str, int, float, bool, bytes, type(None)})
"""What msgpack makes of a frame's scalars: no extension can hide in them."""


def _is_extension(value: object) -> bool:
    return isinstance(value, _Extension | msgpack.Timestamp)


def _has_extension(value: object) -> bool:
    """Whether ``value`` holds an extension value at any depth (every frame is checked:
    a request's values are scalars, passed over by their type alone).

    It walks with a list of its own, not by recursion: msgpack decodes maps and
    arrays nested up to about a thousand deep, past Python's recursion limit, and
    such a frame must still be answered as a bad request naming its id. A list is
    made only when the frame nests something: a request's map of scalars costs
    one pass over its values, as every frame pays it.
    """
    if isinstance(value, _Extension | msgpack.Timestamp):
        return True
    if isinstance(value, dict):
        top: Iterable[object] = value.values()
    elif isinstance(value, list):
        top = value
    else:
        return False
    pending: list[object] | None = None
    for each in top:  # the frame's own values: a list only for what they nest
        if type(each) not in _PLAIN:
            if pending is None:
                pending = []
            pending.append(each)
    while pending:
        item = pending.pop()
        if isinstance(item, _Extension | msgpack.Timestamp):
            return True
        if isinstance(item, dict):
            items: Iterable[object] = item.values()
        elif isinstance(item, list):
            items = item
        else:
            continue
        for each in items:  # no generator for extend(): a frame per call, slower
            if type(each) not in _PLAIN:
                pending.append(each)
    return False


def _decoder_problem(exc: Exception) -> str:
    """What was wrong with an unreadable frame, without the decoder's own wording."""
    if isinstance(exc, UnicodeDecodeError):
        return "a string in the frame is not valid UTF-8"
    if isinstance(exc, msgpack.StackError):
        return "the frame nests maps and arrays too deeply"
    if isinstance(exc, msgpack.FormatError):
        return "the frame is not msgpack"
    return "the frame is not one complete msgpack map within the protocol's limits"


@dataclass(frozen=True, slots=True)
class Request:
    """A checked request: ``fields`` holds everything but ``type`` and ``id``.

    The accessors fail loudly (KeyError, TypeError) when the server asks for a
    field the request type does not declare: a server bug, not a peer's.
    """

    type: str
    id: RequestId
    fields: Mapping[str, Any] = field(default_factory=dict)

    def get_int(self, name: str) -> int:
        value = self.fields[name]
        if not isinstance(value, int):
            raise TypeError(f"{self.type}.{name} is not an int")
        return value

    def get_str(self, name: str) -> str:
        value = self.fields[name]
        if not isinstance(value, str):
            raise TypeError(f"{self.type}.{name} is not a string")
        return value

    def opt_int(self, name: str) -> int | None:
        return self.get_int(name) if name in self.fields else None

    def opt_str(self, name: str) -> str | None:
        return self.get_str(name) if name in self.fields else None

    def opt_bool(self, name: str) -> bool:
        """A boolean field; False when absent."""
        value = self.fields.get(name, False)
        if not isinstance(value, bool):
            raise TypeError(f"{self.type}.{name} is not a bool")
        return value

    def to_message(self) -> dict[str, Any]:
        """The map a client sends (``encode(request.to_message())``)."""
        return {"type": self.type, "id": self.id, **self.fields}


_packers = threading.local()


def encode(message: Mapping[str, Any]) -> bytes:
    """One frame: ``message`` as a msgpack map (str as str, bytes as bin).

    Each thread keeps one packer: ``msgpack.packb`` makes a packer per call
    (reads its options, allocates its buffer), and an ack took 1.1 us that way
    against 0.6 us with a kept one. ``Packer.pack`` resets the packer after
    each frame, whether it raised or not, and on plain dicts, lists, strings,
    numbers and bytes (the messages ``protocol.build`` makes) runs no Python
    code, so no other call can come in between. A packer keeps the buffer of
    the largest frame it made.
    """
    try:
        packer = _packers.packer
    except AttributeError:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    frame: bytes = packer.pack(message)
    return frame


def decode_request(frame: bytes | str) -> Request:
    """Read and check one client frame (see the module docstring)."""
    data = _unpack(frame)
    request_id = _read_id(data)
    kind = _read_type(data, request_id)
    try:
        _check_fields(data, kind, request_id)
    except ProtocolError as exc:
        exc.request_type = kind  # a request of a known type after all, if a wrong one
        raise
    fields = {key: value for key, value in data.items() if key not in _ENVELOPE}
    return Request(kind, request_id, fields)


def new_request(type_: str, id_: RequestId, **fields: Any) -> Request:
    """A request built by a client, checked like the server will check it.

    Raises InvalidMessage naming the first field that is wrong.
    """
    request = Request(type_, id_, fields)
    validate_message(request.to_message(), sender="client")
    return request


def validate_message(
    message: Mapping[str, Any], sender: Literal["client", "server"] = "server"
) -> None:
    """Check a whole message against the catalogue; raises InvalidMessage."""
    catalogue = REQUESTS if sender == "client" else SERVER_MESSAGES
    kind = message.get("type")
    if not isinstance(kind, str) or kind not in catalogue:
        raise InvalidMessage("type", f"is not a {sender} message type, got {show(kind)}")
    catalogue[kind].shape.check(message, kind)


class _Map(dict[str, Any]):
    """A decoded map that notes, instead of raising, a non-string or repeated key.

    msgpack calls it with each map's key-value pairs (``object_pairs_hook``);
    deferring the complaint lets the error carry the request id.
    """

    __slots__ = ("problem",)

    def __init__(self, pairs: Iterable[tuple[object, object]]) -> None:
        super().__init__()
        self.problem: str | None = None
        for key, value in pairs:
            if not isinstance(key, str):
                what = "an extension value" if _is_extension(key) else show(key)
                self.problem = self.problem or f"map keys must be strings, got {what}"
            elif key in self:
                self.problem = self.problem or f"duplicate key {show(key)}"
            else:
                self[key] = value


_NO_EXTENSIONS: Final = "msgpack extension values (timestamps included) are not accepted"


def _bad_timestamp(frame: bytes, exc: Exception) -> bool:
    """Whether msgpack refused ``frame`` for a timestamp's bytes (extension type -1 of a
    length or a nanosecond count it does not take), which it decodes before any
    ``ext_hook``: a ``ValueError`` (not a string's UTF-8), and a timestamp in the
    frame. Its words are not asked: msgpack before 1.1.2 says ``Unpack failed: error =
    -1`` of it, as of other faults."""
    if not isinstance(exc, ValueError) or isinstance(exc, UnicodeDecodeError):
        return False
    unpacker = msgpack.Unpacker(**_UNPACK_OPTIONS)
    unpacker.feed(frame)
    try:
        return _holds_timestamp(unpacker, frame, 0)
    except Exception:  # the frame's fault came before any timestamp
        return False


# Where an extension value's type byte is, from its first byte: fixext 1, 2, 4, 8, 16,
# then ext 8, 16, 32 (their lengths first).
_EXTENSION_TYPE_AT: Final = {0xD4: 1, 0xD5: 1, 0xD6: 1, 0xD7: 1, 0xD8: 1, 0xC7: 2, 0xC8: 3, 0xC9: 5}
_TIMESTAMP: Final = 0xFF  # extension type -1
_WALK_DEPTH: Final = 32  # no request nests deeper; a deeper frame is refused for other faults


def _holds_timestamp(unpacker: msgpack.Unpacker, frame: bytes, depth: int) -> bool:
    """Whether the next value in ``unpacker`` (reading ``frame``) is or holds a timestamp,
    read to its end without decoding one (a value cut short raises); maps and arrays
    are looked into to ``_WALK_DEPTH``."""
    at = unpacker.tell()
    head = frame[at]
    if depth < _WALK_DEPTH and (0x90 <= head <= 0x9F or head in (0xDC, 0xDD)):
        items = unpacker.read_array_header()
    elif depth < _WALK_DEPTH and (0x80 <= head <= 0x8F or head in (0xDE, 0xDF)):
        items = 2 * unpacker.read_map_header()
    else:
        offset = _EXTENSION_TYPE_AT.get(head)
        unpacker.skip()  # whole, or it raises
        return offset is not None and frame[at + offset] == _TIMESTAMP
    found = False
    for _ in range(items):  # each read to its end: a map cut short is not one to blame
        found = _holds_timestamp(unpacker, frame, depth + 1) or found
    return found


def _id_by_skipping(frame: bytes) -> RequestId | None:
    """The request id of a frame that begins with one msgpack map, read without decoding
    anything but the keys that are strings and the first ``id``'s value (what msgpack
    cannot decode, a key included, is skipped), else None. Bytes after the map are left
    unread, as ``_unpack`` reads the id of a map with trailing bytes."""
    unpacker = msgpack.Unpacker(**_UNPACK_OPTIONS)
    unpacker.feed(frame)
    try:
        for _ in range(unpacker.read_map_header()):
            if _skipped(unpacker, frame) == "id":
                return _peek_id({"id": msgpack.unpackb(_skipped_bytes(unpacker, frame))})
            unpacker.skip()
    except Exception:  # not a map, cut short, or the id itself is what cannot be read
        return None
    return None


def _skipped_bytes(unpacker: msgpack.Unpacker, frame: bytes) -> bytes:
    """The bytes of the next value in ``unpacker`` (reading ``frame``), skipped over."""
    start = unpacker.tell()
    unpacker.skip()
    return frame[start : unpacker.tell()]


def _skipped(unpacker: msgpack.Unpacker, frame: bytes) -> str | None:
    """The next value in ``unpacker`` if it is a string (a map key), else None; skipped
    over, undecoded, when it is of another type."""
    data = _skipped_bytes(unpacker, frame)
    if data[0] not in _STRING_HEADS and not 0xA0 <= data[0] <= 0xBF:
        return None
    key: str = msgpack.unpackb(data, **_UNPACK_OPTIONS)
    return key


_STRING_HEADS: Final = frozenset({0xD9, 0xDA, 0xDB})  # str 8, 16, 32 (0xa0..0xbf: fixstr)


def _bad(message: str, re: RequestId | None = None) -> ProtocolError:
    return ProtocolError("bad_request", message, re=re)


def _unpack(frame: bytes | str) -> dict[str, Any]:
    if isinstance(frame, str):
        raise _bad("text frames are not accepted: send each request as a binary msgpack frame")
    if len(frame) > MAX_FRAME_BYTES:
        raise _bad(f"the frame has {len(frame)} bytes; the limit is {MAX_FRAME_BYTES}")
    flat = _unpack_flat(frame)
    if flat is not None:
        return flat
    try:
        data = msgpack.unpackb(
            frame, object_pairs_hook=_Map, ext_hook=_extension, **_UNPACK_OPTIONS
        )
    except msgpack.ExtraData as exc:
        raise _bad("trailing bytes after the msgpack map", _peek_id(exc.unpacked)) from exc
    except (ValueError, TypeError) as exc:  # msgpack's format, limit, depth and UTF-8 errors
        if _bad_timestamp(frame, exc):  # an extension value all the same, in a sound map
            raise _bad(_NO_EXTENSIONS, _id_by_skipping(frame)) from exc
        raise _bad(_decoder_problem(exc), _id_beside_bad_text(frame, exc)) from exc
    if _has_extension(data):
        raise _bad(_NO_EXTENSIONS, _peek_id(data))
    if not isinstance(data, _Map):
        raise _bad(f"a frame must hold one msgpack map, not {show(data)}")
    if data.problem is not None:
        raise _bad(data.problem, _peek_id(data))
    return data


def _unpack_flat(frame: bytes) -> dict[str, Any] | None:
    """The usual request, decoded by msgpack's C code alone: one map (of at most 15
    keys, a fixmap) from distinct strings to scalars. None for any other frame, which
    ``_unpack`` then decodes with ``_Map`` to say what is wrong, if anything: a
    repeated key shows as fewer keys than the map's header counts, an extension
    value (a timestamp too) or a nested map or array as a value of another type."""
    if not frame or not 0x80 <= frame[0] <= 0x8F:
        return None
    try:
        data = msgpack.unpackb(frame, **_UNPACK_OPTIONS)
    except Exception:  # any problem is named by the full decode
        return None
    if type(data) is not dict or len(data) != frame[0] & 0x0F:
        return None
    for key, value in data.items():
        if type(key) is not str or type(value) not in _PLAIN:
            return None
    return data


def _id_beside_bad_text(frame: bytes, exc: Exception) -> RequestId | None:
    """The request id of a frame whose fault is a string that is not UTF-8, when the id
    itself is sound: decoded again with the bad bytes kept as lone surrogates, which no
    valid id holds (so the error's ``re`` can be encoded), else None."""
    if not isinstance(exc, UnicodeDecodeError):
        return None
    try:
        data = msgpack.unpackb(
            frame,
            object_pairs_hook=_Map,
            ext_hook=_extension,
            unicode_errors="surrogateescape",
            **_UNPACK_OPTIONS,
        )
    except Exception:  # some other fault too: no id to give
        return None
    request_id = _peek_id(data)
    if isinstance(request_id, str) and not request_id.isascii():
        try:
            request_id.encode()
        except UnicodeEncodeError:  # the id was one of the bad strings
            return None
    return request_id


def _peek_id(data: object) -> RequestId | None:
    """The request id if ``data`` is a map holding a valid one, else None."""
    if not isinstance(data, dict) or "id" not in data:
        return None
    try:
        REQUEST_ID.check(data["id"], "id")
    except InvalidMessage:
        return None
    request_id: RequestId = data["id"]
    return request_id


def _read_id(data: Mapping[str, Any]) -> RequestId:
    if "id" not in data:
        raise _bad("a request needs an id (an int, or a string of 1..64 characters)")
    try:
        REQUEST_ID.check(data["id"], "id")
    except InvalidMessage as exc:
        raise _bad(str(exc)) from exc
    request_id: RequestId = data["id"]
    return request_id


def _read_type(data: Mapping[str, Any], request_id: RequestId) -> str:
    kind = data.get("type")
    if kind is None:
        raise _bad("a request needs a type", request_id)
    if not isinstance(kind, str) or kind not in REQUESTS:
        raise _bad(f"unknown request type {show(kind)}", request_id)
    return kind


def _check_fields(data: Mapping[str, Any], kind: str, request_id: RequestId) -> None:
    """The checks of a request of type ``kind`` (one of ``REQUESTS``) beyond its envelope."""
    if kind == "hello":
        _check_version(data, request_id)
    try:
        REQUESTS[kind].shape.check(data, kind)
    except InvalidMessage as exc:
        raise ProtocolError("bad_request", str(exc), re=request_id) from exc


def _check_version(data: Mapping[str, Any], request_id: RequestId) -> None:
    version = data.get("protocol")
    if not isinstance(version, int) or isinstance(version, bool):
        return  # not a version at all: the field check says bad_request
    if not -MAX_SAFE_INT <= version <= MAX_SAFE_INT:
        return  # beyond the wire's integers, as for any field: bad_request
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(each) for each in SUPPORTED_VERSIONS)
        raise ProtocolError(
            "unsupported_version",
            f"protocol {version} is not supported; this server speaks {supported}",
            re=request_id,
            supported=list(SUPPORTED_VERSIONS),
        )
