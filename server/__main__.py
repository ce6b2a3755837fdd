"""``python -m server`` and the ``scorpion-server`` console script.

Loading the server takes a second or so (SQLAlchemy, websockets, ...). Ctrl-C
meanwhile would stop the import with a ``KeyboardInterrupt`` traceback; it ends the
process as the signal's default does instead (status 130 in a shell, nothing
printed), as SIGTERM does then. Once loaded, ``server.app.main`` takes Ctrl-C up.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main() -> int:
    loading_quietly = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if loading_quietly:  # not when SIGINT is ignored (a background job): that stays so
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    from server.app import main as serve

    if loading_quietly:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return serve()


if __name__ == "__main__":
    sys.exit(main())
