"""Pruning rules of the solver, each with the argument that makes it sound.

"Sound" means: a position the rules below discard (or a move they skip) never
hides a win the search would otherwise find, so a search that ends without a
win really proves the position lost. ``tests/engine/solver`` checks every rule
empirically too: on many small positions, each ``lost`` is confirmed by a
search that uses none of them.

Notation: under same-suit building the card that may go onto ``c`` is
``c - 1`` (engine.cards), and we say ``c - 1``'s *successor* is ``c``. A card
lies *directly on* the card beneath it in its column.

1. Circular wait (``is_deadlocked``), valid when only kings go to empty columns
   and building is by suit.

   Every non-king card ``x`` must at some point lie directly on its successor
   ``x + 1`` (a set is K..A contiguous on top of a column). If ``x`` does not
   now, ``x`` itself must be picked and moved onto ``x + 1``: cards are only
   ever put on top of columns, and the cards between ``x + 1`` and ``x`` (if in
   one column) cannot go away without moving ``x``. That move needs ``x + 1``
   on top, so the card ``y`` now directly on ``x + 1`` must have left first,
   and the first move that takes ``y`` off is ``y`` picked and moved onto
   ``y + 1`` (a non-king's only destination; a group picked lower carries
   ``y`` along and leaves it on ``x + 1``). So ``y`` reaches its successor
   strictly before ``x`` does. Write ``x -> y``. A cycle ``x1 -> x2 -> ... ->
   x1`` would need ``x1`` to get there strictly before itself: the position is
   lost. A king ``y`` breaks the chain (it may leave to an empty column), and so
   does a successor in the stock or the reserve (nothing lies on it). Dealing
   the stock only puts cards on top of columns, so it cannot undo a cycle among
   cards already on the table: the rule holds before the deal too. It does not
   hold when any card may go to an empty column (``y`` could leave there), nor
   under any-suit building (``x`` has several possible successors).

2. Safe build onto king-rooted runs (``search._safe_build``), valid under
   same-suit building once no stock is left (on either empty-column rule).

   Let a column's face-up part, up to its top card ``x + 1``, be king-rooted
   runs: its lowest face-up card a king, and every other one a king or lying
   on its successor (the common case is one same-suit run K, Q, ..., ``x + 1``).
   Let ``x`` be face up elsewhere with a *segment* (``x`` and whatever lies on
   it) on top of its column. Moving the segment onto ``x + 1`` (giving S')
   loses nothing. Take any winning line from S and play it from S', reading
   "the segment's place" as "on ``x + 1``". Until the line moves ``x`` onto
   ``x + 1`` nothing else can go there. A non-king of those runs already lies
   on its only successor, so it is picked, if ever, only into an empty column
   (any-card rule), carrying ``x + 1`` (and in S' the segment with it); a king
   is picked only into an empty column too. Such a move is legal in S' as
   well (no card of the column has its successor in the segment: each one's
   successor lies right under it, and a king has none) and keeps the reading.
   Every other move stays legal in S': a move checks only the picked card and
   the destination's top card; the tops are the same cards, except that S'
   also shows the card the segment covered (more options, maybe a flip or an
   empty column). When the line moves ``x`` (onto ``x + 1``, or with the
   any-card rule into an empty column), both positions become the same. The
   replay is one move shorter, which lets the rules combine (see the end).

   The rule is deliberately narrow. Building onto a successor that may still
   have to move is *not* safe: the cards later put on the segment can include
   ``x + 2``, and then ``x + 1`` can never reach it. A test keeps the example
   that showed it (3S onto 4S burying the 5S). Nor does the rule hold with
   cards in the stock (a stock card would land on the segment instead of on
   ``x + 1``) or under any-suit building (another suit's card could use
   ``x + 1``).

3. (withdrawn) Taking a card off its successor into an empty column can be
   needed, for the same reason as above; no rule prunes it.

4. Symmetry: once no stock is left, the order of columns does not matter, so
   positions are keyed with their columns sorted; before the deal only columns
   1-3 are special (they receive the stock) and the others are sorted. Among
   equivalent empty columns only one is tried. Moving a whole column into an
   empty one changes nothing after the deal and is not tried then; before the
   deal it is tried when either column receives a stock card, since the deal
   then lands differently (a stock card alone in an empty column, or on top of
   the moved column with another column left empty).

5. Unreachable removal (``is_blocked``, ``kings_that_block``), valid when only
   kings go to empty columns and building is by suit. It contains rule 1.

   Under these rules a non-king card ``x`` is only ever picked to go onto
   ``x + 1``, and then lies on it for good (its only destination is where it
   is); a king is only picked to go to an empty column. Consider these events
   of a line of play from the position, each at the first time it happens:
   ``P(x)``, the first pick of a non-king ``x`` (onto ``x + 1``); ``K(k)``,
   the first pick of a king ``k``; ``R(s)``, the removal of suit ``s``; ``E``,
   some column is empty. ``L(y)``, the first time ``y`` leaves the card it now
   lies on, is ``P(y)`` for a non-king, and ``K(y)`` or ``R(suit y)`` for a
   king (a card leaves the card under it only by its own pick, or removed in a
   set of which it is the bottom card, a king: a pick lower down carries both).
   Each event needs others strictly before it:

   - ``P(x)`` needs ``L(y)`` for the card ``y`` now lying on ``x + 1`` (no
     other card than ``x`` can ever be put on ``x + 1``, so once ``y`` has
     left, ``x + 1`` stays the top); ``L(z)`` for the card ``z`` on ``x`` if
     ``x`` is face down (it turns up only when ``z`` leaves); and if ``x + 1``
     now lies above ``x`` in the same column, ``L(w)`` for some card ``w``
     between them (``x`` excluded, ``x + 1`` included): ``x + 1`` must leave
     that column first, and the first pick that takes it away picks such a
     ``w``. A non-king already lying on its successor is never picked again:
     no ``P`` event is possible for it.
   - ``K(k)`` needs ``E`` and, if ``k`` is face down, ``L`` of the card on it.
   - ``E`` (unless a column is empty now) needs ``P(b)`` for some non-king
     ``b`` at the bottom of a column, or some ``R(s)``: the first column to
     become empty does so by its bottom card's first pick (a king at the
     bottom only moves to a column that is already empty) or by a removed set.
   - ``R(s)`` needs ``P(x)`` for each non-king of ``s`` not now on its
     successor, ``L`` of the card on each face-down card of ``s`` (a set is
     removed face up), and ``K`` of its king if it is in the reserve.

   The win needs ``R(s)`` for every suit on the table. Derive forward from the
   events needing nothing: every event of a winning line is derived (by
   induction on the time it happens), so a suit whose ``R`` is never derived
   cannot be removed and the position is lost. The stock only weakens the
   argument in ways that keep it sound: stock cards need no ``P`` for ``R``
   (the deal may put one on its successor), and the cards the deal will cover
   are ignored (that only drops needs). After a build the derivation only
   gains (a need is met, or an emptied column gives ``E``), so the search runs
   the check after the deal and after a king takes the last empty column;
   ``kings_that_block`` answers the latter for all kings of a position at once:
   after the move the king's departure is a fact and no column is empty.

6. The stock deal after a move that kept off columns 1-3 (``search._outside``),
   valid on every level. If position ``s`` was first reached from ``u`` by a
   move ``m`` that neither takes from nor puts onto a column the stock is
   dealt onto, then ``m`` and the deal commute (the deal only adds cards on
   top of those columns, ``m`` touches neither its source's nor its
   destination's top there), so ``deal(s) = m(deal(u))``: a win after dealing
   at ``s`` is a win after dealing at ``u`` and playing ``m``. The search deals
   from ``u`` (or, if ``u`` too was reached so, from the position it came
   from, and so on back to one whose deal is tried), so dealing at ``s`` is
   not tried.

7. A card stays on king-rooted runs (``search._on_finished_run``), valid when
   any card may go to an empty column, building by suit, no stock left. If
   ``x`` lies on ``x + 1`` at the top of king-rooted runs (as in rule 2),
   moving ``x``'s group into an empty column (position B) gains nothing over
   staying (A). Any line from B replays from A with the group read as lying on
   ``x + 1`` instead of in that column: the tops are the same except that B
   shows ``x + 1`` (which takes only ``x``) and A has one more empty column;
   picking ``x`` in B goes onto ``x + 1`` (A is already there: skip it) or into
   an empty column (legal in A too, and the positions meet); picking a card at
   or under ``x + 1`` goes into an empty column only (as in rule 2) and carries
   the group in A, which keeps the reading; no such card has its successor in
   the group. The replay is no longer than the line.

8. A column that can never empty (``never_empties``,
   ``fillings_that_never_empty``), valid when any card may go to an empty
   column, building by suit. Every win ends with empty columns, so some column
   empties at some point. Until the first time one does, no move into an empty
   column is possible, so only builds are played, exactly as under rule 5's
   assumptions: the events of rule 5 that come before ``E`` need what rule 5
   says they need. If no column is empty and ``E`` is not derived, the
   position is lost. A build only takes needs away, so the search checks after
   the deal and after a move into the last empty column; for the latter one
   derivation serves every card: after the move the card has left the card it
   lay on (a fact for whatever waited on that), it lies at the bottom of the
   column (going onto its successor empties it), and nothing is empty. A card
   taken off its own successor can go straight back, so that move never loses
   this way.

9. Unreachable removal under any-suit building (``is_blocked_any_suit``),
   valid when only kings go to empty columns and building is by any suit
   (level relaxed). Rule 5's events and needs, with two changes that any-suit
   building forces. First, a non-king ``x`` may go onto any of the four cards
   one rank above it, so ``P(x)`` (its first pick, now onto whichever of them
   it goes) needs *one* of them free: for a host ``h`` of another column or
   lower in ``x``'s own, ``L`` of the card now on ``h``; for ``h`` above ``x`` in
   its column, also ``h`` gone from that column, i.e. ``L(w)`` for some card
   ``w`` between them (``x`` excluded, ``h`` included), as in rule 5; the host
   ``x`` lies on now is no candidate (its first pick takes it off that one);
   a host in the stock or the reserve counts as free (that only drops needs).
   ``P(x)`` needs as well ``L`` of the card on ``x`` if ``x`` is face down.
   Second, a card lying on its successor can still be picked (onto another
   host), so its ``P`` is derived like any other; only the removal of its suit
   does not need it. The other needs are rule 5's and hold for the same
   reasons: what lies on a card leaves only by its own pick (or, a king, its
   set's removal); ``K(k)`` needs ``E``; the first column to empty does so by
   its bottom card's first pick or a removal; ``R(s)`` needs ``P(x)`` for each
   non-king of ``s`` not on its successor, ``L`` of the card on each face-down
   card of ``s`` and ``K`` of a reserve king. The derivation is not monotone
   here (a build can cover the only free host of another card), so the
   search checks every position it enters.

How the rules combine. Let ``d(p)`` be the length of a shortest win from a
winnable position ``p``. The search ends with "lost" only after expanding, once,
every position it reached. Were some reached position winnable, take one of
smallest ``d`` after the deal: its shortest win's first move is searched (then
a position with smaller ``d`` was reached too, or one equal to it up to column
order), or it was left out by rule 4's symmetry (same), by rule 7 (then a
shorter win exists, a contradiction), or by a safe build of rule 2 (which
reaches a position with smaller ``d``); rules 5, 8 and 9 only drop lost
positions. Before the deal, rule 6 only drops a deal whose result follows by
one move from a deal the search tries, so some position after the deal is
winnable and reached.
"""

