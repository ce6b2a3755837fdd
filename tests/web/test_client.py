"""The web client's own tests, run from here so ``make test`` runs them.

- its wire types (``clients/web/src/wire.ts``) are what ``protocol/schema.json``
  gives today (``npm run wire`` writes them);
- its units (Vitest): applying events to the board, formatting, the strings;
- end to end (Playwright, Debian's Chromium): a build of the client in a
  temporary directory, served by real servers the tests start
  (``SCORPION_WEB_DIR`` points them at that build).

They need Node.js and the packages of ``clients/web/package-lock.json``
(``npm ci`` there; ``.ci/run`` does it), and Chromium for the end-to-end part
(``SCORPION_CHROMIUM``, default ``/usr/bin/chromium``); without them they skip,
saying which is missing, unless ``SCORPION_REQUIRE_WEB`` is set (``.ci/run``
sets it): then a missing tool fails them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

WEB = Path(__file__).resolve().parents[2] / "clients" / "web"
CHROMIUM = os.environ.get("SCORPION_CHROMIUM", "/usr/bin/chromium")


def missing(reason: str) -> NoReturn:
    if os.environ.get("SCORPION_REQUIRE_WEB"):
        pytest.fail(f"SCORPION_REQUIRE_WEB is set, but {reason}")
    pytest.skip(reason)


def npx() -> str:
    found = shutil.which("npx")
    if found is None or shutil.which("node") is None:
        missing("Node.js is not installed: the web client's tests need Node.js 20 and npm")
    if not (WEB / "node_modules").is_dir():
        missing(f"the web client's npm packages are not installed: run `npm ci` in {WEB}")
    return found


def run(args: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        args,
        cwd=WEB,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "CI": "1", **(env or {})},
    )
    assert done.returncode == 0, (
        f"{' '.join(args)} failed:\n{done.stdout[-8000:]}\n{done.stderr[-4000:]}"
    )


def test_the_wire_types_are_generated_from_todays_schema() -> None:
    npx()
    run([shutil.which("node") or "node", "scripts/wire.mjs", "check"], 120)


def test_the_units() -> None:
    run([npx(), "vitest", "run"], 240)


def test_end_to_end_in_chromium(tmp_path: Path) -> None:
    tool = npx()
    if not Path(CHROMIUM).is_file():
        missing(f"Chromium is not installed at {CHROMIUM}: apt-get install chromium")
    build = tmp_path / "web"
    run([tool, "tsc", "--noEmit"], 240)
    run([tool, "vite", "build", "--outDir", str(build), "--emptyOutDir", "--logLevel", "warn"], 240)
    env = {"SCORPION_WEB_DIR": str(build), "SCORPION_PYTHON": sys.executable}
    # about 6 minutes beside the other tests on 2 cores; 14 on a machine loaded three
    # times over: the bound is for a run that hangs, not a slow one
    run([tool, "playwright", "test"], 1500, env)
