"""A real server for the CLI tests (SQLite in ``tmp_path``) and a way to run the CLI in-process.

``cli(*args, lines=[...])`` runs ``scorpion ARGS`` against the server in script
mode with ``lines`` as standard input and returns the exit status and output;
the config directory is private to the test.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path

import pytest

from clients.cli.app import run
from clients.cli.connection import Connection
from clients.cli.i18n import use
from clients.cli.options import parse_args
from clients.cli.terminal import Terminal
from tests.server.conftest import Running, quiet_settings

CliRunner = Callable[..., Awaitable[tuple[int, str]]]


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    """Each test starts in English (``run`` switches to ``--lang``) and leaves it so."""
    use("en")
    yield
    use("en")


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Running]:
    settings = quiet_settings(tmp_path)
    running = Running(settings)
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return tmp_path / "config"


@pytest.fixture
def cli(server: Running, config_dir: Path) -> CliRunner:
    async def runner(
        *args: str,
        lines: Sequence[str] = (),
        connection_class: type[Connection] = Connection,
        directory: Path | None = None,  # another device's config directory
    ) -> tuple[int, str]:
        out = io.StringIO()
        options = parse_args(["--server", server.url, *args], env={})
        code = await run(
            options,
            Terminal(out, list(lines)),
            connection_class=connection_class,
            config_dir=directory or config_dir,
        )
        return code, out.getvalue()

    return runner
