"""Something other than a Scorpion server at the URL: one line saying what answered there."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import io
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import CloseCode
from websockets.typing import Subprotocol

from clients.cli.app import run
from clients.cli.connection import not_reached
from clients.cli.options import parse_args
from clients.cli.terminal import Terminal
from protocol import SUBPROTOCOL
from server.app import ScorpionServer
from tests.server.conftest import Running, quiet_settings
from tests.server.test_tls import self_signed

HTTP_404 = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
HTTP_200 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
HTTP_10 = b"HTTP/1.0 200 OK\r\n\r\nhello"
BANNER = b"SSH-2.0-OpenSSH_9.6\r\n"
REDIRECT = b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/play\r\nContent-Length: 0\r\n\r\n"
GARBAGE = b"\x00\xff" * 1000 + b"\r\n\r\n"
NO_URL = b"HTTP/1.1 301 Moved\r\nLocation: ws://127.0.0.1:99999/\r\nContent-Length: 0\r\n\r\n"


async def attempt(url: str, tmp_path: Path, lang: str = "en") -> tuple[int, str]:
    """``scorpion stats --server URL``: the exit status and its line on standard error."""
    out, err = io.StringIO(), io.StringIO()
    options = parse_args(["--server", url, "--lang", lang, "stats"], env={})
    async with asyncio.timeout(30):
        code = await run(options, Terminal(out, [], err=err), config_dir=tmp_path / "config")
    assert out.getvalue() == ""
    line = err.getvalue()
    assert line.startswith("scorpion: "), line
    return code, line.removeprefix("scorpion: ")


@pytest.fixture
async def answering() -> AsyncIterator[dict[bytes, int]]:
    """A TCP port for each canned answer: it reads the request's head, answers, and closes.

    A TLS hello has no such head: after half a second it is answered anyway.
    Once it has answered, the port waits for the client to close first, so
    that the answer is never cut by a reset.
    """
    ports: dict[bytes, int] = {}
    servers = []
    for answer in (HTTP_404, HTTP_200, HTTP_10, BANNER, GARBAGE, REDIRECT, NO_URL, b""):

        async def handle(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: bytes = answer
        ) -> None:
            if answer != BANNER:  # a banner comes first; the others answer a request
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await reader.readuntil(b"\r\n\r\n")
            if answer:
                writer.write(answer)
                await writer.drain()
                with contextlib.suppress(TimeoutError, OSError):
                    async with asyncio.timeout(10):
                        await reader.read()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        ports[answer] = server.sockets[0].getsockname()[1]
    yield ports
    for server in servers:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("answer", "path", "line"),
    [
        (HTTP_404, "/scorpion", "{url}: answered HTTP 404, not a Scorpion server"),
        (HTTP_200, "/", "{url}: answered HTTP 200, not a Scorpion server"),
        (  # websockets reads HTTP/1.1 only
            HTTP_10,
            "/",
            "{url}: did not answer as a WebSocket server (it answered “HTTP/1.0 200 OK”), "
            "not a Scorpion server",
        ),
        (
            BANNER,
            "/",
            "{url}: did not answer as a WebSocket server "
            "(it answered “SSH-2.0-OpenSSH_9.6”), not a Scorpion server",
        ),
        (  # 8 KB of it was quoted
            GARBAGE,
            "/",
            "{url}: did not answer as a WebSocket server "
            "(it answered “" + ("\\x00\\xff" * 8)[:59] + "…”), not a Scorpion server",
        ),
        (  # the URL typed was a WebSocket URL: the one it was sent on to is not
            REDIRECT,
            "/",
            "cannot talk to the server: {url}: redirects to http://127.0.0.1:1/play, "
            "which is not a WebSocket URL",
        ),
        (
            NO_URL,
            "/",
            "cannot talk to the server: {url}: redirects to an address that cannot be read "
            "(Port out of range 0-65535)",
        ),
        (
            b"",
            "/",
            "{url}: closed the connection without an HTTP answer (a TLS port? use wss://)",
        ),
    ],
    ids=[
        "http-404",
        "http-200",
        "http-1.0",
        "banner",
        "garbage",
        "redirect",
        "redirect-no-url",
        "closed",
    ],
)
async def test_an_answer_that_is_not_a_websocket_upgrade(
    answering: dict[bytes, int], tmp_path: Path, answer: bytes, path: str, line: str
) -> None:
    url = f"ws://127.0.0.1:{answering[answer]}{path}"
    assert await attempt(url, tmp_path) == (1, line.format(url=url) + "\n")


@pytest.mark.parametrize(
    ("lang", "line"),
    [
        ("en", "{url}: redirects more than 10 times, which is too many (a redirect loop?)"),
        ("fi", "{url}: ohjaa edelleen yli 10 kertaa, mikä on liikaa (uudelleenohjaussilmukka?)"),
        ("ru", "{url}: перенаправляет более 10 раз, это слишком много (петля перенаправлений?)"),
    ],
)
async def test_a_redirect_loop_is_said_as_such(tmp_path: Path, lang: str, line: str) -> None:
    """A port that redirects to itself for ever: the client follows 10 redirects, and then
    said that the port did not answer as a WebSocket server."""
    port = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        location = f"ws://127.0.0.1:{port}/again".encode()
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n")
        writer.write(b"Content-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        url = f"ws://127.0.0.1:{port}/"
        assert await attempt(url, tmp_path, lang) == (1, line.format(url=url) + "\n")
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("lang", "said"),
    [("fi", "ei vastannut WebSocket-palvelimena (vastaus oli ”"), ("ru", "(ответ: «")],
)
async def test_what_answered_is_quoted_in_the_players_language(
    answering: dict[bytes, int], tmp_path: Path, lang: str, said: str
) -> None:
    """The reason websockets gives (``invalid HTTP status line``) was put in English into
    the Finnish or Russian line; only what the port answered is quoted."""
    code, line = await attempt(f"ws://127.0.0.1:{answering[BANNER]}/", tmp_path, lang)
    assert code == 1 and said in line and "SSH-2.0-OpenSSH_9.6" in line
    assert "invalid" not in line and "HTTP" not in line


async def test_wss_to_a_port_without_tls(
    answering: dict[bytes, int], server: Running, tmp_path: Path
) -> None:
    for url, reason in [
        (f"wss://127.0.0.1:{answering[HTTP_404]}/", "wrong version number"),
        (server.url.replace("ws://", "wss://"), "connection reset by peer"),
    ]:
        line = f"{url}: the TLS handshake failed ({reason}) (a port without TLS? use ws://)\n"
        assert await attempt(url, tmp_path) == (1, line)


async def test_ws_to_a_tls_port_and_an_untrusted_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)  # some systems set it: a line of its own
    cert, key = self_signed(tmp_path)
    settings = dataclasses.replace(quiet_settings(tmp_path), certfile=str(cert), keyfile=str(key))
    server = ScorpionServer(settings)
    await server.start()
    try:
        url = f"ws://127.0.0.1:{server.port}/"
        line = f"{url}: closed the connection without an HTTP answer (a TLS port? use wss://)\n"
        assert await attempt(url, tmp_path) == (1, line)
        url = f"wss://127.0.0.1:{server.port}/"
        line = (
            f"{url}: its TLS certificate is not trusted (self-signed certificate); "
            "SSL_CERT_FILE can name one to trust\n"
        )
        assert await attempt(url, tmp_path) == (1, line)
    finally:
        await server.stop()


async def test_tls_advice_fits_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every refused certificate was told to set SSL_CERT_FILE: also one trusted for
    another name, and when SSL_CERT_FILE named a file that is not there."""
    cert, key = self_signed(tmp_path)
    settings = dataclasses.replace(quiet_settings(tmp_path), certfile=str(cert), keyfile=str(key))
    server = ScorpionServer(settings)
    await server.start()
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
        url = f"wss://127.0.0.1:{server.port}/"
        line = (
            f"{url}: its TLS certificate is not trusted (self-signed certificate); "
            f"SSL_CERT_FILE names {tmp_path / 'none.pem'}, which cannot be read "
            "(No such file or directory)\n"
        )
        assert await attempt(url, tmp_path) == (1, line)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted, made for 127.0.0.1
        url = f"wss://localhost:{server.port}/"
        code, said = await attempt(url, tmp_path)
        assert code == 1 and said.startswith(
            f"{url}: its TLS certificate was made for another name (Hostname mismatch"
        ), said
        assert said.endswith("; connect with a name it names\n") and "SSL_CERT_FILE" not in said
        unrelated = tmp_path / "unrelated.pem"
        unrelated.write_text("not a certificate\n")
        monkeypatch.setenv("SSL_CERT_FILE", str(unrelated))  # read, and trusts nothing
        url = f"wss://127.0.0.1:{server.port}/"
        line = (
            f"{url}: its TLS certificate is not trusted (self-signed certificate), not by "
            f"{unrelated} (SSL_CERT_FILE) either; SSL_CERT_FILE can name a file that trusts it\n"
        )
        assert await attempt(url, tmp_path) == (1, line)
    finally:
        await server.stop()


