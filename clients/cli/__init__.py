"""The reference terminal client: ``scorpion`` (play, stats, games, replays).

It speaks only the wire protocol (``protocol`` and ``websockets``) and never
imports the rules engine or the server. Modules: ``config`` (the token file),
``connection`` (WebSocket, retries, reconnects), ``board`` (a view kept up
to date from events), ``render`` (text), ``commands`` (the command language),
``app`` (the programs) and ``__main__`` (argument parsing).
"""

from __future__ import annotations

__all__ = ["VERSION"]

VERSION = "0.1"