from __future__ import annotations

from itertools import pairwise

from engine.state import State

__all__ = [
    "canonical_key",
    "column_key",
    "fillings_that_never_empty",
    "is_blocked",
    "is_deadlocked",
    "key_from_parts",
    "kings_that_block",
    "never_empties",
]

_SEPARATOR = b"\xff"
_NOTHING_LEFT = _SEPARATOR * 2  # the key's end with no stock and no reserve


def column_key(down: int, col: list[int]) -> bytes:
    """One column's part of a position key: its face-down count, then its cards."""
    return bytes((down, *col))


def key_from_parts(parts: list[bytes], state: State) -> bytes:
    """The canonical key from the columns' parts (see ``canonical_key``)."""
    stock = state.stock
    if not stock and not state.reserve:
        return _SEPARATOR.join(sorted(parts)) + _NOTHING_LEFT  # the common case, faster
    if stock:
        dealt_onto = len(stock)
        keys = [*parts[:dealt_onto], b"|", *sorted(parts[dealt_onto:])]
    else:
        keys = sorted(parts)
    keys.append(bytes(stock))
    keys.append(bytes(sorted(state.reserve)))
    return _SEPARATOR.join(keys)


def canonical_key(state: State) -> bytes:
    """A position key equal for positions that differ only by interchangeable columns."""
    parts = [column_key(down, col) for down, col in zip(state.down, state.cols, strict=True)]
    return key_from_parts(parts, state)


