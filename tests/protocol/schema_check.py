"""A small JSON Schema (draft 2020-12) checker for the keywords schema.py emits.

The project has no jsonschema dependency; this covers exactly the subset the
generator uses, and refuses any other keyword, so the tests notice when the
generator starts emitting something this checker would silently ignore.
Types follow the wire: "integer" is a Python int that is not a bool (msgpack
has no integral floats), "number" an int or float.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["SchemaChecker"]

_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "format"}
_TYPES: dict[str, Callable[[object], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


class SchemaChecker:
    """``problem(instance, schema)``: None when valid, else why (with a JSON path)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"only local refs are supported: {ref}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        assert isinstance(node, dict)
        return node

    def definition(self, name: str) -> dict[str, Any]:
        return self.resolve(f"#/$defs/{name}")

    def problem(self, instance: object, schema: dict[str, Any], path: str = "$") -> str | None:
        for keyword, argument in schema.items():
            if keyword in _ANNOTATIONS:
                continue
            check = getattr(self, "_" + keyword.lstrip("$"), None)
            if check is None:
                raise ValueError(f"schema keyword {keyword!r} is not supported by the checker")
            found: str | None = check(instance, argument, schema, path)
            if found is not None:
                return found
        return None

    def valid(self, instance: object, schema: dict[str, Any]) -> bool:
        return self.problem(instance, schema) is None

    # -- keywords: each returns None or a problem ------------------------------

    def _ref(self, instance: object, ref: str, _: Any, path: str) -> str | None:
        return self.problem(instance, self.resolve(ref), path)

    def _anyOf(self, instance: object, options: list[Any], _: Any, path: str) -> str | None:
        if any(self.problem(instance, option, path) is None for option in options):
            return None
        return f"{path}: matches none of anyOf"

    def _oneOf(self, instance: object, options: list[Any], _: Any, path: str) -> str | None:
        matches = sum(self.problem(instance, option, path) is None for option in options)
        return None if matches == 1 else f"{path}: matches {matches} of oneOf"

    def _type(self, instance: object, name: str, _: Any, path: str) -> str | None:
        return None if _TYPES[name](instance) else f"{path}: not of type {name}"

    def _const(self, instance: object, value: object, _: Any, path: str) -> str | None:
        same = _TYPES["boolean"](instance) == _TYPES["boolean"](value) and instance == value
        return None if same else f"{path}: is not {value!r}"

    def _enum(self, instance: object, values: list[Any], _: Any, path: str) -> str | None:
        found = any(self._const(instance, value, None, path) is None for value in values)
        return None if found else f"{path}: not in enum"

    def _minimum(self, instance: object, low: float, _: Any, path: str) -> str | None:
        below = _TYPES["number"](instance) and instance < low  # type: ignore[operator]
        return f"{path}: below {low}" if below else None

    def _maximum(self, instance: object, high: float, _: Any, path: str) -> str | None:
        above = _TYPES["number"](instance) and instance > high  # type: ignore[operator]
        return f"{path}: above {high}" if above else None

    def _minLength(self, instance: object, low: int, _: Any, path: str) -> str | None:
        short = isinstance(instance, str) and len(instance) < low
        return f"{path}: shorter than {low}" if short else None

    def _maxLength(self, instance: object, high: int, _: Any, path: str) -> str | None:
        long = isinstance(instance, str) and len(instance) > high
        return f"{path}: longer than {high}" if long else None

    def _pattern(self, instance: object, pattern: str, _: Any, path: str) -> str | None:
        mismatch = isinstance(instance, str) and re.search(pattern, instance) is None
        return f"{path}: does not match {pattern}" if mismatch else None

    def _required(self, instance: object, names: list[str], _: Any, path: str) -> str | None:
        if not isinstance(instance, dict):
            return None
        missing = [name for name in names if name not in instance]
        return f"{path}: lacks {missing}" if missing else None

    def _properties(
        self, instance: object, properties: dict[str, Any], _: Any, path: str
    ) -> str | None:
        if not isinstance(instance, dict):
            return None
        for name, schema in properties.items():
            if name in instance:
                found = self.problem(instance[name], schema, f"{path}.{name}")
                if found is not None:
                    return found
        return None

    def _additionalProperties(
        self, instance: object, allowed: bool, schema: dict[str, Any], path: str
    ) -> str | None:
        if allowed is not False or not isinstance(instance, dict):
            return None
        extra = set(instance) - set(schema.get("properties", {}))
        return f"{path}: unexpected {sorted(extra)}" if extra else None

    def _items(self, instance: object, item: dict[str, Any], _: Any, path: str) -> str | None:
        if not isinstance(instance, list):
            return None
        for index, element in enumerate(instance):
            found = self.problem(element, item, f"{path}[{index}]")
            if found is not None:
                return found
        return None
