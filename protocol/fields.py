"""The declarative field types every message is described with.

A message is declared, never hand-parsed. Each field names a *field type*, a
small frozen value (``Int``, ``Str``, ``Bool``, ``Float``, ``Null``, ``AnyOf``,
``ListOf``, ``Obj``, ``Tagged``, ``AnyMap``), and every field type can be read
three ways:

- ``check(value, path)`` validates a decoded value and raises InvalidMessage
  naming ``path`` (the codec, and tests of outbound messages);
- ``schema()`` is its JSON Schema (draft 2020-12) fragment (``protocol.schema``);
- ``describe(md)`` is a short phrase for error messages and, with ``md``,
  for PROTOCOL.md's tables (``protocol.docs``).

Three readings of one declaration are what keep the codec, the schema and the
documentation from drifting apart.

A ``Shape`` is a named map of ``Field``\\ s. Checking is always strict: a key
the shape does not declare is an error, so every field the server sends must
be declared too. In the *schema*, shapes marked ``extensible`` (what the
server sends) allow unknown keys, because clients must ignore fields a later
server adds (PROTOCOL.md, versioning); requests are closed.

Wire semantics: an integer is a msgpack integer (never a float, never a
boolean); strings are msgpack str (UTF-8), lengths count code points.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from protocol.constants import MAX_SAFE_INT
from protocol.errors import InvalidMessage

__all__ = [
    "AnyMap",
    "AnyOf",
    "Bool",
    "Choice",
    "Field",
    "FieldType",
    "Float",
    "Int",
    "ListOf",
    "Null",
    "Obj",
    "Shape",
    "Str",
    "Tagged",
    "show",
]

_CONTROL_CHARS = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"


class FieldType(Protocol):
    """What every field type can do (see the module docstring)."""

    def check(self, value: object, path: str) -> None: ...

    def schema(self) -> dict[str, Any]: ...

    def describe(self, md: bool = False) -> str: ...


def show(value: object) -> str:
    """A short, safe rendering of a peer's value for an error message."""
    names = {type(None): "nil", bool: "a boolean", float: "a float", bytes: "binary data"}
    if type(value) in names:
        return names[type(value)]
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list | tuple):
        return "an array"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _num(n: int) -> str:
    """``10^20``, ``2^53-1`` and ``-(2^53-1)`` instead of sixteen digits."""
    for power in range(16, 65):
        for delta, suffix in ((0, ""), (1, "-1")):
            if abs(n) == 2**power - delta:
                text = f"2^{power}{suffix}"
                return text if n >= 0 else f"-({text})" if suffix else f"-{text}"
    if abs(n) >= 10**6 and str(abs(n)).rstrip("0") == "1":
        return f"{'-' if n < 0 else ''}10^{len(str(abs(n))) - 1}"
    return str(n)


def _quote(text: str, md: bool) -> str:
    return f"`{text}`" if md else f'"{text}"'


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, float) or _is_int(value)


@dataclass(frozen=True, slots=True)
class Int:
    """A msgpack integer in ``min..max`` (inclusive), or one of ``choices``.

    A bound left out is the JavaScript-safe one (``MAX_SAFE_INT``, 2^53-1):
    no integer on the wire is ever larger in magnitude.
    """

    min: int = -MAX_SAFE_INT
    max: int = MAX_SAFE_INT
    choices: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not -MAX_SAFE_INT <= self.min <= self.max <= MAX_SAFE_INT:
            raise ValueError(f"Int({self.min}, {self.max}) leaves the safe integer range")

    def check(self, value: object, path: str) -> None:
        if type(value) is int and not self.choices and self.min <= value <= self.max:
            return  # the common case, decided at once
        if not _is_int(value) or not self._fits(value):
            raise InvalidMessage(path, f"must be {self.describe()}, got {show(value)}")

    def _fits(self, value: int) -> bool:
        if self.choices:
            return value in self.choices
        return self.min <= value <= self.max

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer"}
        if len(self.choices) == 1:
            return {**out, "const": self.choices[0]}  # the type keeps 1.0 out of a const 1
        if self.choices:
            return {**out, "enum": list(self.choices)}
        return {**out, "minimum": self.min, "maximum": self.max}

    def describe(self, md: bool = False) -> str:
        if self.choices:
            return " or ".join(str(choice) for choice in self.choices)
        return f"int in {_num(self.min)}..{_num(self.max)}"


