"""``MessageSpec``: one message type declared as data.

A spec names the type, its ``Kind`` (who sends it and how), its own fields,
a one-paragraph description and at least one example. The envelope follows
from the kind, so no spec repeats it:

========  ======================  =========================================
kind      envelope                sent
========  ======================  =========================================
request   ``type``, ``id``        client -> server; gets exactly one reply
reply     ``type``, ``re``        server -> client, answering request ``re``
push      ``type``                server -> client, unsolicited
event     ``type``                inside a push's ``events`` list
========  ======================  =========================================

``spec.shape`` is the complete map (envelope + fields) the codec checks and
the schema describes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from protocol.fields import Field, Shape, Str
from protocol.shapes import REQUEST_ID

__all__ = ["Kind", "MessageSpec"]


class Kind(StrEnum):
    REQUEST = "request"
    REPLY = "reply"
    PUSH = "push"
    EVENT = "event"


def _envelope(kind: Kind, type_: str, fields: tuple[Field, ...]) -> tuple[Field, ...]:
    tag = Field("type", Str(choices=(type_,)), f"Always `{type_}`.")
    if kind is Kind.REQUEST:
        return (tag, Field("id", REQUEST_ID, "Chosen by the client; the reply's `re`."))
    declared = {each.name for each in fields}
    if kind is Kind.REPLY and "re" not in declared:
        return (tag, Field("re", REQUEST_ID, "The `id` of the request this answers."))
    return (tag,)


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A message type. ``replies`` (requests only) lists its result types;
    ``errors`` the error codes it typically meets besides bad_request."""

    type: str
    kind: Kind
    fields: tuple[Field, ...]
    doc: str
    examples: tuple[dict[str, Any], ...]
    replies: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    shape: Shape = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        everything = _envelope(self.kind, self.type, self.fields) + self.fields
        shape = Shape(
            f"{self.kind}-{self.type}",
            f"{self.type} {self.kind}",  # unique: `hint` names a request, a reply and an event
            everything,
            self.doc,
            extensible=self.kind is not Kind.REQUEST,
        )
        object.__setattr__(self, "shape", shape)
