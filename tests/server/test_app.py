"""Settings, start-up and the schema policy of the composition root."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from server.app import ScorpionServer, main, migrate, prepare_store
from server.config import Settings, SettingsError, load_settings, unknown_variables
from server.sqlite_lock import SqliteInUse
from server.store import SchemaStatus
from tests.server.conftest import quiet_settings
from tests.server.store.conftest import _admin, run_isolated
from tests.server.store.test_errors import aiosqlite_threads_stopped

# A path no one can make (/proc takes no new entries): "/nonexistent" was once made by a
# server run with --data-dir under it, and the test of a missing one failed.
NOWHERE = "/proc/scorpion-nowhere"


def test_flags_win_over_environment_over_defaults() -> None:
    settings = load_settings(
        ["--port", "9000"], {"SCORPION_PORT": "8000", "SCORPION_HOST": "0.0.0.0"}
    )
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert Settings().store_url == "sqlite+aiosqlite:///data/scorpion.db"
    assert Settings().port == 8765 and Settings().host == "127.0.0.1"
    assert load_settings([], {"SCORPION_MIGRATE": "1"}).migrate is True


def test_an_unknown_scorpion_variable_is_named_with_the_setting_it_is_near() -> None:
    """A typo such as SCORPION_LOG_LEVL was ignored without a word."""
    environ = {
        "SCORPION_LOG_LEVL": "DEBUG",
        "SCORPION_FOO": "1",
        "SCORPION_PORT": "9000",  # a setting
        "SCORPION_SERVER": "ws://x/",  # the terminal client's
        "SCORPION_TEST_DATABASE_URL": "x",  # the tests'
        "SCORPION_BENCH_PYSPY": "x",  # the benchmarks'
        "OTHER_LOG_LEVL": "x",
    }
    assert unknown_variables(environ) == [
        "SCORPION_FOO is not a setting of the server: ignored",
        "SCORPION_LOG_LEVL is not a setting of the server: ignored "
        "(did you mean SCORPION_LOG_LEVEL?)",
    ]


def test_the_server_warns_of_an_unknown_variable_as_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SCORPION_DATA_DIRR", str(tmp_path / "elsewhere"))
    assert main(["--migrate", "--data-dir", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "SCORPION_DATA_DIRR is not a setting" in err, err
    assert "did you mean SCORPION_DATA_DIR?" in err, err


def test_each_unknown_variable_is_named_in_its_own_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The log's repeat counting took the warnings for one failure: the first was
    named and the others counted as its repeats."""
    for name in ("SCORPION_DATADIR", "SCORPION_LOG_LEVL", "SCORPION_PROT"):
        monkeypatch.setenv(name, "x")
    assert main(["--migrate", "--data-dir", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err
    for name in ("SCORPION_DATADIR", "SCORPION_LOG_LEVL", "SCORPION_PROT"):
        assert f"{name} is not a setting" in err, err
    assert "repeated" not in err, err


class _Full:
    """A stream on a full disk (``>/dev/full``)."""

    def write(self, _text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_that_cannot_be_written_is_said_not_exit_0(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse ignores a write that fails: ``--help >/dev/full`` exited 0, said nothing."""
    monkeypatch.setattr(sys, "stdout", _Full())
    assert main([flag]) == 1
    err = capsys.readouterr().err
    assert err.rstrip().endswith("cannot write to standard output (No space left on device)")


def test_bad_settings_exit_2_even_when_nothing_can_be_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--port 99999 2>/dev/full`` exited 1 (the line's failed write), not 2."""
    monkeypatch.setattr(sys, "stderr", _Full())
    assert main(["--port", "99999"]) == 2


def test_migrate_creates_the_sqlite_schema(tmp_path: Path) -> None:
    assert main(["--migrate", "--data-dir", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "scorpion.db").exists()


def test_migrate_makes_the_directory_of_a_named_sqlite_file(tmp_path: Path) -> None:
    """As serving does: ``--database-url`` may name a file in a directory not made yet."""
    database = tmp_path / "new" / "dir" / "scorpion.db"
    assert main(["--migrate", "--database-url", f"sqlite+aiosqlite:///{database}"]) == 0
    assert database.is_file()


def test_postgresql_on_an_outdated_schema_is_refused(
    server_postgres_url: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    url = server_postgres_url
    run_isolated(lambda: _admin(url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public"))
    assert main(["--database-url", url, "--port", "0"]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("scorpion-server: the database schema is not current (")
    assert last.count("scorpion-server --migrate") == 1, last  # the hint, once


@pytest.mark.parametrize(
    ("argv", "environ", "named"),
    [
        (["--port", "99999"], {}, "--port (SCORPION_PORT) must be at most 65535, not 99999"),
        (["--listen-backlog", str(2**31)], {}, "--listen-backlog (SCORPION_LISTEN_BACKLOG) must"),
        (["--token-ttl-days", "9" * 20], {}, "--token-ttl-days (SCORPION_TOKEN_TTL_DAYS) must"),
        # told in every welcome: beyond 2^64 no welcome could be encoded (every hello 1011)
        (["--max-versions", "1" + "0" * 20], {}, "--max-versions (SCORPION_MAX_VERSIONS) must"),
        ([], {"SCORPION_IDLE_TIMEOUT_MS": str(2**53)}, "--idle-timeout-ms (SCORPION_IDLE_TIME"),
        (["--abuse-window-s", str(2**64 - 1)], {}, "--abuse-window-s (SCORPION_ABUSE_WINDOW_S) m"),
        (["--log-level", "verbose"], {}, "--log-level (SCORPION_LOG_LEVEL) must be one of"),
        (["--commit-batch", "0"], {}, "--commit-batch (SCORPION_COMMIT_BATCH) must be at least 1"),
        (["--log-format", "xml"], {}, "--log-format (SCORPION_LOG_FORMAT) must be text or json"),
        ([], {"SCORPION_WORKERS": "many"}, "--workers (SCORPION_WORKERS) must be an integer"),
        (["--keyfile", "k.pem"], {}, "--keyfile (SCORPION_KEYFILE) needs --certfile"),
        (["--certfile", f"{NOWHERE}.pem"], {}, "--certfile (SCORPION_CERTFILE): no such file"),
        (["--database-url", "mysql://x/y"], {}, "--database-url (SCORPION_DATABASE_URL) must be"),
        ([], {"SCORPION_WEB_DIR": NOWHERE}, "--web-dir (SCORPION_WEB_DIR): no such dir"),
        ([], {"SCORPION_WEB_DIR": "/"}, "--web-dir (SCORPION_WEB_DIR): no index.html"),
        (["--certfile", "/"], {}, "--certfile (SCORPION_CERTFILE): not a file '/'"),
        (["--rate-actions", "-1,5"], {}, "argument --rate-actions: expected one argument (a"),
        (["--keepalive-ms", "30"], {}, "--keepalive-ms (SCORPION_KEEPALIVE_MS) must be 0 (off)"),
        (
            ["--outbox-total-bytes", "100000"],
            {},
            "--outbox-total-bytes (SCORPION_OUTBOX_TOTAL_BYTES) must be at least --outbox-bytes",
        ),
        (  # not below --outbox-bytes as well: one line for one bad value
            ["--outbox-total-bytes", "-1"],
            {},
            "--outbox-total-bytes (SCORPION_OUTBOX_TOTAL_BYTES) must be at least 65536, not -1",
        ),
        (
            ["--outbox-bytes", "0"],
            {},
            "--outbox-bytes (SCORPION_OUTBOX_BYTES) must be at least 65536, not 0",
        ),
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


@pytest.mark.parametrize("value", ["*", "scorpion.example.org", "https://scorpion.example.org/"])
def test_allowed_origins_that_are_not_origins_stop_the_start_in_one_line(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # (were it let through, the database that never comes up would end the start: 1)
    nowhere = ["--database-url", "postgresql+asyncpg://nobody@127.0.0.1:1/none", "--db-wait-s", "1"]
    assert main(["--port", "0", *nowhere, "--allowed-origins", value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scorpion-server: --allowed-origins (SCORPION_ALLOWED_ORIGINS): ")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "leave it empty" in err if value == "*" else "scheme://host[:port]" in err


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
    """The database file cannot be opened (a directory stands in its way) for a while:
    until two attempts have failed (a fixed 1.2 s saw one on a loaded machine)."""
    blocker = tmp_path / "scorpion.db"
    blocker.mkdir()

    def waited() -> list[str]:
        return [r.getMessage() for r in caplog.records if "not available yet" in r.getMessage()]

    async def clear_later() -> None:
        while len(waited()) < 2:
            await asyncio.sleep(0.05)
        blocker.rmdir()

    settings = Settings(data_dir=str(tmp_path), db_wait_s=20)
    with caplog.at_level(logging.WARNING, logger="server"):
        clearing = asyncio.create_task(clear_later())
        store = await prepare_store(settings)
    await clearing
    try:
        assert await store.schema_status() is SchemaStatus.CURRENT
    finally:
        await store.close()
        await aiosqlite_threads_stopped()
    waits = waited()
    assert len(waits) >= 2, waits
    assert "retrying in 0.5 s" in waits[0] and "retrying in 1.0 s" in waits[1]
    # the driver's reason, not only "unavailable or busy" (a full disk said as such)
    assert "unable to open database file" in waits[0], waits[0]


def test_a_malformed_flag_is_one_line_and_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--port", "abc"]) == 2
    err = capsys.readouterr().err
    assert err == "scorpion-server: argument --port: invalid int value: 'abc' (see --help)\n"


def test_numbers_are_ascii_digits() -> None:
    """Python's int and float take any script's digits: --port \u0663 listened on port 3,
    and SCORPION_WORKERS=\u0663 started three workers."""
    arabic = "\u0664\u0662\u0665\u0669\u0663"  # 42593
    with pytest.raises(SettingsError) as caught:
        load_settings(["--port", arabic])
    assert caught.value.lines == [f"argument --port: invalid int value: {arabic!r} (see --help)"]
    with pytest.raises(SettingsError) as caught:
        load_settings(["--rate-actions", "\u0663\u0660,\u0665"])
    assert caught.value.lines[0].startswith("--rate-actions (SCORPION_RATE_ACTIONS) must be")
    with pytest.raises(SettingsError) as caught:
        load_settings([], {"SCORPION_WORKERS": "\u0663"})
    assert caught.value.lines == ["--workers (SCORPION_WORKERS) must be an integer, not '\u0663'"]


@pytest.mark.parametrize("written", ["1_0", "+8765", " 2", "2 ", "0x10", "1e3", ""])
def test_an_integer_is_digits_only(written: str) -> None:
    """``int`` took ``1_0`` as 10, ``+8765``, and spaces around: no typo was seen."""
    with pytest.raises(SettingsError) as caught:
        load_settings(["--port", written])
    assert caught.value.lines == [f"argument --port: invalid int value: {written!r} (see --help)"]
    with pytest.raises(SettingsError) as caught:
        load_settings([], {"SCORPION_WORKERS": written})
    assert caught.value.lines == [
        f"--workers (SCORPION_WORKERS) must be an integer, not {written!r}"
    ]
    assert load_settings(["--port", "08765"]).port == 8765


@pytest.mark.parametrize(
    "written", ["1_0,5", "1e3,5", "inf,5", "nan,5", "5,1_0", "-1,5", "5,", " 0.5 , 10 ", "5, 1"]
)
def test_a_rate_is_decimals_only(written: str) -> None:
    """Spaces too, as an integer setting refuses them."""
    with pytest.raises(SettingsError) as caught:
        load_settings([f"--rate-actions={written}"])
    assert caught.value.lines[0].startswith(
        "--rate-actions (SCORPION_RATE_ACTIONS) must be RATE,BURST"
    )
    assert load_settings(["--rate-actions", "0.5,10"]).rate_actions == "0.5,10"


@pytest.mark.parametrize("flag", ["--data-dir", "--web-dir", "--certfile"])
def test_a_path_too_long_to_look_at_is_one_line(flag: str, tmp_path: Path) -> None:
    """A name part over 255 bytes made ``stat`` raise ENAMETOOLONG: a traceback."""
    with pytest.raises(SettingsError) as caught:
        load_settings([flag, str(tmp_path / ("a" * 300))])
    assert len(caught.value.lines) == 1
    assert caught.value.lines[0].startswith(f"{flag} (SCORPION_"), caught.value.lines
    assert "cannot use" in caught.value.lines[0] and "File name too long" in caught.value.lines[0]
    with pytest.raises(SettingsError):
        load_settings(["--database-url", f"sqlite+aiosqlite:///{tmp_path / ('a' * 300)}.db"])


@pytest.mark.parametrize(
    "host",
    [
        *["a..b", "a" * 64, "\udcff", "é..b", "⒈.com", "local\nhost", "127.0.0.1\x1b]0;x\x07"],
        *["a b", ".".join(["a" * 63] * 4)],
    ],
)
def test_a_host_the_resolver_cannot_be_asked_for_is_a_bad_setting(host: str) -> None:
    """The IDNA codec refused it as the server started to listen: "the server failed
    unexpectedly", with the frames of a bug. Control characters and spaces it let
    through, to fail as the server listened (status 1, its line split in two, or a
    terminal's escape sequence written out as it was)."""
    with pytest.raises(SettingsError) as caught:
        load_settings(["--host", host])
    line = caught.value.lines[0]
    assert line.startswith("--host (SCORPION_HOST) must be an address or a host"), line
    assert line.isprintable(), line


def test_an_ipv6_address_in_brackets_is_a_bad_setting() -> None:
    """``--host [::1]`` was taken, then failed to listen: status 1, not a setting's 2."""
    with pytest.raises(SettingsError) as caught:
        load_settings(["--host", "[::1]"])
    assert caught.value.lines[0].endswith("without brackets, not '[::1]'"), caught.value.lines
    assert load_settings(["--host", "::1"]).host == "::1"


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


async def test_migrating_an_sqlite_file_a_server_serves_is_refused(tmp_path: Path) -> None:
    """``--migrate`` said "schema current already" beside a running server: a newer
    version's would have changed the schema under it (the upgrade steps say to stop it)."""
    settings = quiet_settings(tmp_path)
    first = ScorpionServer(settings)
    await first.start()
    try:
        with pytest.raises(SqliteInUse, match=r"serves .*scorpion\.db: stop it before migrating"):
            await migrate(settings)
    finally:
        await first.stop()
    assert not await migrate(settings)  # the server gone: current already
    both = await asyncio.gather(migrate(settings), migrate(settings))  # migrations share it
    assert list(both) == [False, False]


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


# -- the database URL: refused before anything is made, or one line on failure --

_URL_LABEL = "--database-url (SCORPION_DATABASE_URL)"


@pytest.fixture
def no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused setting must end the process before the server or migration starts."""

    def started(settings: Settings) -> int:
        raise AssertionError(f"started with {settings.store_url!r}")

    monkeypatch.setattr("server.app._serve_or_migrate", started)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite+aiosqlite://",
        "sqlite+aiosqlite:///",
        "sqlite+aiosqlite:///:memory:",
        "sqlite://",
        "sqlite+aiosqlite:///file:x?mode=memory&uri=true",
        "sqlite+aiosqlite:///file::memory:",
        "sqlite+aiosqlite:///x.db?mode=memory",
    ],
)
@pytest.mark.parametrize("where", ["flag", "environment"])
@pytest.mark.usefixtures("no_start")
def test_an_in_memory_sqlite_url_is_refused_before_anything_is_made(
    url: str,
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["--port", "0", "--workers", "1", "--easy-pool", "0"]
    if where == "flag":
        argv += ["--database-url", url]
    else:
        monkeypatch.setenv("SCORPION_DATABASE_URL", url)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion-server: {_URL_LABEL} must name an SQLite file"), err
    assert "in-memory" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no database, no lock file


@pytest.mark.parametrize(
    ("url", "named"),
    [
        (
            "sqlite+aiosqlite:///file:x.db?uri=true",
            "SQLite URI filenames (file:..., uri=true) are not supported",
        ),
        (
            "sqlite+aiosqlite:///file:x.db",
            "SQLite URI filenames (file:..., uri=true) are not supported",
        ),
        ("sqlite+aiosqlite:///x.db?timeout=3", "an SQLite URL takes no query parameters"),
        ("sqlite+aiosqlite://somehost/x.db", "an SQLite URL names a file, not a host"),
        ("sqlite:/x.db", "must be a sqlite+aiosqlite:// or postgresql+asyncpg:// URL"),
        ("sqlitefoo:///x.db", "must be a sqlite+aiosqlite:// or postgresql+asyncpg:// URL"),
        ("postgresql:nohost", "must be a sqlite+aiosqlite:// or postgresql+asyncpg:// URL"),
    ],
)
@pytest.mark.usefixtures("no_start")
def test_an_unusable_database_url_is_one_line_and_exit_code_2(
    url: str,
    named: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--migrate"]):
        assert main(["--port", "0", "--database-url", url, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"scorpion-server: {_URL_LABEL}"), err
        assert named in err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_an_in_memory_url_from_the_environment_exits_2_without_a_traceback(
    tmp_path: Path,
) -> None:
    """The tester's case, end to end: ``python -m server`` with the variable set."""
    done = subprocess.run(
        [sys.executable, "-m", "server", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "SCORPION_DATABASE_URL": "sqlite+aiosqlite://"},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"scorpion-server: {_URL_LABEL} must name an SQLite file")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_directory_as_the_database_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}"
    for extra in ([], ["--migrate"]):
        started = time.monotonic()
        assert main(["--port", "0", "--db-wait-s", "30", "--database-url", url, *extra]) == 2
        assert time.monotonic() - started < 15  # not the whole --db-wait-s
        err = capsys.readouterr().err
        assert err == (
            f"scorpion-server: {_URL_LABEL}: {tmp_path} is a directory, not a database file\n"
        )


def test_a_data_dir_that_cannot_hold_the_database_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "scorpion.db").mkdir()
    assert main(["--port", "0", "--db-wait-s", "2", "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"scorpion-server: --data-dir (SCORPION_DATA_DIR): {tmp_path / 'scorpion.db'} "
        "is a directory, not a database file\n"
    )
    a_file = tmp_path / "a file"
    a_file.write_text("x")
    assert main(["--port", "0", "--data-dir", str(a_file)]) == 2
    assert capsys.readouterr().err == (
        f"scorpion-server: --data-dir (SCORPION_DATA_DIR): {a_file} is not a directory\n"
    )


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_file_that_is_not_a_database_ends_in_one_line(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_database = tmp_path / "afile"
    not_a_database.write_text("x\n")
    url = f"sqlite+aiosqlite:///{not_a_database}"
    argv = ["--port", "0", "--workers", "1", "--easy-pool", "0", "--database-url", url]
    assert main([*argv, *extra]) == 1
    err = capsys.readouterr().err
    assert (
        err.splitlines()[-1] == "scorpion-server: cannot use the database: file is not a database"
    )
    assert "Traceback" not in err
    assert not_a_database.read_text() == "x\n"


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_sqlite_schema_of_an_unknown_revision_ends_in_one_line(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database a newer server migrated: this one cannot upgrade it, nor use it."""
    assert main(["--migrate", "--data-dir", str(tmp_path)]) == 0
    with sqlite3.connect(tmp_path / "scorpion.db") as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    conn.close()
    argv = ["--port", "0", "--workers", "1", "--easy-pool", "0", "--data-dir", str(tmp_path)]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("scorpion-server: the database schema is at revision ffffffffffff,")
    assert "newer scorpion-server" in last and "Traceback" not in err


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_postgresql_schema_of_an_unknown_revision_ends_in_the_same_line(
    extra: list[str], server_postgres_url: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """As on SQLite: serving says what --migrate says, not to run --migrate."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    url = server_postgres_url
    empty = ("DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    run_isolated(lambda: _admin(url, *empty))
    try:
        assert main(["--migrate", "--database-url", url]) == 0
        newer = "UPDATE alembic_version SET version_num = 'ffffffffffff'"
        run_isolated(lambda: _admin(url, newer))
        argv = ["--port", "0", "--workers", "1", "--easy-pool", "0", "--database-url", url]
        assert main([*argv, *extra]) == 2
    finally:
        run_isolated(lambda: _admin(url, *empty))
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert last.startswith("scorpion-server: the database schema is at revision ffffffffffff,")
    assert "newer scorpion-server" in last and "--migrate" not in last
    assert "Traceback" not in err


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_postgresql_database_that_does_not_exist_ends_in_one_line(
    extra: list[str], server_postgres_url: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    url = make_url(server_postgres_url).set(database="nonexistent_db_xyz")
    argv = ["--port", "0", "--workers", "1", "--easy-pool", "0", "--db-wait-s", "60"]
    argv += ["--database-url", url.render_as_string(hide_password=False)]
    started = time.monotonic()
    assert main([*argv, *extra]) == 1
    assert time.monotonic() - started < 10  # refused for good, not retried
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        'scorpion-server: cannot use the database: database "nonexistent_db_xyz" does not exist'
    )
    assert "Traceback" not in err
