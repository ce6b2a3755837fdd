"""Builders for every server message, so the server never writes a map by hand.

One function per reply type (named after it: ``build.ack(re, game=, v=)``),
the ``events`` push, the objects replies nest (``player``, ``summary``,
``stats_row``, ``result``, ``batch``) and the server's own events (``clock``,
``lost_position``, ``game_lost``, ``with_stats`` for ``won``). Meant to be
used through the module: ``from protocol import build``.

Builders only assemble: keyword-only arguments give each field a name at the
call site, and an optional field passed as None is left out (a *nullable*
field such as ``player`` or ``deal`` keeps its null). They do not validate;
``protocol.validate_message`` does, and the tests run it on every builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from protocol.constants import PROTOCOL_VERSION
from protocol.errors import RequestId, error
from protocol.events import EVENTS
from protocol.fields import Shape
from protocol.messages import SERVER_MESSAGES
from protocol.shapes import GAME_SUMMARY, PLAYER, RESULT, STATS_ROW

__all__ = [
    "ack",
    "batch",
    "catch_up",
    "clock",
    "error",
    "events",
    "game",
    "game_lost",
    "games",
    "hint",
    "iso8601",
    "lost_position",
    "player",
    "pong",
    "registered",
    "replay",
    "result",
    "stats",
    "stats_row",
    "summary",
    "welcome",
    "with_stats",
]

Message = dict[str, Any]


def _compose(shape: Shape, **values: Any) -> Message:
    """``values`` in the shape's field order, optional fields given as None left out."""
    unknown = values.keys() - shape.declared
    if unknown:
        raise ValueError(f"{shape.title} has no field {', '.join(sorted(unknown))}")
    optional = shape.optional
    return {
        field.name: values[field.name]
        for field in shape.fields
        if field.name in values and not (values[field.name] is None and field.name in optional)
    }


def _server(type_: str, **values: Any) -> Message:
    return _compose(SERVER_MESSAGES[type_].shape, type=type_, **values)


def iso8601(moment: datetime) -> str:
    """``2025-03-01T09:30:00.000Z``: UTC, milliseconds. ``moment`` must be aware."""
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no place on the wire; attach a timezone")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- objects ----------------------------------------------------------------------


def player(id: int, name: str) -> Message:
    return _compose(PLAYER, id=id, name=name)


def summary(
    *,
    game: int,
    level: str,
    status: str,
    v: int,
    moves: int,
    score: int,
    time_ms: int,
    deal: int | None,
    started: datetime,
    updated: datetime,
    winnable: bool | None = None,
) -> Message:
    """A game summary. ``deal`` must already be None for an unfinished easy or winnable game."""
    return _compose(
        GAME_SUMMARY,
        game=game,
        level=level,
        status=status,
        v=v,
        moves=moves,
        score=score,
        time_ms=time_ms,
        deal=deal,
        started=iso8601(started),
        updated=iso8601(updated),
        winnable=winnable,
    )


def stats_row(
    *,
    level: str,
    winnable: bool = False,
    wins: int,
    losses: int,
    current_streak: int,
    best_streak: int,
    best_score: int | None,
    fastest_win_ms: int | None,
    fewest_moves: int | None,
) -> Message:
    """A level's statistics; ``games`` and ``win_rate`` follow from wins and losses."""
    games_played = wins + losses
    return _compose(
        STATS_ROW,
        level=level,
        winnable=winnable,
        games=games_played,
        wins=wins,
        losses=losses,
        win_rate=wins / games_played if games_played else 0.0,
        current_streak=current_streak,
        best_streak=best_streak,
        best_score=best_score,
        fastest_win_ms=fastest_win_ms,
        fewest_moves=fewest_moves,
    )


def result(
    *,
    won: bool,
    score: int,
    moves: int,
    undos: int,
    hints: int,
    suits_removed: int,
    time_ms: int,
) -> Message:
    return _compose(
        RESULT,
        won=won,
        score=score,
        moves=moves,
        undos=undos,
        hints=hints,
        suits_removed=suits_removed,
        time_ms=time_ms,
    )


def batch(v: int, events: Sequence[Mapping[str, Any]]) -> Message:
    """The events of the action that produced version ``v`` (for catch_up)."""
    return {"v": v, "events": list(events)}


# -- server events ----------------------------------------------------------------


