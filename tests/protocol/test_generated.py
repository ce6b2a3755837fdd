"""The committed schema.json and PROTOCOL.md match the catalogue, and every
example in PROTOCOL.md, generated or written by hand, is a valid message."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.cards import card_str
from engine.events import Hinted
from engine.game import Game
from engine.levels import get_level
from engine.replay import verify
from protocol import asyncapi, docs, schema, validate_message
from protocol.docs import DOC_PATH, pretty, regions, update
from protocol.events import EVENTS
from protocol.messages import ALL_MESSAGES
from protocol.replay import REPLAY_EXAMPLE
from protocol.schema import SCHEMA_PATH, generate, render
from tests.protocol.schema_check import SchemaChecker

REGENERATE_SCHEMA = ".venv/bin/python -m protocol.schema > protocol/schema.json"
REGENERATE_DOCS = ".venv/bin/python -m protocol.docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_GENERATED = re.compile(r"<!-- generated:([a-z-]+) -->.*?<!-- /generated:\1 -->", re.DOTALL)


def test_schema_json_is_current() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render(), f"protocol/schema.json is stale; regenerate: {REGENERATE_SCHEMA}"


REGENERATE_ASYNCAPI = ".venv/bin/python -m protocol.asyncapi > protocol/asyncapi.json"


def test_asyncapi_json_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    committed = asyncapi.ASYNCAPI_PATH.read_text(encoding="utf-8")
    assert committed == asyncapi.render(), (
        f"protocol/asyncapi.json is stale; regenerate: {REGENERATE_ASYNCAPI}"
    )
    asyncapi.main()
    assert capsys.readouterr().out == committed


def test_asyncapi_carries_every_message_and_schema_definition() -> None:
    document = asyncapi.generate()
    messages = document["components"]["messages"]
    assert set(messages) == {spec.shape.ref for spec in ALL_MESSAGES}
    assert document["components"]["schemas"].keys() == generate()["$defs"].keys()
    assert "#/$defs/" not in asyncapi.render()
    sent = {ref["$ref"].rsplit("/", 1)[1] for ref in document["operations"]["request"]["messages"]}
    assert sent == {ref for ref in messages if ref.startswith("request-")}


def test_protocol_md_is_current() -> None:
    text = DOC_PATH.read_text(encoding="utf-8")
    assert update(text) == text, f"PROTOCOL.md's reference is stale; regenerate: {REGENERATE_DOCS}"


def test_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    schema.main()
    assert capsys.readouterr().out == render()
    assert docs.main(["--check"]) == 0


def test_update_refuses_a_document_without_its_regions() -> None:
    with pytest.raises(ValueError, match="missing"):
        update("# no regions here\n")


def test_every_schema_reference_resolves(checker: SchemaChecker) -> None:
    refs = re.findall(r'"\$ref": "([^"]+)"', render())
    assert refs
    for ref in set(refs):
        checker.resolve(ref)


def test_the_schema_names_the_dialect_and_every_message() -> None:
    document = generate()
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = document["$defs"]
    assert {"request-move", "reply-ack", "push-events", "event-moved", "view"} <= defs.keys()
    assert defs["request-move"]["additionalProperties"] is False
    assert "additionalProperties" not in defs["reply-ack"]


def hand_written_blocks() -> list[tuple[str, str]]:
    """PROTOCOL.md's fenced blocks outside the generated regions: (language, body)."""
    prose = _GENERATED.sub("", DOC_PATH.read_text(encoding="utf-8"))
    return [(match[1], match[2]) for match in _FENCE.finditer(prose)]


def transcript(body: str) -> list[tuple[str, dict[str, Any]]]:
    """``→ {...}`` (client) and ``← {...}`` (server) messages; a message may span lines."""
    messages: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith(("→ ", "← ")):
            messages.append(("client" if line[0] == "→" else "server", [line[2:]]))
        elif messages:
            messages[-1][1].append(line)
    return [(sender, json.loads("\n".join(lines))) for sender, lines in messages]


def documented_messages() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for language, body in hand_written_blocks():
        if language == "json":
            message = json.loads(body)
            found.append(("client" if "id" in message else "server", message))
        elif language == "text":
            found += transcript(body)
    return found


def test_protocol_md_has_hand_written_examples() -> None:
    senders = [sender for sender, _ in documented_messages()]
    assert senders.count("client") >= 8 and senders.count("server") >= 12


@pytest.mark.parametrize(("sender", "message"), documented_messages())
def test_hand_written_examples_are_valid(
    checker: SchemaChecker, sender: str, message: dict[str, Any]
) -> None:
    validate_message(message, sender="client" if sender == "client" else "server")
    union = checker.definition(f"{sender}_message")
    assert checker.problem(message, union) is None


def test_generated_regions_hold_every_example() -> None:
    examples = [example for spec in (*ALL_MESSAGES, *EVENTS.values()) for example in spec.examples]
    examples.append(REPLAY_EXAMPLE)
    text = "\n".join(regions().values())
    assert text.count("```json") == len(examples)
    for example in examples:
        assert pretty(example) in text


def test_the_replay_example_is_a_game_the_engine_replays() -> None:
    """Its first move, 4H to column 7, was no move of hard deal 1 (``verify``: exit 1,
    ``not_one_lower``); and its hint is the one the engine gives at that point."""
    code, result = verify(REPLAY_EXAMPLE)
    assert (code, result["valid"]) == (0, True), result
    actions = REPLAY_EXAMPLE["actions"]
    assert isinstance(actions, list)
    game = Game(get_level("hard"), 1)
    for action in actions[:4]:
        action = dict(action)
        if action["type"] == "move":
            game.move(action["card"], action.get("to"), t=action["t"])
        else:
            getattr(game, action["type"])(t=action["t"])
    hinted, *_ = game.hint()
    assert isinstance(hinted, Hinted) and hinted.card is not None
    suggested: Any = actions[4]["suggested"]
    assert (hinted.action, card_str(hinted.card), hinted.to) == (
        suggested["action"],
        suggested["card"],
        suggested["to"],
    )
