"""Plain HTTP on the WebSocket port: health, readiness, metrics, a start page, 404."""

from __future__ import annotations

import asyncio

from server.http import HttpRoutes
from server.metrics import Metrics
from server.store import SchemaStatus, StoreUnavailable
from tests.server.conftest import Running
from tests.server.http_get import http_get


async def test_health_and_readiness(server: Running) -> None:
    assert (await http_get(server.server.port, "/healthz"))[0] == 200
    status, headers, body = await http_get(server.server.port, "/readyz")
    assert (status, body) == (200, b"ready\n")
    assert headers["content-type"].startswith("text/plain")


async def test_a_plain_get_is_a_page_and_unknown_paths_are_404(server: Running) -> None:
    status, _, body = await http_get(server.server.port, "/")
    assert status == 200 and b"/healthz" in body
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
    down = await routes(StoreUnavailable("down")).answer("/readyz")
    assert down.status == 503 and b"unavailable" in down.body
    slow = await routes("hang").answer("/readyz")
    assert slow.status == 503 and b"did not answer within 0.05 s" in slow.body
    old = await routes(SchemaStatus.OUTDATED).answer("/readyz?verbose")
    assert old.status == 503 and b"outdated" in old.body
    assert (await routes(SchemaStatus.CURRENT).answer("/readyz")).status == 200


def test_each_server_has_its_own_registry() -> None:
    one, two = Metrics(), Metrics()
    one.answered("ping", None)
    assert b'scorpion_requests_total{type="ping"} 1.0' in one.render()
    assert b"ping" not in two.render()
