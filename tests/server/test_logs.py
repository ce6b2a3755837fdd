"""The log during a database outage: bounded, one JSON object per line, never SQL."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sqlite3
from collections.abc import Iterator
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import event

from protocol.constants import MAX_FRAME_BYTES
from server.connection import _log_close
from server.logs import RateLimit, describe_exception, make_handler
from server.store import StoreError
from server.store.errors import translate_errors
from server.store.sqlite_writer import SqliteWriter
from tests.server.conftest import Running

FORBIDDEN = ("SELECT", "INSERT", "UPDATE", "[SQL", "parameters", "sqlalche.me", "secret-token")


class Outage:
    """Every statement fails the way a dying disk makes SQLite fail.

    Every path to SQLite breaks: SQLAlchemy's cursors (an engine event), the
    store's direct ``execute_fetchall`` on the aiosqlite connection, and the
    statements of the writer thread's transactions (``SqliteWriter``).
    """

    def __init__(self, engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.engine = engine.sync_engine
        self.patch = monkeypatch

    def __enter__(self) -> Outage:
        event.listen(self.engine, "before_cursor_execute", self._fail)
        self.patch.setattr(aiosqlite.Connection, "execute_fetchall", self._fail_async)
        self.patch.setattr(SqliteWriter, "_round", self._fail)
        return self

    def __exit__(self, *_: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._fail)
        self.patch.undo()

    @staticmethod
    def _fail(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    @staticmethod
    async def _fail_async(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")


@pytest.fixture
def json_log() -> Iterator[tuple[io.StringIO, RateLimit]]:
    stream = io.StringIO()
    handler, limiter = make_handler("json", stream, window=0.5)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream, limiter
    root.removeHandler(handler)
    root.setLevel(old_level)


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_an_outage_logs_a_few_sql_free_lines(
    server: Running, json_log: tuple[io.StringIO, RateLimit], monkeypatch: pytest.MonkeyPatch
) -> None:
    stream, limiter = json_log
    players = [await server.player(f"p{n}") for n in range(10)]
    games = [(await p.request("new_game", level="hard", deal=n + 1))["game"] for n, p in
             enumerate(players)]  # fmt: skip
    assert server.server.store is not None
    with Outage(server.server.store._engine, monkeypatch):
        replies = await asyncio.gather(
            *(
                p.request("deal", game=g, v=0)
                for _ in range(10)
                for p, g in zip(players, games, strict=True)
            )
        )
        assert {r.get("code") for r in replies} == {"unavailable"}, [
            r for r in replies if r.get("code") != "unavailable"
        ][:3]
        await asyncio.sleep(0.6)  # the rate limit's window ends
        limiter.flush()
    assert (await players[0].request("deal", game=games[0], v=0))["v"] == 1  # recovered
    lines = stream.getvalue().splitlines()
    entries = [json.loads(line) for line in lines]  # every line one object
    assert len(lines) <= 20, lines  # 100 failed requests
    assert not [line for line in lines if any(word in line for word in FORBIDDEN)], lines
    failures = [e for e in entries if e["message"].startswith("store unavailable for deal")]
    assert failures and "OperationalError" in failures[0]["error"]
    assert {"time", "level", "logger", "message", "connection", "game"} <= failures[0].keys()
    assert any(e.get("repeated", 0) > 0 for e in failures), failures


def test_a_bug_with_a_database_cause_logs_frames_without_sql() -> None:
    try:
        with translate_errors():
            raise sa_statement_error()
    except StoreError as exc:
        rendered = describe_exception(exc, stack=True)
    assert "StoreError: the database reported an error" in rendered
    assert "ProgrammingError" in rendered and ".py:" in rendered
    assert not [word for word in FORBIDDEN if word in rendered], rendered


def sa_statement_error() -> Exception:
    from sqlalchemy import exc as sa_exc

    return sa_exc.ProgrammingError(
        "UPDATE players SET token = :t", {"t": "secret-token"}, Exception("syntax")
    )


def test_repeats_are_counted_and_reported_once_per_window() -> None:
    now = [0.0]
    out: list[logging.LogRecord] = []
    limiter = RateLimit(out.append, window=10, clock=lambda: now[0])
    record = logging.makeLogRecord({"name": "x", "levelno": logging.WARNING, "msg": "down"})
    passed = [limiter.filter(record) for _ in range(5)]
    assert passed == [True, False, False, False, False]
    now[0] = 11
    limiter.flush()
    assert [r.getMessage() for r in out] == ["down (repeated 4 more times)"]
    assert limiter.filter(record) is True  # a new window


def test_lines_of_one_kind_with_other_values_are_not_called_repeats() -> None:
    """Three protocol errors from three addresses were summed up as the first one
    '(repeated 2 more times)': the others' addresses and reasons were never written."""
    now = [0.0]
    out: list[logging.LogRecord] = []
    limiter = RateLimit(out.append, window=10, clock=lambda: now[0])

    def line(address: str, reason: str) -> logging.LogRecord:
        fields = {"name": "x", "levelno": logging.WARNING, "msg": "closed %s: %s"}
        return logging.makeLogRecord({**fields, "args": (address, reason)})

    records = [line("a", "bad opcode"), line("b", "bad mask"), line("a", "bad opcode")]
    records += [line("c", "reserved bits"), line("d", "bad length")]
    assert [limiter.filter(r) for r in records] == [True, False, False, False, False]
    now[0] = 11
    limiter.flush()
    assert [r.getMessage() for r in out] == [
        "closed a: bad opcode (and 4 more lines like it, 3 of them with other values:"
        " closed b: bad mask; closed c: reserved bits; closed d: bad length)"
    ]


