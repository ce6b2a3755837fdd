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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

__all__ = ["ActionLog", "UndoStack"]

T = TypeVar("T")


class ActionLog(Sequence[T]):
    """An append-only sequence whose copies share storage (module docstring)."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T] | None = None, length: int | None = None) -> None:
        self._items: list[T] = [] if items is None else items
        self._length = len(self._items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("action index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        items, length = self._items, self._length
        return (items[i] for i in range(length))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"ActionLog({self._items[: self._length]!r})"

    def append(self, item: T) -> None:
        if len(self._items) != self._length:  # another fork appended here: go private
            self._items = self._items[: self._length]
        self._items.append(item)
        self._length += 1

    def copy(self) -> ActionLog[T]:
        """A log that shares this one's storage: O(1)."""
        return ActionLog(self._items, self._length)


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

    def copy(self) -> UndoStack[T]:
        """A stack that shares this one's links: O(1)."""
        other: UndoStack[T] = UndoStack(self.limit)
        other._top, other._depth = self._top, self._depth
        return other
