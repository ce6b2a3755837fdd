"""The two growing parts of a ``Game``, shared between a game and its forks.

``Game.fork()`` must cost the same early and late in a game: the server forks
the game for every action (``server.service``). A game's action log and its
undo history both grow with the game, so copying them would make every
action cost more than the last. Instead a fork shares them:

- ``ActionLog``: an append-only list shared by every fork of a game, each
  seeing its own prefix (its ``len``). Appending where the shared list ends
  (the fork that is played, then kept) is O(1); appending where another fork
  has already appended beyond (a fork played after one that was dropped)
  first takes a private copy of its own prefix, so no fork ever sees
  another's actions.
- ``UndoStack``: a stack of immutable links ``(entry, below)``: push and pop
  replace the top, never change a link, so a fork holding the old top still
  sees its own stack. A bound (R18's undo limit) caps how deep pops reach;
  links beyond it are unreachable.

A game restored from a snapshot (``Game.restore``) knows how many actions it
has logged but holds none of them: its log is ``ActionLog.unloaded(n)``, whose
first ``missing`` entries are not loaded. It appends and copies as any log
(the server plays on before it needs the old actions, if ever); reading a
missing entry raises ``ActionsNotLoaded`` (a ``LookupError``, never an
``IndexError``, so nothing that iterates by index stops there quietly), and
``fill(prefix)`` supplies them, after which the log is a whole one. The
missing entries are held as placeholders (a pointer each) in the shared list,
so the hot paths (``append``, ``len``, ``copy``, reading one entry) need no
offset arithmetic: reading an entry makes one more int comparison, no more.
``fill`` takes a private copy (O(n), as loading n actions is), so the copies
made before it stay partial.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast, overload

__all__ = ["ActionLog", "ActionsNotLoaded", "UndoStack"]

T = TypeVar("T")

_new_object = object.__new__


class ActionsNotLoaded(LookupError):
    """A read reached the entries a restored log does not hold (module docstring)."""

    def __init__(self, missing: int) -> None:
        super().__init__(f"the log's first {missing} actions are not loaded")


class ActionLog(Sequence[T]):
    """An append-only sequence whose copies share storage, whose first ``missing``
    entries may be not loaded yet (module docstring)."""

    __slots__ = ("_items", "_length", "_missing")

    def __init__(
        self, items: list[T] | None = None, length: int | None = None, missing: int = 0
    ) -> None:
        # ``_items[:_missing]`` are placeholders: never returned, never compared.
        self._items: list[T] = [] if items is None else items
        self._length = len(self._items) if length is None else length
        self._missing = missing

    @classmethod
    def unloaded(cls, length: int) -> ActionLog[T]:
        """A log of ``length`` entries, none of them loaded (until ``fill``)."""
        if length < 0:
            raise ValueError(f"a log has no {length} entries")
        return cls(cast("list[T]", [None] * length), length, length)

    @property
    def missing(self) -> int:
        """How many leading entries are not loaded: 0 but for a restored game's log."""
        return self._missing

    def fill(self, prefix: Iterable[T]) -> None:
        """Supply the ``missing`` leading entries; then this log is a whole one."""
        loaded = list(prefix)
        if len(loaded) != self._missing:
            raise ValueError(
                f"fill takes exactly the {self._missing} missing actions, not {len(loaded)}"
            )
        # Private, so the copies made before stay as they were (their prefix is theirs).
        self._items = loaded + self._items[self._missing : self._length]
        self._missing = 0

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            if self._missing:
                self._check_loaded(range(self._length)[index])
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not self._missing <= index < self._length:
            if 0 <= index < self._length:
                raise ActionsNotLoaded(self._missing)
            raise IndexError("action index out of range")
        return self._items[index]

    def _check_loaded(self, indices: range) -> None:
        if indices and min(indices[0], indices[-1]) < self._missing:
            raise ActionsNotLoaded(self._missing)

    def __iter__(self) -> Iterator[T]:
        if self._missing:  # at once, not at the first ``next``
            raise ActionsNotLoaded(self._missing)
        items, length = self._items, self._length
        return (items[i] for i in range(length))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        missing = self._missing or (other._missing if isinstance(other, ActionLog) else 0)
        if missing:
            raise ActionsNotLoaded(missing)
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        loaded = self._items[self._missing : self._length]
        if self._missing:
            return f"ActionLog(<{self._missing} not loaded>, {loaded!r})"
        return f"ActionLog({loaded!r})"

    def append(self, item: T) -> None:
        if len(self._items) != self._length:  # another fork appended here: go private
            self._items = self._items[: self._length]
        self._items.append(item)
        self._length += 1

    def copy(self) -> ActionLog[T]:
        """A log that shares this one's storage: O(1). Made without ``__init__``, whose
        defaults cost a fifth of a copy: the server forks a game for every action."""
        other: ActionLog[T] = _new_object(ActionLog)
        other._items, other._length, other._missing = self._items, self._length, self._missing
        return other


_Link = tuple[Any, "Any | None"]  # (entry, the link below), immutable


class UndoStack(Generic[T]):
    """A stack with O(1) copies, popping at most ``limit`` deep (module docstring)."""

    __slots__ = ("_depth", "_top", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._top: _Link | None = None
        self._depth = 0

    def __len__(self) -> int:
        return self._depth

    def append(self, entry: T) -> None:
        self._top = (entry, self._top)
        self._depth = self._depth + 1 if self.limit is None else min(self._depth + 1, self.limit)

    def pop(self) -> T:
        if not self._depth or self._top is None:
            raise IndexError("pop from an empty undo stack")
        entry, self._top = self._top
        self._depth -= 1
        popped: T = entry
        return popped

    def clear(self) -> None:
        self._top, self._depth = None, 0

    def entries(self) -> list[T]:
        """The entries pops can still reach, bottom first: O(depth)."""
        entries: list[T] = []
        link = self._top
        for _ in range(self._depth):
            assert link is not None  # the depth never exceeds the links
            entry, link = link
            entries.append(entry)
        entries.reverse()
        return entries

    def copy(self) -> UndoStack[T]:
        """A stack that shares this one's links: O(1)."""
        other: UndoStack[T] = UndoStack(self.limit)
        other._top, other._depth = self._top, self._depth
        return other