@dataclass(frozen=True, slots=True)
class Float:
    """A number in ``min..max`` (no ``max``: any finite number from ``min``); a msgpack
    float (an integer is accepted too)."""

    min: float
    max: float | None = None

    def check(self, value: object, path: str) -> None:
        if (
            not _is_number(value)
            or (isinstance(value, float) and not math.isfinite(value))
            or value < self.min
            or (self.max is not None and value > self.max)
        ):
            raise InvalidMessage(path, f"must be {self.describe()}, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        if self.max is None:
            return {"type": "number", "minimum": self.min}
        return {"type": "number", "minimum": self.min, "maximum": self.max}

    def describe(self, md: bool = False) -> str:
        if self.max is None:
            return f"float of at least {self.min:g}"
        return f"float in {self.min:g}..{self.max:g}"


@dataclass(frozen=True, slots=True)
class Str:
    """A string: a length range, or one of ``choices``, or a ``pattern``.

    ``pattern`` is matched against the whole string (the schema anchors it
    with ``^...$``; keep it to syntax ECMA-262 and Python's ``re`` share).
    ``printable`` means ``str.isprintable()``; the schema can state only part
    of that (no control characters), the rest is in its description.
    ``no_nul``: any character but NUL (U+0000), which PostgreSQL cannot store in text.
    ``label`` names the string in documentation instead of its constraints,
    linking to ``anchor`` (e.g. "card").
    """

    min_len: int = 0
    max_len: int | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    printable: bool = False
    no_nul: bool = False
    format: str | None = None
    label: str | None = None
    anchor: str | None = None

    def __post_init__(self) -> None:
        if (self.printable or self.no_nul) and self.pattern is not None:
            raise ValueError("a printable string cannot have a pattern too (the schema has one)")

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, str) or not self._fits(value):
            raise InvalidMessage(path, f"must be {self.describe()}, got {show(value)}")

    def _fits(self, value: str) -> bool:
        if self.choices:
            return value in self.choices
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            return False
        if self.pattern is not None and re.fullmatch(self.pattern, value) is None:
            return False
        if self.no_nul and "\x00" in value:
            return False
        return value.isprintable() or not self.printable

    def schema(self) -> dict[str, Any]:
        if len(self.choices) == 1:
            return {"const": self.choices[0]}
        if self.choices:
            return {"enum": list(self.choices)}
        out: dict[str, Any] = {"type": "string"}
        if self.min_len:
            out["minLength"] = self.min_len
        if self.max_len is not None:
            out["maxLength"] = self.max_len
        if self.pattern is not None:
            out["pattern"] = f"^(?:{self.pattern})$"
        if self.no_nul:
            out["pattern"] = "^[^\\u0000]*$"
        if self.printable:
            out["pattern"] = _CONTROL_CHARS
            out["description"] = "printable: letters, marks, numbers, punctuation, symbols, space"
        if self.format is not None:
            out["format"] = self.format
        return out

    def describe(self, md: bool = False) -> str:
        if self.label is not None:
            return f"[{self.label}](#{self.anchor})" if md and self.anchor else self.label
        if self.choices:
            quoted = [_quote(choice, md) for choice in self.choices]
            return quoted[0] if len(quoted) == 1 else "one of " + ", ".join(quoted)
        words = ["printable string" if self.printable else "string"]
        if self.max_len is not None:
            words.append(f"of {self.min_len}..{self.max_len} chars")
        if self.no_nul:
            words.append("without NUL")
        if self.format is not None:
            words.append(f"({'ISO-8601' if self.format == 'date-time' else self.format})")
        elif self.pattern is not None:
            words.append(f"matching {_quote(self.pattern, md)}")
        return " ".join(words)


