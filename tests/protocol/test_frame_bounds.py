"""Frames at the edges of what the codec decodes, and replies at the edge of a frame.

- msgpack decodes maps and arrays nested up to 1024 deep. The codec's scan for
  extension values recursed, so a frame nested about a thousand deep raised
  RecursionError: the server logged it as an unexpected failure and answered
  without ``re``. Every such frame is now a plain ``bad_request`` with its ``re``
  (an extension found however deep), and only past msgpack's own depth is the id
  unreadable.
- A ``games`` reply of ``GAMES_LIST_LIMIT`` summaries, each as large as one can be,
  fits in a server frame.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgpack
import pytest

from protocol import (
    GAMES_LIST_LIMIT,
    LEVELS,
    MAX_FRAME_BYTES,
    MAX_SERVER_FRAME_BYTES,
    ProtocolError,
    build,
    decode_request,
    encode,
    validate_message,
)
from protocol.constants import MAX_SAFE_INT


def rejection(frame: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode_request(frame)
    return caught.value


def nested(depth: int, inner: bytes = b"\xc0", *, maps: bool = False) -> bytes:
    """A ping whose extra field ``x`` nests ``depth`` arrays (or maps) around ``inner``."""
    opening = b"\x81\xa1k" if maps else b"\x91"  # [...] or {"k": ...}
    head: bytes = msgpack.packb({"type": "ping", "id": 7})
    return bytes([head[0] + 1]) + head[1:] + b"\xa1x" + opening * depth + inner


@pytest.mark.parametrize("maps", [False, True])
@pytest.mark.parametrize("depth", [1, 900, 990, 1010, 1023])
def test_a_deeply_nested_frame_is_a_bad_request_with_its_id(depth: int, maps: bool) -> None:
    frame = nested(depth, maps=maps)
    assert len(frame) <= MAX_FRAME_BYTES
    error = rejection(frame)
    assert error.code == "bad_request"
    assert error.re == 7
    assert "unknown field 'x'" in str(error)


@pytest.mark.parametrize("depth", [1, 1000, 1023])
def test_an_extension_however_deep_is_found_and_named(depth: int) -> None:
    extension = b"\xd4\x05\x00"  # fixext 1, type 5
    error = rejection(nested(depth, extension))
    assert error.code == "bad_request"
    assert error.re == 7
    assert "extension" in str(error)


def test_past_msgpacks_own_depth_the_id_is_unreadable() -> None:
    error = rejection(nested(1024))
    assert error.code == "bad_request"
    assert error.re is None
    assert "nests" in str(error)


def test_a_full_games_list_fits_in_a_server_frame() -> None:
    when = datetime(2025, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
    widest = build.summary(
        game=MAX_SAFE_INT,
        level=max(LEVELS, key=len),
        status="active",
        v=MAX_SAFE_INT,
        moves=MAX_SAFE_INT,
        score=MAX_SAFE_INT,
        time_ms=MAX_SAFE_INT,
        deal=MAX_SAFE_INT,
        started=when,
        updated=when,
        winnable=True,
    )
    reply = build.games("x" * 64, games=[widest] * GAMES_LIST_LIMIT)
    validate_message(reply)
    assert len(encode(reply)) <= MAX_SERVER_FRAME_BYTES
