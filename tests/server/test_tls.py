"""wss:// and https:// with --certfile/--keyfile, on a self-signed certificate made here."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from unittest.mock import patch

import pytest
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from protocol import SUBPROTOCOL, encode
from server import connection
from server.app import ScorpionServer
from server.connection import HANDSHAKES_PER_ADDRESS
from tests.server.conftest import quiet_settings
from tests.server.http_get import http_get


def self_signed(directory: Path, name: str = "IP:127.0.0.1") -> tuple[Path, Path]:
    """A certificate for ``name`` (a subjectAltName: ``IP:...`` or ``DNS:...``) and its
    key, made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the TLS test makes its certificate with the openssl command, not installed")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={name.split(':', 1)[1]}", "-addext", f"subjectAltName={name}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


async def test_wss_and_https_with_a_self_signed_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    settings = dataclasses.replace(quiet_settings(tmp_path), certfile=str(cert), keyfile=str(key))
    server = ScorpionServer(settings)
    await server.start()
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        url = f"wss://127.0.0.1:{server.port}/"
        async with connect(url, ssl=trusting, subprotocols=[Subprotocol(SUBPROTOCOL)]) as ws:
            await ws.send(encode({"type": "ping", "id": 1}))
            frame = await ws.recv()
            assert isinstance(frame, bytes) and b"hello_required" in frame  # the protocol answers
        status, _, body = await http_get(server.port, "/healthz", tls=trusting)
        assert (status, body) == (200, b"ok\n")
        status, _, body = await http_get(
            server.port, "/healthz", tls=trusting, headers={"Content-Length": "5"}, body=b"hello"
        )
        assert (status, body) == (200, b"ok\n")  # a body is read and dropped over TLS too
        with pytest.raises(ssl.SSLCertVerificationError):  # a client that does not trust it
            await http_get(server.port, "/healthz", tls=ssl.create_default_context())
    finally:
        await server.stop()


def _docker_health_check() -> list[str]:
    """The command of the image's HEALTHCHECK (Dockerfile), as Docker runs it, with the
    file the image copies in for it taken from the checkout."""
    root = Path(__file__).resolve().parents[2]
    dockerfile = (root / "Dockerfile").read_text(encoding="utf-8")
    found = re.search(r"HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])", dockerfile)
    assert found, "the Dockerfile has no HEALTHCHECK command"
    copied = dict(
        (to, root / source) for source, to in re.findall(r"^COPY (\S+) (\S+)$", dockerfile, re.M)
    )
    command: list[str] = json.loads(found.group(1))
    return [sys.executable if command[0] == "python" else command[0]] + [
        str(copied.get(part, part)) for part in command[1:]
    ]


