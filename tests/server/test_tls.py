"""wss:// and https:// with --certfile/--keyfile, on a self-signed certificate made here."""

from __future__ import annotations

import dataclasses
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from protocol import SUBPROTOCOL, encode
from server.app import ScorpionServer
from tests.server.conftest import quiet_settings
from tests.server.http_get import http_get


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the TLS test makes its certificate with the openssl command, not installed")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
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


def test_a_key_that_does_not_match_is_refused_at_start(tmp_path: Path) -> None:
    from server.config import SettingsError, load_settings

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    cert, _ = self_signed(tmp_path / "a")
    _, other_key = self_signed(tmp_path / "b")
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(cert), "--keyfile", str(other_key)])
    assert caught.value.lines[0].startswith("--keyfile (SCORPION_KEYFILE): cannot load")
