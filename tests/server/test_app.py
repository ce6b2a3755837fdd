"""Settings, start-up and the schema policy of the composition root."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.app import main
from server.config import Settings, load_settings
from tests.server.store.conftest import _admin, run_isolated


def test_flags_win_over_environment_over_defaults() -> None:
    settings = load_settings(
        ["--port", "9000"], {"SCORPION_PORT": "8000", "SCORPION_HOST": "0.0.0.0"}
    )
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert Settings().store_url == "sqlite+aiosqlite:///data/scorpion.db"
    assert Settings().port == 8765 and Settings().host == "127.0.0.1"
    assert load_settings([], {"SCORPION_MIGRATE": "1"}).migrate is True


def test_migrate_creates_the_sqlite_schema(tmp_path: Path) -> None:
    assert main(["--migrate", "--data-dir", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "scorpion.db").exists()


def test_postgresql_on_an_outdated_schema_is_refused(
    server_postgres_url: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    url = server_postgres_url
    run_isolated(lambda: _admin(url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public"))
    assert main(["--database-url", url, "--port", "0"]) == 2
    assert "scorpion-server --migrate" in capsys.readouterr().err
