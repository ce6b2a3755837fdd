"""What the server sends, checked where it enters the client.

``check_server_message`` checks one decoded server message against the
protocol's own catalogue (``protocol.messages.SERVER_MESSAGES``, the shapes
the server's messages are built and tested against), read the way PROTOCOL.md
section 2 asks a client to read them: leniently. A field the catalogue does
not declare, an event type, a message type or an error code this client does
not know is let through (a later version-1 server may send them, section 11);
a declared field that is missing or of the wrong type, range, length or
pattern is not. The error is ``protocol.InvalidMessage``, whose ``path`` names
the field as the protocol's own checks do (``game.view.columns[0].down``).

On top of the protocol's types it bounds what the client loops over, so that
no message can make the renderers or the board run through a huge count: a
deal is one pack, and no count may pass two (``MAX_CARDS``). So a column
holds at most that many cards (face down and face up), a table at most that
many cards (columns, stock and reserve) in at most that many columns, and a
move or an undone deal moves at most that many cards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from protocol import InvalidMessage
from protocol.events import EVENTS
from protocol.fields import AnyOf, Choice, FieldType, Int, ListOf, Obj, Shape, Tagged, show
from protocol.messages import SERVER_MESSAGES
from protocol.shapes import COLUMN_VIEW, VIEW

__all__ = ["MAX_CARDS", "check_server_message"]

MAX_CARDS: Final = 104
"""A bound on the cards one message may count: every level deals one pack of 52, and
twice that leaves room for a later level with two."""

_CARD_COUNT = Int(0, MAX_CARDS)

# Integer fields whose protocol type allows any count, bounded here.
_CEILINGS: Final[dict[tuple[str, str], Int]] = {
    (COLUMN_VIEW.ref, "down"): _CARD_COUNT,
    (VIEW.ref, "stock"): _CARD_COUNT,
    (EVENTS["restarted"].shape.ref, "stock"): _CARD_COUNT,
    (EVENTS["moved"].shape.ref, "count"): _CARD_COUNT,
    (EVENTS["undealt"].shape.ref, "count"): _CARD_COUNT,
}


def check_server_message(message: Mapping[str, Any]) -> None:
    """Check a server message (see the module docstring); raises InvalidMessage."""
    kind = message.get("type")
    if not isinstance(kind, str):
        raise InvalidMessage("type", f"must be a string, got {show(kind)}")
    spec = SERVER_MESSAGES.get(kind)
    if spec is not None:  # a message type a later server added: nothing to check
        _check_shape(spec.shape, message, kind)


def _check(kind: FieldType, value: object, path: str) -> None:
    if isinstance(kind, Obj):
        _check_shape(kind.shape, value, path)
    elif isinstance(kind, ListOf):
        if not isinstance(value, list):
            raise InvalidMessage(path, f"must be an array, got {show(value)}")
        for index, item in enumerate(value):
            _check(kind.item, item, f"{path}[{index}]")
    elif isinstance(kind, AnyOf):
        for option in kind.options:
            try:
                _check(option, value, path)
            except InvalidMessage:
                continue
            return
        raise InvalidMessage(path, f"must be {kind.describe()}, got {show(value)}")
    elif isinstance(kind, Tagged):
        if not isinstance(value, dict):
            raise InvalidMessage(path, f"must be a map, got {show(value)}")
        tag = value.get("type")
        if not isinstance(tag, str):
            raise InvalidMessage(f"{path}.type", f"must be a string, got {show(tag)}")
        shape = kind.by_type.get(tag)
        if shape is not None:  # else an event type a later server added: ignored
            _check_shape(shape, value, path)
    elif isinstance(kind, Choice):  # error codes: a later server may add some
        if not isinstance(value, str):
            raise InvalidMessage(path, f"must be a string, got {show(value)}")
    else:
        kind.check(value, path)


def _check_shape(shape: Shape, value: object, path: str) -> None:
    """The declared fields of ``shape`` (any others are ignored), then its bounds."""
    if not isinstance(value, dict):
        raise InvalidMessage(path, f"must be a map, got {show(value)}")
    for field in shape.fields:
        if field.name in value:
            where = f"{path}.{field.name}"
            _check(field.type, value[field.name], where)
            ceiling = _CEILINGS.get((shape.ref, field.name))
            if ceiling is not None:
                ceiling.check(value[field.name], where)
        elif field.required:
            raise InvalidMessage(f"{path}.{field.name}", "is required")
    bound = _BOUNDS.get(shape.ref)
    if bound is not None:
        bound(value, path)


def _column_bound(column: Mapping[str, Any], path: str) -> None:
    held = column["down"] + len(column["cards"])
    if held > MAX_CARDS:
        raise InvalidMessage(path, f"holds {held} cards; a column holds at most {MAX_CARDS}")


def _table_bound(table: Mapping[str, Any], path: str) -> None:
    """A view's or a ``restarted`` event's columns, stock and reserve."""
    columns = table["columns"]
    if len(columns) > MAX_CARDS:
        raise InvalidMessage(
            f"{path}.columns", f"has {len(columns)} columns; a table has at most {MAX_CARDS}"
        )
    held = sum(column["down"] + len(column["cards"]) for column in columns)
    held += table["stock"] + len(table["reserve"])
    if held > MAX_CARDS:
        raise InvalidMessage(path, f"has {held} cards in play; a game has at most {MAX_CARDS}")


_BOUNDS: Final[dict[str, Callable[[Mapping[str, Any], str], None]]] = {
    COLUMN_VIEW.ref: _column_bound,
    VIEW.ref: _table_bound,
    EVENTS["restarted"].shape.ref: _table_bound,
}
