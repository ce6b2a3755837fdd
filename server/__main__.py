"""``python -m server``: the same as the ``scorpion-server`` console script."""

from __future__ import annotations

import sys

from server.app import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
