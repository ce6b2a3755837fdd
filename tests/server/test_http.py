"""Plain HTTP on the WebSocket port: health, readiness, metrics, the web client, 404."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import msgpack
import pytest
from prometheus_client import Histogram
from prometheus_client.metrics_core import Metric
from sqlalchemy import NullPool
from sqlalchemy import text as sql
from sqlalchemy.ext.asyncio import create_async_engine
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from server import connection as connection_module
from server.http import METRICS_REUSE_S, READY_REUSE_S, HttpRoutes, accepts_gzip
from server.metrics import LoopHistogram, Metrics
from server.store import SchemaStatus, StoreUnavailable
from server.webclient import WebClient, content_security_policy
from tests.server.conftest import Running, Start, quiet_settings
from tests.server.http_get import http_get
from tests.server.raw import upgrade_head


async def test_health_and_readiness(server: Running) -> None:
    assert (await http_get(server.server.port, "/healthz"))[0] == 200
    status, headers, body = await http_get(server.server.port, "/readyz")
    assert (status, body) == (200, b"ready\n")
    assert headers["content-type"].startswith("text/plain")


async def test_a_plain_get_is_a_page_and_unknown_paths_are_404(server: Running) -> None:
    status, headers, body = await http_get(server.server.port, "/")
    built = WebClient.load()  # what `make web` left in server/web/, if anything
    if built.index is None:
        assert status == 200 and b"/healthz" in body and b"make web" in body
    else:
        assert (status, body, headers["cache-control"]) == (200, built.index, "no-cache")
        path, asset = next(iter(built.assets.items()))
        status, headers, body = await http_get(server.server.port, path)
        assert (status, body) == (200, asset.body)
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
    assert (await http_get(server.server.port, "/nothing/here"))[0] == 404
    # the WebSocket protocol still works beside it
    bea = await server.player("bea")
    assert (await bea.request("ping"))["type"] == "pong"


async def test_metrics_count_connections_requests_errors_and_commits(server: Running) -> None:
    cas = await server.player("cas")
    game = (await cas.request("new_game", level="hard", deal=1))["game"]
    assert (await cas.request("deal", game=game, v=0))["v"] == 1
    assert (await cas.request("deal", game=game, v=1))["code"] == "stock_empty"
    await cas.send_raw(b"\xc1")  # not msgpack
    status, headers, body = await http_get(server.server.port, "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=")
    text = body.decode()
    assert "scorpion_connections 1.0" in text
    assert 'scorpion_requests_total{type="deal"} 2.0' in text
    assert 'scorpion_errors_total{code="stock_empty",type="deal"} 1.0' in text
    assert 'scorpion_errors_total{code="bad_request",type="unread"} 1.0' in text
    assert "scorpion_commit_seconds_count" in text
    assert "scorpion_commit_batch_size_bucket" in text
    assert "scorpion_games_in_memory 1.0" in text
    for name in ("scorpion_event_loop_lag_seconds", "scorpion_solver_pending", "process_open_fds",
                 "scorpion_outbox_bytes", "scorpion_solver_seconds"):  # fmt: skip
        assert f"# TYPE {name}" in text


async def test_a_request_of_a_known_type_with_bad_fields_is_counted_under_its_type(
    server: Running,
) -> None:
    """Its type was read: ``unread`` is for a frame that was not a request of a known
    type, whatever type it names (a client's own label would make a series of its own)."""
    dee = await server.player("dee")
    game = (await dee.request("new_game", level="hard", deal=1))["game"]
    refused = [
        await dee.request("games", status="bogus"),
        await dee.request("move", game=game, v=0, card="7C", to=5, extra=1),
        await dee.request("hello", protocol=99, client="test/1"),
        await dee.request("no_such_type"),
    ]
    assert [reply["code"] for reply in refused] == [
        "bad_request",
        "bad_request",
        "unsupported_version",
        "bad_request",
    ]
    text = (await http_get(server.server.port, "/metrics"))[2].decode()
    assert 'scorpion_requests_total{type="games"} 1.0' in text
    assert 'scorpion_errors_total{code="bad_request",type="games"} 1.0' in text
    assert 'scorpion_errors_total{code="bad_request",type="move"} 1.0' in text
    assert 'scorpion_errors_total{code="unsupported_version",type="hello"} 1.0' in text
    assert 'scorpion_errors_total{code="bad_request",type="unread"} 1.0' in text
    assert "no_such_type" not in text


async def test_closes_are_counted_by_the_servers_code_not_the_clients(server: Running) -> None:
    """A client chooses its close code (3000..4999 are all valid): counted as ``none``,
    the codes could make thousands of series. The server's own closes keep theirs."""
    for code in (3001, 3002, 4999):
        client = await server.connect()
        await client.ws.close(code)
    rude = await server.connect()
    await rude.send_raw(b"\x00" * (70 * 1024))  # over the frame limit: the server closes, 1009
    async with connect(f"ws://127.0.0.1:{server.server.port}/") as other:  # no subprotocol
        await other.send(msgpack.packb({"type": "ping", "id": 1}))
        with contextlib.suppress(ConnectionClosed):
            while True:
                await other.recv()  # unsupported_version, then 1002

    async def closes() -> dict[str, float]:
        text = (await http_get(server.server.port, "/metrics"))[2].decode()
        return {
            line.split('"')[1]: float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("scorpion_connections_closed_total{")
        }

    async with asyncio.timeout(10):
        while (counted := await closes()).get("none", 0) < 3 or not {
            "1009",
            "1002",
        } <= counted.keys():
            await asyncio.sleep(0.05)
    assert not any(code.startswith(("3", "4")) for code in counted), counted


def routes(schema_status: object) -> HttpRoutes:
    async def status() -> SchemaStatus:
        if isinstance(schema_status, BaseException):
            raise schema_status
        if schema_status == "hang":
            await asyncio.sleep(60)
        assert isinstance(schema_status, SchemaStatus)
        return schema_status

    return HttpRoutes(Metrics(), status, timeout=0.05, name="test")


async def test_not_ready_without_the_database_or_its_schema() -> None:
    down = await routes(StoreUnavailable("the database cannot be reached")).answer("/readyz")
    assert down.status == 503 and b"not ready: the database cannot be reached" in down.body
    slow = await routes("hang").answer("/readyz")
    assert slow.status == 503 and b"did not answer within 0.05 s" in slow.body
    old = await routes(SchemaStatus.OUTDATED).answer("/readyz?verbose")
    assert old.status == 503 and b"outdated" in old.body
    assert (await routes(SchemaStatus.CURRENT).answer("/readyz")).status == 200


async def test_a_probe_out_of_time_answers_without_waiting_for_its_clean_up() -> None:
    """A database that stopped answering made ``/readyz`` wait for the probe's clean-up
    too (a statement cancelled, its connection closed: 2 s more with a frozen
    PostgreSQL), past the timeout it names."""
    cleaned = asyncio.Event()

    async def status() -> SchemaStatus:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.shield(asyncio.sleep(2))  # a polite close the network never answers
            cleaned.set()
        raise AssertionError("not reached")

    loop = asyncio.get_running_loop()
    started = loop.time()
    slow = await HttpRoutes(Metrics(), status, timeout=0.05, name="test").answer("/readyz")
    assert slow.status == 503 and b"did not answer within 0.05 s" in slow.body
    assert loop.time() - started < 1.0 and not cleaned.is_set()
    await asyncio.wait_for(cleaned.wait(), 5)  # the clean-up still ran, in the background


async def test_probes_at_once_share_one_and_its_answer_serves_a_moment() -> None:
    """``/readyz`` is on the public port, and a probe holds a database connection
    (on PostgreSQL, up to half a second waiting for a lock): a flood of probes took the
    pool from the players' reads."""
    asked = 0

    async def status() -> SchemaStatus:
        nonlocal asked
        asked += 1
        await asyncio.sleep(0.05)
        return SchemaStatus.CURRENT

    http = HttpRoutes(Metrics(), status, timeout=1, name="test")
    replies = await asyncio.gather(*(http.answer("/readyz") for _ in range(100)))
    assert {r.status for r in replies} == {200} and asked == 1
    assert (await http.answer("/readyz")).status == 200 and asked == 1  # just now: the same
    await asyncio.sleep(READY_REUSE_S)
    assert (await http.answer("/readyz")).status == 200 and asked == 2


async def test_a_flood_of_metrics_scrapes_renders_them_once_a_moment() -> None:
    """``/metrics`` is on the public port, and rendering it takes milliseconds of the
    event loop: 16 connections of one address scraping it took a core and a half and
    slowed every player's moves tenfold (p99 1 s)."""
    metrics = Metrics()
    renders = 0
    render = metrics.render

    def counted() -> bytes:
        nonlocal renders
        renders += 1
        return render()

    metrics.render = counted  # type: ignore[method-assign]
    http = HttpRoutes(metrics, _never_asked, timeout=1, name="test")
    first = await http.answer("/metrics")
    metrics.answered("ping", None)
    replies = [await http.answer("/metrics") for _ in range(100)]
    assert renders == 1 and {reply.body for reply in replies} == {first.body}
    await asyncio.sleep(METRICS_REUSE_S)
    fresh = await http.answer("/metrics")
    assert renders == 2 and b'scorpion_requests_total{type="ping"} 1.0' in fresh.body


async def _never_asked() -> SchemaStatus:
    raise AssertionError("the readiness probe was not asked for")


def test_each_server_has_its_own_registry() -> None:
    one, two = Metrics(), Metrics()
    one.answered("ping", None)
    assert b'scorpion_requests_total{type="ping"} 1.0' in one.render()
    assert b"ping" not in two.render()


def built_client(tmp_path: Path) -> WebClient:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<script src="/assets/index-ab12.js"></script>')
    (tmp_path / "assets" / "index-ab12.js").write_text("console.log(1)")
    (tmp_path / "assets" / "index-ab12.css").write_text("body{}")
    return WebClient.load(tmp_path)


async def test_the_built_client_is_served_with_its_caching(tmp_path: Path) -> None:
    http = HttpRoutes(Metrics(), _current, timeout=1, name="t", web=built_client(tmp_path))
    index = await http.answer("/?from=bookmark")
    assert (index.status, index.content_type) == (200, "text/html; charset=utf-8")
    assert index.cache_control == "no-cache" and b"/assets/index-ab12.js" in index.body
    script = await http.answer("/assets/index-ab12.js")
    assert script.status == 200 and script.body == b"console.log(1)"
    assert script.content_type.startswith("text/javascript")
    assert script.cache_control == "public, max-age=31536000, immutable"
    assert (await http.answer("/assets/index-ab12.css")).content_type.startswith("text/css")
    for path in ("/assets/missing.js", "/assets/../index.html", "/assets/", "/index.htm"):
        assert (await http.answer(path)).status == 404, path
    by_name = await http.answer("/index.html")
    assert (by_name.status, by_name.body, by_name.cache_control) == (200, index.body, "no-cache")


async def test_the_client_is_sent_compressed_to_who_accepts_gzip(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    page = "<!doctype html><title>Scorpion</title>" + "<p>the table</p>" * 200
    script = "export function deal(n) { return n * 2; }\n" * 300
    (tmp_path / "index.html").write_text(page)
    (tmp_path / "assets" / "index-ab12.js").write_text(script)
    (tmp_path / "assets" / "tiny-ab12.js").write_text("1")
    http = HttpRoutes(Metrics(), _current, timeout=1, name="t", web=WebClient.load(tmp_path))
    for path, text in (("/", page), ("/assets/index-ab12.js", script)):
        packed = await http.answer(path, accept_encoding="deflate, gzip;q=0.8, br")
        assert packed.content_encoding == "gzip" and packed.vary, path
        assert gzip.decompress(packed.body) == text.encode()
        assert len(packed.body) < len(text) / 4
        for refusal in ("", "identity", "gzip;q=0", "br, *;q=0", "gzip; q=0.000"):
            plain = await http.answer(path, accept_encoding=refusal)
            assert plain.content_encoding is None and plain.vary, (path, refusal)
            assert plain.body == text.encode()
        assert (await http.answer(path, accept_encoding="*")).content_encoding == "gzip"
    tiny = await http.answer("/assets/tiny-ab12.js", accept_encoding="gzip")
    assert tiny.content_encoding is None and tiny.body == b"1"  # not worth compressing
    health = await http.answer("/healthz", accept_encoding="gzip")
    assert health.content_encoding is None and not health.vary


async def test_the_client_is_not_sent_again_to_who_holds_it(tmp_path: Path) -> None:
    """Each file, and its gzipped form apart, has an entity tag; ``If-None-Match``
    naming the form chosen is answered 304 with no body (RFC 9110 13.1.2)."""
    (tmp_path / "assets").mkdir()
    page = "<!doctype html><title>Scorpion</title>" + "<p>the table</p>" * 200
    (tmp_path / "index.html").write_text(page)
    (tmp_path / "assets" / "index-ab12.js").write_text("export const x = 1;\n" * 300)
    http = HttpRoutes(Metrics(), _current, timeout=1, name="t", web=WebClient.load(tmp_path))
    for path, cache in (
        ("/", "no-cache"),
        ("/assets/index-ab12.js", "public, max-age=31536000, immutable"),
    ):
        plain = await http.answer(path)
        packed = await http.answer(path, accept_encoding="gzip")
        assert plain.etag and packed.etag and plain.etag != packed.etag, path
        assert plain.etag.startswith('"') and plain.etag.endswith('"')
        for tag, encoding in ((plain.etag, ""), (packed.etag, "gzip")):
            for asked in (tag, f"W/{tag}", f'"other", {tag}', "*"):
                again = await http.answer(path, accept_encoding=encoding, if_none_match=asked)
                assert (again.status, again.body, again.etag) == (304, b"", tag), (path, asked)
                assert again.cache_control == cache and again.vary
        # the other form's tag, another file's, a tag half-named, a tag holding a comma
        # and a star, "*" in a list (no list): the whole file
        others = ('"a,*,b"', f'"a", *, {plain.etag}')
        for asked in (packed.etag, '"x"', plain.etag.strip('"'), f"{plain.etag}x", *others):
            again = await http.answer(path, if_none_match=asked)
            assert (again.status, again.body) == (200, plain.body), (path, asked)
    other = WebClient.load(tmp_path).page
    assert other is not None and other.etag == (await http.answer("/")).etag  # made from the bytes
    (tmp_path / "index.html").write_text(page + "<p>a new build</p>")
    rebuilt = HttpRoutes(Metrics(), _current, timeout=1, name="t", web=WebClient.load(tmp_path))
    assert (await rebuilt.answer("/", if_none_match=str(other.etag))).status == 200
    health = await http.answer("/healthz", if_none_match="*")
    assert (health.status, health.etag) == (200, None)


def test_a_weight_out_of_the_rfc_form_does_not_take_gzip() -> None:
    """RFC 9110 12.4.2: a weight is 0 to 1 with three decimals at most; ``q=inf`` took gzip."""
    for refused in (
        "gzip;q=inf",
        "gzip;q= 0.5",
        "gzip;q =0.5",
        "gzip;q=nan",
        "gzip;q=2",
        "gzip;q=1e0",
        "gzip;q=0.0001",
        "gzip;q=-1",
    ):
        assert not accepts_gzip(refused), refused
    for taken in ("gzip;q=1", "gzip;q=1.000", "gzip;q=0.5", "gzip; q=0.001", "gzip;Q=1."):
        assert accepts_gzip(taken), taken


async def test_the_compressed_client_over_the_wire(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    script = "console.log('the table');\n" * 500
    (tmp_path / "index.html").write_text('<script src="/assets/index-ab12.js"></script>')
    (tmp_path / "assets" / "index-ab12.js").write_text(script)
    settings = quiet_settings(tmp_path, web_dir=str(tmp_path))
    running = Running(settings)
    await running.start()
    try:
        port = running.server.port
        asked = {"Accept-Encoding": "gzip, deflate"}
        status, headers, body = await http_get(port, "/assets/index-ab12.js", headers=asked)
        assert status == 200 and headers["content-encoding"] == "gzip"
        assert headers["vary"] == "Accept-Encoding"
        assert int(headers["content-length"]) == len(body)
        assert gzip.decompress(body) == script.encode()
        status, headers, body = await http_get(
            port, "/assets/index-ab12.js", method="HEAD", headers=asked
        )
        assert status == 200 and body == b"" and headers["content-encoding"] == "gzip"
        status, headers, body = await http_get(port, "/assets/index-ab12.js")
        assert "content-encoding" not in headers and body == script.encode()
        for method in ("GET", "HEAD"):
            again = {**asked, "If-None-Match": headers["etag"].replace('"', 'W/"', 1)}
            status, held, body = await http_get(
                port, "/assets/index-ab12.js", method=method, headers=again
            )
            assert status == 200 and held["etag"] != headers["etag"], (
                method
            )  # gzip's is another tag
            assert body == (b"" if method == "HEAD" else gzip.compress(script.encode(), 9, mtime=0))
            again = {"If-None-Match": headers["etag"]}
            status, held, body = await http_get(
                port, "/assets/index-ab12.js", method=method, headers=again
            )
            assert (status, body, held["etag"]) == (304, b"", headers["etag"]), method
            assert "content-length" not in held and "content-type" not in held
            assert (
                held["cache-control"] == headers["cache-control"]
                and held["vary"] == "Accept-Encoding"
            )
    finally:
        await running.stop()


async def test_the_client_is_served_with_its_security_headers(tmp_path: Path) -> None:
    """No site may frame the page (it holds the player's token), and it loads and connects
    to its own origin alone: its own WebSocket named with both schemes, as ``'self'``
    covers them only in newer browsers."""
    built_client(tmp_path)
    running = Running(quiet_settings(tmp_path, web_dir=str(tmp_path)))
    await running.start()
    try:
        port = running.server.port
        for path in ("/", "/assets/index-ab12.js", "/healthz", "/missing"):
            for method in ("GET", "HEAD"):
                _status, headers, _body = await http_get(port, path, method=method)
                assert headers["x-frame-options"] == "DENY", path
                assert headers["x-content-type-options"] == "nosniff", path
                assert headers["referrer-policy"] == "no-referrer", path
                policy = [d.strip() for d in headers["content-security-policy"].split(";")]
                assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
                assert "connect-src 'self' ws://127.0.0.1 wss://127.0.0.1" in policy, path
                assert not any("unsafe" in directive for directive in policy)
        status, held, _body = await http_get(port, "/", headers={"If-None-Match": "*"})
        assert status == 304 and held["x-frame-options"] == "DENY"
    finally:
        await running.stop()


@pytest.mark.parametrize(
    ("host", "named"),
    [
        ("scorpion.example.org", " ws://scorpion.example.org wss://scorpion.example.org"),
        ("127.0.0.1:8765", " ws://127.0.0.1:8765 wss://127.0.0.1:8765"),
        # CSP's host-source has no IPv6 literal: Chromium said "an invalid source" twice
        # at every load. 'self' covers the page's socket in the browsers that take one.
        ("[::1]:8765", ""),
        ("[2001:db8::1]", ""),
        (None, ""),
        ("x; script-src *", ""),  # no host: its bytes stay out of the header
        ("x y", ""),
        ("", ""),
    ],
)
def test_the_policy_names_the_pages_own_websocket(host: str | None, named: str) -> None:
    policy = content_security_policy(host)
    assert policy.endswith(f"; connect-src 'self'{named}")
    assert policy.count(";") == 6


async def test_without_a_build_the_page_says_how_to_build_the_client(tmp_path: Path) -> None:
    assert WebClient.load(tmp_path).index is None
    http = HttpRoutes(Metrics(), _current, timeout=1, name="t", web=WebClient.load(tmp_path))
    page = await http.answer("/")
    assert page.status == 200 and b"make web" in page.body and b"/healthz" in page.body
    assert (await http.answer("/assets/index-ab12.js")).status == 404


async def _current() -> SchemaStatus:
    return SchemaStatus.CURRENT


def test_a_loop_histogram_reads_as_the_clients_histogram() -> None:
    """The commit histograms are kept without prometheus_client's Histogram: their
    samples must be what it gives for the same observations, bucket edges included."""
    observed = [0.0, 0.001, 0.0011, 0.003, 0.05, 0.05, 2.0, 9.99, 10.0, 10.01, 400.0]
    ours = LoopHistogram("h", "d", (0.001, 0.0025, 0.05, 1.0, 10.0))
    theirs = Histogram("h", "d", buckets=(0.001, 0.0025, 0.05, 1.0, 10.0), registry=None)
    for value in observed:
        ours.observe(value)
        theirs.observe(value)

    def samples(family: Metric) -> list[tuple[str, dict[str, str], float]]:
        return [(s.name, s.labels, s.value) for s in family.samples if s.name != "h_created"]

    assert samples(ours.family()) == samples(next(iter(theirs.collect())))
    assert samples(ours.family())[-2:] == [("h_count", {}, 11.0), ("h_sum", {}, sum(observed))]


async def test_head_has_the_get_headers_and_no_body_and_other_methods_get_405(
    server: Running,
) -> None:
    port = server.server.port
    got = await http_get(port, "/healthz")
    status, headers, body = await http_get(port, "/healthz", method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-length"] == got[1]["content-length"] == str(len(got[2]))
    for method in ("POST", "DELETE", "PUT", "OPTIONS"):
        status, headers, body = await http_get(port, "/metrics", method=method)
        assert status == 405 and headers["allow"] == "GET, HEAD"
        assert b"GET, HEAD" in body and b"scorpion_" not in body


BODIES: dict[str, tuple[dict[str, str], bytes]] = {
    "content-length": ({"Content-Length": "5"}, b"hello"),
    "chunked": ({"Transfer-Encoding": "chunked"}, b"5\r\nhello\r\n0\r\n\r\n"),
    "a megabyte": ({"Content-Length": str(2**20)}, b"x" * 2**20),
}


async def test_a_request_with_a_body_is_answered_as_one_without(server: Running) -> None:
    """``websockets`` reads no body and closed such a request unanswered: now every path,
    every method, gets the answer it gets without a body, and the port keeps serving."""
    port = server.server.port
    paths = ["/healthz", "/readyz", "/metrics", "/", "/nothing/here", "/healthz?x=1"]
    paths += list(WebClient.load().assets)[:1]
    methods = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")
    for path in paths:
        plain = await http_get(port, path)
        for method in methods:
            for kind, (headers, body) in BODIES.items():
                got = await http_get(port, path, method=method, headers=headers, body=body)
                where = (path, method, kind)
                if method == "GET":
                    assert got[0] == plain[0], where
                    if path != "/metrics":  # its counters move between the two
                        assert got[2] == plain[2], where
                else:
                    assert got[0] == 405 and got[1]["allow"] == "GET, HEAD", where
                assert got[1]["connection"] == "close", where
    assert (await http_get(port, "/healthz"))[0] == 200
    gus = await server.player("gus")
    assert (await gus.request("ping"))["type"] == "pong"


async def test_a_body_that_is_announced_but_not_sent_does_not_hold_the_answer(
    server: Running,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
    try:
        writer.write(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        assert head.startswith(b"HTTP/1.1 405 "), head
        writer.write(b"x" * 997)  # the rest comes late: read and dropped
        await writer.drain()
        await asyncio.wait_for(reader.read(), 20)  # then the server closes
    finally:
        writer.close()


async def raw_answer(port: int, data: bytes, *, half_close: bool = False) -> bytes:
    """Everything the server sends back for ``data`` written at once, to its close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        if half_close:
            writer.write_eof()
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 20)
    finally:
        writer.close()


async def test_pipelined_requests_get_the_first_answer_then_the_close(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    port = server.server.port
    get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    for first in (
        get,
        b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        b"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n",
    ):
        for _ in range(20):
            answer = await raw_answer(port, first + get)
            status = b"HTTP/1.1 405 " if first.startswith(b"DELETE") else b"HTTP/1.1 200 "
            assert answer.startswith(status) and answer.count(b"HTTP/1.1") == 1, answer
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records
    assert (await http_get(port, "/healthz"))[0] == 200


async def test_a_request_then_the_end_of_the_stream_is_still_answered(server: Running) -> None:
    port = server.server.port
    answer = await raw_answer(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", half_close=True)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.rstrip().endswith(b"ok"), answer
    posted = b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
    assert (await raw_answer(port, posted, half_close=True)).startswith(b"HTTP/1.1 405 ")


async def test_an_upgrade_then_the_end_of_the_stream_is_still_answered(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade request followed by a half-close got no answer at all when it was
    refused (a bad key, version 8, a POST): the end of the stream closed the socket
    before the refusal was written. A good one gets its 101, then the close."""
    port = server.server.port
    failed: list[BaseException] = []  # websockets drops a handshake that raises, unsaid
    handshake = connection_module._Bounded.handshake

    async def recorded(self: connection_module._Bounded, *args: Any, **kwargs: Any) -> None:
        try:
            await handshake(self, *args, **kwargs)
        except Exception as exc:
            failed.append(exc)
            raise

    monkeypatch.setattr(connection_module._Bounded, "handshake", recorded)
    upgrade = upgrade_head(port).decode()
    refused = [
        ("400 ", re.sub(r"Sec-WebSocket-Key: \S+", "Sec-WebSocket-Key: a", upgrade)),
        ("426 ", upgrade.replace("Version: 13", "Version: 8")),
        ("405 ", upgrade.replace("GET", "POST", 1)),
    ]
    huge = upgrade.replace("\r\n\r\n", "\r\nX-Big: " + "x" * 9000 + "\r\n\r\n")
    refused.append(("431 ", huge))
    before = len(os.listdir("/proc/self/fd"))  # the server runs in this process
    for status, request in refused:
        answer = await asyncio.wait_for(raw_answer(port, request.encode(), half_close=True), 10)
        assert answer.startswith(f"HTTP/1.1 {status}".encode()), (status, answer)
    # and each socket was let go once answered: they were held until websockets' close
    # timeout (2 s; 10 s after a 431), counted against the address's sockets meanwhile
    await asyncio.sleep(0.5)
    assert len(os.listdir("/proc/self/fd")) <= before
    answer = await asyncio.wait_for(raw_answer(port, upgrade.encode(), half_close=True), 10)
    assert answer.startswith(b"HTTP/1.1 101 "), answer
    assert (await http_get(port, "/healthz"))[0] == 200
    assert failed == []


async def test_refusals_of_a_request_carry_the_security_headers(server: Running) -> None:
    """The answers to an upgrade refused by websockets (a bad key: 400; version 8: 426)
    and to a head refused as it was read (too large: 431; a bare LF: 400) carried none
    of the security headers every other answer of the port carries."""
    port = server.server.port
    upgrade = upgrade_head(port).decode()
    refused = [
        re.sub(r"Sec-WebSocket-Key: \S+", "Sec-WebSocket-Key: a", upgrade),
        upgrade.replace("Version: 13", "Version: 8"),
        upgrade.replace("\r\n\r\n", "\r\nX-Big: " + "x" * 9000 + "\r\n\r\n"),
        "GET / HTTP/1.1\nHost: x\n\n",
    ]
    for request in refused:
        answer = await asyncio.wait_for(raw_answer(port, request.encode()), 10)
        head = answer.split(b"\r\n\r\n", 1)[0].decode().lower()
        assert head.startswith(("http/1.1 400 ", "http/1.1 426 ", "http/1.1 431 ")), head
        assert "\r\nx-frame-options: deny" in head, head
        assert "\r\nx-content-type-options: nosniff" in head, head
        assert "\r\nreferrer-policy: no-referrer" in head, head
        assert "\r\ncontent-security-policy: default-src 'self';" in head, head


async def test_an_upgrade_to_another_websocket_version_is_told_the_one_spoken(
    server: Running,
) -> None:
    """Version 8 was refused 400 without the version the server speaks; RFC 6455
    section 4.2.2 asks for 426 and a Sec-WebSocket-Version header naming it."""
    port = server.server.port
    upgrade = upgrade_head(port).decode()
    answer = await raw_answer(port, upgrade.replace("Version: 13", "Version: 8").encode())
    head, _, text = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 426 "), answer
    assert b"\r\nSec-WebSocket-Version: 13\r\n" in head + b"\r\n", head
    assert b"\r\nUpgrade: websocket\r\n" in head + b"\r\n", head
    assert text == b"Unsupported WebSocket version: this server speaks version 13.\n"
    missing = re.sub(r"Sec-WebSocket-Version: 13\r\n", "", upgrade).encode()
    assert (await raw_answer(port, missing)).startswith(b"HTTP/1.1 400 ")


async def test_what_cannot_begin_a_request_is_refused_at_once(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    """A TLS hello on the plain port, or any stray protocol, is not held as a head that
    has not ended yet (until the handshake's timeout): it is refused as it comes."""
    for start in (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", b"SSH-2.0-OpenSSH_9.2\r\n"):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.server.port)
        try:
            writer.write(start)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 5)
            assert b" 200 " not in answer, answer
        finally:
            writer.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (await http_get(server.server.port, "/healthz"))[0] == 200


@pytest.mark.parametrize(
    "head",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /\r\n\r\n",
        b"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost x\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        b"GET /\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Content-Length: 5\r\n\r\nhello",
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        # framed as RFC 9112 has a server refuse (sections 3.2 and 6.3)
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1,2\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\n\r\n",
        b"GET /healthz HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n",
        b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        # a body's header with white space before its colon is a bad line, not dropped
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding\t: chunked\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n Content-Length: 5\r\n\r\n",
    ],
    ids=[
        "no-target",
        "no-version",
        "unknown-version",
        "header-without-colon",
        "header-name-with-space",
        "non-ascii-target",
        "upgrade-with-body",
        "upgrade-chunked",
        "negative-length",
        "two-lengths",
        "length-list",
        "no-host",
        "two-hosts",
        "upgrade-without-host",
        "length-with-space",
        "coding-with-tab",
        "folded-length",
    ],
)
async def test_a_malformed_request_is_answered_400(
    server: Running, head: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        answer = await raw_answer(server.server.port, head)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
    assert b"\r\nConnection: close\r\n" in answer
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (await http_get(server.server.port, "/healthz"))[0] == 200


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"GET / HTTP/1.1\r\nHost: <b>a\x00b</b>\r\n\r\n", b"a header's value holds"),
        (b"GET / HTTP/1.1\r\nX: \x1b[31mred\r\n\r\n", b"a header's value holds"),
        (b"GET / HTTP/1.1\r\n<script>alert(1)</script>\r\n\r\n", b"a header line has no"),
        (b"GET /<script> HTTP/7.0\r\nHost: x\r\n\r\n", b"the HTTP version is neither"),
        (b"GET /<i>\r\nHost: x\r\n\r\n", b"the request line is not"),
        (b"GET / HTTP/1.1\r\nBad<i> Name: x\r\n\r\n", b"a header's name is not"),
    ],
    ids=["nul-in-value", "escape-in-value", "markup-line", "version", "request-line", "name"],
)
async def test_a_malformed_head_is_told_in_the_servers_words_without_its_bytes(
    server: Running, head: bytes, said: bytes
) -> None:
    """The 400's body quoted the peer's bytes in the parser's words (a NUL, a terminal's
    escape, markup): deploy.md promises the server's words without the value."""
    answer = await raw_answer(server.server.port, head)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), answer
    body = answer.partition(b"\r\n\r\n")[2]
    assert body.startswith(b"Bad request: " + said), body
    for quoted in (b"\x00", b"\x1b", b"<", b"script", b"red"):
        assert quoted not in body, body


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: x\n\r\n",  # the last line ended by a bare LF
        b"GET / HTTP/1.1\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\n\r\n",
    ],
    ids=["last-line", "request-line", "upgrade"],
)
async def test_a_line_ended_by_a_bare_lf_is_answered_at_once(server: Running, head: bytes) -> None:
    """A line ended by LF alone before the head's CR LF CR LF: the head never ended, and
    the client waited 10 s for a close without a word (2 of 2)."""
    answer = await asyncio.wait_for(raw_answer(server.server.port, head), 2)
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(b"must end with CR LF.\n")


async def test_a_bad_line_in_a_head_over_64_kib_is_answered_not_dropped(server: Running) -> None:
    """Past 64 KiB the head went to websockets as it was: a bad line after 100 good ones
    closed the connection without a word (5 of 5)."""
    port = server.server.port
    good = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 650) for i in range(102))
    for bad in (b"X-Nul: a\x00b\r\n", b"no colon\r\n", b" folded\r\n"):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n" + good)  # 67 KB read before the rest
        await writer.drain()
        await asyncio.sleep(0.1)
        with contextlib.suppress(ConnectionError):
            writer.write(bad + b"\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"\x00" not in answer and b"no colon" not in answer
    line = b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    assert (await raw_answer(port, line)).startswith(b"HTTP/1.1 414 ")
    assert (await http_get(port, "/healthz"))[0] == 200


async def test_a_sound_head_of_a_rarer_shape_is_answered(server: Running) -> None:
    """What RFC 9112 allows beside the refusals above: no ``Host`` in HTTP/1.0, one
    length given twice, a length of many digits (a body, dropped)."""
    port = server.server.port
    for head in (
        b"GET /healthz HTTP/1.0\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0, 00\r\nContent-Length: 0\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
    ):
        answer = await raw_answer(port, head)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"ok\n"), answer[:200]


