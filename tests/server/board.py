"""A client's board of one game, built only from the frames it was sent (PROTOCOL.md).

``Board.receive(frame)`` takes every frame a connection gets, in order. A
``game`` reply or a ``snapshot`` event sets the whole view; a ``catch_up``
and each ``events`` push apply their events the way PROTOCOL.md describes
them. The board keeps the version it stands at and records every push that
does not continue it (``gaps``): a push more than one version ahead, or one
older than the board. After ``restarted`` the board cannot be known from
events (the protocol says: fetch the view again), so ``needs_view`` is set
until a fresh ``game`` reply arrives.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["Board"]

Message = dict[str, Any]
RANKS = "A23456789TJQK"


class Board:
    def __init__(self, game: int) -> None:
        self.game = game
        self.view: Message | None = None
        self.v = -1
        self.gaps: list[tuple[int, int]] = []  # (board version, pushed version)
        self.needs_view = False

    def receive(self, frame: Message) -> None:
        if frame.get("game") != self.game:
            return
        kind = frame["type"]
        if kind == "game":
            self.view, self.v, self.needs_view = copy.deepcopy(frame["view"]), frame["v"], False
        elif kind == "catch_up":
            for batch in frame["events"]:
                if batch["v"] > self.v:  # pushes may have brought some of them already
                    self._batch(batch["v"], batch["events"])
            self.v = max(self.v, frame["v"])
        elif kind == "events":
            self._push(frame["v"], frame["events"])

    def _push(self, v: int, events: list[Message]) -> None:
        if events and events[0]["type"] == "snapshot":
            self.view, self.v, self.needs_view = copy.deepcopy(events[0]["view"]), v, False
            return
        if v == self.v:
            return  # something unrecorded about this version (clock, lost_position)
        if v != self.v + 1:
            self.gaps.append((self.v, v))
        self._batch(v, events)

    def _batch(self, v: int, events: list[Message]) -> None:
        self.v = v
        for event in events:
            if self.view is not None and not self.needs_view:
                self._apply(self.view, event)

    def _apply(self, view: Message, event: Message) -> None:
        kind, columns = event["type"], view["columns"]
        if kind == "moved":
            self._moved(view, event)
        elif kind == "flipped":
            column = columns[event["column"] - 1]
            column["down"] -= 1
            column["cards"].append(event["card"])
        elif kind == "unflipped":
            column = columns[event["column"] - 1]
            column["cards"].pop()
            column["down"] += 1
        elif kind == "dealt":
            for column, card in zip(columns, event["cards"], strict=False):
                column["cards"].append(card)
            view["stock"] = 0
        elif kind == "undealt":
            for column in columns[: event["count"]]:
                column["cards"].pop()
            view["stock"] = event["count"]
        elif kind == "suit_removed":
            del columns[event["column"] - 1]["cards"][-13:]
            view["foundations"].append(event["suit"])
        elif kind == "suit_restored":
            suit = event["suit"]
            columns[event["column"] - 1]["cards"] += [rank + suit for rank in reversed(RANKS)]
            view["foundations"].pop(event["slot"] - 1)
        elif kind == "score":
            for key in ("score", "moves", "undos", "hints"):
                view[key] = event[key]
        elif kind == "restarted":
            self.needs_view = True

    @staticmethod
    def _moved(view: Message, event: Message) -> None:
        source, target, count = event["from"], event["to"], event["count"]
        if source == "reserve":
            view["reserve"].remove(event["card"])
            group = [event["card"]]
        else:
            cards = view["columns"][source - 1]["cards"]
            group = cards[-count:]
            del cards[-count:]
        if target == "reserve":
            view["reserve"].insert(event["index"] - 1, group[0])
        else:
            view["columns"][target - 1]["cards"] += group

    def face_up(self) -> list[str]:
        """The cards a player of this board could name (top cards first)."""
        if self.view is None:
            return []
        tops = [c["cards"][-1] for c in self.view["columns"] if c["cards"]]
        rest = [card for c in self.view["columns"] for card in c["cards"][:-1]]
        return tops + rest + list(self.view["reserve"])
