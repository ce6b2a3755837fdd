"""Print a pip constraints file pinning every direct dependency to its lowest allowed version.

Reads ``pyproject.toml``: the server's dependencies and the ``test`` extra.
Each must have a ``>=`` lower bound (the version it is pinned to here); one
without is an error, since nothing would then test the oldest version a user
may have. ``.ci/lowest`` installs with these constraints and runs the tests.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*(.*)$")
LOWER = re.compile(r">=\s*([0-9][0-9A-Za-z.]*)")


def lowest(requirement: str) -> str:
    """``name==lowest`` for one requirement string such as ``sqlalchemy[asyncio]>=2.0.30``."""
    match = REQUIREMENT.match(requirement)
    bound = LOWER.search(match.group(3)) if match else None
    if match is None or bound is None:
        raise SystemExit(f"lowest_bounds: {requirement!r} has no >= lower bound")
    return f"{match.group(1)}=={bound.group(1)}"


def main() -> int:
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    ours = project["name"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    for requirement in requirements:
        if not requirement.startswith(ours):
            print(lowest(requirement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