async def test_a_certificate_for_another_name_reached_by_address_is_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One made for a host name, trusted, reached at 127.0.0.1: OpenSSL says "IP address
    mismatch", a code of its own, which was told to set SSL_CERT_FILE (set already)."""
    cert, key = self_signed(tmp_path, "DNS:otherhost")
    settings = dataclasses.replace(quiet_settings(tmp_path), certfile=str(cert), keyfile=str(key))
    server = ScorpionServer(settings)
    await server.start()
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        url = f"wss://127.0.0.1:{server.port}/"
        code, said = await attempt(url, tmp_path)
        assert code == 1 and said.startswith(
            f"{url}: its TLS certificate was made for another name (IP address mismatch"
        ), said
    finally:
        await server.stop()


async def test_a_closed_port_and_an_unknown_host(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"ws://127.0.0.1:{port}/"
    assert await attempt(url, tmp_path) == (
        1,
        f"no server at {url}: start one with `scorpion-server` (`make run` in a checkout)\n",
    )
    url = "ws://scorpion.invalid:8765/"  # .invalid never resolves (RFC 2606)
    code, out = await attempt(url, tmp_path)
    assert code == 1 and out.startswith(f"{url}: cannot find the host scorpion.invalid ("), out
    assert len(out.splitlines()) == 1


async def test_a_websocket_server_that_closes_before_hello(tmp_path: Path) -> None:
    async def close(ws: ServerConnection) -> None:
        await ws.close(CloseCode.TRY_AGAIN_LATER, "too many connections")

    protocols = [Subprotocol(SUBPROTOCOL)]
    async with serve(close, "127.0.0.1", 0, subprotocols=protocols) as running:
        url = f"ws://127.0.0.1:{next(iter(running.sockets)).getsockname()[1]}/"
        code, out = await attempt(url, tmp_path)
    assert code == 1 and out.startswith(f"{url}: closed the connection before answering `hello` (")
    assert "too many connections" in out and len(out.splitlines()) == 1


def test_any_other_failure_to_connect_is_named_with_its_reason() -> None:
    url = "ws://192.0.2.1:8765/"
    unreachable = OSError(errno.EHOSTUNREACH, "No route to host")
    assert not_reached(url, unreachable) == f"{url}: cannot connect (No route to host)"


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("ws://127.0.0.1:9/", True),
        ("ws://localhost:9/", True),
        ("ws://[::1]:9/", True),
        ("ws://127.8.0.1:9/", True),
        ("wss://play.example.org/", False),
        ("ws://192.0.2.7:8765/", False),
    ],
)
def test_a_refused_connection_suggests_starting_a_server_only_on_this_machine(
    url: str, local: bool
) -> None:
    line = not_reached(url, ConnectionRefusedError(111, "Connection refused"))
    if local:
        assert (
            line
            == f"no server at {url}: start one with `scorpion-server` (`make run` in a checkout)"
        )
    else:
        assert line == f"no server at {url}: the connection was refused"
