"""Persistence: the only package that imports SQLAlchemy.

A game is stored as its level and deal plus its ordered action log, with a
row of counters that always matches the log's end (architecture.md, "State
and storage"). The service rebuilds a game by replaying ``load_actions``
through the engine; it never sees SQL, a session or an ORM object: every call
returns small frozen records (``server.store.records``).

Life cycle
----------
::

    store = Store.connect("sqlite+aiosqlite:///data/scorpion.db")   # or postgresql+asyncpg://...
    await store.check_schema()        # SchemaOutdated (with the upgrade command) unless current,
                                      # SchemaNewer for a newer server's revision,
                                      # SchemaForeign for another program's database
    await store.upgrade()             # what `scorpion-server --migrate` should call
    ...
    await store.close()               # commits writes already submitted, closes the pool

``schema_status()`` answers ``"empty"``, ``"outdated"`` or ``"current"``
(``SchemaStatus``); Alembic owns the schema (``server/store/migrations/``, ``schema``).

Players
-------
- ``create_player(name) -> (Player, token)``: ``NameTaken`` if the name is in
  use ignoring case (NFKC case fold), ``InvalidName`` (a ValueError) if it is
  not 1..32 printable characters. The token is returned once; only its
  SHA-256 is stored.
- ``player_for_token(token, max_age=None) -> Player | None`` (``max_age``: a
  token issued longer ago has expired); ``sign_in(token, max_age=None) -> SignIn
  | None`` (the player, their unfinished games, and when the token was issued);
  ``issue_token(player_id)``, ``revoke_token(token)``, ``rotate_token(token,
  new=None, max_age=None)`` (``new``: the client's own new token; ``TokenTaken``
  if ever issued, working or revoked: ``issued_tokens`` keeps every hash; an
  expired token is not rotated), ``revoke_tokens(player_id)``
  (on PostgreSQL each revocation is told to the other nodes with its commit:
  ``listen``'s ``on_revoked``), ``known_tokens(hashes)`` (which are not revoked),
  ``get_player(player_id)``.

Games (reads)
-------------
- ``create_game(player_id, level, deal) -> GameRecord``: ``GameInProgress`` if
  the player has an unfinished game (at most one, R17), ``NotFound`` without
  the player. Deal numbers up to 10**20 and beyond are stored exactly.
- ``get_game(id)``, ``list_games(player_id, status=None, limit=None)``
  (newest first), ``unfinished_games(player_id)``,
  ``load_actions(game_id, after_seq=0) -> list[ActionRecord]``.
- ``load_game(game_id, after_seq=0) -> (GameRecord | None, list[LoggedAction])``:
  the game and its log in one read, each action as much of it as a rebuild
  replays.
- ``restore_game(game_id) -> (GameRecord | None, StoredSnapshot | None,
  list[LoggedAction])``: ``load_game`` from the game's snapshot, in one read:
  the game, its snapshot if its row holds one (of a version the game has
  reached) and only the log after that version; without one, the whole log,
  as ``load_game(game_id)``. A missing game is ``(None, None, [])``.
- ``find_retry(game_id, version, request_id)``: the stored action of a retried
  request (the action at ``version + 1`` with that request id), so a retry
  gets the original result instead of ``stale``.

Writes
------
Every change to an existing game is a ``GameWrite``: the game id, the
version the service checked, the game's ``Progress`` after the change, and
any of an applied ``NewAction`` (stored at ``seq = version + 1``, with the
client's ``request_id``), an ``Ending`` (won, resigned, abandoned) and a
``NewGame`` to start in the same transaction. One write is one atomic unit:
the action row, the game row and, when the game ends, the player's
``level_stats`` change together or not at all.

- ``await store.commit(write) -> Committed`` is the normal path: it returns
  once the write is durable. Concurrent commits from many games are group
  committed (``committer``): one transaction, hence one fsync, per batch
  instead of per move; a batch is whatever queued while the previous one was
  being written (up to ``max_batch``), so there is no timer and no added
  latency under light load. A write refused inside a batch fails alone; if a
  batch transaction fails as a whole, its writes are retried one by one so
  only the culprit fails. ``commit_stats`` counts transactions and batch sizes.
- ``await store.append_actions([write, ...]) -> list[Committed]`` writes
  several in one transaction, all or nothing, without the committer.

A write whose game moved on (another node or device wrote that version
first) or finished raises ``VersionConflict`` carrying the game's current
version and status, and stores nothing: reload and retry, or answer
``stale``. The service serialises writes per game (its lock) and awaits each
commit before the next, so its own writes never conflict with each other.

R17, abandoning: to start a game while one is unfinished, commit
``GameWrite(old.id, old.version, progress, ending=Ending.ABANDONED,
then_start=NewGame(level, deal))``; the old game is lost (and booked in its
level's statistics) and the new one exists, atomically; ``Committed.started``
is the new game. Resigning is ``ending=Ending.RESIGNED`` without an action.
Ends without an action leave the version as it was: the log holds only
replayable actions (replay.md), and resign/abandon are not among them.

Snapshots: ``save_snapshots([(game_id, v, data), ...]) -> int`` keeps each
``data`` (opaque bytes: the game at version ``v``, as the service wrote it) in
its game's row, in one transaction, only where it is still true and newer: the
game is active, has reached ``v`` and holds no snapshot of ``v`` or later. It
returns how many it kept; a refused one is no error. The write that ends a
game drops its snapshot (``games.snapshot`` and ``snapshot_v`` become NULL),
so finished games keep no blobs and are never restored from one.

Statistics
----------
``level_stats(player_id, level=None) -> list[LevelStats]`` (one row per level
played; exactly one for a given level, zeros before the first game), with
``win_rate``. See ``stats`` for the arithmetic.

Errors
------
``StoreError`` and its subclasses only (tree in ``errors``); messages never
contain SQL. ``StoreUnavailable`` is the transient one (retry later).
"""