def clock(*, running: bool, time_ms: int, paused: bool = False) -> Message:
    return _compose(
        EVENTS["clock"].shape, type="clock", running=running, time_ms=time_ms, paused=paused
    )


def lost_position(*, from_deal: bool) -> Message:
    """``from_deal``: the deal itself is proved lost (not the player's moves)."""
    return _compose(EVENTS["lost_position"].shape, type="lost_position", from_deal=from_deal)


def snapshot(view: Mapping[str, Any]) -> Message:
    """The whole view, pushed when the events leading to it cannot be shown."""
    return {"type": "snapshot", "view": dict(view)}


def game_lost(reason: str, deal: int) -> Message:
    """``reason``: ``resigned`` or ``abandoned`` (R17); ``deal``: the game's deal number."""
    return _compose(EVENTS["game_lost"].shape, type="game_lost", reason=reason, deal=deal)


def with_stats(won: Mapping[str, Any], stats: Mapping[str, Any]) -> Message:
    """The engine's ``won`` event with the level's stats row after the win."""
    if won.get("type") != "won":
        raise ValueError(f"with_stats takes a won event, not {won.get('type')!r}")
    return {**won, "stats": dict(stats)}


# -- replies and the push -----------------------------------------------------------


def welcome(
    re: RequestId,
    *,
    server: str,
    player: Mapping[str, Any] | None,
    games: Sequence[Mapping[str, Any]],
    limits: Mapping[str, Any] | None = None,
) -> Message:
    return _server(
        "welcome",
        re=re,
        server=server,
        protocol=PROTOCOL_VERSION,
        player=player,
        games=list(games),
        limits=limits,
    )


def registered(re: RequestId, *, player: Mapping[str, Any], token: str) -> Message:
    return _server("registered", re=re, player=player, token=token)


def game(
    re: RequestId, *, game: int, v: int, view: Mapping[str, Any], lost: int | None = None
) -> Message:
    return _server("game", re=re, game=game, v=v, view=view, lost=lost)


def catch_up(
    re: RequestId,
    *,
    game: int,
    v: int,
    events: Sequence[Mapping[str, Any]],
    time_ms: int,
    running: bool,
    paused: bool = False,
) -> Message:
    """``events``: one ``batch(v, events)`` per version after the client's ``since``;
    ``time_ms``, ``running`` and ``paused``: the game's clock now."""
    return _server(
        "catch_up",
        re=re,
        game=game,
        v=v,
        events=list(events),
        time_ms=time_ms,
        running=running,
        paused=paused,
    )


def ack(re: RequestId, *, game: int, v: int) -> Message:
    return _server("ack", re=re, game=game, v=v)


def hint(
    re: RequestId,
    *,
    game: int,
    v: int,
    action: str,
    card: str | None = None,
    to: int | None = None,
    reason: str | None = None,
) -> Message:
    """``reason`` (action ``none`` only): ``lost``, ``seen`` or ``stuck``."""
    return _server("hint", re=re, game=game, v=v, action=action, card=card, to=to, reason=reason)


def games(re: RequestId, *, games: Sequence[Mapping[str, Any]]) -> Message:
    return _server("games", re=re, games=list(games))


def stats(re: RequestId, *, stats: Sequence[Mapping[str, Any]]) -> Message:
    return _server("stats", re=re, stats=list(stats))


def replay(
    re: RequestId,
    *,
    game: int,
    replay: Mapping[str, Any] | None,
    result: Mapping[str, Any] | None,
    next_from: int | None = None,
) -> Message:
    """``replay`` and ``result`` are None for an unfinished game (hidden information).

    ``next_from`` (the reply's ``next``) is the ``from`` of the following page of
    actions, None on the last.
    """
    return _server("replay", re=re, game=game, replay=replay, result=result, next=next_from)


def pong(re: RequestId) -> Message:
    return _server("pong", re=re)


def token(re: RequestId, *, token: str) -> Message:
    return _server("token", re=re, token=token)


def signed_out(re: RequestId, *, revoked: int) -> Message:
    return _server("signed_out", re=re, revoked=revoked)


def events(*, game: int, v: int, events: Sequence[Mapping[str, Any]]) -> Message:
    """The push to every connection watching ``game``; ``v`` is the version after."""
    return _server("events", game=game, v=v, events=list(events))
