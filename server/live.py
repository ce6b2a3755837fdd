"""A game held in memory: the engine's ``Game``, its event history, its clock and lock.

Theory of operation
-------------------
The store keeps a game as its deal plus its action log; ``LiveGame.rebuild``
plays that log through ``engine.game.Game`` and keeps, per version, the
events each action produced (``batches``), so ``open_game`` with ``since``
can answer with a ``catch_up`` without touching the database.

Versions on the wire (PROTOCOL.md section 5) count every recorded change:
the actions in the log, plus one for a resignation or abandonment. The store
writes no action row for those (replay.md: the log holds only replayable
actions), so ``version`` here is ``len(actions) + (1 if lost)``, and a lost
game's last batch is the synthesized ``game_lost`` event.

Everything that leaves the server about a position comes from
``engine.view.public_view`` (snapshots) or from the engine's own events,
which never name a face-down card; ``hidden_cards`` lets the catch-up path
refuse a history that names a card which has since been turned face down
again (it answers a snapshot instead). A finished game gives its whole
history: its replay reveals every card anyway, and clients play it back
from these events.

Snapshots
---------
Replaying a long log is most of what a returning player costs. An unfinished
game can therefore be stored with a snapshot (``Game.snapshot``, packed with
msgpack): the engine's whole state at some version ``v`` apart from the log.
Such a snapshot is a function of the deal and the first ``v`` actions alone,
so it stays true whichever node wrote it and whatever was appended since.
``rebuild`` given one restores it (``Game.restore``) and replays only the
actions logged after ``v``; the restored game's log holds those alone, its
first ``v`` entries not loaded (``log_missing``). Play needs none of them.
What does (a hint's positions seen, a replay, a catch-up from before the
rebuild) has the service read the log first (``complete_log``, which checks
that the log reaches the snapshot's position: only the log can tell a
snapshot of another history of the same deal); until then ``history_since``
answers None, which callers turn into a ``game`` snapshot as they do for any
history out of reach. A snapshot the engine refuses (a format of another
release, damage), or on which the actions logged after it do not replay, is
ignored: the game is rebuilt from the whole log instead (the service's
``_load``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgpack

from engine.cards import card_str, parse_card
from engine.events import Event, Hinted
from engine.game import Action, Game
from engine.levels import get_level
from engine.view import public_view
from protocol import build
from server.clock import PlayClock
from server.store import (
    GameRecord,
    GameStatus,
    LoggedAction,
    NewAction,
    Progress,
    StoredSnapshot,
    unpack_hint,
)

__all__ = [
    "CATCH_UP_WAIT_MAX_S",
    "CATCH_UP_WAIT_S",
    "BadSnapshot",
    "LiveGame",
    "SnapshotMismatch",
    "Unreplayable",
    "packed_snapshot",
    "strings_in",
]

EventDict = dict[str, Any]


HISTORY_KEEP = 500
"""Versions of events kept per game by default (older catch-ups get a snapshot)."""

CATCH_UP_WAIT_S = 1.0
"""The wait before a catch-up the store could not answer is tried again; it doubles
with each failure, up to ``CATCH_UP_WAIT_MAX_S``, and is this again after a success."""
CATCH_UP_WAIT_MAX_S = 30.0


class Unreplayable(Exception):
    """A game's stored log that the rules refuse, so the game cannot be rebuilt.

    The server writes only actions the engine accepted, so this takes a database
    changed by other hands (or a server with other rules). ``reason`` is what the
    replay raised; the message names only its kind (a rule's code, or the
    exception's type): logs never show cards.
    """

    def __init__(self, game_id: int, reason: Exception) -> None:
        kind = getattr(reason, "code", None) or type(reason).__name__
        super().__init__(f"game {game_id}'s stored actions cannot be replayed ({kind})")
        self.game_id = game_id
        self.reason = reason


class BadSnapshot(Exception):
    """A stored snapshot the engine refuses: the game is to be rebuilt from its whole log."""


class SnapshotMismatch(ValueError):
    """The log's first actions reach another position than the snapshot a game was
    restored from: the snapshot was not this game's (a database changed by other hands).
    Only reading the log tells; play reads none of it (module docstring)."""


def packed_snapshot(game: Game) -> bytes:
    """``game``'s snapshot (``Game.snapshot``) packed as the store keeps it."""
    packed: bytes = msgpack.packb(game.snapshot())
    return packed


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class LiveGame:
    """One game in the service's cache. Mutate only while holding ``lock``.

    ``batches`` holds the events of the last ``keep`` versions only: version
    ``base + i + 1`` is ``batches[i]``. Older history is dropped (a catch-up from
    before ``base`` is answered with a snapshot), so memory per game stays bounded.

    An unfinished game rebuilt from the store keeps no events at first
    (``unbuilt`` versions before ``base``): most players come back up to date,
    and after a restart thousands come back at once. ``history_since`` makes
    them, replaying the log once more, when a catch-up needs them.
    """

    def __init__(
        self,
        record: GameRecord,
        game: Game,
        batches: list[list[EventDict]],
        keep: int = HISTORY_KEEP,
    ) -> None:
        self.id = record.id
        self.player_id = record.player_id
        self.record = record
        self.game = game
        self.batches = batches
        self.base = 0
        self.unbuilt = 0  # the first versions whose events are not made yet (all before base)
        self.keep = keep
        self.lock = asyncio.Lock()
        self.clock = PlayClock(max(record.time_ms, game.time))
        self.clock.paused = record.paused
        self.lost_reason: str | None = record.lost_reason
        self.status = record.status
        self.checking = False  # a lost-position check is in flight
        self.recheck = False
        self.lost_at: tuple[int, bool] | None = None  # (version, from the deal) proved lost
        self.broken = False  # a commit failed: memory may be ahead of the store
        self.syncing = False  # catching up with another node's commits
        self.catch_up_wait = CATCH_UP_WAIT_S  # before a failed catch-up is tried again
        self.retry_at: float | None = None  # when the failed catch-up's retry is due
        self.retry_task: asyncio.Task[None] | None = None  # ... and the task waiting for it
        self.failed_at = 0.0  # when a catch-up last failed (the loop's clock)
        self.resync = False
        self.snapshot_v = 0  # the version of the store's snapshot, as far as this node knows
        # A digest of the snapshot this game was restored from, checked against the log's
        # position at its version once the log is read (``complete_log``).
        self.restored_from: bytes | None = None

    @classmethod
    def rebuild(
        cls,
        record: GameRecord,
        actions: Sequence[LoggedAction],
        keep: int = HISTORY_KEEP,
        snapshot: StoredSnapshot | None = None,
    ) -> LiveGame:
        """The game of ``record`` with its stored ``actions`` replayed.

        With ``snapshot`` (an unfinished game's), ``actions`` are those logged after
        it: the snapshot is restored and only they are replayed (module docstring).
        An unfinished game's events are left to ``history_since`` (class docstring).
        Raises ``BadSnapshot`` when the engine refuses the snapshot or the actions after
        it, and ``Unreplayable`` when the rules refuse the whole stored log, or when it
        holds fewer actions than the row's version counts (the caller cuts off any beyond).
        """
        active = record.status is GameStatus.ACTIVE
        if snapshot is not None and active:
            return cls._restore(record, snapshot, actions, keep)
        try:
            if len(actions) != record.version:  # the row counts actions the log lacks
                raise ValueError(f"{len(actions)} actions logged, version {record.version}")
            game = Game(get_level(record.level), record.deal)
            live = cls(record, game, [], keep)
            if active:
                game.replay(map(to_action, actions))
                live.base = live.unbuilt = len(actions)
                return live
            for each in actions:
                live.add([event_dicts(game.play(to_action(each)))])
        except Exception as exc:  # a rule, a card's name, a time, a level: the log is bad
            raise Unreplayable(record.id, exc) from exc
        if record.status is GameStatus.LOST and record.lost_reason:
            live.add([[build.game_lost(record.lost_reason, record.deal)]])
        return live

    @classmethod
    def _restore(
        cls,
        record: GameRecord,
        snapshot: StoredSnapshot,
        actions: Sequence[LoggedAction],
        keep: int,
    ) -> LiveGame:
        """``rebuild`` from ``snapshot`` and the ``actions`` logged after it."""
        try:
            rules = get_level(record.level)
            game = Game.restore(rules, record.deal, msgpack.unpackb(snapshot.data))
        except Exception as exc:  # damage, or another release's format: ValueError mostly
            raise BadSnapshot(f"game {record.id}'s snapshot cannot be restored") from exc
        if len(game.actions) != snapshot.v:
            raise BadSnapshot(f"game {record.id}'s snapshot is not of version {snapshot.v}")
        try:
            if snapshot.v + len(actions) != record.version:
                raise ValueError(
                    f"{snapshot.v} + {len(actions)} actions logged, version {record.version}"
                )
            game.replay(map(to_action, actions))
        except Exception as exc:  # as in ``rebuild``
            # The snapshot may be the wrong one (another history of the same deal, an older
            # row's) and the log sound: the whole log decides (Unreplayable if it is bad).
            kind = getattr(exc, "code", None) or type(exc).__name__
            message = f"game {record.id}'s snapshot does not fit the log after it ({kind})"
            raise BadSnapshot(message) from exc
        live = cls(record, game, [], keep)
        live.base = live.unbuilt = record.version
        live.snapshot_v = snapshot.v
        live.restored_from = _digest(snapshot.data)
        return live

    def snapshot(self) -> bytes:
        """This game's snapshot as the store keeps it."""
        return packed_snapshot(self.game)

    @property
    def log_missing(self) -> int:
        """How many of the log's first actions are not in memory (restored games')."""
        return self.game.actions.missing

    def needs_log(self, since: int) -> bool:
        """Whether ``history_since(since)`` needs log entries not in memory."""
        return since < self.base and bool(self.unbuilt) and bool(self.log_missing)

    def complete_log(self, actions: Sequence[LoggedAction]) -> None:
        """Fill in the log's missing first actions from the store's (its first ones).

        They are replayed first: the position they reach must be the snapshot's this game
        was restored from, or what was served since came from another game's snapshot,
        and nothing made of both logs may be (a hint, a replay, a catch-up). Raises
        ``Unreplayable`` when one of them is not an action, or for such a snapshot
        (``SnapshotMismatch``). The replay costs what the restore saved, once, and only
        for what reads the log anyway.
        """
        missing = self.log_missing
        if missing:
            try:
                prefix = [to_action(each) for each in actions[:missing]]
                if self.restored_from is not None:
                    replay = Game(self.game.rules, self.record.deal)
                    replay.replay(prefix)
                    if _digest(packed_snapshot(replay)) != self.restored_from:
                        raise SnapshotMismatch(
                            f"game {self.id}'s snapshot is not the position its log reaches"
                            f" at version {missing}"
                        )
                self.game.actions.fill(prefix)
                self.restored_from = None
            except Exception as exc:  # a card's name, a count: as ``rebuild`` says
                raise Unreplayable(self.id, exc) from exc

    def add(self, batches: Sequence[list[EventDict]]) -> None:
        """Append the events of the next versions, forgetting those beyond ``keep``."""
        self.batches.extend(batches)
        excess = len(self.batches) - self.keep
        if excess > 0:
            del self.batches[:excess]
            self.base += excess
            self.unbuilt = 0  # what was not made is out of reach now

    # -- reading --------------------------------------------------------------

    @property
    def level(self) -> str:
        return self.game.rules.name

    @property
    def finished(self) -> bool:
        return self.status is not GameStatus.ACTIVE

    @property
    def log_version(self) -> int:
        """The store's version: actions in the log."""
        return len(self.game.actions)

    @property
    def version(self) -> int:
        """The wire version: the log, plus one once resigned or abandoned."""
        return self.log_version + (self.status is GameStatus.LOST)

    def play_time(self) -> int:
        """The play time a view shows now: a won game's stops at the win."""
        return self.game.time if self.game.won else self.clock.now_ms()

    def view(self) -> dict[str, Any]:
        """The engine's view with what only the server knows: a lost game is ``lost``,
        and its deal number (withheld while unfinished unless the player chose it) is shown."""
        view = public_view(
            self.game,
            self.clock.now_ms(),
            running=self.clock.running,
            paused=self.clock.paused and not self.finished,
            withhold_deal=self.deal_withheld,
        )
        if self.status is GameStatus.LOST:
            view.update(status=GameStatus.LOST.value, deal=self.record.deal)
        return view

    def progress(self, t: int, game: Game | None = None) -> Progress:
        """The counters of ``game`` (default: this one) at play time ``t``, for a write."""
        results = (self.game if game is None else game).results(t)
        return Progress(
            moves=results.moves,
            score=results.score,
            time_ms=results.time_ms,
            hints=results.hints,
            undos=results.undos,
            suits_removed=results.suits,
        )

    def adopt(self, trial: Game, record: GameRecord, events: list[EventDict]) -> None:
        """Make ``trial`` (a fork that played one more action, now stored) this game."""
        self.game = trial
        self.record = record
        if trial.won:
            self.status = GameStatus.WON
        self.add([events])

    @staticmethod
    def last_action(game: Game) -> NewAction:
        action = game.actions[-1]
        card = None if action.card is None else card_str(action.card)
        hinted = action.hinted
        if hinted is None:
            return NewAction(action.type, card, action.to, action.t)
        return NewAction(
            action.type,
            card,
            action.to,
            action.t,
            hint_action=hinted.action,
            hint_card=None if hinted.card is None else card_str(hinted.card),
            hint_to=hinted.to,
            hint_reason=hinted.reason,
        )

    def hidden_cards(self) -> set[str]:
        """The names of every card now face down or in the stock."""
        state = self.game.state
        hidden = {
            card for col, down in zip(state.cols, state.down, strict=True) for card in col[:down]
        }
        hidden.update(state.stock)
        return {card_str(card) for card in hidden}

    def history_since(self, since: int) -> list[list[EventDict]] | None:
        """The batches of versions after ``since``; None when they cannot be given."""
        if since < self.base and self.unbuilt:
            if self.log_missing:
                return None  # the service completes the log first where it can
            self._build_history()
        if (
            since > self.version
            or since < self.base
            or self.base + len(self.batches) != self.version
        ):
            return None
        batches = self.batches[since - self.base :]
        if self.finished:
            return batches  # a finished game's replay reveals everything anyway (section 7)
        return batches if self.can_show(batches) else None

    def _build_history(self) -> None:
        """Make the events of the ``unbuilt`` versions that ``keep`` has room for."""
        room = self.keep - len(self.batches)
        first = max(0, self.unbuilt - room)
        replay = Game(self.game.rules, self.record.deal)
        older = []
        for n, action in enumerate(self.game.actions[: self.unbuilt]):
            events = replay.play(action)
            if n >= first:
                older.append(event_dicts(events))
        self.batches[:0] = older
        self.base -= len(older)
        self.unbuilt = 0

    def can_show(self, batches: list[list[EventDict]]) -> bool:
        """False when ``batches`` name a card that is face down (or in the stock) now."""
        hidden = self.hidden_cards()
        return not (hidden and any(text in hidden for text in strings_in(batches)))

    def summary(self) -> dict[str, Any]:
        record = self.record
        return build.summary(
            game=self.id,
            level=self.level,
            status=self.status.value,
            v=self.version,
            moves=self.game.moves,
            score=self.game.score(self.clock.now_ms()) if not self.finished else record.score,
            time_ms=self.clock.now_ms() if not self.finished else record.time_ms,
            deal=None if not self.finished and self.deal_withheld else record.deal,
            started=record.created_at,
            updated=record.updated_at,
            winnable=record.winnable or None,
        )

    @property
    def deal_withheld(self) -> bool:
        """The server drew the deal (at random, or a winnable one): its number is withheld
        until the game ends, since the number gives away every face-down card."""
        return not self.record.deal_chosen


def to_action(logged: LoggedAction) -> Action:
    """The engine's action of a stored one (a rebuild makes one per logged action).

    Made as the tuple it is, with every field: ``Action(...)`` runs a Python
    ``__new__`` for its defaults, which took 3 times as long (timeit). The stored
    action is unpacked once: each field read by name is a call of the class's.
    A hint's suggestion is None when it was not stored: the engine recomputes it.
    """
    kind, card, to, t, hint = logged
    hinted = None
    if hint is not None:
        hint_action, hint_card, hint_to, hint_reason = unpack_hint(hint)
        hint_at = None if hint_card is None else parse_card(hint_card)
        hinted = Hinted(hint_action, hint_at, hint_to, hint_reason)
    return _new_tuple(Action, (kind, None if card is None else parse_card(card), to, t, hinted))


_new_tuple = tuple.__new__


def event_dicts(events: Iterable[Event]) -> list[EventDict]:
    return [event.to_dict() for event in events]


def strings_in(value: object) -> Iterable[str]:
    """Every string inside a nest of maps and lists (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)