def is_deadlocked(state: State) -> bool:
    """Rule 1: a circular wait among non-king cards (kings-only, same-suit building)."""
    waits: dict[int, list[int]] = {}
    for column, col in enumerate(state.cols):
        for index in range(1, state.down[column] + 1):
            lower, upper = col[index - 1], col[index]
            if upper == lower - 1 and lower % 13:
                return True  # a face-down card under its own predecessor never turns up
            if lower % 13 != 12 and upper % 13 != 12:
                waits.setdefault(lower, []).append(upper)  # face down until `upper` leaves
        for lower, upper in pairwise(col):
            wanting = lower - 1  # the card whose successor is `lower`
            if lower % 13 and upper % 13 != 12 and wanting != upper:
                waits.setdefault(wanting, []).append(upper)
    return _has_cycle(waits)


def _has_cycle(waits: dict[int, list[int]]) -> bool:
    """Whether the wait graph has a cycle (iterative depth-first search)."""
    done: set[int] = set()
    for start in waits:
        if start in done:
            continue
        on_path = {start}
        stack = [(start, iter(waits[start]))]
        while stack:
            node, successors = stack[-1]
            following = next(successors, None)
            if following is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif following in on_path:
                return True
            elif following not in done and following in waits:
                on_path.add(following)
                stack.append((following, iter(waits[following])))
    return False


