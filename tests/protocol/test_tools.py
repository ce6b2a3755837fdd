"""Third-party tools read the generated files as a frontend author would.

- json-schema-to-typescript turns schema.json into TypeScript declarations:
  every definition gets its own name, with no numbered duplicates (``Hint1``,
  ``Hint2``) that colliding titles would produce;
- @asyncapi/parser validates asyncapi.json against the AsyncAPI 3 specification
  (structure, references, and every message example against its payload).

Both run under Node.js from ``tests/protocol/ts/`` (``npm ci`` there installs the
pinned versions of package-lock.json; ``.ci/run`` does it). Without Node.js or
those packages the tests skip, saying why.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from protocol.asyncapi import ASYNCAPI_PATH, generate
from protocol.schema import SCHEMA_PATH

TOOLS = Path(__file__).with_name("ts")
_EXPORT = re.compile(r"^export (?:interface|type) (\w+)", re.MULTILINE)


def node_tool(command: str, path: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the TypeScript and AsyncAPI checks need it")
    if not (TOOLS / "node_modules").is_dir():
        pytest.skip(f"the npm packages are not installed: run `npm ci` in {TOOLS}")
    return subprocess.run(
        [node, str(TOOLS / "check.mjs"), command, str(path)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_typescript_from_the_schema_names_every_definition_once() -> None:
    run = node_tool("typescript", SCHEMA_PATH)
    assert run.returncode == 0, run.stderr
    names = _EXPORT.findall(run.stdout)
    assert len(names) == len(set(names))
    numbered = [name for name in names if name[-1].isdigit()]
    assert not numbered, f"numbered duplicates: {numbered}"
    expected = {
        "HintRequest",
        "HintReply",
        "HintEvent",
        "GamesRequest",
        "GamesReply",
        "StatsRow",
        "View",
        "Replay",
        "MoveReplayAction",
        "VerifyResultValid",
    }
    assert expected <= set(names)


def diagnostics(path: Path) -> tuple[int, list[dict[str, Any]]]:
    run = node_tool("asyncapi", path)
    assert run.returncode in (0, 1), run.stderr
    found: list[dict[str, Any]] = json.loads(run.stdout)
    return run.returncode, found


def test_the_asyncapi_document_is_valid_asyncapi_3() -> None:
    status, found = diagnostics(ASYNCAPI_PATH)
    errors = [each for each in found if each["severity"] == 0]
    assert (status, errors) == (0, [])


def test_the_asyncapi_check_finds_a_broken_document(tmp_path: Path) -> None:
    """The check above can fail: an AsyncAPI 2 action and a dangling payload reference."""
    document = generate()
    document["operations"]["request"]["action"] = "publish"
    message = document["components"]["messages"]["request-move"]
    message["payload"]["$ref"] = "#/components/schemas/no-such-definition"
    broken = tmp_path / "asyncapi.json"
    broken.write_text(json.dumps(document), encoding="utf-8")
    status, found = diagnostics(broken)
    paths = {each["path"] for each in found if each["severity"] == 0}
    assert status == 1
    assert "operations/request/action" in paths, paths
    assert "components/messages/request-move/payload/$ref" in paths, paths


def test_every_definition_is_in_the_typescript() -> None:
    run = node_tool("typescript", SCHEMA_PATH)
    names = set(_EXPORT.findall(run.stdout))
    titles = {
        definition["title"] for definition in json.loads(SCHEMA_PATH.read_text())["$defs"].values()
    }
    assert len(titles) == len(json.loads(SCHEMA_PATH.read_text())["$defs"])  # unique titles
    pascal = {"".join(re.findall(r"[A-Za-z0-9]+", title.title())) for title in titles}
    assert pascal <= names, pascal - names
