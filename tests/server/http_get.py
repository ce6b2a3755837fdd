"""A minimal HTTP/1.1 request for the server's plain-HTTP endpoints (no client library needed)."""

from __future__ import annotations

import asyncio
import ssl

__all__ = ["http_get"]


async def http_get(
    port: int, path: str, *, tls: ssl.SSLContext | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """``GET path`` (or ``method``) on 127.0.0.1:``port``: status, headers (lower-case
    names), body: all the server sent after the headers, up to its close."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls)
    try:
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), 20)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return int(status_line.split()[1]), headers, body
