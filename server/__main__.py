"""``python -m server`` and the ``scorpion-server`` console script.

Loading the server takes a second or so (SQLAlchemy, websockets, ...). Ctrl-C
meanwhile would stop the import with a ``KeyboardInterrupt`` traceback; it ends the
process as the signal's default does instead (status 130 in a shell, nothing
printed), as SIGTERM does then. Once loaded, ``server.app.main`` takes Ctrl-C up.
"""

from __future__ import annotations

# The C module the interpreter has loaded already: ``signal`` itself imports enum, and a
# Ctrl-C 0.1 s after the start, during that import, still printed a traceback.
import _signal  # type: ignore[import-not-found]  # no stub: the C half of signal
import sys

__all__ = ["main"]


def main() -> int:
    loading_quietly = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    if loading_quietly:  # not when SIGINT is ignored (a background job): that stays so
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    from server.app import main as serve

    if loading_quietly:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    return serve()


if __name__ == "__main__":
    sys.exit(main())
