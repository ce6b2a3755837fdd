"""Settings, start-up and the schema policy of the composition root."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from server.app import ScorpionServer, main, prepare_store
from server.config import Settings, load_settings
from server.sqlite_lock import SqliteInUse
from server.store import SchemaStatus
from tests.server.conftest import quiet_settings
from tests.server.store.conftest import _admin, run_isolated
from tests.server.store.test_errors import aiosqlite_threads_stopped


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


@pytest.mark.parametrize(
    ("argv", "environ", "named"),
    [
        (["--port", "99999"], {}, "--port (SCORPION_PORT) must be at most 65535, not 99999"),
        (["--listen-backlog", str(2**31)], {}, "--listen-backlog (SCORPION_LISTEN_BACKLOG) must"),
        (["--token-ttl-days", "9" * 20], {}, "--token-ttl-days (SCORPION_TOKEN_TTL_DAYS) must"),
        (["--log-level", "verbose"], {}, "--log-level (SCORPION_LOG_LEVEL) must be one of"),
        (["--commit-batch", "0"], {}, "--commit-batch (SCORPION_COMMIT_BATCH) must be at least 1"),
        (["--log-format", "xml"], {}, "--log-format (SCORPION_LOG_FORMAT) must be text or json"),
        ([], {"SCORPION_WORKERS": "many"}, "--workers (SCORPION_WORKERS) must be an integer"),
        (["--keyfile", "k.pem"], {}, "--keyfile (SCORPION_KEYFILE) needs --certfile"),
        (["--certfile", "/nonexistent.pem"], {}, "--certfile (SCORPION_CERTFILE): no such file"),
        (["--database-url", "mysql://x/y"], {}, "--database-url (SCORPION_DATABASE_URL) must be"),
        ([], {"SCORPION_WEB_DIR": "/nonexistent"}, "--web-dir (SCORPION_WEB_DIR): no index.html"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_code_2(
    argv: list[str],
    environ: dict[str, str],
    named: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion-server: {named}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_every_bad_setting_is_named_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--port", "-1", "--queue-size", "0", "--db-timeout-ms", "0"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[1] for line in lines] == ["--port", "--queue-size", "--db-timeout-ms"]


def test_a_database_that_never_comes_up_ends_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--port", "0", "--database-url", "postgresql+asyncpg://nobody@127.0.0.1:1/none"]
    assert main([*argv, "--db-wait-s", "1", "--easy-pool", "0", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "scorpion-server: cannot use the database" in err and "Traceback" not in err


async def test_start_up_waits_for_the_database_and_logs_each_attempt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The database file cannot be opened (a directory stands in its way) for a while."""
    blocker = tmp_path / "scorpion.db"
    blocker.mkdir()

    async def clear_later() -> None:
        await asyncio.sleep(1.2)
        blocker.rmdir()

    clearing = asyncio.create_task(clear_later())
    settings = Settings(data_dir=str(tmp_path), db_wait_s=20)
    with caplog.at_level(logging.WARNING, logger="server"):
        store = await prepare_store(settings)
    await clearing
    try:
        assert await store.schema_status() is SchemaStatus.CURRENT
    finally:
        await store.close()
        await aiosqlite_threads_stopped()
    waits = [r.getMessage() for r in caplog.records if "not available yet" in r.getMessage()]
    assert len(waits) >= 2, waits
    assert "retrying in 0.5 s" in waits[0] and "retrying in 1.0 s" in waits[1]


def test_a_malformed_flag_is_one_line_and_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--port", "abc"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err == "scorpion-server: argument --port: invalid int value: 'abc' (see --help)\n"


def test_a_port_in_use_ends_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["--port", str(port), "--data-dir", str(tmp_path), "--workers", "1"]
        assert main([*argv, "--easy-pool", "0"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]  # after the start-up log
    assert last.startswith(f"scorpion-server: cannot listen on 127.0.0.1:{port}: ")


async def test_a_first_run_creates_the_data_directory(tmp_path: Path) -> None:
    settings = quiet_settings(tmp_path / "not" / "there yet")
    server = ScorpionServer(settings)
    await server.start()
    await server.stop()
    assert (tmp_path / "not" / "there yet" / "scorpion.db").is_file()


async def test_a_second_server_on_one_sqlite_file_is_refused(tmp_path: Path) -> None:
    settings = quiet_settings(tmp_path)
    first = ScorpionServer(settings)
    await first.start()
    try:
        with pytest.raises(SqliteInUse, match=r"already serves .*scorpion\.db"):
            await ScorpionServer(settings).start()
    finally:
        await first.stop()
    again = ScorpionServer(settings)  # the lock went with the first server
    await again.start()
    await again.stop()


def test_a_second_server_process_on_one_sqlite_file_exits_with_one_line(tmp_path: Path) -> None:
    argv = ["--data-dir", str(tmp_path), "--port", "0", "--workers", "1", "--easy-pool", "0"]
    first = subprocess.Popen([sys.executable, "-m", "server", *argv], stderr=subprocess.PIPE)
    try:
        assert first.stderr is not None
        while b"serving on" not in first.stderr.readline():
            assert first.poll() is None, "the first server did not start"
        second = subprocess.run(
            [sys.executable, "-m", "server", *argv], capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2
        assert second.stderr.splitlines()[-1].startswith(
            "scorpion-server: another scorpion-server already serves "
        )
        assert "Traceback" not in second.stderr
    finally:
        first.kill()
        first.wait()
        if first.stderr is not None:
            first.stderr.close()


def test_serving_freezes_what_start_up_made_and_collects_less_often() -> None:
    # In a child process: freezing and thresholds are process-wide.
    code = (
        "import gc\n"
        "from server.app import GC_THRESHOLDS, tune_collector\n"
        "kept = [[n] for n in range(1000)]\n"
        "assert gc.get_freeze_count() == 0\n"
        "tune_collector()\n"
        "assert gc.get_freeze_count() >= 1000, gc.get_freeze_count()\n"
        "assert gc.get_threshold() == GC_THRESHOLDS and GC_THRESHOLDS[0] > 700\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