def test_a_summary_of_lines_with_other_values_ends_with_the_last_of_them() -> None:
    """The start-up wait's summary repeated its first line's '28 s left' and the first
    two others' countdowns, long after they were true: the last line counted is written
    too, after the first two and an ellipsis for those between."""
    now = [0.0]
    out: list[logging.LogRecord] = []
    limiter = RateLimit(out.append, window=10, clock=lambda: now[0])
    fields = {"name": "x", "levelno": logging.WARNING, "msg": "retrying, %.0f s left"}
    for left in (28, 26, 24, 22, 20):
        limiter.filter(logging.makeLogRecord({**fields, "args": (left,)}))
    now[0] = 11
    limiter.flush()
    assert [r.getMessage() for r in out] == [
        "retrying, 28 s left (and 4 more lines like it, 4 of them with other values:"
        " retrying, 26 s left; retrying, 24 s left; ...; retrying, 20 s left)"
    ]


def test_a_summary_of_other_connections_lines_names_none_of_them() -> None:
    """Three silent connections' 'no hello in time': the summary of the second and third
    carried the first one's connection id."""
    now = [0.0]
    out: list[logging.LogRecord] = []
    limiter = RateLimit(out.append, window=10, clock=lambda: now[0])
    fields = {"name": "x", "levelno": logging.WARNING, "msg": "no hello in time", "game": None}
    for connection in (1, 2, 3):
        limiter.filter(logging.makeLogRecord({**fields, "connection": connection}))
    same = {**fields, "msg": "down", "connection": 4}
    for _ in range(3):
        limiter.filter(logging.makeLogRecord(same))
    now[0] = 11
    limiter.flush()
    summaries = {r.getMessage(): (r.connection, r.game) for r in out}  # type: ignore[attr-defined]
    assert summaries == {
        "no hello in time (repeated 2 more times)": (None, None),
        "down (repeated 2 more times)": (4, None),
    }


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_closes_of_different_codes_are_not_counted_as_repeats(
    server: Running, json_log: tuple[io.StringIO, RateLimit]
) -> None:
    """A text frame that is not UTF-8 (1007) and a frame over the limit (1009) are two
    failures: each has its own line, where counting repeats by the line's format alone
    wrote the second as a repeat of the first, under the first's code."""
    stream, limiter = json_log
    for frame, code in ((b"\xff\xfe", 1007), (b"x" * (MAX_FRAME_BYTES + 1), 1009)):
        client = await server.connect()
        ws = client.ws
        if code == 1007:
            ws.protocol.send_text(frame)
        else:
            ws.protocol.send_binary(frame)
        ws.transport.write(b"".join(ws.protocol.data_to_send()))
        await asyncio.wait_for(ws.wait_closed(), 5)
        assert ws.close_code == code
    await asyncio.sleep(0.6)  # the rate limit's window ends
    limiter.flush()
    messages = [json.loads(line)["message"] for line in stream.getvalue().splitlines()]
    closes = [m for m in messages if m.startswith("closed the connection from")]
    assert [c[-6:] for c in closes] == ["(1007)", "(1009)"], messages


def test_the_server_s_own_close_reasons_of_one_code_are_not_counted_as_repeats(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A missed hello deadline and an abuse close are both 1008: the second, within the
    window, was counted as one more "no hello in time" and its reason never logged."""
    out: list[logging.LogRecord] = []
    limiter = RateLimit(out.append, window=10, clock=lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger="server.connection"):
        _log_close("closing the", "192.0.2.1", "no hello in time", 1008)
        _log_close("closing the", "192.0.2.2", "too many bad or rate-limited requests", 1008)
        _log_close("closing the", "192.0.2.3", "no hello in time", 1008)
    passed = [r.getMessage() for r in caplog.records if limiter.filter(r)]
    assert passed == [
        "closing the connection from 192.0.2.1: no hello in time (1008)",
        "closing the connection from 192.0.2.2: too many bad or rate-limited requests (1008)",
    ]


def test_a_text_line_s_time_carries_its_offset_from_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Europe/Helsinki")
    time.tzset()
    try:
        stream = io.StringIO()
        handler, _ = make_handler("text", stream, window=0.5)
        record = logging.LogRecord("server", logging.INFO, __file__, 1, "up", None, None)
        record.created = 1_796_635_800.125  # 2026-12-07 09:30:00.125 UTC
        line = handler.format(record)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert line.startswith("2026-12-07 11:30:00.125+02:00 INFO server: up"), line
