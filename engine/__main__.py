"""``python -m engine`` and the ``scorpion-engine`` console script (``engine.cli``).

Loading the engine and its solver takes a tenth of a second or more. Ctrl-C
meanwhile stopped the import with a ``KeyboardInterrupt`` traceback; it ends the
process as the signal's default does instead (status 130 in a shell, nothing
printed), as the server's and the client's entry points do. Once loaded,
``engine.cli.main`` takes Ctrl-C up (exit 130 too). The package's ``__init__``
imports nothing, so this runs first.
"""

from __future__ import annotations

# The C module the interpreter has loaded already (``signal`` itself imports enum).
import _signal  # type: ignore[import-not-found]  # no stub: the C half of signal
import sys

# Not ``typing``'s (a Ctrl-C could land in its import); type checkers take this too.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    loading_quietly = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
    if loading_quietly:  # not when SIGINT is ignored (a background job): that stays so
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    from engine.cli import main as run

    if loading_quietly:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