# Events of ``is_blocked``: 0..51 a card's first departure from where it lies (its
# first pick; for a king also the removal of its set), 52 + suit that king's first
# pick, 56 + suit the set's removal, 60 "a column is empty".
_KING_PICK = 52
_REMOVAL = 56
_EMPTY = 60
_APART = 61  # 61 + card: its successor, now above it in its column, has left that column
_EVENTS = 61 + 52


_Chain = tuple[list[int], list[list[int]], list[int], int, bool]


def is_blocked(state: State) -> bool:
    """Rule 5: some suit on the table can never be removed (kings only, same suit).

    Forward chaining over the events of the module docstring: an event is
    derived once all it needs (for the kings' departures and an empty column:
    any one of its ways) are derived; blocked when a removal never is.
    """
    missing, waiting, ready, suits, empty = _events(state)
    if empty:
        ready.append(_EMPTY)
    derived = [False] * _EVENTS
    _derive(missing, waiting, ready, derived)
    return sum(derived[_REMOVAL:_EMPTY]) < suits


def never_empties(state: State) -> bool:
    """Rule 8: no column is empty and none can ever be (any card to an empty column).

    Until a column first empties only builds are possible, as under rule 5, so the
    events of rule 5 before ``E`` are derived the same way.
    """
    cols = state.cols
    if not all(cols):
        return False
    tops = {col[-1] for col in cols}
    for column, col in enumerate(cols):
        bottom = col[0]
        if (
            not state.down[column]
            and bottom % 13 != 12
            and bottom + 1 in tops
            and col[-1] != bottom + 1
        ):
            return False  # that bottom card can go onto its successor now
    missing, waiting, ready, _suits, _empty = _events(state)
    derived = [False] * _EVENTS
    _derive(missing, waiting, ready, derived)
    return not derived[_EMPTY]