from __future__ import annotations

from server.store.committer import CommitStats, GroupCommitter
from server.store.errors import (
    DatabaseReplaced,
    GameInProgress,
    GamePaused,
    NameTaken,
    NotFound,
    NotHearing,
    SchemaForeign,
    SchemaNewer,
    SchemaOutdated,
    StoreAccessRefused,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    TablesLocked,
    TokenTaken,
    VersionConflict,
    WritesFailing,
)
from server.store.players import InvalidName, hash_token, name_key
from server.store.records import (
    ActionRecord,
    Committed,
    Ending,
    GameRecord,
    GameStatus,
    GameWrite,
    LevelStats,
    LoggedAction,
    NewAction,
    NewGame,
    PauseState,
    Player,
    Progress,
    SchemaStatus,
    SignIn,
    StoredSnapshot,
    pack_hint,
    unpack_hint,
)
from server.store.store import Store

__all__ = [
    "ActionRecord",
    "CommitStats",
    "Committed",
    "DatabaseReplaced",
    "Ending",
    "GameInProgress",
    "GamePaused",
    "GameRecord",
    "GameStatus",
    "GameWrite",
    "GroupCommitter",
    "InvalidName",
    "LevelStats",
    "LoggedAction",
    "NameTaken",
    "NewAction",
    "NewGame",
    "NotFound",
    "NotHearing",
    "PauseState",
    "Player",
    "Progress",
    "SchemaForeign",
    "SchemaNewer",
    "SchemaOutdated",
    "SchemaStatus",
    "SignIn",
    "Store",
    "StoreAccessRefused",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "StoredSnapshot",
    "TablesLocked",
    "TokenTaken",
    "VersionConflict",
    "WritesFailing",
    "hash_token",
    "name_key",
    "pack_hint",
    "unpack_hint",
]