@pytest.mark.parametrize(
    ("tls", "host"), [(False, "0.0.0.0"), (True, "0.0.0.0"), (False, "::"), (True, "127.0.0.1")]
)
async def test_the_images_health_check_passes_on_a_node_as_the_variables_set_it(
    tmp_path: Path, tls: bool, host: str
) -> None:
    """On a node serving TLS (SCORPION_CERTFILE, as docs/deploy.md shows), the image's
    check asked http://, and on one listening on IPv6 alone (SCORPION_HOST=::) it asked
    127.0.0.1: Docker would have marked a sound node unhealthy."""
    if host == "::" and not socket.has_ipv6:
        pytest.skip("this machine has no IPv6")
    settings = dataclasses.replace(quiet_settings(tmp_path), host=host)
    environment = {"PATH": os.environ.get("PATH", ""), "SCORPION_HOST": host}
    if tls:
        cert, key = self_signed(tmp_path)
        settings = dataclasses.replace(settings, certfile=str(cert), keyfile=str(key))
        environment["SCORPION_CERTFILE"] = str(cert)
    server = ScorpionServer(settings)
    try:
        await server.start()
    except OSError as exc:  # no IPv6 loopback here
        pytest.skip(f"cannot listen on {host}: {exc}")
    try:
        environment["SCORPION_PORT"] = str(server.port)
        checking = await asyncio.create_subprocess_exec(
            *_docker_health_check(), env=environment, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(checking.communicate(), 60)
        assert checking.returncode == 0, err.decode()
    finally:
        await server.stop()


async def test_a_request_then_close_notify_logs_no_asyncio_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain GET followed at once by the client's close_notify logged asyncio's
    'returning true from eof_received() has no effect when using ssl' each time."""
    cert, key = self_signed(tmp_path)
    settings = dataclasses.replace(quiet_settings(tmp_path), certfile=str(cert), keyfile=str(key))
    server = ScorpionServer(settings)
    await server.start()
    held = logging.getLogger("asyncio")  # a library's lines are held (server.logs)
    held.addHandler(caplog.handler)
    try:
        trusting = ssl.create_default_context(cafile=str(cert))
        for _ in range(5):
            _, writer = await asyncio.open_connection(
                "127.0.0.1", server.port, ssl=trusting, server_hostname="127.0.0.1"
            )
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            writer.close()  # close_notify, then the socket's end
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
        await asyncio.sleep(0.3)
        assert (await http_get(server.port, "/healthz", tls=trusting))[0] == 200
    finally:
        held.removeHandler(caplog.handler)
        await server.stop()
    assert not [r for r in caplog.records if "eof_received" in r.getMessage()]


def test_a_key_that_does_not_match_is_refused_at_start(tmp_path: Path) -> None:
    from server.config import SettingsError, load_settings

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cert, _ = self_signed(tmp_path / "a")
    _, other_key = self_signed(tmp_path / "b")
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(cert), "--keyfile", str(other_key)])
    assert caught.value.lines[0].startswith("--keyfile (SCORPION_KEYFILE): cannot load")


async def _silent_sockets_are_capped_before_tls(tmp_path: Path) -> None:
    """On a TLS port, asyncio handed the server a socket only once its TLS handshake was
    done, so the cap on sockets per address (counted from the accept) never saw sockets
    that stayed silent in theirs: one address could hold any number, for asyncio's 60 s
    each. They are counted at the accept now, and a handshake has TLS_HANDSHAKE_S."""
    cert, key = self_signed(tmp_path)
    settings = dataclasses.replace(
        quiet_settings(tmp_path),
        certfile=str(cert),
        keyfile=str(key),
        max_connections_per_address=2,
    )
    server = ScorpionServer(settings)
    await server.start()
    cap = 2 + HANDSHAKES_PER_ADDRESS
    silent = []
    try:
        for _ in range(cap + 3):
            silent.append(await asyncio.open_connection("127.0.0.1", server.port))

        async def closed(reader: asyncio.StreamReader) -> bool:
            with contextlib.suppress(TimeoutError, ConnectionError):
                return await asyncio.wait_for(reader.read(), 1) == b""
            return False

        seen = await asyncio.gather(*(closed(reader) for reader, _writer in silent))
        assert sum(seen) == 3 and not any(seen[:cap])  # those beyond the cap, at once
        for _reader, writer in silent:
            writer.close()
        await asyncio.sleep(0.3)  # their places are given back
        trusting = ssl.create_default_context(cafile=str(cert))
        url = f"wss://127.0.0.1:{server.port}/"
        async with connect(url, ssl=trusting, subprotocols=[Subprotocol(SUBPROTOCOL)]) as ws:
            await ws.send(encode({"type": "ping", "id": 1}))
            assert b"hello_required" in await ws.recv()
        # plain HTTP over TLS, from a socket counted at its accept
        status, _, body = await http_get(server.port, "/healthz", tls=trusting)
        assert (status, body) == (200, b"ok\n")
        # sockets closed before their handshake began leave no handshake behind
        for _ in range(20):
            _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.close()
        assert server._listener is not None
        gate = server._listener._gate
        async with asyncio.timeout(2):
            while gate.handshakes or gate.open:
                await asyncio.sleep(0.05)
        # a handshake never finished is cut after its time, and its place given back
        with patch.object(connection, "TLS_HANDSHAKE_S", 0.3):
            waiting = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(cap)]
            assert await closed(waiting[-1][0])
        more = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(cap)]
        lingering = asyncio.gather(*(closed(reader) for reader, _writer in more))
    finally:
        stopping = time.monotonic()
        await server.stop()
    assert time.monotonic() - stopping < 5  # handshakes going on do not hold the stop
    assert all(await lingering)
    for _reader, writer in [*silent, *waiting, *more]:
        writer.close()


def test_silent_sockets_are_capped_before_their_tls_handshake(tmp_path: Path) -> None:
    asyncio.run(_silent_sockets_are_capped_before_tls(tmp_path))


def test_the_same_on_uvloop(tmp_path: Path) -> None:
    uvloop = pytest.importorskip("uvloop", reason="uvloop is in the server extra")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_silent_sockets_are_capped_before_tls(tmp_path))