def fillings_that_never_empty(state: State, picks: list[int]) -> set[int]:
    """Which of the face-up cards ``picks`` (none at a column's bottom) would leave no
    column that can ever empty again (rule 8) by going to the only empty column.

    After such a move the card has left the card it lay on (a fact for what waited
    on that), and it is at a column's bottom: its going onto its successor empties
    that column. Otherwise the events are those of this position with no empty
    column given, so one derivation serves every card.
    """
    missing, waiting, ready, _suits, _empty = _events(state)
    derived = [False] * _EVENTS
    _derive(missing, waiting, ready, derived)
    if derived[_EMPTY]:
        return set()
    below: dict[int, int] = {}
    for col in state.cols:
        below.update(zip(col[1:], col, strict=False))
    never = set()
    for card in picks:
        king = card % 13 == 12
        if not king and below.get(card) == card + 1:
            continue  # off its successor: it can go straight back, emptying its column
        after = derived.copy()
        left = missing.copy()
        after[card] = True  # its first pick is made; going onto its successor is apart
        placement = -1 if king else _REMOVAL + card // 13  # what waits for that
        queue = []
        for waiter in waiting[card]:
            if waiter == placement:
                placement = -1
                continue
            left[waiter] -= 1
            if not left[waiter]:
                queue.append(waiter)
        _derive(left, waiting, queue, after)
        if not after[_EMPTY] and (king or left[card] > 0):
            never.add(card)
    return never


