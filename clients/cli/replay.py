"""``scorpion replay GAME``: a finished game played back, or its document exported.

The client has no rules engine, so it cannot compute positions from the
replay document's actions. It uses what the protocol offers instead
(docs/cli.md): ``open_game`` of the finished game gives its final view, and
``open_game`` with ``since: 0`` a ``catch_up`` with the events of every
version. The deal's position is the first ``restarted`` event's, which
carries it whole; a game never restarted has it found by taking every event
back from the final view (``Board.unapply``). The playback then applies every
batch forward, as a live game would.

A long game's replay document comes in pages (``next``/``from``,
PROTOCOL.md section 10); ``fetch_replay`` asks for each and joins their
actions, so an export is always the whole document. ``--export -`` writes it
to standard output (and nothing else there); a file that cannot be written is
named with the system's reason.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from clients.cli.app import error_text
from clients.cli.board import Board
from clients.cli.config import os_reason
from clients.cli.connection import Connection
from clients.cli.i18n import _
from clients.cli.options import Options
from clients.cli.render import Style, describe_event, render_board, render_results
from clients.cli.terminal import Terminal, json_line, jsonable

__all__ = ["fetch_replay", "initial_board", "playback", "replay"]

Batch = dict[str, Any]
MAX_PAGES = 1000
"""Pages fetched at most (a server that keeps sending ``next`` is not followed forever)."""


def initial_board(final: Board, batches: list[Batch]) -> Board:
    """The deal's position: a ``restarted`` event's, else ``batches`` undone from ``final``."""
    board = final.copy()
    events = [event for batch in batches for event in batch["events"]]
    restart = next((event for event in events if event.get("type") == "restarted"), None)
    if restart is not None:
        board.apply(restart)
    else:
        for event in reversed(events):
            board.unapply(event)
    board.score = board.earned = board.moves = board.undos = board.hints = board.time_ms = 0
    board.undo_depth = board.played = 0
    board.won, board.stuck, board.lost, board.result = False, False, None, None
    board.status, board.running, board.lost_position = "active", False, False
    return board


def playback(start: Board, batches: list[Batch]) -> list[tuple[int, list[dict[str, Any]], Board]]:
    """Every step of the game: (version, its events, the board after them)."""
    board = start.copy()
    steps = []
    for batch in batches:
        events = list(batch["events"])
        board.apply_batch(events)  # a restart's event puts the deal's position back
        steps.append((int(batch["v"]), events, board.copy()))
    return steps


async def fetch_replay(conn: Connection, game: int) -> dict[str, Any]:
    """The ``replay`` reply with every page's actions joined (or the first error)."""
    reply = dict(await conn.request("replay", game=game))
    pages = 0
    while reply.get("type") == "replay" and reply.get("replay") is not None:
        following = reply.get("next")
        if not isinstance(following, int) or pages >= MAX_PAGES:
            return reply
        page = await conn.request("replay", game=game, **{"from": following})
        if page.get("type") != "replay" or page.get("replay") is None:
            return dict(page)
        document = dict(reply["replay"])
        document["actions"] = [*document["actions"], *page["replay"]["actions"]]
        reply = {**reply, "replay": document, "next": page.get("next")}
        pages += 1
    return reply


def _tell(terminal: Terminal, options: Options, kind: str, text: str) -> None:
    """A line of the client's own, or with ``--json`` a ``notice`` object."""
    if options.json:
        terminal.json({"type": "notice", "notice": kind, "text": text})
    else:
        terminal.say(text)


def _rejected(terminal: Terminal, options: Options, reply: dict[str, Any], game: int) -> None:
    """The server's ``error`` reply: a line, or with ``--json`` the reply itself. With
    ``--export -`` (and no ``--json``) the line goes to standard error: standard output
    holds the document or nothing (``| jq`` reads it)."""
    if options.json:
        terminal.json(reply)
    elif options.export == "-":
        terminal.complain(error_text(reply, game=game))
    else:
        terminal.say(error_text(reply, game=game))


async def replay(conn: Connection, terminal: Terminal, style: Style, options: Options) -> int:
    game = options.game
    assert game is not None
    reply = await fetch_replay(conn, game)
    if reply.get("type") != "replay":
        _rejected(terminal, options, reply, game)
        return 1
    if reply.get("replay") is None:
        terminal.complain(_("replay.unfinished", game=game))
        return 1
    if options.export:
        document = jsonable(reply["replay"])
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
        if options.export == "-":  # standard output, as the common convention has it
            # with --json every line of it is one JSON object: the document on one line;
            # on an ASCII output what it lacks is escaped (\u00e4), not written as a stand-in
            ascii_only = not terminal.unicode
            if options.json:
                terminal.say(json_line(document, ascii_only=ascii_only))
            else:
                terminal.say(
                    json.dumps(document, indent=2, ensure_ascii=ascii_only, allow_nan=False)
                )
            return 0
        try:
            Path(options.export).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            reason = os_reason(exc, options.export)
            terminal.complain(_("replay.cannot_write", path=options.export, reason=reason))
            return 1
        _tell(
            terminal, options, "replay.written", _("replay.written", game=game, path=options.export)
        )
        return 0
    final = await conn.request("open_game", game=game)
    history = await conn.request("open_game", game=game, since=0)
    await conn.request("close_game", game=game)
    if final.get("type") != "game":
        _rejected(terminal, options, final, game)
        return 1
    end = Board.from_view(final["view"])
    steps: list[tuple[int, list[dict[str, Any]], Board]] | None = None
    if history.get("type") == "catch_up":
        batches = list(history["events"])
        try:
            steps = playback(initial_board(end, batches), batches)
        except (KeyError, IndexError, TypeError, ValueError):
            steps = None  # events that do not add up to the final view: that view alone
    if steps is None:
        _tell(terminal, options, "replay.no_history", _("replay.no_history"))
        if options.json:
            terminal.json(final)
        else:
            terminal.say(render_board(end, style, game=game))
        return 0
    if steps:
        _finish(steps[-1][2], end)
    delay = 0.0 if options.speed <= 0 else 1.0 / options.speed
    if options.json:
        terminal.json({"type": "replay", "game": game, "replay": reply["replay"]})
    else:
        start = initial_board(end, list(history["events"]))
        terminal.say(render_board(start, style, game=game))
    for v, events, board in steps:
        await asyncio.sleep(delay)
        if options.json:
            for event in events:
                terminal.json({"game": game, "v": v, **event})
            continue
        terminal.say("")
        terminal.say(_("replay.step", step=v))
        for event in events:
            line = (
                render_results(event, terminal.table_width())
                if event.get("type") == "won"
                else describe_event(event)
            )
            if line is not None:
                terminal.say(line)
        terminal.say(render_board(board, style, game=game))
    return 0


def _finish(last: Board, end: Board) -> None:
    """The last step as the game ended: its status and play time are the final view's.

    A game abandoned for a new one has no event saying so, and no event
    carries the play time: the final view says both.
    """
    last.time_ms = end.time_ms
    if last.status == "active" and end.status != "active":
        last.status = end.status
