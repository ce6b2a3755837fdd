"""The Scorpion solver: decides positions as won (with a solution), lost (proved) or unknown.

Pure and synchronous like the rest of the engine. ``search`` holds the
depth-first search, ``prune`` the pruning rules and their soundness arguments;
``native`` loads the same search compiled from ``native.c`` (about 20 times
faster), which ``solve`` uses whenever it is built.
"""

from __future__ import annotations

from engine.solver.search import Verdict, solve

__all__ = ["Verdict", "solve"]
