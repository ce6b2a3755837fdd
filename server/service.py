"""``GameService``: the authority over players and games. No sockets, no SQL.

Theory of operation
-------------------
``handle(session, request)`` answers one checked request (``protocol.Request``)
for one connection (``Session``) and returns its reply map, or None when it
has already queued the reply itself (``new_game`` and ``open_game`` queue the
snapshot before the clock push that follows it). Every failure becomes an
``error`` reply here: rule violations with the engine's code and a message in
the session's locale, store trouble as ``unavailable``/``stale``, anything
unexpected as ``internal`` (logged, never shown).

Games live in a cache of ``LiveGame``s, rebuilt from the store's action log
on first use (so a restarted server continues where the last one stopped).

**The invariant: the cache holds committed state only.** Whatever is sent to a
connection (a snapshot, a catch-up, a push, a summary) and whatever a cached
game answers is a state the store has committed; an action the store refused
is never seen by anyone. Why: several requests can wait on one game while an
action is being committed, on this node or another, and a refused commit
must not leave behind a position (a dealt stock, say) that never existed.
How: an action is applied to ``game.fork()``, a copy, and the copy replaces
the cached game only after ``store.commit`` succeeded, in the same step (no
``await``) as the push of its events. Each game has an ``asyncio.Lock``; an
action runs entirely under it:

1. ``v`` must be the game's version: otherwise, a retry whose first attempt
   is in the log (``store.find_retry``: same request id at ``v + 1``) gets
   its original ``ack``, anything else ``stale`` with the current version;
2. the engine applies the action to a fork at the clock's play time
   (rejections leave nothing behind); on a store shared with other nodes the
   cached game may be behind the stored one, so a request refused in 1 or 2
   is judged again once the game is read from the store (``_read_current``):
   every refusal is of the stored game, and an old ``v`` is ``stale`` whatever
   rule the action breaks;
3. ``store.commit`` makes it durable (a win ends the game and books the
   statistics in the same write); if the commit fails, the cached game is
   as it was, and it catches up from the log in the background (the store may
   be ahead: another node won the version, or a failed commit did land);
4. the fork is adopted, its events pushed to every watcher (``Hub``), and
   the ack returned.

Pushes of one game leave in version order, each with the version of the state
it describes: every push happens under the game's lock or, for background
work (``lost_position``), only after checking that its version is still the
cached one, with no ``await`` between the check and the push.

A connection acts as one player, but nothing holds that while its request waits
(for the store, the solver or a game's lock): a revocation may sign it out
meanwhile, closing its games (a ``sign_out`` with ``everywhere`` on another
connection, or a ``rotate_token`` of its token there, on this node
or another: ``_revoked``). A request
reads its player once, and checks after each wait, before it opens, watches or
changes a game, that the connection still acts as that player and still has the
game open (``_still``, ``_check_open``); else it answers ``unauthenticated`` and
does nothing. A new game already started by then is answered, but not watched.
A ``hello`` whose token was read just before such a revocation is answered as
that token now is, revoked (``_read_token``).

Hints and lost-position checks run the solver in worker processes
(``SolverPool``); hints are steps of a plan (``HintAdvisor``: a winning line
followed, else a move that neither goes back nor into a known loss). A
lost-position check follows every action but a hint, unless the workers are
busy or the game's previous check is still running (then one more runs when
it ends); so does a new game (at its deal) and the first ``open_game`` of a
game loaded from the store. A position proved lost is pushed as
``lost_position``, telling whether the deal itself was lost (``LostChecks``,
which keeps deal verdicts in the store). The pool remembers definitive verdicts (lost or won) per
position, so a position reached again (undo, restart) is answered without a
search and, if lost, announced again.

The clock runs while a connection has the game open and it is neither paused
nor finished; each start or stop is pushed as a ``clock`` event. Play time
reaches the store with every write, and when the clock stops (pause, last
connection gone, shutdown) the time since the last action is banked too
(``Store.save_play_time``), so a restart gives none of it back.

Several nodes may share one PostgreSQL database. The store's version guard
makes their writes safe: of two actions computed from one version, the second
commit is refused (``stale`` for a request with ``v``; a request without one,
``new_game``'s abandonment, ``hint`` and ``resign``, catches up and tries
again, up to ``CONFLICT_ATTEMPTS`` times). Each commit also notifies the other
nodes (``server.store.notify``); ``remote_changed`` catches up every game held
here, or watched here: it replays the new actions from the log on a fork under
the game's lock, adopts it and pushes each version's events to its own
connections with the same versions (one ``snapshot`` instead when they would
name a card face down now), so two devices on two nodes see one event stream.
A notification that arrives while the game is being loaded is applied once it
is loaded; a game dropped while watched (its log did not replay) is loaded
again for its watchers (``_rejoin``, from the version the ``Hub`` last told
them); ``open_game`` asks the log first, and an action naming a version ahead
of ours triggers a catch-up, so a lost notification is repaired. Each node runs
its own clock for its own connections; play time never goes backwards (the
highest stored time wins), and every ``CLOCK_BANK_S`` a node banks the time of
the games whose clocks run on it and takes up a larger stored one
(``_bank_clocks``): a node whose devices left a game that another node's kept
open reads that node's time when its device opens the game again. A revocation
of tokens is told to the other nodes too, and each signs out its connections on
them as the revoking node did (``remote_revoked``); after notifications may have
been lost, and after a revocation of its own failed in a way that may have
committed (its own notification then tells it too, should it land later), a node
checks the tokens of all its connections against the store (``_check_tokens``).

An unfinished game has a snapshot written to the store every
``SNAPSHOT_EVERY`` actions, with the action that reaches it, in the same
transaction (``GameWrite.snapshot``), so that after a crash too no game
replays more than that many; and when it has moved on since the store's last
(``server.live``, "Snapshots") and its last connection closes it, or it
leaves memory (evicted from the cache, or held at shutdown), in the
background, after the actions' own commits, best effort (a failure is
logged; the log is still the truth). Loaded again, on any node, a game is
restored from its snapshot and replays only what was logged after, which
after a restart is most of what each returning player would otherwise cost.
A hint, a replay or a catch-up from before a restored game's rebuild reads
its log once (``_complete_log``); a snapshot the engine refuses is ignored
and the game rebuilt from its whole log.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from engine.cards import CardParseError, card_str, parse_card
from engine.errors import GameOver, RuleViolation
from engine.events import Hinted
from engine.game import Game
from engine.levels import Rules, get_level
from engine.replay import export_replay
from engine.solver.easy import DRAW_LIMIT
from protocol import (
    GAMES_LIST_LIMIT,
    LEVELS,
    MAX_SERVER_FRAME_BYTES,
    OPEN_GAMES_LIMIT,
    REPLAY_PAGE_ACTIONS,
    ProtocolError,
    Request,
    RequestId,
    build,
    encode,
)
from protocol.version import version
from server.advisor import HintAdvisor
from server.hub import Hub, Outbox
from server.live import (
    CATCH_UP_WAIT_MAX_S,
    CATCH_UP_WAIT_S,
    HISTORY_KEEP,
    BadSnapshot,
    EventDict,
    LiveGame,
    SnapshotMismatch,
    Unreplayable,
    event_dicts,
    packed_snapshot,
    to_action,
)
from server.logs import detached
from server.loop import finish_within
from server.sessions import SignedIn
from server.store import (
    ActionRecord,
    Committed,
    Ending,
    GameInProgress,
    GamePaused,
    GameRecord,
    GameStatus,
    GameWrite,
    InvalidName,
    LevelStats,
    LoggedAction,
    NameTaken,
    NewGame,
    NotFound,
    Player,
    Progress,
    SchemaOutdated,
    SignIn,
    Store,
    StoredSnapshot,
    StoreError,
    StoreUnavailable,
    TokenTaken,
    VersionConflict,
    hash_token,
)
from server.verdicts import LostChecks
from server.winnable_pools import FIND_BUDGET_MS, WinnablePools, pool_name
from server.workers import SolverPool

__all__ = ["SERVER_NAME", "GameService", "Session", "shutdown_deadline"]

FIND_NOW_S: Final = 3.0  # a winnable game on a level whose pool is empty waits this long at most
CLAIM_ATTEMPTS: Final = 8  # pool deals tried that other nodes may have dealt already
SERVER_NAME = f"scorpion-server {version()}"
CONFLICT_ATTEMPTS = 8
"""How often a request without ``v`` (new_game's abandonment, hint, resign) is tried
against a game that other nodes keep changing before it answers ``unavailable``."""


class KeepsChanging(Exception):
    """``CONFLICT_ATTEMPTS`` writes in a row were refused for another write to the same
    game or player at the same version (another device, on another node, acting as
    fast as the database answers): ``unavailable``, though the database is well."""


KEEPS_CHANGING: Final = (
    "The game keeps changing (another device of yours acts on it as fast as it can);"
    " nothing was applied: retry."
)

CATCH_UP_OVERHEAD = 256
"""Bytes a catch_up reply takes besides its batches (envelope, ids, clock, list header)."""
LOADS_AT_ONCE: Final = 8
"""Games rebuilt in one turn of the event loop at most (``_load``: some tens of
milliseconds), on SQLite with their reads."""
SNAPSHOT_MIN_ACTIONS: Final = 10  # actions beyond the stored snapshot that make a new one due
SNAPSHOT_EVERY: Final = 50  # a game this far ahead of its snapshot has one with its action
SNAPSHOTS_AT_ONCE: Final = 500  # snapshots written in one transaction
SNAPSHOT_SHUTDOWN_S: Final = 5.0
"""How long shutdown spends on the store at most, in all (``shutdown_deadline``): play
time, snapshots and the writes queued, whatever the database does."""
log = logging.getLogger(__name__)
Reply = dict[str, Any]


def shutdown_deadline() -> float:
    """The loop's time by which a shutdown starting now ends its work on the store."""
    return asyncio.get_running_loop().time() + SNAPSHOT_SHUTDOWN_S


@dataclass(eq=False)
class Session:
    """What the service knows about one connection."""

    outbox: Outbox
    greeted: bool = False
    locale: str = "en"
    player: Player | None = None
    peer: str = "?"
    # Games the store gave as the player's at sign-in (a game's owner never changes):
    # opening one needs no read of its owner (``_owned``).
    owned: frozenset[int] = frozenset()
    # When the token it signed in with expires, and the timer that signs it out then
    # (``GameService._expire_at``); None while it is signed out or tokens never expire.
    expires: datetime | None = None
    expiry: asyncio.TimerHandle | None = None


def _request_key(request: Request) -> str:
    return str(request.id)


def record_version(record: GameRecord) -> int:
    return record.version + (record.status is GameStatus.LOST)


def record_summary(record: GameRecord) -> dict[str, Any]:
    hide = record.status is GameStatus.ACTIVE and not record.deal_chosen  # see LiveGame
    return build.summary(
        game=record.id,
        level=record.level,
        status=record.status.value,
        v=record_version(record),
        moves=record.moves,
        score=record.score,
        time_ms=record.time_ms,
        deal=None if hide else record.deal,
        started=record.created_at,
        updated=record.updated_at,
        winnable=record.winnable or None,
    )


def stats_row(stats: LevelStats) -> dict[str, Any]:
    return build.stats_row(
        level=stats.level,
        winnable=stats.winnable,
        wins=stats.wins,
        losses=stats.losses,
        current_streak=stats.current_streak,
        best_streak=stats.best_streak,
        best_score=stats.best_score,
        fastest_win_ms=stats.fastest_win_ms,
        fewest_moves=stats.fewest_moves,
    )


PAUSED: Final = "The game is paused; resume it first."

CLOCK_BANK_S: Final = 5.0
"""How often a node banks the play time of the games whose clocks run on it
(``_bank_clocks``): a crash loses no more of it, and on a shared store another node takes
the time up from the store, late by this much at most."""
CLOCK_SKEW_MS: Final = 250
"""How far a node's clock may run ahead of what the store's row allows before it is set
back (``_cap_clock``): the nodes' wall clocks, and a commit's lag behind its action."""


def _fail(code: str, message: str, **extra: Any) -> ProtocolError:
    return ProtocolError(code, message, **extra)


def _no_stats(player_id: int, level: str) -> LevelStats:
    return LevelStats(player_id, level, 0, 0, 0, 0, 0, None, None, None)


def _already_signed_in() -> ProtocolError:
    return _fail(
        "already_signed_in",
        "This connection already acts as a player; open a new connection for another.",
    )


def _unauthenticated() -> ProtocolError:
    return _fail("unauthenticated", "Register, or say hello with your token, first.")


def _player(session: Session) -> Player:
    """The player ``session`` acts as; ``unauthenticated`` when it acts as none."""
    if session.player is None:
        raise _unauthenticated()
    return session.player


def _acts_as(session: Session, player: Player) -> bool:
    """Whether ``session`` still acts as ``player`` (``_still``)."""
    return session.player is not None and session.player.id == player.id


def _snapshot_due(live: LiveGame) -> bool:
    """Whether ``live`` is unfinished, sound, and far enough ahead of the store's snapshot
    to be worth a new one (a short log replays about as fast as a snapshot restores)."""
    return (
        not live.finished
        and not live.broken
        and live.log_version - live.snapshot_v >= SNAPSHOT_MIN_ACTIONS
    )


def _still(session: Session, player: Player) -> None:
    """Call after an ``await``, before the reply or what the connection watches depends
    on it: ``unauthenticated`` when ``session`` no longer acts as ``player``.

    A request waits on the store, the solver or a game's lock with no lock on its
    connection's player: meanwhile a ``sign_out`` with ``everywhere`` on another
    connection signs this one out, and a connection signed out watches no game
    (PROTOCOL.md section 3).
    """
    if not _acts_as(session, player):
        raise _unauthenticated()


def _same_request(first: ActionRecord, request: Request) -> bool:
    """Whether ``request`` asks for the action ``first`` recorded (a true retry)."""
    if first.type != request.type:
        return False
    if request.type != "move":
        return True
    try:
        card = card_str(parse_card(request.get_str("card")))
    except CardParseError:
        return False
    return first.card == card and first.to == request.opt_int("to")


class GameService:
    """The authority: checks, applies, stores and announces every action."""

    def __init__(
        self,
        store: Store,
        hub: Hub,
        solver: SolverPool,
        *,
        pools: WinnablePools | None = None,
        cache_size: int = 10_000,
        rng: random.Random | None = None,
        token_max_age: timedelta | None = None,
        max_versions: int = 10_000,
        history_keep: int = HISTORY_KEEP,
        max_game_watchers: int = 32,
        limits: Mapping[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.token_max_age = token_max_age  # None: tokens never expire
        self.signed_in: SignedIn[Session] = SignedIn()
        self.hub = hub
        self.solver = solver
        self.advisor = HintAdvisor(solver)
        self.lost_checks = LostChecks(store, solver)
        self.pools = pools if pools is not None else WinnablePools()
        self.easy_deals = self.pools.easy
        self.cache_size = cache_size
        self.max_versions = max_versions
        self.history_keep = history_keep
        self.max_game_watchers = max_game_watchers
        self.limits = limits  # what a welcome tells (``server.config.published_limits``)
        self.rng = rng if rng is not None else random.SystemRandom()
        self._games: OrderedDict[int, LiveGame] = OrderedDict()
        self._loading: dict[int, asyncio.Lock] = {}
        self._load_slots = asyncio.Semaphore(LOADS_AT_ONCE)
        self._changed_while_loading: set[int] = set()
        self._unreplayable: set[int] = set()  # games whose bad log was logged already
        self._player_locks: dict[int, asyncio.Lock] = {}
        # Revocations while some hello reads its token (``_read_token``): the count, and
        # the last of each player signed out everywhere (by id) and of each token revoked
        # (by its hash), kept only while a hello is in flight.
        self._sign_outs = 0
        self._signed_out_at: dict[int | str, int] = {}
        self._hellos_reading = 0
        self._rotating: set[Session] = set()  # connections whose rotate_token is in flight
        self._token_check: asyncio.Task[None] | None = None  # _check_tokens, while it runs
        self._token_check_again = False
        self._tasks: set[asyncio.Task[None]] = set()  # cancelled at close
        self._saves: set[asyncio.Task[None]] = set()  # awaited at close
        self._clocks_stopped = False  # shutting down: no clock runs again (``stop_clocks``)
        self._snapshots_due: dict[int, LiveGame] = {}  # snapshots to be written, by game id
        self._snapshot_writer: asyncio.Task[None] | None = None  # writing them, while any
        self._banker: asyncio.Task[None] | None = None  # _bank_clocks, while a clock runs
        self._handlers: dict[str, Callable[[Session, Request], Awaitable[Reply | None]]] = {
            "hello": self._hello,
            "register": self._register,
            "ping": self._ping,
            "new_game": self._new_game,
            "open_game": self._open_game,
            "close_game": self._close_game,
            "move": self._act,
            "deal": self._act,
            "undo": self._act,
            "restart": self._act,
            "hint": self._hint,
            "pause": self._pause,
            "resume": self._pause,
            "resign": self._resign,
            "games": self._games_list,
            "stats": self._stats,
            "replay": self._replay,
            "rotate_token": self._rotate_token,
            "sign_out": self._sign_out,
        }

    # -- entry points -----------------------------------------------------------

    async def handle(self, session: Session, request: Request) -> Reply | None:
        """The reply to ``request`` (None: already queued on the session's outbox)."""
        try:
            self._check_session(session, request)
            if request.type == "move":  # a spelling that names no card is bad_request first,
                parse_card(request.get_str("card"))  # whatever the game's state (a strike)
            return await self._handlers[request.type](session, request)
        except ProtocolError as exc:
            exc.re = request.id
            return exc.to_message()
        except RuleViolation as exc:
            return build.error(exc.code, exc.message(session.locale), request.id)
        except CardParseError as exc:
            return build.error("bad_request", f"card: {exc}", request.id)
        except VersionConflict as exc:
            current = (exc.current or 0) + (exc.status == GameStatus.LOST.value)
            return build.error("stale", f"The game is at version {current}.", request.id, v=current)
        except GamePaused:  # paused on another node that had not told this one yet
            return build.error("paused", PAUSED, request.id)  # caught up meanwhile (_commit)
        except NotFound:
            return build.error("not_found", "No such game.", request.id)
        except Unreplayable as exc:
            message = (
                f"Game {exc.game_id} cannot be restored from its stored actions;"
                " a new game can be started."
            )
            return build.error("internal", message, request.id)
        except KeepsChanging:
            log.info(
                "%s lost %d races in a row to the game's other writes",
                request.type,
                CONFLICT_ATTEMPTS,
            )
            return build.error("unavailable", KEEPS_CHANGING, request.id)
        except StoreUnavailable:
            log.warning("store unavailable for %s", request.type, exc_info=True)
            return build.error("unavailable", "Storage is unavailable; retry later.", request.id)
        except SchemaOutdated as exc:  # taken back under the server (a downgrade): the host's
            log.error("cannot serve %s: %s", request.type, exc)
            return build.error("unavailable", "Storage is unavailable; retry later.", request.id)
        except Exception:
            log.exception("internal error on %s from %s", request.type, session.peer)
            return build.error("internal", "An unexpected server error.", request.id)

    async def disconnect(self, session: Session) -> None:
        """The connection is gone: close its games (their clocks may stop)."""
        self.signed_in.leave(session, None if session.player is None else session.player.id)
        self._expire_at(session, None)
        for game_id in self.hub.games_of(session.outbox):
            self.hub.unwatch(game_id, session.outbox)
            live = self._games.get(game_id)
            if live is not None:
                async with live.lock:
                    self._sync_clock(live)

    def stop_clocks(self) -> None:
        """Stop every game's clock, banking its time, for good: at shutdown, before the
        connections close (a device that never answers the close would otherwise be
        playing until it is cut off, and a request still arriving would start one)."""
        self._clocks_stopped = True
        for live in list(self._games.values()):
            if live.clock.running:
                live.clock.stop()
                self._save_time(live)

    async def close(self, deadline: float | None = None) -> None:
        """Stop every clock (banking its time), finish saves, cancel background checks,
        and write the snapshots due of the unfinished games held, with those queued, by
        ``deadline`` (the loop's time; ``shutdown_deadline()`` if None). Past it, what is
        left is given up: a snapshot is rebuilt from its game's log when next loaded, and
        play time since the game's last action is lost."""
        if deadline is None:
            deadline = shutdown_deadline()
        loop = asyncio.get_running_loop()
        self.stop_clocks()
        for task in list(self._tasks):
            task.cancel()
        for live in self._games.values():
            if _snapshot_due(live):
                self._queue_snapshot(live)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        writer = self._snapshot_writer
        left = {*self._saves} | ({writer} if writer is not None else set())
        if not left:
            return
        if not await finish_within(left, max(0.0, deadline - loop.time())):
            log.warning("shutdown: not every game's snapshot and play time was written in time")

    # -- other nodes ----------------------------------------------------------------

    def remote_changed(self, game_ids: list[int]) -> None:
        """The store may hold newer versions of ``game_ids``: catch up where it matters here.

        A game held in memory catches up from the log; one being loaded right now is
        caught up once loaded (its load may have read the store before the change); one
        not held but watched here (dropped after a failed catch-up) is loaded again.
        """
        for game_id in game_ids:
            if game_id in self._loading:
                self._changed_while_loading.add(game_id)
            live = self._games.get(game_id)
            if live is None:
                if self.hub.count(game_id) and game_id not in self._loading:
                    self._spawn(self._rejoin(game_id))
                continue
            if live.retry_at is not None and time.monotonic() < live.failed_at + CATCH_UP_WAIT_S:
                # A read just failed: the retry reads this too, a second after that failure
                # at the latest (the backoff's may be due far later).
                self._retry_catch_up(live, live.failed_at + CATCH_UP_WAIT_S)
                continue
            if live.syncing:
                live.resync = True
                continue
            live.syncing = True
            self._spawn(self._remote_loop(live))

    def remote_reset(self) -> None:
        """Notifications may have been missed: recheck the unfinished games open here,
        and the tokens of the connections signed in here (``_check_tokens``).

        A finished game moves no more, and one that no connection here has open is
        checked against the log when one opens it (``_open_game``): reading every game
        held (the cache holds thousands) would load a database that has just come
        back, or, while it is still down, retry a read for each of them.
        """
        watched = self.hub.watched()
        self.remote_changed(
            [g for g in watched if (live := self._games.get(g)) is None or not live.finished]
        )
        self._check_tokens()

    def remote_revoked(self, player_id: int, token_hash: str | None) -> None:
        """Another node revoked tokens of ``player_id``: every one (``token_hash`` None)
        or the one of that hash. Its connections on them are signed out here as that
        node signed out its own (``_revoked``)."""
        self._revoked(player_id, token_hash)

    def _check_tokens(self) -> None:
        """Check the tokens of every connection signed in here against the store, in the
        background, and sign out those revoked: a revocation's notification may have been
        missed. One check at a time: one asked for meanwhile runs again once it ends."""
        if self._token_check is not None:
            self._token_check_again = True
            return
        self._token_check = self._spawn(self._check_tokens_loop(), shared=True)

    async def _check_tokens_loop(self) -> None:
        wait = CATCH_UP_WAIT_S
        try:
            while True:
                self._token_check_again = False
                try:
                    await self._sign_out_revoked()
                except StoreError:  # tried again later, each wait twice the last (bounded)
                    log.warning("the tokens signed in here cannot be checked; retrying")
                    await asyncio.sleep(wait * random.uniform(0.5, 1.0))
                    wait = min(2 * wait, CATCH_UP_WAIT_MAX_S)
                    continue
                if not self._token_check_again:
                    return
        finally:
            self._token_check = None

    async def _sign_out_revoked(self) -> None:
        """Sign out the connections here whose token the store no longer has: one read
        of every token signed in here (``Store.known_tokens``; a few for many)."""
        signed_in = self.signed_in.sessions()
        if not signed_in:
            return
        hashes = {token: hash_token(token) for _session, _player_id, token in signed_in}
        known = await self.store.known_tokens(hashes.values())
        for session, player_id, token in signed_in:
            # One that signed out, or rotated, meanwhile was not read for what it has now.
            if hashes[token] not in known and self.signed_in.token(session) == token:
                self._revoked(player_id, hashes[token])

    async def _remote_loop(self, live: LiveGame) -> None:
        try:
            while True:
                live.resync = False
                await self._catch_up(live)
                if not live.resync:
                    return
        finally:
            live.syncing = False

    async def _catch_up(self, live: LiveGame) -> bool:
        """Apply what the store holds beyond our version, pushing it to our watchers.
        False when the store could not be read (a retry is then on its way)."""
        async with live.lock:
            if self._games.get(live.id) is not live:
                return True
            try:
                record, actions = await self.store.load_game(live.id, live.log_version)
                await self._replay_stored(live, record, actions)
                live.catch_up_wait = CATCH_UP_WAIT_S
                return True
            except StoreError:
                # Tried again later, each wait twice the last (up to a bound), spread out
                # so that the games of a node do not all ask in the same instant; one
                # retry a game at a time, however many notifications come meanwhile.
                log.warning(
                    "game %d: the store cannot be read to catch up; retrying",
                    live.id,
                    exc_info=True,
                )
                live.failed_at = time.monotonic()
                if live.retry_at is None:
                    delay = live.catch_up_wait * random.uniform(0.5, 1.0)
                    live.catch_up_wait = min(2 * live.catch_up_wait, CATCH_UP_WAIT_MAX_S)
                    self._retry_catch_up(live, live.failed_at + delay)
                return False
            except (LookupError, RuleViolation):
                log.warning("game %d: cannot catch up with the store; reloading", live.id)
                self._forget(live)
        if self.hub.count(live.id):
            await self._rejoin(live.id)
        return True

    def _retry_catch_up(self, live: LiveGame, at: float) -> None:
        """Have the game's one retry of a failed catch-up run at ``at`` (monotonic time),
        unless it is due sooner already."""
        if live.retry_at is not None and live.retry_at <= at:
            return
        if live.retry_task is not None:
            live.retry_task.cancel()
        live.retry_at = at
        live.retry_task = self._spawn(self._catch_up_later(live, at - time.monotonic()))

    async def _catch_up_later(self, live: LiveGame, delay: float) -> None:
        await asyncio.sleep(delay)
        live.retry_at = live.retry_task = None
        self.remote_changed([live.id])

    async def _replay_stored(
        self, live: LiveGame, record: GameRecord | None, actions: list[LoggedAction]
    ) -> None:
        """Call holding the lock: play the stored ``actions`` after ours, then announce them."""
        if record is None or record.version < live.log_version:
            raise LookupError("the stored game is behind the cached one")
        missing = record.version - live.log_version
        if len(actions) < missing:
            raise LookupError("the action log is behind the game row")
        told, known = live.version, live.record.updated_at
        trial = live.game.fork()
        batches = [event_dicts(trial.play(to_action(action))) for action in actions[:missing]]
        if record.status is GameStatus.WON and not trial.won:
            raise LookupError("the store says won, the replayed game does not")
        if trial.won and batches:
            batches[-1] = await self._add_stats(live, batches[-1])
        # Adopt and announce with no await in between: the push describes committed state.
        live.game, live.record = trial, record
        if trial.won:
            live.status = GameStatus.WON
        live.add(batches)
        self._announce_since(live, told, record.time_ms if record.paused else None)
        if record.status is GameStatus.LOST and live.status is GameStatus.ACTIVE:
            self._end_lost(live, record, record.lost_reason or "resigned")
        live.clock.advance_to(record.time_ms)
        if record.paused and not live.finished:
            self._hold_paused(live, record.time_ms)
        elif live.clock.running and not missing and record.updated_at > known:
            self._cap_clock(live, record)  # changed by no action: a pause and a resume
        elif live.clock.paused and not live.finished:
            # Resumed on a node this one did not hear: the game has run there since its
            # time was stored (the resume, an action after it, or a bank of the clock
            # since), not stood at the pause.
            since = datetime.now(UTC) - record.clock_since
            live.clock.advance_to(record.time_ms + max(0, int(since.total_seconds() * 1000)))
        live.clock.paused = record.paused
        self._sync_clock(live)
        if missing and not live.finished:
            self._check_lost(live)

    def _hold_paused(self, live: LiveGame, time_ms: int) -> None:
        """Call holding the lock: the game is paused in the store; its play time is the
        one stored with the pause (``time_ms``), whatever this node's clock ran on to
        before it heard. The watchers are told if that is not what they were told."""
        if live.clock.paused and live.clock.now_ms() == time_ms:
            return
        live.clock.hold(time_ms)
        live.clock.paused = True
        event = build.clock(running=False, time_ms=time_ms, paused=True)
        self.hub.push(live.id, build.events(game=live.id, v=live.version, events=[event]))

    def _cap_clock(self, live: LiveGame, record: GameRecord) -> None:
        """Call holding the lock, for a row changed by no action since this node last read
        it (a pause and a resume): a running clock counts no more than the stored play
        time and the time since it was stored. One that did (this node missed both, and ran
        through the pause) goes back to that, and the watchers are told.
        ``CLOCK_SKEW_MS`` allows for nodes' clocks. Not after an action: another node's
        clock may run behind this one's (its device opened the game later), and time
        with the game open on two nodes counts as the larger of the two clocks."""
        since = datetime.now(UTC) - record.clock_since
        most = record.time_ms + max(0, int(since.total_seconds() * 1000))
        if live.clock.now_ms() <= most + CLOCK_SKEW_MS:
            return
        live.clock.hold(most)
        live.clock.start()
        event = build.clock(running=True, time_ms=most)
        self.hub.push(live.id, build.events(game=live.id, v=live.version, events=[event]))

    def _announce_since(
        self, live: LiveGame, told: int | None, paused_at: int | None = None
    ) -> None:
        """Push to ``live``'s watchers what happened after version ``told``.

        Each version's events, in order, unless they name a card that is face down
        now: then one ``snapshot`` of the position (nothing hidden is ever sent).
        ``paused_at``: the game was paused elsewhere at that play time, and this node's
        clock is held there just after: the snapshot says so already.
        """
        if told is None or told >= live.version:
            return
        batches = live.history_since(told)
        if batches is None:
            view = live.view()
            if paused_at is not None and not live.finished:
                t = paused_at
                view.update(paused=True, running=False, time_ms=t, score=live.game.score(t))
            event = build.snapshot(view)
            self.hub.push(live.id, build.events(game=live.id, v=live.version, events=[event]))
            return
        for v, events in enumerate(batches, told + 1):
            self.hub.push(live.id, build.events(game=live.id, v=v, events=events))

    async def _rejoin(self, game_id: int) -> None:
        """Load a game its watchers here still have open, and tell them what they missed."""
        try:
            live = await self._live(game_id)
        except (StoreError, ProtocolError):
            log.warning("game %d: cannot be loaded again for its watchers", game_id)
            return
        async with live.lock:
            told = self.hub.told(game_id)
            if told is not None and live.needs_log(told):
                try:
                    await self._complete_log(live)
                except (StoreError, Unreplayable):  # the watchers get a snapshot instead
                    log.warning("game %d: its log cannot be read for its watchers", game_id)
            self._announce_since(live, told)
            self._sync_clock(live)

    def cached(self, game_id: int) -> LiveGame | None:
        """The live game if it is in memory (for tests and metrics)."""
        return self._games.get(game_id)

    def games_in_memory(self) -> int:
        """How many live games the cache holds (for metrics)."""
        return len(self._games)

    def _check_session(self, session: Session, request: Request) -> None:
        if request.type == "hello":
            return
        if not session.greeted:
            raise _fail("hello_required", "The first request on a connection must be hello.")
        if session.expires is not None and self.store.now() >= session.expires:
            self._switch_player(session, None)  # its token expired (``_expire_at``)
        if session.player is None and request.type not in ("register", "ping"):
            raise _unauthenticated()

    # -- players ------------------------------------------------------------------

    async def _hello(self, session: Session, request: Request) -> Reply:
        token = request.opt_str("token")
        player = None
        records: list[GameRecord] = []
        issued = None  # when the token was issued: its expiry counts from then
        if token is not None:
            found = await self._read_token(token)
            if found is None:
                self._switch_player(session, None)  # a failed hello signs the connection out
                # ...and leaves it greeted, signed out, as a hello without a token would:
                # it may register, or say hello again, until its idle timeout.
                session.greeted = True
                session.locale = request.get_str("locale")
                raise _fail("unauthenticated", "Unknown, revoked or expired token.")
            player, records, issued = found
        signed_in = session.player
        if signed_in is not None and (player is None or player.id != signed_in.id):
            raise _already_signed_in()
        self._switch_player(session, player, token, issued)
        session.owned = frozenset(record.id for record in records)
        session.greeted = True
        session.locale = request.get_str("locale")
        games = [self._summary(record) for record in records]
        return build.welcome(
            request.id,
            server=SERVER_NAME,
            player=None if player is None else build.player(player.id, player.name),
            games=games,
            limits=self.limits,
        )

    async def _read_token(self, token: str) -> SignIn | None:
        """The token's player, games and issue time, None if it is unknown, expired or revoked,
        including by a revocation this node learnt of while it was read (``_revoked``:
        a ``sign_out``, with ``everywhere`` or not, or a ``rotate_token``, here or on
        another node): that revocation signed out the connections it found, which did not
        include this one yet."""
        self._hellos_reading += 1
        before = self._sign_outs
        try:
            found = await self.store.sign_in(token, self.token_max_age)
            if found is not None and self._signed_out_at:
                keys = (found[0].id, hash_token(token))  # everywhere, or this token
                if any(self._signed_out_at.get(key, before) > before for key in keys):
                    return None
            return found
        finally:
            self._hellos_reading -= 1
            if not self._hellos_reading:
                self._signed_out_at.clear()

    async def _register(self, session: Session, request: Request) -> Reply:
        if session.player is not None:
            raise _already_signed_in()
        try:
            player, token = await self.store.create_player(request.get_str("name"))
        except NameTaken:
            raise _fail("duplicate_name", "Another player already has that name.") from None
        except InvalidName as exc:
            raise _fail("bad_request", f"name: {exc}") from None
        self._switch_player(session, player, token, player.created_at)  # its token's too
        return build.registered(
            request.id, player=build.player(player.id, player.name), token=token
        )

    def _switch_player(
        self,
        session: Session,
        player: Player | None,
        token: str | None = None,
        issued: datetime | None = None,
    ) -> None:
        """Make ``session`` act as ``player`` (None: signed out), signed in with ``token``
        issued at ``issued`` (it is signed out when that expires: ``_expire_at``)."""
        same = (session.player and session.player.id) == (player and player.id)
        if not same:
            for game_id in self.hub.games_of(session.outbox):
                self.hub.unwatch(game_id, session.outbox)
                live = self._games.get(game_id)
                if live is not None:
                    self._sync_clock(live)
        self.signed_in.leave(session, None if session.player is None else session.player.id)
        if player is not None:
            self.signed_in.enter(session, player.id, token)
        if not same:
            session.owned = frozenset()
        session.player = player
        self._expire_at(session, None if player is None else issued)

    def _expire_at(self, session: Session, issued: datetime | None) -> None:
        """Sign ``session`` out once its token, issued at ``issued``, has expired
        (``token_max_age``), as a revocation does (``_revoked``): its games close then, and
        its next request that needs a player is ``unauthenticated`` (the expiry is checked
        again at each request, ``_check_session``, in case the wall clock moved). None: no
        expiry (signed out, or no token), and the timer set before is cancelled."""
        if session.expiry is not None:
            session.expiry.cancel()
        session.expiry = session.expires = None
        if issued is None or self.token_max_age is None:
            return
        session.expires = issued + self.token_max_age
        left = (session.expires - self.store.now()).total_seconds()
        loop = asyncio.get_running_loop()
        session.expiry = loop.call_later(max(left, 0.0), self._expired, session)

    def _expired(self, session: Session) -> None:
        """The timer of ``_expire_at``: sign ``session`` out, unless its ``rotate_token``
        is in flight: the store refuses an expired token, and a rotation it accepted keeps
        the session, on the new token (the rotation sets the expiry again, or signs the
        session out)."""
        if session not in self._rotating:
            self._switch_player(session, None)

    async def _rotate_token(self, session: Session, request: Request) -> Reply:
        player = _player(session)
        old = self.signed_in.token(session)
        given = request.opt_str("token")  # the client's own, kept before it asked
        if given is not None and given == old:  # asked again, signed in with it: done already
            return build.token(request.id, token=given)
        self._rotating.add(session)
        issued = self.store.now()  # before the store issues it: the session ends no later
        new = None
        try:
            max_age = self.token_max_age  # an expired token is not made a fresh one
            new = None if old is None else await self.store.rotate_token(old, given, max_age)
        except TokenTaken:
            raise _fail(
                "bad_request", "token: that token is or was in use; make another."
            ) from None
        except BaseException:
            self._check_tokens()  # a failure that may have committed: was the token revoked?
            raise
        finally:
            self._rotating.discard(session)
            expires = session.expires  # its timer fired meanwhile (``_expired``)
            if new is None and expires is not None and self.store.now() >= expires:
                self._switch_player(session, None)
        if new is None:  # rotated on another device, revoked or expired: gone for this one too
            if old is not None:  # and for every connection on it
                self._revoked(player.id, hash_token(old))
            self._switch_player(session, None)  # signed out, as a refused hello leaves it
            raise _fail(
                "unauthenticated",
                "This connection's token no longer works (expired, or rotated or revoked"
                " elsewhere); the connection is signed out.",
            )
        _still(session, player)  # signed out everywhere meanwhile: the new token is revoked
        self.signed_in.replace_token(session, new)
        self._expire_at(session, issued)
        assert old is not None
        self._revoked(player.id, hash_token(old))  # the old token's other connections
        return build.token(request.id, token=new)

    async def _sign_out(self, session: Session, request: Request) -> Reply:
        player_id = _player(session).id
        if request.opt_bool("everywhere"):
            try:
                revoked = await self.store.revoke_tokens(player_id)
            except BaseException:
                self._check_tokens()  # a failure that may have committed: were they revoked?
                raise
            self._revoked(player_id)
        else:  # the token stays: the player's other devices may sign in with the same one
            revoked = 0
        self._switch_player(session, None)
        return build.signed_out(request.id, revoked=revoked)

    def _revoked(self, player_id: int, token_hash: str | None = None) -> None:
        """Tokens of ``player_id`` were revoked, by this node or another: every one of
        them (``token_hash`` None: ``sign_out`` with ``everywhere``), or the one of hash
        ``token_hash`` (``rotate_token``). Sign out this node's connections
        that act on them (their games close; their later requests are
        ``unauthenticated``), and refuse a hello that read one of them before
        (``_read_token``).

        A connection whose own ``rotate_token`` of that token is in flight is left to
        its rotation: that rotation made the revocation (and the connection holds the new
        token once answered), or it finds the token gone and signs the connection out.
        """
        if self._hellos_reading:  # a hello that read a token before it was revoked
            self._sign_outs += 1
            key = player_id if token_hash is None else token_hash
            self._signed_out_at[key] = self._sign_outs
        if token_hash is None:
            sessions = list(self.signed_in.of_player(player_id))
        else:
            sessions = [
                other
                for other in self.signed_in.of_token(player_id, token_hash)
                if other not in self._rotating
            ]
        for other in sessions:
            self._switch_player(other, None)

    def _summary(self, record: GameRecord) -> dict[str, Any]:
        """The game as listed: the copy held here (its clock runs) unless the row just
        read is newer (another node's commit, pause or resume this node did not hear
        of), paused where the copy is not, or holds more play time than the copy's clock
        (another node's device kept the game open and banked its time, which moves no
        ``updated_at``); the copy is then caught up, as ``open_game`` would read it."""
        live = self._games.get(record.id)
        if live is None:
            return record_summary(record)
        newer = live.version < record_version(record) or record.updated_at > live.record.updated_at
        ran_longer = not live.finished and record.time_ms > live.clock.now_ms()
        if newer or ran_longer or (record.paused and not live.clock.paused):
            self.remote_changed([record.id])
            return record_summary(record)
        return live.summary()

    async def _ping(self, session: Session, request: Request) -> Reply:
        return build.pong(request.id)

    # -- the cache --------------------------------------------------------------------

    async def _live(self, game_id: int) -> LiveGame:
        live = self._games.get(game_id)
        if live is not None:
            self._games.move_to_end(game_id)
            return live
        lock = self._loading.setdefault(game_id, asyncio.Lock())
        try:
            async with lock:
                live = self._games.get(game_id)
                if live is None:
                    self._changed_while_loading.discard(game_id)
                    live = await self._load(game_id)
                    self._remember(live)
                    if game_id in self._changed_while_loading:
                        self._changed_while_loading.discard(game_id)
                        self.remote_changed([game_id])  # the load may predate that change
                return live
        finally:
            if not lock.locked():
                self._loading.pop(game_id, None)

    async def _load(self, game_id: int) -> LiveGame:
        """The game as stored: its row, its snapshot if any, and the actions logged
        after that up to the row's version (``server.live``, "Snapshots").

        ``LOADS_AT_ONCE`` at most: each holds its slot over one turn of the loop
        (rebuilding a game from its log takes milliseconds, and after a restart
        thousands of loads arrive at once; in between, the loop reads its sockets,
        keepalive pings too). A read on SQLite runs on this thread too, so it takes
        its slot first; PostgreSQL's waits on the network, sent with the others
        waiting (``Store.reads_batched``), and takes one only once it is back."""
        stored = await self.store.restore_game(game_id) if self.store.reads_batched else None
        async with self._load_slots:
            if stored is None:
                stored = await self.store.restore_game(game_id)
            live = await self._rebuilt(game_id, stored)
            await asyncio.sleep(0)
        return live

    async def _rebuilt(
        self,
        game_id: int,
        stored: tuple[GameRecord | None, StoredSnapshot | None, list[LoggedAction]],
    ) -> LiveGame:
        """``_load``'s game from what ``Store.restore_game`` read."""
        record, snapshot, actions = stored
        if record is None:
            raise _fail("not_found", f"There is no game {game_id}.")
        live = None
        try:
            if snapshot is not None:
                tail = actions[: record.version - snapshot.v]
                try:
                    live = LiveGame.rebuild(record, tail, self.history_keep, snapshot)
                except BadSnapshot as exc:
                    log.warning("%s; rebuilding it from its log", exc)
                    record, actions = await self.store.load_game(game_id)
                    if record is None:
                        raise _fail("not_found", f"There is no game {game_id}.") from None
            if live is None:
                live = LiveGame.rebuild(record, actions[: record.version], self.history_keep)
        except Unreplayable as exc:
            if game_id not in self._unreplayable:  # once: each request would say it again
                self._unreplayable.add(game_id)
                log.error("%s; it cannot be opened, only abandoned", exc)
            raise
        if live.game.won and live.batches:
            live.batches[-1] = await self._add_stats(live, live.batches[-1])
        return live

    async def _complete_log(self, live: LiveGame) -> None:
        """Call holding the lock: read the log's first actions a restored game lacks."""
        if not live.log_missing:
            return
        record, actions = await self.store.load_game(live.id)
        try:
            if record is None or len(actions) < live.log_missing:
                raise ValueError(f"{len(actions)} actions logged, snapshot of {live.log_missing}")
            live.complete_log(actions)
        except ValueError as exc:
            raise Unreplayable(live.id, exc) from exc
        except Unreplayable as exc:
            if live.id not in self._unreplayable:  # once, as for a load
                self._unreplayable.add(live.id)
                # A mismatch's own message says what is wrong, and names no card.
                reason = exc.reason if isinstance(exc.reason, SnapshotMismatch) else exc
                log.error("%s; it plays on from its snapshot", reason)
            raise

    def _remember(self, live: LiveGame) -> None:
        self._games[live.id] = live
        excess = len(self._games) - self.cache_size
        if excess <= 0:
            return
        for game_id in list(self._games):
            if excess <= 0:
                break
            other = self._games[game_id]
            if other is not live and not other.lock.locked() and not self.hub.count(game_id):
                del self._games[game_id]
                excess -= 1
                if _snapshot_due(other):
                    self._queue_snapshot(other)

    def _queue_snapshot(self, live: LiveGame) -> None:
        """Have ``live``'s snapshot written soon, in the background, with others due."""
        self._snapshots_due[live.id] = live
        if self._snapshot_writer is None:
            self._snapshot_writer = detached(self._write_queued())

    async def _write_queued(self) -> None:
        """Write the snapshots queued meanwhile, until none are left."""
        try:
            while self._snapshots_due:
                due = list(self._snapshots_due.values())
                self._snapshots_due.clear()
                await self._write_snapshots(due)
        finally:
            self._snapshot_writer = None

    async def _write_snapshots(self, games: list[LiveGame]) -> None:
        """Store the snapshots of ``games`` still due (best effort: a failure is logged).

        Each is packed here, with no await before the write is queued: of the committed
        game as it is now, which is true of its version whatever happens next."""
        games = [live for live in games if _snapshot_due(live)]
        for first in range(0, len(games), SNAPSHOTS_AT_ONCE):
            chunk = games[first : first + SNAPSHOTS_AT_ONCE]
            items = [(live.id, live.log_version, live.snapshot()) for live in chunk]
            try:
                await self.store.save_snapshots(items)
            except StoreError:
                log.warning("%d games' snapshots not written", len(items), exc_info=True)
                return
            for live, (_id, v, _data) in zip(chunk, items, strict=True):
                live.snapshot_v = max(live.snapshot_v, v)

    def _forget(self, live: LiveGame) -> None:
        """Drop a game whose memory cannot be brought in line with the store.

        Requests already waiting for its lock find it ``broken`` and answer
        ``unavailable``; the next request rebuilds the game from the store, and
        ``_rejoin`` does so at once for the connections that have it open.
        """
        live.broken = True
        if self._games.get(live.id) is live:
            del self._games[live.id]

    @staticmethod
    def _check_fresh(live: LiveGame) -> None:
        """Call holding the lock, before changing the game."""
        if live.broken:
            raise _fail("unavailable", "The game is being reloaded; retry.")

    async def _owned(self, session: Session, request: Request) -> LiveGame:
        """The player's game. Another player's game is answered exactly like a missing one.

        Unless the game is in memory and the player's, or was listed as the player's
        at sign-in (``Session.owned``), one indexed read of its owner decides, the
        same read whether it exists or not: no foreign game is loaded, and the answer
        takes the same time either way.
        """
        game_id = request.get_int("game")
        player = _player(session)
        live = self._games.get(game_id)
        mine = game_id in session.owned or (live is not None and live.player_id == player.id)
        if not mine and await self.store.game_owner(game_id) != player.id:
            raise _fail("not_found", f"There is no game {game_id}.")
        live = await self._live(game_id)
        _still(session, player)
        return live

    async def _opened(self, session: Session, request: Request) -> LiveGame:
        """The player's game, which this connection must have open to act on it."""
        live = await self._owned(session, request)
        self._check_open(session, live)
        return live

    def _check_open(self, session: Session, live: LiveGame) -> None:
        """``_opened``'s checks, again once the game's lock is held: while a request
        waited for it, a ``sign_out`` with ``everywhere`` on another connection may have
        signed this one out and closed its games, and a connection never changes a game
        whose events it would not receive (PROTOCOL.md section 4)."""
        _player(session)
        if not self.hub.watching(live.id, session.outbox):
            raise _fail("not_open", f"Open game {live.id} on this connection first.")

    # -- starting and watching ----------------------------------------------------------

    async def _new_game(self, session: Session, request: Request) -> Reply | None:
        player = _player(session)
        level = request.get_str("level")
        rules = get_level(level)
        deal = request.opt_int("deal")
        # Easy deals only winnable deals: its games are its only kind (no winnable row).
        winnable = bool(request.opt_bool("winnable")) and not rules.solver_deals
        if deal is not None and rules.solver_deals:
            raise _fail("forbidden", "Deal numbers cannot be chosen on the easy level.")
        if deal is not None and winnable:
            raise _fail("forbidden", "A winnable game's deal is the server's to choose.")
        chosen = deal is not None
        if deal is None:
            deal = await self._draw_deal(player, rules, winnable)
        new = NewGame(level, deal, winnable, chosen)
        lock = self._player_locks.setdefault(player.id, asyncio.Lock())
        async with lock:
            _still(session, player)  # signed out meanwhile: nothing is started
            record, lost = await self._start(player, new)
        live = LiveGame(record, Game(rules, deal), [], self.history_keep)
        self._remember(live)
        async with live.lock:
            reply = build.game(
                request.id, game=live.id, v=live.version, view=live.view(), lost=lost
            )
            self.hub.send(session.outbox, reply)
            # Started, so answered; but a connection signed out meanwhile watches nothing.
            if _acts_as(session, player):
                self._watch(session, live)
            self._sync_clock(live)
            self._check_lost(live)  # say it at the deal when the deal cannot be won
        return None

    async def _draw_deal(self, player: Player, rules: Rules, winnable: bool) -> int:
        """A random deal; on easy or asked ``winnable``, a solver-won one, dealt to this
        game alone: it leaves the pool, on every node (PROTOCOL.md section 7: once a game
        ends its number is shown, and a deal shown must never be another game's).

        The player is not dealt one of their own past deals while the pool has others.
        A level whose pool holds none (a fresh database: pools start empty and grow in
        the background) searches for a deal now, for at most ``FIND_NOW_S``, and
        answers ``unavailable`` if none was won by then.
        """
        if not (rules.solver_deals or winnable):
            return self.rng.randrange(1, DRAW_LIMIT)
        played = await self.store.played_deals(player.id, rules.name)
        for _attempt in range(CLAIM_ATTEMPTS):
            deal = self.pools.draw(rules.name, self.rng, avoid=played)
            if deal is None or deal in played:  # none left that this player has not had
                break
            stored = self.pools.take(rules.name, deal)
            if not stored or await self.store.claim_easy_deal(pool_name(rules.name), deal):
                return deal
            # Another node dealt it first; this node's copy of the pool was behind.
        return await self._find_winnable_now(rules)

    async def _find_winnable_now(self, rules: Rules) -> int:
        """A deal won under ``rules`` found now, for one game, or ``unavailable``."""
        deadline = asyncio.get_running_loop().time() + FIND_NOW_S
        while asyncio.get_running_loop().time() < deadline:
            seed = self.rng.getrandbits(64)
            deal = await self.solver.find_winnable(rules, seed, FIND_BUDGET_MS)
            if deal is not None:
                return deal  # this game's alone: never pooled, never dealt again
        raise _fail("unavailable", "No winnable deal of this level is ready yet; retry.")

    async def _start(self, player: Player, new: NewGame) -> tuple[GameRecord, int | None]:
        """Create the game, abandoning the player's unfinished one first (R17).

        Abandoning writes at the old game's stored version; when another device changed
        it meanwhile (on another node) the write is refused, the old game catches up
        from the log and the abandonment is tried again: ``new_game`` never answers
        ``stale``, and only ``CONFLICT_ATTEMPTS`` refusals in a row (a device acting
        faster than a database round trip) give ``unavailable``.
        """
        for _attempt in range(CONFLICT_ATTEMPTS):
            unfinished = await self.store.unfinished_games(player.id)
            if not unfinished:
                try:
                    created = await self.store.create_game(
                        player.id, new.level, new.deal, winnable=new.winnable, chosen=new.chosen
                    )
                    return created, None
                except GameInProgress:
                    continue
            try:
                old = await self._live(unfinished[0].id)
            except Unreplayable:
                try:
                    return await self._abandon_stored(unfinished[0], new), unfinished[0].id
                except VersionConflict:
                    continue
            try:
                started = await self._abandon(old, new)
            except VersionConflict:
                await self._catch_up(old)
                continue
            if started is not None:
                return started, old.id
        raise KeepsChanging()

    async def _abandon(self, old: LiveGame, new_game: NewGame) -> GameRecord | None:
        async with old.lock:
            self._check_fresh(old)
            if old.finished:
                return None
            t = old.clock.now_ms()
            write = GameWrite(
                old.id,
                old.log_version,
                old.progress(t),
                ending=Ending.ABANDONED,
                then_start=new_game,
            )
            committed = await self._commit(old, write)
            self._end_lost(old, committed.game, "abandoned")
            return committed.started

    async def _abandon_stored(self, old: GameRecord, new_game: NewGame) -> GameRecord:
        """Abandon a game that cannot be rebuilt (``Unreplayable``) at its stored
        version and counters, and start ``new_game``: the player is not held by it."""
        progress = Progress(
            old.moves, old.score, old.time_ms, old.hints, old.undos, old.suits_removed
        )
        write = GameWrite(
            old.id, old.version, progress, ending=Ending.ABANDONED, then_start=new_game
        )
        committed = await self.store.commit(write)
        assert committed.started is not None
        log.warning("game %d abandoned at its stored version %d", old.id, old.version)
        return committed.started

    def _end_lost(self, live: LiveGame, record: GameRecord, reason: str) -> None:
        live.record = record
        live.status = GameStatus.LOST
        live.lost_reason = reason
        batch = [build.game_lost(reason, record.deal)]
        live.add([batch])
        self.hub.push(live.id, build.events(game=live.id, v=live.version, events=batch))
        if not live.clock.running:  # stopped here already (a pause): at the time stored
            live.clock.hold(record.time_ms)
        self._sync_clock(live)

    async def _latest(self, session: Session, request: Request) -> LiveGame:
        """The game ``request`` names, as the store has it now.

        On a shared store another node may have changed a game held here unheard (a lost
        notification): the log is asked first, and a log that cannot be read is
        ``unavailable``, never the state held. (A game loaded just now is the store's
        latest: a change heard while it loaded is applied by _live itself.)
        """
        held = request.get_int("game") in self._games
        live = await self._owned(session, request)
        if self.store.shared and held:
            if not await self._catch_up(live):
                raise StoreUnavailable("the game's log cannot be read")
            live = await self._owned(session, request)
        return live

    async def _open_game(self, session: Session, request: Request) -> Reply | None:
        player = _player(session)
        live = await self._latest(session, request)
        since = request.opt_int("since")
        async with live.lock:
            if since is not None and live.needs_log(since):
                try:
                    await self._complete_log(live)
                except (StoreError, Unreplayable):  # the reply is a snapshot, not the events
                    log.warning(
                        "game %d: its log cannot be read to catch up", live.id, exc_info=True
                    )
            _still(session, player)
            self._check_watchers(session, live)
            self.hub.send(session.outbox, self._opening(live, request.id, since))
            self._watch(session, live)
            self._sync_clock(live)
            if not live.finished and not self.lost_checks.seen(live):
                self._check_lost(live)
            elif not live.finished and live.lost_at and live.lost_at[0] == live.version:
                # Proved lost already: said again to this connection (a page reloaded).
                self.hub.send(session.outbox, self._lost_position(live))
        return None

    def _check_watchers(self, session: Session, live: LiveGame) -> None:
        """A game is open on at most ``max_game_watchers`` connections here: every change
        is pushed to each, so one player signed in on 4,000 connections, each with the
        game open, turned a pause and a resume into 8,000 frames, and everyone else's
        moves slowed from 4 to 108 ms. Opening it on one more is refused; signing in, and
        so revoking a token that leaked, never is."""
        if self.hub.watching(live.id, session.outbox):
            return
        if self.hub.count(live.id) >= self.max_game_watchers:
            raise _fail(
                "too_many_watchers",
                "The game is open on as many connections to this server as one game may be "
                f"({self.max_game_watchers}); close it on one, then open it again.",
            )

    @staticmethod
    def _lost_position(live: LiveGame) -> Reply:
        """The ``lost_position`` event of ``live``'s current version (``lost_at``)."""
        assert live.lost_at is not None
        version, from_deal = live.lost_at
        event = build.lost_position(from_deal=from_deal)
        return build.events(game=live.id, v=version, events=[event])

    def _opening(self, live: LiveGame, re: RequestId, since: int | None) -> Reply:
        """A catch_up from ``since`` when the history allows, else a snapshot.

        The history is at most ``history_keep`` versions; its size is added up one
        version at a time and a snapshot answered as soon as it would not fit in
        a frame, so no request encodes more than about one frame's worth.
        """
        history = None if since is None else live.history_since(since)
        if since is None or history is None:
            return build.game(re, game=live.id, v=live.version, view=live.view())
        batches, size = [], CATCH_UP_OVERHEAD
        for v, events in enumerate(history, since + 1):
            batch = build.batch(v, events)
            size += len(encode(batch))
            if size > MAX_SERVER_FRAME_BYTES:  # too long a history for one frame
                return build.game(re, game=live.id, v=live.version, view=live.view())
            batches.append(batch)
        return build.catch_up(
            re,
            game=live.id,
            v=live.version,
            events=batches,
            time_ms=live.play_time(),
            running=live.clock.running,
            paused=live.clock.paused and not live.finished,
        )

    def _watch(self, session: Session, live: LiveGame) -> None:
        """``session``'s connection has ``live`` open from now on, keeping at most
        ``OPEN_GAMES_LIMIT`` games open: past it, the finished games it opened first are
        closed (PROTOCOL.md section 4). The cache keeps every game some connection has
        open, so without the limit one connection could hold any number in memory."""
        outbox = session.outbox
        self.hub.watch(live.id, outbox, live.version)
        opened = self.hub.games_of(outbox)
        excess = len(opened) - OPEN_GAMES_LIMIT
        for game_id in opened:
            if excess <= 0:
                break
            other = self._games.get(game_id)
            if game_id == live.id or other is None or not other.finished:
                # The unfinished game (one at most, R17) stays open, and so does one out of
                # memory until it is loaded again (``_forget``), which may be that one.
                continue
            self.hub.unwatch(game_id, outbox)  # finished: its clock is stopped already
            excess -= 1

    async def _close_game(self, session: Session, request: Request) -> Reply:
        live = await self._owned(session, request)
        async with live.lock:
            self.hub.unwatch(live.id, session.outbox)
            self._sync_clock(live)
            return build.ack(request.id, game=live.id, v=live.version)

    async def _pause(self, session: Session, request: Request) -> Reply:
        live = await self._opened(session, request)
        async with live.lock:
            self._check_open(session, live)
            paused = request.type == "pause"
            if not live.finished and self.store.shared:
                # This node may have missed actions (a listener not hearing): caught up
                # first, the ack names the game's version, the devices here are sent what
                # they missed, and the time a pause banks is at the game's version.
                self._check_fresh(live)
                await self._caught_up_for(session, live)
            if not live.finished:
                self._check_fresh(live)
                # Stored even when this node's copy says it is so already: another node
                # may have paused or resumed since, and this node not heard of it yet.
                # A pause stores the play time reached with it: were it saved after the
                # ack, a crash in between would keep the game paused, at an older time.
                t = live.clock.now_ms()
                banked = None
                if paused and live.clock.running and not live.game.won:
                    banked = (live.log_version, t, live.game.score(t))
                try:
                    stored = await self.store.set_paused(live.id, paused, banked)
                except BaseException:
                    # It may have committed: the catch-up (or, should it land later, the
                    # store's notification) brings it here, and to the watchers, as
                    # another node's pause or resume.
                    self.remote_changed([live.id])
                    raise
                if stored is None or stored.version > live.log_version:
                    # Another node's action committed after the catch-up above, before
                    # the pause (its write found the game running): its devices are sent
                    # it first, and the ack (and the clock event) name the version after
                    # it. A game it ended is over in the store: the catch-up ends it here
                    # at its time, and the pause changed nothing.
                    await self._caught_up_for(session, live)
                if stored is None:
                    return build.ack(request.id, game=live.id, v=live.version)
                # The copy takes in the row's change, committed now: a row changed later
                # than the copy says is taken for a change made elsewhere (``_summary``
                # would list the stored time over this clock's, ``_replay_stored`` cap it).
                changed = max(live.record.updated_at, stored.updated_at)
                live.record = live.record._replace(paused=paused, updated_at=changed)
                if paused:
                    # The time stored with the pause: this node's own, or an earlier
                    # pause's, made on a node this one had not heard of yet.
                    self._hold_paused(live, stored.time_ms)
                elif stored.was_paused:
                    live.clock.hold(stored.time_ms)  # paused elsewhere: resumes from there
                live.clock.paused = paused
                self._sync_clock(live, stop_at=t if banked is not None else None)
            return build.ack(request.id, game=live.id, v=live.version)

    def _sync_clock(self, live: LiveGame, stop_at: int | None = None) -> None:
        """Run the clock iff watched, not paused and unfinished; push each change.
        ``stop_at``: a clock that stops stops at that play time (one already stored)."""
        should_run = bool(self.hub.count(live.id)) and not live.clock.paused and not live.finished
        should_run = should_run and not live.game.won and not self._clocks_stopped
        if should_run == live.clock.running:
            return
        if should_run:
            live.clock.start()
            if self._banker is None:
                self._banker = self._spawn(self._bank_clocks(), shared=True)
        else:
            # A finished game's clock stops at its recorded time, so the clock
            # event, the view, the summary and the replay give one figure.
            live.clock.stop(live.record.time_ms if live.finished else stop_at)
            if stop_at is None:
                self._save_time(live)
            if not self.hub.count(live.id) and _snapshot_due(live):
                self._queue_snapshot(live)  # its players left it: write what a crash would lose
        # A won game's play time is the win's (the view's), not when its clock stopped.
        paused = live.clock.paused and not live.finished
        event = build.clock(running=should_run, time_ms=live.play_time(), paused=paused)
        self.hub.push(live.id, build.events(game=live.id, v=live.version, events=[event]))

    async def _bank_clocks(self) -> None:
        """While any clock runs here: every ``CLOCK_BANK_S``, bank the play time of each
        game whose clock runs (a crash loses at most that much of it), and take up the
        time the store holds when another node's clock ran longer (on a shared store, its
        device kept the game open while this node's did not: time open on two nodes counts
        as the larger of the clocks, and a node that opens the game again reads it from
        the store, as of the other node's last bank: ``_take_up``)."""
        try:
            while True:
                await asyncio.sleep(CLOCK_BANK_S)
                running = [
                    live
                    for live in self._games.values()
                    if live.clock.running and not live.finished and not live.game.won
                ]
                if not running:
                    return
                saves = []
                for live in running:
                    t = live.clock.now_ms()
                    saves.append((live.id, live.log_version, t, live.game.score(t)))
                try:
                    held = await self.store.bank_play_times(saves)
                except StoreError:
                    log.warning("the play time of %d games was not banked", len(saves))
                    continue
                for live, (_, version, _, _) in zip(running, saves, strict=True):
                    stored = held.get(live.id)
                    if stored is not None and not live.lock.locked() and live.clock.running:
                        self._take_up(live, version, *stored)
        finally:
            self._banker = None

    def _take_up(self, live: LiveGame, version: int, stored: int, since: datetime) -> None:
        """``live``'s running clock counts at least ``stored``, the store's play time at
        ``version`` as of ``since``, if that is still the version held, and the time since
        then that this clock ran: the game was open here all that time, so it counts
        whatever happened elsewhere. (Taking ``stored`` alone left a node that came back
        to a game behind the other's clock by the time between their banks, for as long
        as both ran.) The watchers are told of a jump."""
        if live.log_version != version or self._games.get(live.id) is not live:
            return
        before = live.clock.now_ms()
        age_ms = int((datetime.now(UTC) - since).total_seconds() * 1000)
        live.clock.advance_to(stored + min(max(0, age_ms), live.clock.running_ms()))
        if live.clock.now_ms() - before > CLOCK_SKEW_MS:
            event = build.clock(running=True, time_ms=live.clock.now_ms())
            self.hub.push(live.id, build.events(game=live.id, v=live.version, events=[event]))

    def _save_time(self, live: LiveGame) -> None:
        """Bank the play time since the last action in the store, in the background."""
        t = live.clock.now_ms()
        if live.finished or live.game.won or t <= live.record.time_ms:
            return
        task = asyncio.create_task(
            self._write_time(live.id, live.log_version, t, live.game.score(t))
        )
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    async def _write_time(self, game_id: int, version: int, t: int, score: int) -> None:
        try:
            await self.store.save_play_time(game_id, version, t, score)
        except StoreError:
            log.warning("game %d: play time not saved", game_id, exc_info=True)

    # -- actions ----------------------------------------------------------------------------

    @staticmethod
    def _play_time(live: LiveGame, *, playing: bool = True) -> int:
        """Call holding the lock: the play time now, for an action on an unfinished game.

        A paused game takes no action until ``resume`` (its clock is stopped,
        so play time and timed scores would stand still): ``paused``.
        """
        if live.finished:
            raise GameOver(variant=live.lost_reason or "")
        if playing and live.clock.paused:
            raise _fail("paused", PAUSED)
        return live.clock.now_ms()

    async def _act(self, session: Session, request: Request) -> Reply:
        live = await self._opened(session, request)
        async with live.lock:
            self._check_open(session, live)
            self._check_fresh(live)
            v = request.get_int("v")
            # A node alone on its store holds the game itself. One of several may not have
            # heard of another node's commit yet: what its copy refuses (another version, a
            # pause, a rule, the game's end) it judges again once the copy is read current,
            # so that every refusal is of the stored game, its version first (a rule's
            # refusal at an old version is ``stale``, and ``stale`` names the store's
            # version). What the copy takes needs no read: the write's guard checks it.
            current = not self.store.shared
            while True:
                if v == live.version:
                    try:
                        t = self._play_time(live)
                        self._check_room(live)
                        trial = live.game.fork()
                        events = self._apply(trial, request, t)
                        break
                    except (ProtocolError, RuleViolation):
                        if current:
                            raise
                elif current:
                    return await self._retry_or_stale(live, request, v)
                await self._read_current(session, live)
                current = True
            try:
                await self._record(live, trial, events, t, _request_key(request))
            except VersionConflict:
                # The store is past this node's game: another node's write, or this very
                # request's, committed after its answer was lost (``unavailable``), before
                # this node caught up. A resend gets its first reply, not ``stale``.
                first = await self._first_reply(live, request, v)
                if first is not None:
                    return first
                raise
            return build.ack(request.id, game=live.id, v=live.version)

    async def _read_current(self, session: Session, live: LiveGame) -> None:
        """Call holding the lock, on a shared store, before refusing a request from the
        cached game: ``_caught_up_for``, where a store that cannot be read, or a copy that
        cannot be brought in line with it, leaves no refusal known to be true:
        ``unavailable``, and the usual catch-up runs once the lock is free."""
        await self._caught_up_for(session, live, refusing=True)

    async def _caught_up_for(
        self, session: Session, live: LiveGame, *, refusing: bool = False
    ) -> None:
        """Call holding the lock: bring the copy up to the stored game (pushing what this
        node's watchers missed), then make the checks the read may have changed the answer
        to (signed out meanwhile, the game evicted). For a ``pause`` or ``resume`` (stored
        whatever the store says, whose ack names the game's version), a store that cannot
        say leaves the usual catch-up to run once the lock is free; ``refusing``: it fails
        the request (``_read_current``)."""
        try:
            record, actions = await self.store.load_game(live.id, live.log_version)
            await self._replay_stored(live, record, actions)
        except StoreError:
            self.remote_changed([live.id])
            if refusing:
                raise
        except (LookupError, RuleViolation):
            self.remote_changed([live.id])  # which drops the copy and loads the game again
            if refusing:
                raise _fail("unavailable", "The game is being reloaded; retry.") from None
        self._check_open(session, live)
        self._check_fresh(live)

    def _check_room(self, live: LiveGame) -> None:
        """A game holds at most ``max_versions`` versions (bounded memory, replay, CPU)."""
        if live.version >= self.max_versions:
            raise _fail(
                "game_too_long",
                f"The game has reached {self.max_versions} versions, the most a game may have "
                "here: resign or start a new game.",
            )

    @staticmethod
    def _apply(game: Game, request: Request, t: int) -> list[EventDict]:
        if request.type == "move":
            return [
                e.to_dict() for e in game.move(request.get_str("card"), request.opt_int("to"), t)
            ]
        if request.type == "deal":
            return [e.to_dict() for e in game.deal(t)]
        if request.type == "undo":
            return [e.to_dict() for e in game.undo(t)]
        return [e.to_dict() for e in game.restart(t)]

    async def _retry_or_stale(self, live: LiveGame, request: Request, v: int) -> Reply:
        if 0 <= v < live.log_version:
            first = await self._first_reply(live, request, v)
            if first is not None:
                return first
        current = live.version
        raise _fail("stale", f"The game is at version {current}, not {v}.", v=current)

    async def _first_reply(self, live: LiveGame, request: Request, v: int) -> Reply | None:
        """The first reply to ``request`` resent at version ``v``, if the store's version
        ``v + 1`` is its action (None: it made no version); ``id_reused`` if another
        request with its id made that version."""
        first = await self.store.find_retry(live.id, v, _request_key(request))
        if first is None:
            return None
        if not _same_request(first, request):
            raise _fail(
                "id_reused",
                f"Request id {request.id!r} already made version {v + 1} with another "
                "request; use a new id for a new request.",
            )
        return build.ack(request.id, game=live.id, v=v + 1)

    async def _record(
        self, live: LiveGame, trial: Game, events: list[EventDict], t: int, request_id: str | None
    ) -> None:
        """Store the action ``trial`` (a fork of the live game) just played; then adopt it.

        Until the commit succeeds, ``live`` is untouched: whatever is served meanwhile,
        and whatever is served if the store refuses the write, is the committed game.
        """
        won = trial.won
        # Every SNAPSHOT_EVERY actions the game's snapshot goes with its action, in the
        # same transaction: after a crash no game replays more than that many.
        due = not won and live.log_version + 1 - live.snapshot_v >= SNAPSHOT_EVERY
        write = GameWrite(
            live.id,
            live.log_version,
            live.progress(t, trial),
            live.last_action(trial),
            request_id=request_id,
            ending=Ending.WON if won else None,
            snapshot=packed_snapshot(trial) if due else None,
        )
        committed = await self._commit(live, write)
        if won:
            events = await self._add_stats(live, events)
        live.adopt(trial, committed.game, events)  # no await from here to the push
        self.hub.push(live.id, build.events(game=live.id, v=live.version, events=events))
        self._sync_clock(live)
        hinted = bool(events) and events[0].get("type") == "hint"
        if not won and events and not hinted:
            self._check_lost(live)
        elif hinted and live.lost_at is not None and live.lost_at[0] == live.version - 1:
            # a hint leaves the position as it was, proved lost: said of its version too
            # (a client clears what it was told at each version; an open_game tells it)
            live.lost_at = live.version, live.lost_at[1]
            self.hub.push(live.id, self._lost_position(live))
        if due:
            live.snapshot_v = write.new_version

    async def _commit(self, live: LiveGame, write: GameWrite) -> Committed:
        """``store.commit``; on any failure the store may be ahead of us: catch up."""
        try:
            return await self.store.commit(write)
        except BaseException:
            self.remote_changed([live.id])  # stale, or a failure that may have committed
            raise

    async def _add_stats(self, live: LiveGame, events: list[EventDict]) -> list[EventDict]:
        try:
            rows = await self.store.level_stats(
                live.player_id, live.level, winnable=live.record.winnable
            )
        except StoreError:
            log.warning("no stats for the won event of game %d", live.id, exc_info=True)
            return events
        row = stats_row(rows[0])
        return [build.with_stats(e, row) if e.get("type") == "won" else e for e in events]

    async def _unversioned(
        self, session: Session, request: Request, once: Callable[[LiveGame], Awaitable[Reply]]
    ) -> Reply:
        """Run ``once`` for a request without ``v`` (hint, resign) until a write lands.

        Such a request means "whatever the version": when another node's write at the
        same version refuses ours, catch up and try again rather than answer ``stale``.
        """
        for _attempt in range(CONFLICT_ATTEMPTS):
            live = await self._opened(session, request)
            try:
                return await once(live)
            except VersionConflict:
                await self._catch_up(live)
        raise KeepsChanging()

    async def _hint(self, session: Session, request: Request) -> Reply:
        return await self._unversioned(
            session, request, lambda live: self._hint_once(session, live, request)
        )

    async def _hint_once(self, session: Session, live: LiveGame, request: Request) -> Reply:
        async with live.lock:
            self._check_open(session, live)
            self._check_fresh(live)
            if live.clock.paused and self.store.shared and not live.finished:
                # This node may have missed a resume, and more (a listener not hearing),
                # and would refuse as paused what the game takes.
                await self._read_current(session, live)
            t = self._play_time(live)
            self._check_room(live)
            await self._complete_log(live)  # the advisor counts the positions seen
            self._check_open(session, live)
            self._check_fresh(live)
            suggestion: Hinted = await self.advisor.hint(live)
            self._check_open(session, live)  # signed out while the solver searched
            self._check_fresh(live)
            trial = live.game.fork()
            events = [e.to_dict() for e in trial.hint(t, suggestion)]
            await self._record(live, trial, events, t, None)
            hint = events[0]
            return build.hint(
                request.id,
                game=live.id,
                v=live.version,
                action=hint["action"],
                card=hint.get("card"),
                to=hint.get("to"),
                reason=hint.get("reason"),
            )

    async def _resign(self, session: Session, request: Request) -> Reply:
        return await self._unversioned(
            session, request, lambda live: self._resign_once(session, live, request)
        )

    async def _resign_once(self, session: Session, live: LiveGame, request: Request) -> Reply:
        async with live.lock:
            self._check_open(session, live)
            self._check_fresh(live)
            t = self._play_time(live, playing=False)  # giving up needs no resume first
            write = GameWrite(live.id, live.log_version, live.progress(t), ending=Ending.RESIGNED)
            committed = await self._commit(live, write)
            self._end_lost(live, committed.game, "resigned")
            return build.ack(request.id, game=live.id, v=live.version)

    # -- lost-position checks -----------------------------------------------------------

    def _check_lost(self, live: LiveGame) -> None:
        if self.solver.lost_budget_ms <= 0:
            return
        if live.checking:
            live.recheck = True
            return
        if self.solver.busy:
            return  # optional work: skip rather than queue behind hints
        live.checking = True
        self._spawn(self._lost_loop(live))

    def _spawn(self, work: Coroutine[Any, Any, None], shared: bool = False) -> asyncio.Task[None]:
        """Run optional background work; ``close()`` cancels what is left. Work for no
        one connection (``shared``) logs none, nor its game."""
        task = detached(work) if shared else asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _lost_loop(self, live: LiveGame) -> None:
        """Check the committed position; announce a proof only while it is still the
        game's position, of the version current then (hints asked meanwhile moved the
        version on, and left the position as it was)."""
        try:
            while True:
                live.recheck = False
                position = live.game.state.key()  # committed: actions only land on a fork
                lost = await self.lost_checks.check(live)
                current = live.game.state.key() == position and self._games.get(live.id) is live
                fresh = live.lost_at != (live.version, lost)  # a recheck may find it again
                if lost is not None and current and not live.finished and fresh:
                    live.lost_at = live.version, lost
                    self.hub.push(live.id, self._lost_position(live))
                if not live.recheck:
                    return
        finally:
            live.checking = False

    # -- lists ------------------------------------------------------------------------------

    async def _games_list(self, session: Session, request: Request) -> Reply:
        player = _player(session)
        status = request.opt_str("status")
        wanted = None if status is None else GameStatus(status)
        # The newest only: a list of every game would pass a server frame (PROTOCOL.md 10).
        records = await self.store.list_games(player.id, wanted, limit=GAMES_LIST_LIMIT)
        return build.games(request.id, games=[self._summary(record) for record in records])

    async def _stats(self, session: Session, request: Request) -> Reply:
        player = _player(session)
        level = request.opt_str("level")
        rows = await self.store.level_stats(player.id, level)
        if level is None:  # every level, in the level table's order (PROTOCOL.md section 4)
            found = {(row.level, row.winnable): row for row in rows}
            rows = [
                row
                for name in LEVELS
                for row in (
                    found.get((name, False)) or _no_stats(player.id, name),
                    found.get((name, True)),  # winnable games' row, once there is one
                )
                if row is not None
            ]
        return build.stats(request.id, stats=[stats_row(row) for row in rows])

    async def _replay(self, session: Session, request: Request) -> Reply:
        live = await self._owned(session, request)
        if not live.finished and self.store.shared:  # another node may have ended it
            live = await self._latest(session, request)
        async with live.lock:
            if not live.finished:
                return build.replay(request.id, game=live.id, replay=None, result=None)
            await self._complete_log(live)
            record = live.record
            result = build.result(
                won=live.status is GameStatus.WON,
                score=record.score,
                moves=record.moves,
                undos=record.undos,
                hints=record.hints,
                suits_removed=record.suits_removed,
                time_ms=record.time_ms,
            )
            return self._replay_page(request, live, result)

    @staticmethod
    def _replay_page(request: Request, live: LiveGame, result: dict[str, Any]) -> Reply:
        """The replay document with at most REPLAY_PAGE_ACTIONS actions, from ``from``."""
        first = request.opt_int("from") or 0
        actions = live.game.actions
        following = first + REPLAY_PAGE_ACTIONS
        document = export_replay(live.game, actions[first:following], live.record.time_ms)
        next_from = following if following < len(actions) else None
        return build.replay(
            request.id, game=live.id, replay=document, result=result, next_from=next_from
        )
