"""The structures a game shares with its forks behave like a private list and deque."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.shared import ActionLog, UndoStack


def test_a_fork_of_the_log_sees_only_its_own_appends() -> None:
    log: ActionLog[int] = ActionLog()
    log.append(1)
    kept = log.copy()
    kept.append(2)
    assert list(log) == [1] and list(kept) == [1, 2]
    dropped = log.copy()
    dropped.append(3)  # the shared list already holds 2 here: this one goes private
    assert list(kept) == [1, 2] and list(dropped) == [1, 3] and list(log) == [1]
    log.append(4)
    assert list(log) == [1, 4] and list(kept) == [1, 2] and list(dropped) == [1, 3]


def test_the_log_reads_like_a_list() -> None:
    log: ActionLog[str] = ActionLog()
    for item in "abc":
        log.append(item)
    longer = log.copy()
    longer.append("d")
    assert log[-1] == "c" and log[0] == "a" and log[:-1] == ["a", "b"] and len(log) == 3
    assert log == ["a", "b", "c"] and log != longer and tuple(log) == ("a", "b", "c")
    with pytest.raises(IndexError):
        log[3]  # it exists in the shared list, not in this log


@given(
    st.one_of(st.none(), st.integers(1, 5)),
    st.lists(st.sampled_from(["push", "pop", "clear", "fork"]), max_size=60),
)
def test_the_undo_stack_behaves_like_a_bounded_deque(limit: int | None, steps: list[str]) -> None:
    stack: UndoStack[int] = UndoStack(limit)
    reference: deque[int] = deque(maxlen=limit)
    forks: list[tuple[UndoStack[int], list[int]]] = []
    for n, step in enumerate(steps):
        if step == "push":
            stack.append(n)
            reference.append(n)
        elif step == "pop" and reference:
            assert stack.pop() == reference.pop()
        elif step == "pop":
            with pytest.raises(IndexError):
                stack.pop()
        elif step == "clear":
            stack.clear()
            reference.clear()
        else:
            forks.append((stack.copy(), list(reference)))
        assert len(stack) == len(reference) and bool(stack) == bool(reference)
    for fork, seen in forks:  # every fork still holds what it held when made
        popped = [fork.pop() for _ in range(len(fork))]
        assert popped == seen[::-1]
