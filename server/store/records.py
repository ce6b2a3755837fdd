"""The values the store takes and returns: small frozen dataclasses, never ORM rows.

Read side: ``Player``, ``GameRecord``, ``ActionRecord``, ``LevelStats``,
``StoredSnapshot``.
Write side: ``GameWrite`` is one unit of work on one game (an applied action
and/or its end, optionally starting the player's next game), built from
``NewAction``, ``Progress``, ``Ending`` and ``NewGame``; committing it yields
``Committed``. Constructors check what the database cannot (``ValueError``),
so a bad value never reaches SQL.

Times are aware UTC ``datetime``s; play times (``t``, ``time_ms``) are
milliseconds of play as the engine counts them (R22). Cards are their
canonical text (``"TD"``, R2), as in replays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, NamedTuple

from engine.game import ACTION_TYPES

__all__ = [
    "ACTION_TYPES",
    "MAX_REQUEST_ID",
    "MAX_STORED_DEAL",
    "ActionRecord",
    "Committed",
    "Ending",
    "GameRecord",
    "GameStatus",
    "GameWrite",
    "LevelStats",
    "LoggedAction",
    "NewAction",
    "NewGame",
    "Player",
    "Progress",
    "SchemaStatus",
    "SignIn",
    "StoredSnapshot",
    "pack_hint",
    "unpack_hint",
]

MAX_STORED_DEAL: Final = 10**21 - 1
"""The largest deal number the ``deal`` column holds (21 decimal digits; the engine's is 10**20)."""
MAX_REQUEST_ID: Final = 64
"""The longest client request id the log keeps."""


class SchemaStatus(StrEnum):
    """How the database's schema relates to this code's migrations."""

    CURRENT = "current"  # at the head revision: ready
    OUTDATED = "outdated"  # behind, ahead, or tables Alembic does not know
    EMPTY = "empty"  # nothing there yet: ``upgrade()`` creates everything


class GameStatus(StrEnum):
    ACTIVE = "active"
    WON = "won"
    LOST = "lost"


class Ending(StrEnum):
    """How a game ends: won (R15), or lost by resigning or abandoning it (R17)."""

    WON = "won"
    RESIGNED = "resigned"
    ABANDONED = "abandoned"

    @property
    def status(self) -> GameStatus:
        return GameStatus.WON if self is Ending.WON else GameStatus.LOST

    @property
    def lost_reason(self) -> str | None:
        return None if self is Ending.WON else self.value


@dataclass(frozen=True, slots=True)
class Player:
    id: int
    name: str
    created_at: datetime


class SignIn(NamedTuple):
    """A token's sign-in (``Store.sign_in``): its player, their unfinished games (0 or
    1, R17), and when the token was issued (an expiry counts from then)."""

    player: Player
    games: list[GameRecord]
    issued: datetime


class GameRecord(NamedTuple):
    """A game's row: its deal, where it stands, and its counters (R20, R25).

    A named tuple (as ``ActionRecord``): a write returns one per action, and a
    frozen dataclass of these 19 fields takes five times as long to make.
    """

    id: int
    player_id: int
    level: str
    deal: int
    status: GameStatus
    version: int  # actions applied so far = the last action's seq
    moves: int
    score: int
    time_ms: int
    hints: int
    undos: int
    suits_removed: int
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    lost_reason: str | None
    paused: bool = False  # the player paused it (R22); kept across restarts
    winnable: bool = False  # dealt from the level's winnable pool on request
    deal_chosen: bool = False  # the player named the deal; else it is withheld until the end
    time_at: datetime | None = None  # when a save of the play time last stored time_ms

    @property
    def clock_since(self) -> datetime:
        """When ``time_ms`` was the play time: a clock that has run since counts on from
        it. Every change of the game (an action, a pause or resume) stores the play time
        of its moment with ``updated_at``; a save of the play time alone (a bank of a
        running clock) stores it with ``time_at``: the later of the two. (An older server,
        during an upgrade, sets no ``time_at``.)"""
        if self.time_at is None or self.updated_at > self.time_at:
            return self.updated_at
        return self.time_at

    @property
    def finished(self) -> bool:
        return self.status is not GameStatus.ACTIVE


class ActionRecord(NamedTuple):
    """One stored action: a replay action (replay.md) plus its log position.

    A named tuple, not a frozen dataclass like the other records: a game is
    rebuilt from hundreds of these, and a frozen dataclass takes about ten
    times as long to make (it sets each field through ``object.__setattr__``).
    The log's row also keeps when it was written (``created_at``); the record does
    not: nothing reads it, and turning it into a datetime was the larger part of
    reading a log (``games.ACTION_COLUMNS``).
    """

    game_id: int
    seq: int  # 1-based position in the game's log
    type: str
    card: str | None
    to: int | None
    t: int
    request_id: str | None
    hint_action: str | None = None  # a hint's suggestion: "move", "deal" or "none"
    hint_card: str | None = None
    hint_to: int | None = None
    hint_reason: str | None = None

    def logged(self) -> LoggedAction:
        """What a rebuild replays of this action (``Store.load_game``'s)."""
        hint = pack_hint(self.hint_action, self.hint_card, self.hint_to, self.hint_reason)
        return LoggedAction(self.type, self.card, self.to, self.t, hint)


class LoggedAction(NamedTuple):
    """What a rebuild replays of a stored action: ``ActionRecord`` without its place in
    the log (``game_id``, ``seq``) and the client's ``request_id``, and with a hint's
    suggestion in one field (``pack_hint``'s text; None for every other action).

    ``Store.load_game`` reads a returning player's whole log into these. Python's
    ``sqlite3`` gives up and retakes the interpreter lock around every column it
    reads, so each column of a row costs about as much as making the record: the
    three a rebuild does not use were a quarter of reading a log, and the hint's
    four columns, NULL but in a hint's rows, 30% of what was left (timeit, 100 rows).
    """

    type: str
    card: str | None
    to: int | None
    t: int
    hint: str | None = None


class StoredSnapshot(NamedTuple):
    """A game as it stood at version ``v``, kept in its row (``Store.save_snapshots``).

    ``data`` is opaque to the store: whatever the service made of the game, to
    restore it without replaying the log up to ``v`` (``Store.restore_game``).
    """

    v: int
    data: bytes


HINT_SEPARATOR: Final = " "


def pack_hint(
    action: str | None, card: str | None, to: int | None, reason: str | None
) -> str | None:
    """A hint's suggestion as ``LoggedAction.hint``: its four columns joined by a space,
    each NULL as empty (``games.HINT_COLUMN`` makes the same text in SQL); None
    when there is none (``action`` is None). No field holds a space: an action type,
    a card's name, a column number, a reason (``lost``, ``seen``, ``stuck``)."""
    if action is None:
        return None
    fields = (action, card or "", "" if to is None else str(to), reason or "")
    return HINT_SEPARATOR.join(fields)


def unpack_hint(hint: str) -> tuple[str, str | None, int | None, str | None]:
    """``pack_hint``'s four fields back: action, card, to, reason."""
    action, card, to, reason = hint.split(HINT_SEPARATOR)
    return action, card or None, int(to) if to else None, reason or None


@dataclass(frozen=True, slots=True)
class LevelStats:
    """A player's record on one level (rules.md, "Statistics")."""

    player_id: int
    level: str
    games: int  # finished games: wins + losses
    wins: int
    losses: int
    current_streak: int  # wins since the last loss
    best_streak: int
    best_score: int | None  # over all finished games
    fastest_win_ms: int | None
    fewest_moves: int | None  # in a win
    winnable: bool = False  # the row of winnable games (new_game with winnable), else random deals

    @property
    def win_rate(self) -> float:
        """Wins per finished game, 0.0 before the first one."""
        return self.wins / self.games if self.games else 0.0


@dataclass(frozen=True, slots=True)
class NewAction:
    """An action the engine accepted, as it goes into the log."""

    type: str
    card: str | None = None
    to: int | None = None
    t: int = 0
    hint_action: str | None = None  # a hint's suggestion (type "hint" only)
    hint_card: str | None = None
    hint_to: int | None = None
    hint_reason: str | None = None

    def __post_init__(self) -> None:
        if self.type not in ACTION_TYPES:
            raise ValueError(f"unknown action type {self.type!r}")
        if self.hint_action is not None and self.type != "hint":
            raise ValueError(f"a {self.type!r} action with a hint's suggestion")
        if self.hint_action not in (None, "move", "deal", "none"):
            raise ValueError(f"unknown hint action {self.hint_action!r}")
        if (self.card is not None) != (self.type == "move"):
            raise ValueError(f"a {self.type!r} action with card {self.card!r}")
        if self.card is not None and not 0 < len(self.card) <= 3:
            raise ValueError(f"{self.card!r} is not a card's name")
        if self.to is not None and self.type != "move":
            raise ValueError(f"a {self.type!r} action with a destination")
        if self.t < 0:
            raise ValueError(f"negative play time {self.t}")
        for field in (self.hint_card, self.hint_reason):
            if field is not None and HINT_SEPARATOR in field:  # a rebuild reads them packed
                raise ValueError(f"a hint's {field!r} holds {HINT_SEPARATOR!r}")


class PauseState(NamedTuple):
    """What ``Store.set_paused`` found: whether the game was paused already (by another
    node or device, perhaps), its play time, as stored (the pause's, when paused), and
    its version (another node's action may have made it newer than the caller knows),
    and the row's ``updated_at`` after it: a copy of the game that takes the pause (or
    resume) in takes this in too, or the row would look changed by a change it missed."""

    was_paused: bool
    time_ms: int
    version: int
    updated_at: datetime


class Progress(NamedTuple):
    """A game's counters after a write: the engine's ``Results`` (``suits_removed`` = ``suits``).

    A named tuple, made once per action (see ``GameRecord``).
    """

    moves: int = 0
    score: int = 0
    time_ms: int = 0
    hints: int = 0
    undos: int = 0
    suits_removed: int = 0


@dataclass(frozen=True, slots=True)
class NewGame:
    """A game to start: its level and deal number (R6), and whether it was asked winnable."""

    level: str
    deal: int
    winnable: bool = False
    chosen: bool = False  # the player named the deal (its number may be shown at once)

    def __post_init__(self) -> None:
        if not self.level:
            raise ValueError("a game needs a level")
        if isinstance(self.deal, bool) or not 0 <= self.deal <= MAX_STORED_DEAL:
            raise ValueError(f"deal number {self.deal!r} cannot be stored")


@dataclass(frozen=True, slots=True)
class GameWrite:
    """One unit of work on one game, written in one transaction (or one batch).

    - ``version``: the game's version this write was computed from; the write
      applies only if the game is still there and still active (else
      ``VersionConflict``, nothing written).
    - ``action``: the applied action, stored at ``seq = version + 1``; the
      game's version becomes that seq. None for an end without an action
      (resign, abandon): the log holds only replayable actions, so the version
      stays.
    - ``progress``: the game's counters after the write.
    - ``request_id``: the client's request id, kept with the action so a retry
      is recognised (see ``Store.find_retry``).
    - ``ending``: the game ends with this write; the player's level statistics
      change in the same transaction.
    - ``then_start``: a game to start for the same player in the same
      transaction (R17: abandoning a game to start another is atomic).
    - ``snapshot``: the game's snapshot after this write (at ``new_version``),
      kept in the same transaction where it is newer (``save_snapshots``' guard);
      for an action that leaves its game active.
    """

    game_id: int
    version: int
    progress: Progress
    action: NewAction | None = None
    request_id: str | None = None
    ending: Ending | None = None
    then_start: NewGame | None = None
    snapshot: bytes | None = None

    def __post_init__(self) -> None:
        if self.ending is not None:  # accept "won" as well as Ending.WON
            object.__setattr__(self, "ending", Ending(self.ending))
        if self.version < 0:
            raise ValueError(f"negative version {self.version}")
        if self.action is None and self.ending is None:
            raise ValueError("a write needs an action, an ending, or both")
        if self.request_id is not None and self.action is None:
            raise ValueError("a request id belongs to an action")
        if self.request_id is not None and not 0 < len(self.request_id) <= MAX_REQUEST_ID:
            raise ValueError(f"request id {self.request_id!r} is empty or too long")
        if self.then_start is not None and self.ending is None:
            raise ValueError("a new game starts only when this one ends (R17)")
        if self.snapshot is not None and (self.action is None or self.ending is not None):
            raise ValueError("a snapshot goes with an action that leaves its game active")

    @property
    def seq(self) -> int | None:
        """The log position of ``action``, if there is one."""
        return None if self.action is None else self.version + 1

    @property
    def new_version(self) -> int:
        return self.version + (self.action is not None)


class Committed(NamedTuple):
    """What a committed ``GameWrite`` stored: the game after it, its action, a new game.

    A named tuple, made once per action (see ``GameRecord``).
    """

    game: GameRecord
    action: ActionRecord | None
    started: GameRecord | None
