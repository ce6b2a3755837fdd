"""PROTOCOL.md's reference sections, rendered from the catalogue.

PROTOCOL.md is prose written by hand with generated regions between marker
lines ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``: the
message, object and event references (fields, types, examples), the error and
close code tables and the limits. ``python -m protocol.docs`` rewrites those
regions in place; ``--check`` only reports whether they are current (a test
does the same). The prose around them is never touched.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from protocol import constants
from protocol.errors import CLOSE_CODES, PROTOCOL_CODES, RULE_CODES
from protocol.events import ENGINE_EVENTS, EVENT_BATCH, SERVER_EVENTS
from protocol.fields import Field, Shape
from protocol.messages import PUSH_SPECS, REPLY_SPECS, REQUEST_SPECS
from protocol.replay import REPLAY_EXAMPLE, REPLAY_SHAPES
from protocol.shapes import SHARED_SHAPES
from protocol.spec import MessageSpec

__all__ = ["DOC_PATH", "main", "regions", "update"]

DOC_PATH = Path(__file__).with_name("PROTOCOL.md")
WIDTH = 96
_REGION = re.compile(
    r"(<!-- generated:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)",
    re.DOTALL,
)


def pretty(value: Any, indent: int = 0) -> str:
    """JSON, one line where it fits in WIDTH, else one item per line."""
    flat = json.dumps(value, ensure_ascii=False)
    if indent + len(flat) <= WIDTH or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(key)}: {pretty(item, indent + 2)}" for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + pretty(item, indent + 2) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _fields_table(fields: Sequence[Field]) -> str:
    rows = (
        (f"`{f.name}`", f.type.describe(md=True), "yes" if f.required else "no", f.doc)
        for f in fields
    )
    return _table(("field", "type", "required", "meaning"), rows)


def _example(example: dict[str, Any]) -> str:
    return "```json\n" + pretty(example) + "\n```"


def _links(kind: str, types: Sequence[str]) -> str:
    return ", ".join(f"[`{type_}`](#{kind}-{type_})" for type_ in types)


def _message(spec: MessageSpec) -> str:
    parts = [
        f'<a id="{spec.shape.ref}"></a>\n\n#### `{spec.type}`',
        spec.doc,
        _fields_table(spec.shape.fields),
    ]
    if spec.replies:
        notes = f"Replies: {_links('reply', spec.replies)}, or [`error`](#reply-error)"
        if spec.errors:
            notes += " (" + ", ".join(f"`{code}`" for code in spec.errors) + ")"
        parts.append(notes + "; and those [any request](#any-request) may get.")
    parts += [_example(example) for example in spec.examples]
    return "\n\n".join(parts)


def _shape(shape: Shape) -> str:
    heading = f'<a id="{shape.ref}"></a>\n\n#### {shape.title}'
    return "\n\n".join((heading, shape.doc, _fields_table(shape.fields)))


def _replay() -> str:
    shapes = "\n\n".join(_shape(shape) for shape in REPLAY_SHAPES)
    return _example(REPLAY_EXAMPLE) + "\n\n" + shapes


def _messages(specs: Sequence[MessageSpec]) -> str:
    return "\n\n".join(_message(spec) for spec in specs)


def _codes(codes: dict[str, str]) -> str:
    return _table(("code", "meaning"), ((f"`{code}`", doc) for code, doc in codes.items()))


def _close_codes() -> str:
    return _table(("code", "meaning"), ((str(code), doc) for code, doc in CLOSE_CODES.items()))


def _limits() -> str:
    rows = (
        ("client frame", f"{constants.MAX_FRAME_BYTES} bytes; larger closes with 1009"),
        ("server frame", f"at most {constants.MAX_SERVER_FRAME_BYTES} bytes; accept up to this"),
        (
            "abuse",
            f"more than {constants.ABUSE_LIMIT} `bad_request` or `rate_limited` replies within "
            f"{constants.ABUSE_WINDOW_SECONDS:g} s to one address close its connection with "
            "1008 (the server's defaults; an operator may set others)",
        ),
        (
            "control frames",
            "WebSocket pings, pongs and the fragments of a message: "
            f"{constants.CONTROL_FRAMES_PER_S} a second per connection, "
            f"{constants.CONTROL_FRAMES_BURST} at once; one more closes it with 1008 "
            "(a ping past the limit gets no pong)",
        ),
        (
            "replay page",
            f"at most {constants.REPLAY_PAGE_ACTIONS} actions per `replay` reply; "
            "`next` asks for the rest",
        ),
        (
            "games list",
            f"the newest {constants.GAMES_LIST_LIMIT} games (of the `status` asked for) "
            "per `games` reply",
        ),
        (
            "open games",
            f"{constants.OPEN_GAMES_LIMIT} per connection; one more closes the finished game "
            "opened first (section 4)",
        ),
        (
            "request `id`",
            f"an int within -(2^53-1)..2^53-1, or a string of 1..{constants.MAX_ID_CHARS} "
            "characters, NUL (U+0000) not among them",
        ),
        (
            "player name",
            f"1..{constants.MAX_NAME_CHARS} printable characters, as sent and as stored "
            "(trimmed, in NFC: `register`)",
        ),
        ("`client` in hello", f"1..{constants.MAX_CLIENT_CHARS} characters"),
        ("`card`", f"1..{constants.MAX_CARD_CHARS} characters"),
        ("`token`", f"1..{constants.MAX_TOKEN_CHARS} characters"),
        ("any integer", "-(2^53-1)..2^53-1 (exact in a JavaScript number), ids included"),
        ("deal number", "1..2^53-1 (docs/deals.md)"),
    )
    return _table(("what", "limit"), rows)


def regions() -> dict[str, str]:
    """Each generated region's body, by name."""
    return {
        "limits": _limits(),
        "close-codes": _close_codes(),
        "protocol-codes": _codes(PROTOCOL_CODES),
        "rule-codes": _codes(RULE_CODES),
        "requests": _messages(REQUEST_SPECS),
        "replies": _messages(REPLY_SPECS),
        "pushes": _messages(PUSH_SPECS),
        "objects": "\n\n".join(_shape(shape) for shape in (*SHARED_SHAPES, EVENT_BATCH)),
        "engine-events": _messages(ENGINE_EVENTS),
        "server-events": _messages(SERVER_EVENTS),
        "replay": _replay(),
    }


def update(text: str) -> str:
    """``text`` with every generated region re-rendered; every region must be present."""
    bodies = regions()
    found = {match["name"] for match in _REGION.finditer(text)}
    if found != bodies.keys():
        missing, unknown = sorted(bodies.keys() - found), sorted(found - bodies.keys())
        raise ValueError(f"generated regions missing: {missing}; unknown: {unknown}")

    def fill(match: re.Match[str]) -> str:
        return f"{match[1]}\n{bodies[match['name']]}\n\n{match[4]}"

    return _REGION.sub(fill, text)


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite PROTOCOL.md's generated regions; with ``--check``, only compare."""
    current = DOC_PATH.read_text(encoding="utf-8")
    fresh = update(current)
    if "--check" in (sys.argv[1:] if argv is None else argv):
        if fresh != current:
            print("protocol/PROTOCOL.md is stale: run python -m protocol.docs", file=sys.stderr)
        return int(fresh != current)
    DOC_PATH.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