@dataclass(frozen=True, slots=True)
class Choice:
    """One of a fixed set of strings, each with a meaning (error codes)."""

    title: str
    anchor: str
    options: Mapping[str, str]

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, str) or value not in self.options:
            raise InvalidMessage(path, f"must be {self.describe()}, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        return {"oneOf": [{"const": key, "description": doc} for key, doc in self.options.items()]}

    def describe(self, md: bool = False) -> str:
        return f"[{self.title}](#{self.anchor})" if md else f"a known {self.title}"


@dataclass(frozen=True, slots=True)
class Bool:
    def check(self, value: object, path: str) -> None:
        if not isinstance(value, bool):
            raise InvalidMessage(path, f"must be a boolean, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def describe(self, md: bool = False) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class Null:
    def check(self, value: object, path: str) -> None:
        if value is not None:
            raise InvalidMessage(path, f"must be nil, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        return {"type": "null"}

    def describe(self, md: bool = False) -> str:
        return "null"


@dataclass(frozen=True, slots=True)
class AnyOf:
    """A value of any one of ``options`` (e.g. an int or null)."""

    options: tuple[FieldType, ...]

    def check(self, value: object, path: str) -> None:
        for option in self.options:
            try:
                option.check(value, path)
            except InvalidMessage:
                continue
            return
        raise InvalidMessage(path, f"must be {self.describe()}, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [option.schema() for option in self.options]}

    def describe(self, md: bool = False) -> str:
        return " or ".join(option.describe(md) for option in self.options)


@dataclass(frozen=True, slots=True)
class ListOf:
    """An array whose every item is ``item``."""

    item: FieldType

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, list):
            raise InvalidMessage(path, f"must be an array, got {show(value)}")
        for index, element in enumerate(value):
            self.item.check(element, f"{path}[{index}]")

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema()}

    def describe(self, md: bool = False) -> str:
        return f"list of {self.item.describe(md)}"


@dataclass(frozen=True, slots=True)
class AnyMap:
    """A map with string keys whose content this protocol does not declare."""

    doc: str

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise InvalidMessage(path, f"must be a map with string keys, got {show(value)}")

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "description": self.doc}

    def describe(self, md: bool = False) -> str:
        return "map"


@dataclass(frozen=True, slots=True)
class Field:
    """One key of a shape: its type, whether it may be left out, what it means."""

    name: str
    type: FieldType
    doc: str
    required: bool = True


@dataclass(frozen=True, slots=True)
class Shape:
    """A map with declared keys (see the module docstring for strictness).

    ``ref`` is the shape's key in the schema's ``$defs`` and its anchor in
    PROTOCOL.md; ``title`` is how documentation names it.
    """

    ref: str
    title: str
    fields: tuple[Field, ...]
    doc: str = ""
    extensible: bool = False
    declared: frozenset[str] = field(init=False, repr=False, compare=False)  # every field
    optional: frozenset[str] = field(init=False, repr=False, compare=False)  # not required

    def __post_init__(self) -> None:
        object.__setattr__(self, "declared", frozenset(each.name for each in self.fields))
        optional = frozenset(each.name for each in self.fields if not each.required)
        object.__setattr__(self, "optional", optional)

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, dict):
            raise InvalidMessage(path, f"must be a map, got {show(value)}")
        self._check_keys(value, path)
        for each in self.fields:
            if each.name in value:
                each.type.check(value[each.name], f"{path}.{each.name}")
            elif each.required:
                raise InvalidMessage(f"{path}.{each.name}", "is required")

    def _check_keys(self, value: Mapping[object, object], path: str) -> None:
        declared = self.declared
        for key in value:
            if not isinstance(key, str):
                raise InvalidMessage(path, f"has a key that is not a string: {show(key)}")
            if key not in declared:
                raise InvalidMessage(path, f"has an unknown field {show(key)}")

    def get(self, name: str) -> Field:
        return next(field for field in self.fields if field.name == name)

    def schema(self) -> dict[str, Any]:
        """The full definition (for ``$defs``); ``Obj`` refers to it."""
        out: dict[str, Any] = {"type": "object", "title": self.title}
        if self.doc:
            out["description"] = self.doc
        out["properties"] = {field.name: _property(field) for field in self.fields}
        out["required"] = [field.name for field in self.fields if field.required]
        if not self.extensible:
            out["additionalProperties"] = False
        return out


def _property(field: Field) -> dict[str, Any]:
    """A field's schema with its doc as the description ($ref siblings stay bare)."""
    schema = field.type.schema()
    if not field.doc or "$ref" in schema:
        return schema
    own = schema.pop("description", None)
    description = f"{field.doc} ({own})" if own else field.doc
    return {"description": description, **schema}


@dataclass(frozen=True, slots=True)
class Obj:
    """A nested map of a named shape (a ``$ref`` in the schema)."""

    shape: Shape

    def check(self, value: object, path: str) -> None:
        self.shape.check(value, path)

    def schema(self) -> dict[str, Any]:
        return {"$ref": f"#/$defs/{self.shape.ref}"}

    def describe(self, md: bool = False) -> str:
        return f"[{self.shape.title}](#{self.shape.ref})" if md else self.shape.title


@dataclass(frozen=True, slots=True)
class Tagged:
    """A map that is one of ``shapes``, chosen by its ``type`` key (events)."""

    ref: str
    title: str
    shapes: tuple[Shape, ...]
    by_type: dict[str, Shape] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index = {shape.get("type").type.schema()["const"]: shape for shape in self.shapes}
        object.__setattr__(self, "by_type", index)

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, dict):
            raise InvalidMessage(path, f"must be a map, got {show(value)}")
        kind = value.get("type")
        shape = self.by_type.get(kind) if isinstance(kind, str) else None
        if shape is None:
            raise InvalidMessage(f"{path}.type", f"is not a known {self.title} type")
        shape.check(value, path)

    def schema(self) -> dict[str, Any]:
        return {"$ref": f"#/$defs/{self.ref}"}

    def definition(self) -> dict[str, Any]:
        return {"title": self.title, "oneOf": [Obj(shape).schema() for shape in self.shapes]}

    def describe(self, md: bool = False) -> str:
        return f"[{self.title}](#{self.ref})" if md else self.title
