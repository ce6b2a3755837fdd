"""A minimal HTTP/1.1 request for the server's plain-HTTP endpoints (no client library needed)."""

from __future__ import annotations

import asyncio
import ssl

__all__ = ["http_get"]


async def http_get(
    port: int,
    path: str,
    *,
    tls: ssl.SSLContext | None = None,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> tuple[int, dict[str, str], bytes]:
    """``GET path`` (or ``method``, with ``headers`` and ``body`` as given: no header is
    added for the body) on 127.0.0.1:``port``: status, headers (lower-case names), body:
    all the server sent after the headers, up to its close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 20)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    got = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return int(status_line.split()[1]), got, body
