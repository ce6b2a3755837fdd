"""The reference terminal client: ``scorpion`` (play, stats, games, replays).

It speaks only the wire protocol (``protocol`` and ``websockets``) and never
imports the rules engine or the server. Modules: ``options`` (the command
line), ``config`` (the token file), ``connection`` (WebSocket, retries,
reconnects), ``board`` (a view kept up to date from events), ``game`` (the
open game and its clock), ``levels`` (what rules.md says of each level),
``i18n`` (the catalogues in ``locale/``), ``render`` and ``guide`` (text),
``commands`` (the command language), ``terminal`` (the line editor, or
script input), ``app`` (the programs), ``replay`` and ``__main__``.
"""

from __future__ import annotations

__all__: list[str] = []  # light: ``__main__`` loads the rest (Ctrl-C meanwhile is quiet)