async def test_a_head_over_64_kib_that_comes_whole_is_refused_as_one_that_comes_in_parts(
    server: Running,
) -> None:
    """Only a head still unended at 64 KiB was measured: 80 KB in one write was answered."""
    padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 7900) for i in range(10))
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + padding + b"\r\n"
    assert (await raw_answer(server.server.port, head)).startswith(b"HTTP/1.1 431 ")
    # too large first, whatever else is wrong with it (a head without Host, say), and
    # measured as it came (a body's header may be what makes it too large; websockets
    # counts a line with its CR LF)
    for head in (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"a:b\r\n" * 127 + b"Content-Length: abc\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
        + b"a:b\r\n" * 127
        + b"Transfer-Encoding: chunked\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nContent-Length: " + b"x" * 9000 + b"\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nX: " + b"x" * (8191 - 3) + b"\r\n\r\n",  # 8,191 and no Host
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : b\r\n" + b"a:b\r\n" * 128 + b"\r\n",
    ):
        answer = await raw_answer(server.server.port, head)
        assert answer.startswith(b"HTTP/1.1 431 "), (head[:60], answer[:200])
    long_line = b"GET /" + b"a" * (8191 - 14) + b" HTTP/1.1\r\nHost: x\r\n\r\n"  # 8,191 bytes
    assert (await raw_answer(server.server.port, long_line)).startswith(b"HTTP/1.1 414 ")
    longest = b"GET /healthz?" + b"a" * (8190 - 22) + b" HTTP/1.1\r\nHost: x\r\n\r\n"  # 8,190
    assert (await raw_answer(server.server.port, longest)).startswith(b"HTTP/1.1 200 ")
    for head in (
        b"GET /healthz HTTP/1.1\r\n" + b"a:b\r\n" * 200 + b"\r\n",
        b"GET /healthz HTTP/1.1\r\nX: " + b"x" * 9000 + b"\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n" + b"a:b\r\n" * 200 + b"\r\n",
    ):
        answer = await raw_answer(server.server.port, head)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