def kings_that_block(state: State, kings: list[int]) -> set[int]:
    """Which of ``kings`` would make the position blocked (rule 5) by taking its only
    empty column, for a position that is not blocked itself.

    After such a king move nothing is empty, and the king's departure is done:
    the events are those of this position with the king's departure as a fact
    and no empty column given, so one derivation serves every king.
    """
    missing, waiting, ready, suits, _empty = _events(state)
    derived = [False] * _EVENTS
    _derive(missing, waiting, ready, derived)
    if derived[_EMPTY]:
        return set()
    blocking = set()
    for king in kings:
        after = derived.copy()
        _derive(missing.copy(), waiting, [king, _KING_PICK + king // 13], after)
        if sum(after[_REMOVAL:_EMPTY]) < suits:
            blocking.add(king)
    return blocking


def _events(state: State) -> _Chain:
    """The events of rule 5 for ``state``: how many needs each still misses, the
    events waiting on each, those ready now, how many suits are on the table, and
    whether a column is empty."""
    on = [-1] * 52  # the card lying directly on each card in a column, or -1
    below = [-2] * 52  # the card each column card lies on; -1 at the bottom
    hidden = [False] * 52
    column_of = [-1] * 52
    cols = state.cols
    empty = False
    for column, col in enumerate(cols):
        if not col:
            empty = True
            continue
        below[col[0]] = -1
        for card in col:
            column_of[card] = column
        for card in col[: state.down[column]]:
            hidden[card] = True
        for lower, upper in pairwise(col):
            on[lower] = upper
            below[upper] = lower
    reserve = state.reserve
    missing = [0] * _EVENTS  # how many more needs (1 for the either-way events)
    missing[_EMPTY] = 1
    waiting: list[list[int]] = [[] for _ in range(_EVENTS)]  # events waiting on each
    ready: list[int] = []
    suits = 0
    for suit in range(4):
        if suit in state.found:
            continue
        suits += 1
        removal = _REMOVAL + suit
        needs = 0
        for card in range(suit * 13, suit * 13 + 12):
            under = below[card]
            count = 0
            if under != -2:  # in a column
                if under == card + 1:  # on its successor: never picked again
                    if hidden[card]:
                        waiting[on[card]].append(removal)  # but it must still turn up
                        needs += 1
                    continue
                if hidden[card]:
                    waiting[on[card]].append(card)
                    count += 1
                column = column_of[card]
                if column_of[card + 1] == column:
                    col = cols[column]
                    start = col.index(card)
                    end = col.index(card + 1)
                    if end > start:  # the successor lies above: it must get away first
                        apart = _APART + card
                        missing[apart] = 1
                        for lifted in col[start + 1 : end + 1]:
                            waiting[lifted].append(apart)
                        waiting[apart].append(card)
                        count += 1
                if under == -1:
                    waiting[card].append(_EMPTY)  # picking a bottom card empties its column
                waiting[card].append(removal)
                needs += 1
            elif card in reserve:
                waiting[card].append(removal)
                needs += 1
            # else in the stock: the deal may put it on its successor
            covering = on[card + 1]
            if covering >= 0:
                waiting[covering].append(card)
                count += 1
            missing[card] = count
            if not count:
                ready.append(card)
        king = suit * 13 + 12
        pick = _KING_PICK + suit
        missing[king] = 1
        waiting[pick].append(king)
        waiting[removal].append(king)
        waiting[removal].append(_EMPTY)
        under = below[king]
        if under >= 0 or king in reserve:
            waiting[_EMPTY].append(pick)
            missing[pick] = 1
            if hidden[king]:
                waiting[on[king]].append(pick)
                missing[pick] = 2
            if under < 0:
                waiting[pick].append(removal)  # a reserve king must reach a column
                needs += 1
        if hidden[king]:
            waiting[on[king]].append(removal)
            needs += 1
        missing[removal] = needs
        if not needs:
            ready.append(removal)
    return missing, waiting, ready, suits, empty


def _derive(
    missing: list[int], waiting: list[list[int]], ready: list[int], derived: list[bool]
) -> None:
    """Forward chaining: derive ``ready`` and everything they complete (in place)."""
    while ready:
        event = ready.pop()
        if derived[event]:
            continue
        derived[event] = True
        for waiter in waiting[event]:
            missing[waiter] -= 1
            if not missing[waiter]:
                ready.append(waiter)


# Events of ``is_blocked_any_suit`` (rule 9), after those of rule 5 (0..60):
# 61 + x "some card one rank above x is free for x", 113 + 4x + t "the card of
# suit t one rank above x is free for x", 321 + 4x + t "that card, now above x in
# x's column, has left that column".
_FREE = 61
_FREE_ONE = 113
_APART_ONE = 321
_ANY_SUIT_EVENTS = 321 + 208


def is_blocked_any_suit(state: State) -> bool:
    """Rule 9: some suit on the table can never be removed (kings only, any suit).

    Rule 5's derivation with a card's first pick needing *some* card one rank
    above it free (any of the four, see the module docstring), and no card
    ever treated as settled for good.
    """
    missing, waiting, ready, suits = _any_suit_events(state)
    derived = [False] * _ANY_SUIT_EVENTS
    _derive(missing, waiting, ready, derived)
    return sum(derived[_REMOVAL:_EMPTY]) < suits


def _any_suit_events(state: State) -> tuple[list[int], list[list[int]], list[int], int]:
    """The events of rule 9 for ``state``: how many needs each still misses, the
    events waiting on each, those ready now, and how many suits are on the table."""
    on = [-1] * 52  # the card lying directly on each card in a column, or -1
    below = [-2] * 52  # the card each column card lies on; -1 at the bottom
    hidden = [False] * 52
    column_of = [-1] * 52
    height = [-1] * 52  # a column card's index in its column
    cols = state.cols
    missing = [0] * _ANY_SUIT_EVENTS
    waiting: list[list[int]] = [[] for _ in range(_ANY_SUIT_EVENTS)]
    ready: list[int] = []
    missing[_EMPTY] = 1
    for column, col in enumerate(cols):
        if not col:
            ready.append(_EMPTY)
            continue
        below[col[0]] = -1
        for index, card in enumerate(col):
            column_of[card] = column
            height[card] = index
        for card in col[: state.down[column]]:
            hidden[card] = True
        for lower, upper in pairwise(col):
            on[lower] = upper
            below[upper] = lower
    loose = set(state.stock) | set(state.reserve)  # free hosts once dealt or played
    suits = 0
    for suit in range(4):
        if suit in state.found:
            continue
        suits += 1
        removal = _REMOVAL + suit
        needs = 0
        for card in range(suit * 13, suit * 13 + 12):
            under = below[card]
            if under == card + 1:  # on its successor: no pick needed, but it must turn up
                if hidden[card]:
                    waiting[on[card]].append(removal)
                    needs += 1
            elif under != -2 or card in state.reserve:
                waiting[card].append(removal)
                needs += 1
            if under == -2 and card not in state.reserve:
                continue  # in the stock: the deal may put it on its successor
            count = 1  # some host free
            if hidden[card]:
                waiting[on[card]].append(card)
                count += 1
            if under == -1:
                waiting[card].append(_EMPTY)  # picking a bottom card empties its column
            missing[card] = count
            _free_hosts(
                state, card, (on, hidden, column_of, height), loose, missing, waiting, ready
            )
        king = suit * 13 + 12
        pick = _KING_PICK + suit
        missing[king] = 1
        waiting[pick].append(king)
        waiting[removal].append(king)
        waiting[removal].append(_EMPTY)
        under = below[king]
        if under >= 0 or king in state.reserve:
            waiting[_EMPTY].append(pick)
            missing[pick] = 1
            if hidden[king]:
                waiting[on[king]].append(pick)
                missing[pick] = 2
            if under < 0:
                waiting[pick].append(removal)  # a reserve king must reach a column
                needs += 1
        if hidden[king]:
            waiting[on[king]].append(removal)
            needs += 1
        missing[removal] = needs
        if not needs:
            ready.append(removal)
    return missing, waiting, ready, suits


_Layout = tuple[list[int], list[bool], list[int], list[int]]  # on, hidden, column_of, height


def _free_hosts(
    state: State,
    card: int,
    layout: _Layout,
    loose: set[int],
    missing: list[int],
    waiting: list[list[int]],
    ready: list[int],
) -> None:
    """Wire the events by which a host one rank above ``card`` becomes free for it."""
    on, _hidden, column_of, height = layout
    free = _FREE + card
    missing[free] = 1
    waiting[free].append(card)
    for suit in range(4):
        host = suit * 13 + card % 13 + 1
        if suit in state.found:
            continue
        if host in loose:
            ready.append(free)  # a stock or reserve card: taken as free (weaker, sound)
            continue
        if on[host] == card:
            continue  # the card lies on it now: its first pick goes elsewhere
        one = _FREE_ONE + 4 * card + suit
        count = 0
        if on[host] >= 0:
            waiting[on[host]].append(one)  # whatever lies on the host must leave first
            count += 1
        column = column_of[card]
        if column >= 0 and column_of[host] == column and height[host] > height[card]:
            apart = _APART_ONE + 4 * card + suit
            missing[apart] = 1
            col = state.cols[column]
            for lifted in col[height[card] + 1 : height[host] + 1]:
                waiting[lifted].append(apart)
            waiting[apart].append(one)
            count += 1
        missing[one] = count
        waiting[one].append(free)
        if not count:
            ready.append(one)
