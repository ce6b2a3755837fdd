"""A deal the server proves lost at once (hard deal 1), as the terminal client says it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clients.cli.connection import Connection, Message
from tests.cli.conftest import CliRunner
from tests.server.conftest import Running, quiet_settings

LOST_DEAL, WON_DEAL = 1, 5  # hard: proved lost at once, and won (test_lost_at_deal.py)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Running]:
    """The CLI tests' server, with the check of a deal at its start (``lost_budget_ms``).
    Two workers: with one, the check of the lost deal was skipped (optional work) while
    the won deal's, started just before, still held it (a loaded machine's CI)."""
    settings = quiet_settings(tmp_path, workers=2, lost_budget_ms=10_000)
    running = Running(settings)
    await running.start()
    yield running
    await running.stop()


class _VerdictBeforeTheReplyIsTaken(Connection):
    """A new game on the lost deal: its reply is taken only once the deal's verdict has
    been pushed (the push then waits, held, until the reply is taken), as on a slow
    client. The verdict is waited for, not a fixed time: on a loaded machine it came
    after the half second once slept here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.verdicts: set[int] = set()  # the games a ``lost_position`` was pushed for
        self.verdict = asyncio.Event()

    def _dispatch(self, message: Message) -> None:
        if message.get("type") == "events" and any(
            event.get("type") == "lost_position" for event in message.get("events", ())
        ):
            self.verdicts.add(message["game"])
            self.verdict.set()
        super()._dispatch(message)

    async def request(self, type_: str, **fields: Any) -> Message:
        reply = await super().request(type_, **fields)
        if type_ == "new_game" and fields.get("deal") == LOST_DEAL and reply.get("type") == "game":
            game = reply["game"]
            async with asyncio.timeout(60):  # the verdict never came: the asserts say so
                while game not in self.verdicts:
                    self.verdict.clear()
                    await self.verdict.wait()
        return reply


async def test_the_lost_deal_is_said_after_its_board_and_its_hint_says_so(
    cli: CliRunner,
) -> None:
    """It was said before the new game's board, after the line that the game before was
    abandoned, as if of that one; and ``h`` at the deal named a move and nothing more
    (a second ``h`` too, once the first had said it: the hint's version cleared it)."""
    assert (await cli("register", "ada"))[0] == 0
    lines = ["b", f"n! hard {LOST_DEAL}", "h", "h", "q"]  # not the script's first: a game before
    code, out = await cli(
        "play",
        "--level",
        "hard",
        "--deal",
        str(WON_DEAL),
        lines=lines,
        connection_class=_VerdictBeforeTheReplyIsTaken,
    )
    assert code == 0, out
    abandoned = re.search(r"game \d+ was abandoned and counts as lost", out)
    header = out.find(f"· hard · deal {LOST_DEAL}")
    said = out.find("this deal cannot be won: the solver proved it lost from the start")
    assert out.count("this deal cannot be won: the solver proved") == 1, out  # not deal 5
    assert abandoned is not None and abandoned.end() < header < said, out
    assert out.count("hint: move 7♣ to column 5, though this deal cannot be won") == 2, out


async def test_a_deal_lost_from_the_start_is_said_lost_once(cli: CliRunner) -> None:
    """The server tells it at each version (the deal stays lost, whatever is played):
    the line came after every move, deal and undo."""
    assert (await cli("register", "ada"))[0] == 0
    lines = ["7c 5", "h", "5c 3", "d", "u", "q"]
    code, out = await cli(
        "play",
        "--level",
        "hard",
        "--deal",
        str(LOST_DEAL),
        lines=lines,
        connection_class=_VerdictBeforeTheReplyIsTaken,  # said before the first move
    )
    assert code == 0, out
    assert out.count("this deal cannot be won: the solver proved it lost") == 1, out