async def test_a_header_given_twice_is_read_as_one_list(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    """Two ``Upgrade`` (or ``Accept-Encoding``) headers on a plain request were a 500 and
    an error in the log: the headers' ``get`` raises on a name given twice."""
    port = server.server.port
    twice = b"GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nUpgrade: foo\r\n\r\n"
    assert (await raw_answer(port, twice)).startswith(b"HTTP/1.1 200 ")
    encodings = b"GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\nAccept-Encoding: gzip\r\n\r\n"
    assert (await raw_answer(port, encodings)).startswith(b"HTTP/1.1 200 ")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_empty_lines_before_the_request_line_are_ignored(server: Running) -> None:
    """RFC 9112 section 2.2: a server ignores at least one empty line before a request."""
    port = server.server.port
    answer = await raw_answer(port, b"\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"ok\n"), answer
    for parts in ([b"\r", b"\nGET"], [b"\r\n\r", b"\nGET"], [b"\r\n", b"\r", b"\nG", b"ET"]):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for part in parts:  # an empty line cut between its CR and its LF
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b" /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200 "), (parts, answer[:100])
    # skipped in one pass: two bytes at a time, 8 MB of them held the loop for a minute
    answer = await asyncio.wait_for(
        raw_answer(port, b"\r\n" * 4_000_000 + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 10
    )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]


@pytest.mark.parametrize("table", ["games", "game_actions", "level_stats"])
@pytest.mark.parametrize("settings", ["postgresql"], indirect=True)
async def test_not_ready_while_a_table_a_move_writes_is_locked(server: Running, table: str) -> None:
    """Reads of the schema still answer while ``LOCK TABLE`` holds a table every move
    writes, and every move waits and fails: a load balancer must send players to
    another node, so ``/readyz`` is 503 until the lock goes."""
    url = server.settings.database_url
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            transaction = await conn.begin()
            await conn.execute(sql(f"LOCK TABLE {table} IN EXCLUSIVE MODE"))
            status, _, body = await http_get(server.server.port, "/readyz")
            assert status == 503 and b"locked by another transaction" in body, body
            await transaction.rollback()
        await asyncio.sleep(READY_REUSE_S)  # the last answer serves no longer
        assert (await http_get(server.server.port, "/readyz"))[:3:2] == (200, b"ready\n")
    finally:
        await engine.dispose()


async def test_not_ready_while_sqlite_writes_fail_and_ready_once_one_goes_through(
    start: Start, tmp_path: Path
) -> None:
    """On SQLite the probe's reads answer while another process holds the write lock (or
    the disk is full), and every move fails: after a write failed, ``/readyz`` is 503
    until a write of the probe's own goes through. (The database timeout leaves a loaded
    machine time to answer the probe's read: at 0.2 s, with the browser tests beside it,
    the read once timed out and the probe said so instead.)"""
    server = await start(db_timeout_ms=1000)
    ada = await server.player("ada")
    game = await ada.request("new_game", level="hard", deal=1)
    holder = sqlite3.connect(tmp_path / "scorpion.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process's long write
        moved = await ada.request("move", game=game["game"], v=0, card="7C", to=5)
        assert moved["code"] == "unavailable"
        await asyncio.sleep(READY_REUSE_S)  # an earlier answer serves no longer
        status, _, body = await http_get(server.server.port, "/readyz")
        assert status == 503 and b"writes are failing (database is locked)" in body, body
        holder.execute("ROLLBACK")
        await asyncio.sleep(READY_REUSE_S)
        assert (await http_get(server.server.port, "/readyz"))[:3:2] == (200, b"ready\n")
        moved = await ada.request("move", game=game["game"], v=0, card="7C", to=5)
        assert moved["type"] == "ack", moved
    finally:
        holder.close()


async def test_ready_at_the_first_probe_once_sqlites_lock_is_gone(
    start: Start, tmp_path: Path
) -> None:
    """The probe after the lock was released still said "writes are failing": it
    answered from the last write's failure and only then started its own write, so
    the node read as not ready for one more probe, though its write went through."""
    server = await start(db_timeout_ms=1000)  # the probe's read answers on a loaded machine
    ada = await server.player("ada")
    game = await ada.request("new_game", level="hard", deal=1)
    holder = sqlite3.connect(tmp_path / "scorpion.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        moved = await ada.request("move", game=game["game"], v=0, card="7C", to=5)
        assert moved["code"] == "unavailable"
    finally:
        holder.close()  # the lock goes with it; no write has gone through since
    await asyncio.sleep(READY_REUSE_S)
    assert (await http_get(server.server.port, "/readyz"))[:3:2] == (200, b"ready\n")


async def test_not_ready_on_a_newer_schema_names_it_and_does_not_say_migrate(
    start: Start, tmp_path: Path
) -> None:
    """A newer node migrated the shared database on: this one's ``/readyz`` said the schema
    was outdated and to run ``--migrate``, which then refused the unknown revision."""
    server = await start()
    newer = sqlite3.connect(tmp_path / "scorpion.db", isolation_level=None)
    try:
        newer.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    finally:
        newer.close()
    await asyncio.sleep(READY_REUSE_S)
    status, _, body = await http_get(server.server.port, "/readyz")
    assert status == 503 and b"9999_from_the_future" in body, body
    assert b"newer scorpion-server" in body and b"--migrate" not in body, body


@pytest.mark.parametrize("settings", ["sqlite"], indirect=True)
async def test_a_head_of_bare_line_feeds_or_cut_short_is_answered_400(server: Running) -> None:
    """A head whose lines end in a bare LF was held without a word until the handshake's
    timeout (10 s), and one cut short by a half-close was closed with nothing sent."""
    port = server.server.port
    for data, half_close in (
        (b"GET /healthz HTTP/1.1\nHost: x\n\n", False),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\n", False),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n", True),
        (b"GET /healthz HTTP/1.1\r\nUpgrade: websocket\r\n", True),
    ):
        answer = await asyncio.wait_for(raw_answer(port, data, half_close=half_close), 5)
        assert answer.startswith(b"HTTP/1.1 400 "), (data, answer)
    assert (await http_get(port, "/healthz"))[0] == 200


async def test_refusals_say_what_was_wrong_in_the_servers_words(server: Running) -> None:
    """A refused head carried a decoder's or a library's own words ('ascii' codec...,
    Invalid base64-encoded string...), a plain GET with a long header was told that a
    WebSocket could not open, and an upgrade by POST was allowed GET alone."""
    port = server.server.port
    upgrade = upgrade_head(port).decode()

    def body(answer: bytes) -> bytes:
        return answer.partition(b"\r\n\r\n")[2]

    answer = await raw_answer(port, "GET /ж HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 400 ") and b"codec" not in answer, answer
    assert b"not ASCII" in body(answer)
    bad_key = re.sub(r"Sec-WebSocket-Key: \S+", "Sec-WebSocket-Key: a", upgrade).encode()
    answer = await raw_answer(port, bad_key)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"base64" not in answer, answer
    assert body(answer) == b"Invalid Sec-WebSocket-Key header.\n"
    long = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + b"y" * 9000 + b"\r\n\r\n"
    answer = await raw_answer(port, long)
    assert answer.startswith(b"HTTP/1.1 431 "), answer
    assert body(answer) == b"The request's header lines are too long, or too many.\n"
    answer = await raw_answer(port, upgrade.replace("GET ", "POST ", 1).encode())
    assert answer.startswith(b"HTTP/1.1 405 "), answer
    assert answer.count(b"\r\nAllow: ") == 1 and b"\r\nAllow: GET, HEAD\r\n" in answer
    answer = await raw_answer(port, upgrade.replace("GET ", "HEAD ", 1).encode())
    assert answer.startswith(b"HTTP/1.1 200 ") and body(answer) == b"", answer  # the page's HEAD
    # a header's value the parser refuses is not echoed, nor the parser's words
    for header in (
        "Sec-WebSocket-Protocol: \xff",
        "Connection: ,,,",
        "Sec-WebSocket-Protocol: a b",
    ):
        name = header.partition(":")[0]
        bad = re.sub(rf"{name}: [^\r]*", header, upgrade) if name in upgrade else upgrade
        if name not in upgrade:
            bad = bad.replace("\r\n\r\n", f"\r\n{header}\r\n\r\n")
        answer = await raw_answer(port, bad.encode("latin-1"))
        assert b"expected" not in answer and b"\xc3" not in answer, answer
        assert answer.startswith((b"HTTP/1.1 400 ", b"HTTP/1.1 426 ")), answer
        assert b"browser" not in body(answer), answer
