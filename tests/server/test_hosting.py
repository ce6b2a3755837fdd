"""How the server is hosted: its settings, start-up, signals, log lines and the database
it is given. What each test here keeps from coming back:

- ``--log-format json`` ended with plain-text lines: every refused setting, a
  malformed flag, a database or port that cannot be used. Now the last line is
  a JSON object (with ``exit``) like the rest of the log, and Python's own
  warnings and thread failures go through the log too.
- A signal during start-up was held until it ended: SIGTERM while waiting for a
  database that is down took the whole ``--db-wait-s`` (60 s). SIGHUP killed
  the server without closing its connections. Both now stop it gracefully.
- "stopped" was logged by a server that never started.
- A PostgreSQL URL with a query parameter (``?sslmode=require``) ended in a
  traceback; ``?ssl=require`` served, but the node's change listener could
  never connect (its connection read the URL another way). Now the parameters
  both understand are let through, ``sslmode`` as ``ssl``, and others are refused
  in one line.
- A database of another program was filled with this server's tables (SQLite,
  and ``--migrate`` on PostgreSQL), or failed half-way on a table name both use,
  retried as "unavailable" for ``--db-wait-s``. Now it is refused in one line.
- A data directory that cannot be made or written ended in a bare
  ``[Errno 13]`` (or, with ``--migrate``, was retried as an unavailable
  database); a read-only database file served, answering every move
  ``unavailable``. Both are now one line naming the setting, exit status 1.
- Two ``--migrate`` at once on a new SQLite file: all but one failed with
  "database is locked".
- A symbolic link to the SQLite file let a second server serve it.
- An encrypted TLS key made OpenSSL ask for its pass phrase on the terminal;
  other TLS faults said ``PEM lib (_ssl.c:3926)``.
- ``SCORPION_MIGRATE=maybe`` (any unknown word) was silently false; an empty
  ``SCORPION_DATA_DIR`` put the database in the working directory; a
  ``--db-timeout-ms`` of 2**31 or more was SQLite's busy timeout 0.
- A request target in absolute form (``GET http://host/healthz``) was 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Coroutine
from dataclasses import fields, replace
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from server.app import (
    ListenError,
    ScorpionServer,
    main,
    make_sqlite_directory,
    may_pass,
    migrate,
    migrate_to,
)
from server.config import (
    Settings,
    SettingsError,
    load_settings,
    requested_log_format,
    schema_revision,
)
from server.http import READY_REUSE_S, HttpRoutes
from server.logs import configure_logging, describe_exception, reset_logging
from server.metrics import Metrics
from server.sqlite_lock import SqliteInUse, SqliteLock
from server.store import (
    DatabaseReplaced,
    SchemaStatus,
    Store,
    StoreAccessRefused,
    StoreError,
    StoreUnavailable,
)
from server.store.database import async_url, connect_arguments, create_engine
from server.store.schema import run_alembic
from tests.helpers import interrupted_while_loading
from tests.server.conftest import Running, quiet_settings
from tests.server.http_get import http_get
from tests.server.store.conftest import _admin, run_isolated
from tests.server.test_tls import self_signed

NOWHERE = "postgresql+asyncpg://nobody@127.0.0.1:1/none"  # a port nothing listens on
QUICK = ["--port", "0", "--workers", "1", "--easy-pool", "0", "--winnable-pool", "0"]


def json_lines(err: str) -> list[dict[str, object]]:
    """Every line of ``err`` as a JSON object (failing the test on any other line)."""
    return [json.loads(line) for line in err.splitlines()]


# -- JSON on every path -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "environ", "status", "says"),
    [
        (["--log-format", "json", "--port", "99999"], {}, 2, "--port (SCORPION_PORT) must be"),
        (["--port", "abc"], {"SCORPION_LOG_FORMAT": "json"}, 2, "argument --port: invalid int"),
        (["--log-format=json", "--bogus"], {}, 2, "unrecognized arguments: --bogus"),
        (
            ["--log-format", "json", "--database-url", NOWHERE, "--db-wait-s", "0", *QUICK],
            {},
            1,
            "cannot use the database",
        ),
    ],
)
def test_with_json_logs_a_refusal_is_a_json_line_too(
    argv: list[str],
    environ: dict[str, str],
    status: int,
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == status
    lines = json_lines(capsys.readouterr().err)
    last = lines[-1]
    assert last["level"] == "ERROR" and last["logger"] == "server" and last["exit"] == status
    assert str(last["message"]).startswith(says), last
    assert "Traceback" not in json.dumps(lines)


def test_with_json_logs_only_the_last_of_several_bad_settings_carries_the_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each line carried ``exit``, which the JSON format gives the last line only."""
    assert main(["--log-format", "json", "--port", "-1", "--queue-size", "0"]) == 2
    lines = json_lines(capsys.readouterr().err)
    assert [str(line["message"]).split()[0] for line in lines] == ["--port", "--queue-size"]
    assert ["exit" in line for line in lines] == [False, True] and lines[-1]["exit"] == 2


def test_in_text_the_refusal_stays_one_plain_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--port", "99999"]) == 2
    assert capsys.readouterr().err == (
        "scorpion-server: --port (SCORPION_PORT) must be at most 65535, not 99999\n"
    )


def test_json_logs_carry_python_warnings_and_thread_failures() -> None:
    stream = StringIO()
    configure_logging("INFO", "json", stream)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("something odd", UserWarning, stacklevel=1)

        def fail() -> None:
            raise RuntimeError("in a thread")

        thread = threading.Thread(target=fail, name="failing")
        thread.start()
        thread.join()
    finally:
        reset_logging()
    lines = json_lines(stream.getvalue())
    assert any("something odd" in str(line["message"]) for line in lines), lines
    failed = [line for line in lines if "thread failing" in str(line["message"])]
    assert failed and "RuntimeError: in a thread" in str(failed[0]["error"])
    assert threading.excepthook is threading.__excepthook__  # put back


# -- settings that were let through ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "environ", "says"),
    [
        ([], {"SCORPION_MIGRATE": "maybe"}, "--migrate (SCORPION_MIGRATE) must be 1, true"),
        ([], {"SCORPION_DATA_DIR": ""}, "--data-dir (SCORPION_DATA_DIR) must name a directory"),
        (["--db-timeout-ms", str(2**31)], {}, "--db-timeout-ms (SCORPION_DB_TIMEOUT_MS) must be"),
        (["--workers", "20000"], {}, "--workers (SCORPION_WORKERS) must be at most 1024"),
        (  # beyond, a bucket's size overflowed a float: an unexpected OverflowError at start
            ["--address-rate-factor", "1" + "0" * 320],
            {},
            "--address-rate-factor (SCORPION_ADDRESS_RATE_FACTOR) must be at most 1000000",
        ),
        (["--hint-budget-ms", "9" * 12], {}, "--hint-budget-ms (SCORPION_HINT_BUDGET_MS) must"),
        (["--forwarded-header", "X Real:IP"], {}, "--forwarded-header (SCORPION_FORWARDED_HEADER)"),
        (
            ["--data-dir", "~no-such-user-here/scorpion"],
            {},
            "--data-dir (SCORPION_DATA_DIR): no home directory for '~no-such-user-here/scorpion'",
        ),
        (
            [],
            {"SCORPION_WEB_DIR": "~no-such-user-here/web"},
            "--web-dir (SCORPION_WEB_DIR): no home directory for",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?sslmode=require&application_name=x"],
            {},
            "--database-url (SCORPION_DATABASE_URL): a PostgreSQL URL takes only host, "
            "passfile, port, ssl, sslmode, target_session_attrs as query parameters, not "
            "'application_name'",
        ),
        (
            ["--trusted-proxies", ","],
            {},
            "--trusted-proxies (SCORPION_TRUSTED_PROXIES): ',' lists no address; leave it empty",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?sslmode=maybe"],
            {},
            "--database-url (SCORPION_DATABASE_URL): sslmode must be one of disable, allow",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?port=5432x"],
            {},
            "--database-url (SCORPION_DATABASE_URL): port must be a number 1..65535, not '5432x'",
        ),
        *(
            (
                ["--database-url", f"postgresql+asyncpg://u:p:w@{host}:{port}/db"],
                {},
                f"--database-url (SCORPION_DATABASE_URL): port must be a number 1..65535, "
                f"not {port!r}",
            )
            for host, port in (("h", "99999"), ("h", "0"), ("h", "abc"), ("[::1]", ""))
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@/db?host=a:5432&host=b:5432&port=5433"],
            {},
            "--database-url (SCORPION_DATABASE_URL): with host in the query, give each port",
        ),
        (
            ["--database-url", "sqlite+aiosqlite:////dev/null"],
            {},
            "--database-url (SCORPION_DATABASE_URL): /dev/null is not a regular file, so it",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?ssl=require&sslmode=disable"],
            {},
            "--database-url (SCORPION_DATABASE_URL): give ssl or sslmode, not both",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@/db?host=a&host=b"],
            {},
            "--database-url (SCORPION_DATABASE_URL): All ports are required to be present",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@/db?host=a:x&host=b:2"],
            {},
            "--database-url (SCORPION_DATABASE_URL): Received non-integer port arguments",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?target_session_attrs=writable"],
            {},
            "--database-url (SCORPION_DATABASE_URL): target_session_attrs must be one of any,",
        ),
        (
            ["--database-url", "postgresql+asyncpg://u@h/db?prepared_statement_cache_size=x"],
            {},
            "--database-url (SCORPION_DATABASE_URL): a PostgreSQL URL takes only",
        ),
    ],
)
def test_a_setting_once_let_through_is_one_line_and_exit_code_2(
    argv: list[str],
    environ: dict[str, str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scorpion-server: {says}"), err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing made in the working directory


def test_a_home_directory_in_a_variable_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment file is read by no shell: ``~/scorpion`` made a directory named ``~``."""
    monkeypatch.setenv("HOME", "/home/somebody")
    settings = load_settings([], {"SCORPION_DATA_DIR": "~/scorpion"})
    assert settings.data_dir == "/home/somebody/scorpion"


def test_a_failover_url_with_several_hosts_picks_the_writable_one_in_both() -> None:
    """``target_session_attrs`` (with several ``host``s, the usual failover URL) reaches
    the pool's connections and the change listener's alike, as it did before query
    parameters were checked."""
    hosts = "host=a:5432&host=b:5432"
    url = f"postgresql+asyncpg://u@/db?{hosts}&target_session_attrs=read-write"
    settings = load_settings(["--database-url", url])
    arguments = connect_arguments(async_url(settings.database_url))
    assert arguments["target_session_attrs"] == "read-write"
    assert arguments["host"] == ["a", "b"]


def test_a_port_and_a_password_file_in_the_query_reach_both_connections() -> None:
    """``?port=`` and ``?passfile=`` (a secret mounted as a file) served before query
    parameters were checked; the pool and the change listener take them alike."""
    url = "postgresql+asyncpg://u@h/db?port=6432&passfile=/run/secrets/pgpass"
    arguments = connect_arguments(async_url(load_settings(["--database-url", url]).database_url))
    assert arguments["port"] == 6432 and arguments["passfile"] == "/run/secrets/pgpass"


def test_postgresql_urls_the_server_and_its_listener_read_alike() -> None:
    good = load_settings(["--database-url", "postgresql://u:p%40w@h:6/db?sslmode=require"])
    url = async_url(good.database_url)
    assert url.drivername == "postgresql+asyncpg" and dict(url.query) == {"ssl": "require"}
    assert connect_arguments(url) == {
        "host": "h",
        "port": 6,
        "user": "u",
        "password": "p@w",
        "database": "db",
        "ssl": "require",
    }
    socket_dir = async_url("postgresql+asyncpg://u@/db?host=/run/postgresql")
    assert connect_arguments(socket_dir)["host"] == "/run/postgresql"
    load_settings(["--database-url", "postgresql+asyncpg://u@/db?host=/run/postgresql"])


def test_an_encrypted_key_is_refused_without_asking_for_its_pass_phrase(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    encrypted = tmp_path / "encrypted.pem"
    with encrypted.open("wb") as out:
        subprocess.run(
            ["openssl", "pkey", "-in", str(key), "-aes256", "-passout", "pass:secret"],
            check=True,
            stdout=out,
            timeout=60,
        )
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(cert), "--keyfile", str(encrypted)])
    assert caught.value.lines[0].startswith("--keyfile (SCORPION_KEYFILE): cannot load")
    assert "is encrypted; give it without a pass phrase" in caught.value.lines[0]
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(cert), "--keyfile", str(cert)])  # the key file's fault
    assert caught.value.lines[0] == (
        "--keyfile (SCORPION_KEYFILE): cannot load the certificate and key "
        f"(no PEM private key in {str(cert)!r})"
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(cert)])  # the key is not in the certificate file
    assert caught.value.lines[0].endswith(
        f"(no PEM private key in {str(cert)!r}; give the key with --keyfile)"
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(["--certfile", str(key), "--keyfile", str(key)])
    assert caught.value.lines[0].endswith(f"(no PEM certificate in {str(key)!r})")


# -- signals ---------------------------------------------------------------------------------


def start_process(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "server", *argv],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_stop_signals_at_their_defaults,
    )


def read_until(process: subprocess.Popen[str], wanted: str) -> list[str]:
    assert process.stderr is not None
    lines: list[str] = []
    while wanted not in (line := process.stderr.readline()):
        assert line, f"the server ended before {wanted!r}: {lines}"
        lines.append(line)
    return [*lines, line]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_waiting_for_the_database_stops_the_start_at_once(
    signum: signal.Signals,
) -> None:
    process = start_process(*QUICK, "--database-url", NOWHERE, "--db-wait-s", "120")
    try:
        read_until(process, "not available yet")
        sent = time.monotonic()
        process.send_signal(signum)
        assert process.wait(timeout=30) == 0
        assert time.monotonic() - sent < 15  # not the 120 s of --db-wait-s
        assert process.stderr is not None
        rest = process.stderr.read()
        assert f"{signum.name} during start-up: stopping" in rest
        assert "Traceback" not in rest and "stopped\n" not in rest
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


def signalled(argv: list[str], at: str, signum: signal.Signals) -> tuple[int, str]:
    """``python -c`` ``argv`` with the stop signals at their defaults, sent ``signum`` once
    its standard error says ``at``: its exit status, and what it wrote after that."""
    process = subprocess.Popen(
        [sys.executable, "-c", *argv],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_stop_signals_at_their_defaults,
    )
    try:
        read_until(process, at)
        process.send_signal(signum)
        status = process.wait(timeout=30)
        assert process.stderr is not None
        return status, process.stderr.read()
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


def _stop_signals_at_their_defaults() -> None:
    """The stop signals at their defaults, as a shell starts a program it runs in the
    foreground, whatever the tests' own process inherited (a job started with SIGHUP
    ignored made the SIGHUP tests' servers serve on, and the tests wait for ever)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("after_s", [0.1, 0.2])
def test_ctrl_c_while_the_server_loads_ends_it_without_a_traceback(
    tmp_path: Path, after_s: float
) -> None:
    """Ctrl-C while Python was still loading the server printed a KeyboardInterrupt
    traceback of 35 to 48 lines; it ends the process as the signal's default does.

    On a loaded machine the signal may land before any code of ours runs, while the
    interpreter itself still imports ``site``: such a run is tried again
    (``interrupted_while_loading``)."""
    done = interrupted_while_loading(
        [sys.executable, "-m", "server", *QUICK, "--data-dir", str(tmp_path)],
        after_s,
        preexec_fn=_stop_signals_at_their_defaults,
    )
    assert done.returncode in (-signal.SIGINT, 130), done.stdout
    assert "Traceback" not in done.stdout and "KeyboardInterrupt" not in done.stdout, done.stdout


@pytest.mark.parametrize("where", ["load_settings", "configure_logging", "unknown_variables"])
def test_ctrl_c_before_the_server_takes_the_signal_up_ends_it_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Loaded, the entry point gives Ctrl-C back to Python; until the server's loop
    takes it up, its settings are read and its logging set up, where a Ctrl-C printed
    a traceback (1 in 195 starts under load)."""
    import server.app as app

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(app, where, interrupted)
    assert app.main(["--port", "0"]) == 130
    assert capsys.readouterr() == ("", "")


CUT_OFF = """
import asyncio, sys
import server.app as app
from server.store import StoreError

async def slow(*args):
    print("under way", file=sys.stderr, flush=True)
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:  # as a connection cut in the middle of a statement
        raise StoreError("Can't reconnect until invalid transaction is rolled back")
    return True

{step} = slow
sys.exit(app.main(sys.argv[1:]))
"""
"""A server whose ``step`` (the migration, the start) waits, and ends in the driver's
words when cancelled."""
MIGRATION_CUT_OFF = CUT_OFF.format(step="app.migrate")
START_CUT_OFF = CUT_OFF.format(step="app.ScorpionServer.start")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_start_ups_upgrade_stops_it_there(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """SQLite is upgraded at start-up. A signal then cancelled the upgrade, whose cut
    connection raised the driver's words, and the server exited 1 with them, not as a
    signal during start-up does (0, "... during start-up: stopping")."""
    status, rest = signalled(
        [START_CUT_OFF, *QUICK, "--data-dir", str(tmp_path)], "under way", signum
    )
    assert status == 0
    assert f"{signum.name} during start-up: stopping" in rest and "reconnect" not in rest, rest


@pytest.mark.parametrize(
    ("signum", "status", "last"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "interrupted by SIGTERM: nothing was migrated"),
        (signal.SIGHUP, 129, "interrupted by SIGHUP: nothing was migrated"),
    ],
)
def test_a_signal_during_migrate_is_128_plus_its_number_and_says_so(
    tmp_path: Path, signum: signal.Signals, status: int, last: str
) -> None:
    """The migration, cancelled by Ctrl-C, raised the driver's words for its cut
    connection, and the server exited 1 with them rather than 130 (server.md). SIGTERM
    ended it with 143 and no line at all."""
    ended, rest = signalled(
        [MIGRATION_CUT_OFF, "--migrate", "--data-dir", str(tmp_path)], "under way", signum
    )
    assert ended == status
    assert rest.rstrip().endswith(last) and "reconnect" not in rest, rest


MIGRATION_TO_CUT_OFF = CUT_OFF.format(step="app.Store.migrate_to")


@pytest.mark.parametrize(
    ("signum", "status", "last"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "interrupted by SIGTERM: nothing was migrated"),
        (signal.SIGHUP, 129, "interrupted by SIGHUP: nothing was migrated"),
    ],
)
def test_a_signal_during_migrate_to_is_said_as_during_migrate(
    tmp_path: Path, signum: signal.Signals, status: int, last: str
) -> None:
    """SIGTERM or SIGHUP during ``--migrate-to`` ended it with 143 or 129 and not a
    word, and Ctrl-C exited 1 with the driver's words for its cut connection."""
    argv = ["--data-dir", str(tmp_path)]
    assert main([*argv, "--migrate"]) == 0
    ended, rest = signalled(
        [MIGRATION_TO_CUT_OFF, "--migrate-to", "0009", *argv], "under way", signum
    )
    assert ended == status
    assert rest.rstrip().endswith(last) and "reconnect" not in rest, rest


MIGRATED_THEN_SLOW = """
import asyncio, logging, sys, time
import server.app as app

async def done(*args):
    return True

class Slow(logging.Handler):  # the process' last moments, drawn out
    def emit(self, record):
        if record.getMessage() == "schema upgraded":
            print("committed", file=sys.stderr, flush=True)
            time.sleep(0.5)

app.migrate = done
logging.getLogger("server").addHandler(Slow())
sys.exit(app.main(sys.argv[1:]))
"""
"""``--migrate`` whose migration commits at once, and whose last moments take 0.5 s."""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_once_the_migration_committed_changes_nothing(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """The loop's handlers went with the loop: a signal between the commit and the
    process' end exited 130 (or -15) after "schema upgraded", though the upgrade held."""
    status, rest = signalled(
        [MIGRATED_THEN_SLOW, "--migrate", "--data-dir", str(tmp_path)], "committed", signum
    )
    assert status == 0
    assert rest.rstrip().endswith("schema upgraded") and "Traceback" not in rest, rest


UPGRADED_THEN_SLOW_TO_CLOSE = """
import asyncio, sys
import server.app as app
from server.store import Store

close = Store.close

async def slow_close(self):  # after the commit: the store's last moments, drawn out
    print("committed", file=sys.stderr, flush=True)
    await asyncio.sleep(1)
    await close(self)

Store.close = slow_close
sys.exit(app.main(sys.argv[1:]))
"""
"""``--migrate`` whose store, the upgrade committed, takes 1 s to close."""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_commit_before_the_store_closed_changes_nothing(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """The migration was taken for done only once its store had closed: a signal in
    between exited 143 with "nothing was migrated", though the schema was upgraded."""
    data = tmp_path / "data"
    status, rest = signalled(
        [UPGRADED_THEN_SLOW_TO_CLOSE, "--migrate", "--data-dir", str(data)], "committed", signum
    )
    assert status == 0, rest
    last = rest.rstrip().splitlines()[-1]
    assert f"schema current (found so after {signum.name}" in last, rest
    assert "Traceback" not in rest, rest
    with sqlite3.connect(data / "scorpion.db") as db:  # and it is
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() != []


UPGRADED_THEN_UNREACHABLE = UPGRADED_THEN_SLOW_TO_CLOSE.replace(
    "Store.close = slow_close",
    """Store.close = slow_close

async def unreachable(self):
    raise app.StoreUnavailable("the database cannot be reached")

Store.schema_status = unreachable  # asked after the signal: no answer""",
)
"""The same, with the database not answering once the signal has come."""


def test_a_signal_after_the_commit_with_the_database_gone_says_it_does_not_know(
    tmp_path: Path,
) -> None:
    """The database not answering when asked after the signal was taken for a schema
    not current: "nothing was migrated", though the upgrade had committed."""
    status, rest = signalled(
        [UPGRADED_THEN_UNREACHABLE, "--migrate", "--data-dir", str(tmp_path / "data")],
        "committed",
        signal.SIGTERM,
    )
    assert status == 143, rest
    last = rest.rstrip().splitlines()[-1]
    assert "whether the migration committed is not known: run --migrate again" in last, rest
    assert "nothing was migrated" not in rest and "Traceback" not in rest, rest


@pytest.mark.parametrize("migrating", [["--migrate"], ["--migrate-to", "0009"]])
def test_a_signal_while_waiting_for_the_database_to_migrate_says_nothing_was_migrated(
    migrating: list[str],
) -> None:
    """Asked after the signal, a database that never answered could not tell whether
    the migration committed, and the line said so: it cannot have begun."""
    url = "postgresql+asyncpg://scorpion@127.0.0.1:1/scorpion"
    argv = ["import sys, server.app as app; sys.exit(app.main(sys.argv[1:]))"]
    status, rest = signalled(
        [*argv, *migrating, "--database-url", url, "--db-wait-s", "60"],
        "not available yet",
        signal.SIGTERM,
    )
    assert status == 143, rest
    assert rest.rstrip().endswith("interrupted by SIGTERM: nothing was migrated"), rest


def test_sighup_stops_a_serving_server_gracefully(tmp_path: Path) -> None:
    """And a second signal during the shutdown does not cut it short."""
    process = start_process(*QUICK, "--data-dir", str(tmp_path))
    try:
        read_until(process, "serving on")
        process.send_signal(signal.SIGHUP)
        read_until(process, "SIGHUP: shutting down, closing connections with 1001")
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        assert process.stderr.read().rstrip().endswith("INFO server: stopped")
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("after_s", [0.0, 0.005, 0.01, 0.02, 0.03])
def test_a_second_signal_as_the_shutdown_ends_does_not_kill_it(
    tmp_path: Path, after_s: float
) -> None:
    """The loop's handlers went with the loop, which restored SIGTERM's default: a second
    signal in the shutdown's last milliseconds ended the process with it (-15), 6 times
    in 16 here with the signal 0 to 30 ms after "shutting down"."""
    process = start_process(*QUICK, "--data-dir", str(tmp_path))
    try:
        read_until(process, "serving on")
        process.send_signal(signal.SIGHUP)
        read_until(process, "SIGHUP: shutting down")
        time.sleep(after_s)
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("closed", [0, 1, 2])
def test_a_server_started_with_a_standard_stream_closed_stops_cleanly(
    tmp_path: Path, closed: int
) -> None:
    """A supervisor may start the server with stdin (or stdout, or stderr) closed: its
    sockets then took the free low descriptors, and uvloop's close of descriptor 0 at
    the stop aborted the process (exit 134, a core dump) after a clean shutdown."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [*QUICK, "--port", str(port), "--data-dir", str(tmp_path), "--event-loop", "auto"]
    process = subprocess.Popen(
        [sys.executable, "-m", "server", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(),
        preexec_fn=lambda: os.close(closed),  # in the child, before it runs anything
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        told = process.stderr.read().decode()
        assert "Assertion" not in told and "leaked" not in told, told
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_asked_with_standard_output_closed_is_said_not_exit_0(flag: str) -> None:
    """The closed descriptor was given the null device (for the server's sake): the
    version went there, and the process exited 0 having shown nothing."""
    done = subprocess.run(
        [sys.executable, "-m", "server", flag],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(1),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done
    assert done.stderr.rstrip().endswith("cannot write to standard output (it is closed)"), done


def test_help_to_a_pipe_whose_reader_left_ends_quietly_with_141() -> None:
    """``scorpion-server --help | true``: as the client's and the engine's, and a
    shell's own tools, not "cannot write to standard output (Broken pipe)" and 1."""
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first write
    try:
        done = subprocess.run(
            [sys.executable, "-m", "server", "--help"],
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, ""), done


@pytest.mark.parametrize("ignored", [signal.SIGHUP, signal.SIGINT])
def test_a_server_started_with_a_signal_ignored_keeps_serving_through_one(
    tmp_path: Path, ignored: signal.Signals
) -> None:
    """``nohup`` (or a supervisor) starts the server with SIGHUP ignored, so that closing
    the terminal does not stop it, and a shell script's background job has SIGINT
    ignored (a Ctrl-C meant for the script): that choice is kept, and SIGTERM still
    stops it. Started with SIGINT ignored, the server was stopped by one all the same."""
    process = subprocess.Popen(
        [sys.executable, "-m", "server", *QUICK, "--data-dir", str(tmp_path)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(ignored, signal.SIG_IGN),  # as nohup does
    )
    try:
        read_until(process, "serving on")
        process.send_signal(ignored)
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=2)  # was stopped by it: "SIGHUP: shutting down"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        rest = process.stderr.read()
        assert "SIGTERM: shutting down" in rest and ignored.name not in rest, rest
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_a_server_that_never_started_does_not_say_stopped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*QUICK, "--database-url", NOWHERE, "--db-wait-s", "0"]) == 1
    err = capsys.readouterr().err
    assert "stopped" not in err
    assert err.splitlines()[-1].startswith("scorpion-server: cannot use the database: ")


# -- the database it is given ------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_another_programs_sqlite_database_is_refused_and_left_alone(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
    conn.close()
    argv = [*QUICK, "--db-wait-s", "60", "--database-url", f"sqlite:///{other}", *extra]
    started = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - started < 15
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(
        "scorpion-server: the database holds another program's tables (users) and none of "
        "scorpion-server's; give scorpion-server a database of its own"
    )
    with sqlite3.connect(other) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert tables == ["users"]


def test_a_table_name_both_use_is_refused_at_once_not_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE players (id INTEGER PRIMARY KEY, nick TEXT)")
    conn.close()
    started = time.monotonic()
    assert main([*QUICK, "--db-wait-s", "60", "--database-url", f"sqlite:///{other}"]) == 2
    assert time.monotonic() - started < 15
    last = capsys.readouterr().err.splitlines()[-1]
    assert "tables named as scorpion-server's but no Alembic revision" in last


def test_a_data_dir_that_cannot_be_made_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for extra in ([], ["--migrate"]):
        argv = [*QUICK, "--db-wait-s", "60", "--data-dir", str(a_file / "data"), *extra]
        assert main(argv) == 1
        last = capsys.readouterr().err.splitlines()[-1]
        assert last.startswith("scorpion-server: --data-dir (SCORPION_DATA_DIR): cannot "), last
        assert str(a_file) in last and "Not a directory" in last


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="drops root's override of file modes with setpriv (root only)",
)
def test_a_read_only_database_or_directory_is_said_at_once(tmp_path: Path) -> None:
    """As root the server could write anything: ``setpriv`` takes that power away."""
    data, closed = tmp_path / "data", tmp_path / "closed"
    assert main(["--migrate", "--data-dir", str(data)]) == 0
    (data / "scorpion.db").chmod(0o444)
    closed.mkdir(mode=0o555)
    drop = "-dac_override,-dac_read_search"
    powerless = ["setpriv", "--bounding-set", drop, "--inh-caps", drop, sys.executable]
    for where, extra, says in [
        (data, [], "scorpion-server: cannot use the database: attempt to write a readonly"),
        (closed, [], f"--data-dir (SCORPION_DATA_DIR): cannot write in {closed} (Permission"),
        (closed, ["--migrate"], f"--data-dir (SCORPION_DATA_DIR): cannot write in {closed}"),
    ]:
        done = subprocess.run(
            [*powerless, "-m", "server", *QUICK, "--data-dir", str(where), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, done.stderr
        assert says in done.stderr.splitlines()[-1], done.stderr


def test_a_data_dir_that_is_a_broken_link_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link to a volume not mounted yet, or links in a loop, were said as "File exists".
    Serving (not ``--migrate``) made the missing volume's directory instead, and served a
    new, empty database there, which the volume would hide once mounted."""
    dangling, loop = tmp_path / "dangling", tmp_path / "loop"
    volume = tmp_path / "mnt" / "volume"
    dangling.symlink_to(volume)
    loop.symlink_to(loop)
    for where, reason in [
        (dangling, f"{dangling} is a symbolic link to {volume}, which is not there"),
        (loop, f"{loop}: its symbolic links form a loop"),
    ]:
        for mode in ([], ["--migrate"]):
            assert main([*QUICK, "--data-dir", str(where), *mode]) == 1
            last = capsys.readouterr().err.splitlines()[-1]
            assert last.endswith(f"cannot make {where} ({reason})"), (mode, last)
    assert not (tmp_path / "mnt").exists()


def test_a_lock_file_that_cannot_be_opened_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its directory was blamed: "cannot write in <data dir>"."""
    (tmp_path / "scorpion.db.lock").mkdir()
    assert main([*QUICK, "--data-dir", str(tmp_path)]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith(f"cannot open {tmp_path / 'scorpion.db.lock'} (Is a directory)"), last


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_directory_that_takes_no_files_is_said_so(capsys: pytest.CaptureFixture[str]) -> None:
    """``--data-dir /proc`` said "No such file or directory" of a directory that is there."""
    assert main([*QUICK, "--data-dir", "/proc", "--migrate"]) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith("cannot write in /proc (it takes no new files)"), last


@pytest.mark.parametrize("extra", [[], ["--migrate"]])
def test_symbolic_links_in_a_loop_are_one_line_at_once(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Serving ended as an unexpected failure (RuntimeError: Symlink loop, from the lock's
    path), and ``--migrate`` waited ``--db-wait-s`` for a file that can never open."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    url = f"sqlite+aiosqlite:///{tmp_path / 'a'}"
    started = time.monotonic()
    assert main([*QUICK, "--database-url", url, "--db-wait-s", "60", *extra]) == 1
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"scorpion-server: --database-url (SCORPION_DATABASE_URL): cannot follow "
        f"{tmp_path / 'a'}: its symbolic links form a loop"
    ), err
    assert "unexpected" not in err and "not available yet" not in err, err


def test_waiting_cures_a_busy_sqlite_file_but_not_a_read_only_one() -> None:
    def failure(name: str) -> StoreUnavailable:
        error = sqlite3.OperationalError(name)
        error.sqlite_errorname = name
        wrapped = StoreUnavailable("the database is unavailable or busy")
        wrapped.__cause__ = type("Wrapper", (Exception,), {"orig": error})()
        return wrapped

    assert may_pass(failure("SQLITE_BUSY")) and may_pass(failure("SQLITE_CANTOPEN"))
    assert not may_pass(failure("SQLITE_READONLY")) and not may_pass(failure("SQLITE_ERROR"))
    assert may_pass(StoreUnavailable("the database cannot be reached"))  # PostgreSQL's


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://u:pw@h/db",
        "postgresql+asyncpg://u:p%40w@h/db",
        "postgresql://u:pw@[::1]/db",
        "postgresql+asyncpg://u:pw@h:5432/db",
    ],
)
def test_a_postgresql_url_with_a_password_and_no_port_is_taken(url: str) -> None:
    """The check of the port as written took ``pw@h`` for the port of host ``u``:
    every URL with a password and the default port was refused."""
    assert load_settings(["--database-url", url], {}).database_url == url


def test_waiting_does_not_cure_a_postgresql_server_without_the_tls_asked_for() -> None:
    """``?ssl=require`` on a server without TLS was retried for the whole --db-wait-s."""
    refused = StoreUnavailable("the database cannot be reached")
    refused.__cause__ = ConnectionError(
        'PostgreSQL server at "127.0.0.1:5432" rejected SSL upgrade'
    )
    assert not may_pass(refused)
    reset = StoreUnavailable("the database cannot be reached")
    reset.__cause__ = ConnectionResetError("Connection reset by peer")
    assert may_pass(reset)


def test_a_postgresql_url_to_verify_with_no_root_certificate_is_said_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """asyncpg's ``ClientConfigurationError`` (no ``~/.postgresql/root.crt`` for
    ``sslmode=verify-full``) was retried for the whole --db-wait-s as "unavailable"."""
    monkeypatch.setenv("HOME", str(tmp_path))
    url = "postgresql+asyncpg://scorpion@127.0.0.1:1/scorpion?sslmode=verify-full"
    started = time.monotonic()
    assert main([*QUICK, "--database-url", url, "--db-wait-s", "60"]) == 1
    assert time.monotonic() - started < 20
    last = capsys.readouterr().err.splitlines()[-1]
    assert "cannot use the database: root certificate file" in last, last


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("postgresql+asyncpg://scorpion@127.0.0.1/sc%00x", "database name holds a control"),
        ("postgresql+asyncpg://sc%00x@127.0.0.1/scorpion", "user holds a control"),
        ("postgresql+asyncpg://scorpion:p%00w@127.0.0.1/scorpion", "password holds a NUL"),
        ("postgresql+asyncpg://sc%0Ax@127.0.0.1/scorpion", "user holds a control"),
        ("postgresql+asyncpg://scorpion@/scorpion?host=127.0.0.1%00", "host holds a control"),
        ("postgresql+asyncpg://scorpion@/scorpion?host=/tmp%0Ax", "host holds a control"),
    ],
)
@pytest.mark.parametrize("mode", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_control_character_in_a_postgresql_url_is_a_bad_setting(
    url: str, part: str, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A NUL reached PostgreSQL as a startup message it refuses as a protocol violation,
    retried for the whole --db-wait-s as "refused the work for now"; in ``?host=``, it
    failed ``--migrate`` as a bug. A newline cut the driver's reason short."""
    assert main([*QUICK, "--database-url", url, "--db-wait-s", "60", *mode]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert part in last, last


@pytest.mark.parametrize(
    "url", ["sqlite:////tmp/scorpion%00x.db", "sqlite+aiosqlite:///%00", "sqlite:///a/%00/b.db"]
)
@pytest.mark.parametrize("mode", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_a_nul_in_an_sqlite_url_is_a_bad_setting(
    url: str, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``%00`` in the file's path reached the path's resolution at start: the server
    stopped on an unexpected ValueError ("embedded null byte") with its traceback."""
    assert main([*QUICK, "--database-url", url, *mode]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected" not in err, err
    assert "holds a NUL character" in err.splitlines()[-1], err


def test_a_database_that_takes_the_connection_and_never_answers_is_said_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The wait's lines and the last one said only "cannot be reached": no reason."""
    with socket.socket() as silent:  # accepts (the kernel does), reads nothing, says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"postgresql+asyncpg://scorpion@127.0.0.1:{silent.getsockname()[1]}/scorpion"
        argv = [*QUICK, "--database-url", url, "--db-wait-s", "1", "--db-timeout-ms", "300"]
        assert main(argv) == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert "cannot use the database" in last and "no answer within --db-timeout-ms" in last, last


def test_two_migrations_at_once_on_a_new_sqlite_file_both_succeed(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "server", "--migrate", "--data-dir", str(tmp_path)]
    runs = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(run.wait(timeout=120), run.communicate()[1]) for run in runs]
    assert [code for code, _ in results] == [0, 0, 0, 0], results


async def test_a_link_to_the_sqlite_file_is_the_same_file(tmp_path: Path) -> None:
    settings = quiet_settings(tmp_path)
    first = ScorpionServer(settings)
    await first.start()
    try:
        link = tmp_path / "link.db"
        link.symlink_to(tmp_path / "scorpion.db")
        linked = quiet_settings(tmp_path, database_url=f"sqlite+aiosqlite:///{link}")
        with pytest.raises(SqliteInUse, match="already serves"):
            await ScorpionServer(linked).start()
    finally:
        await first.stop()


# -- HTTP ------------------------------------------------------------------------------------


async def test_a_request_target_in_absolute_form_is_answered_as_its_path() -> None:
    async def current() -> SchemaStatus:
        return SchemaStatus.CURRENT

    routes = HttpRoutes(Metrics(), current, timeout=1.0, name="test")
    for target in ("http://example.org/healthz", "HTTPS://example.org:8443/healthz?x=1"):
        assert (await routes.answer(target)).status == 200
    assert (await routes.answer("http://example.org")).status == 200  # "/"
    assert (await routes.answer("ftp://example.org/healthz")).status == 404


async def test_the_serving_line_writes_an_ipv6_host_in_brackets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = ScorpionServer(quiet_settings(tmp_path, host="::1"))
    try:
        with caplog.at_level(logging.INFO, logger="server"):
            await server.start()
    except ListenError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert f"serving on ws://[::1]:{server.port}/" in caplog.text
    finally:
        await server.stop()


def test_the_help_names_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert "Exit status: 0 stopped (SIGTERM, SIGINT, SIGHUP)" in capsys.readouterr().out


def test_the_help_names_every_settings_variable(capsys: pytest.CaptureFixture[str]) -> None:
    """Each flag says the variable that sets it too, the one switch (--migrate) with it."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for each in fields(Settings):
        assert f"(env SCORPION_{each.name.upper()}" in text, each.name
    assert "(env SCORPION_MIGRATE=1)" in text


def test_a_full_disk_is_named_in_the_log_without_the_statement() -> None:
    """A store failure logged ``OperationalError <- OperationalError``: the operator could
    not tell a full disk from a locked file. SQLite's result code is a name, never a value."""
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"
    try:
        try:
            raise DBAPIError("INSERT INTO games VALUES (?)", ("secret",), full) from full
        except DBAPIError as wrapped:
            raise StoreUnavailable("the database is unavailable or busy") from wrapped
    except StoreUnavailable as failure:
        text = describe_exception(failure)
    assert text == (
        "StoreUnavailable: the database is unavailable or busy <- DBAPIError (SQLITE_FULL) "
        "<- OperationalError (SQLITE_FULL)"
    )
    assert "secret" not in text and "INSERT" not in text


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_unexpected_failure_is_logged_and_ends_in_one_line(
    fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bug in start-up was a raw traceback (not JSON, with source lines). And a record
    another handler formatted first (here pytest's) carried its cached traceback into
    the text line."""

    def broken(serving: Coroutine[Any, Any, None], *_args: object) -> None:
        serving.close()  # never started, as by a loop that failed first: no warning of it
        raise RuntimeError("a bug")

    monkeypatch.setattr("server.app.run_loop", broken)
    assert main([*QUICK, "--data-dir", str(tmp_path), "--log-format", fmt]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if fmt == "json":
        lines = json_lines(err)
        assert "RuntimeError: a bug" in str(lines[0]["error"]) and lines[0]["level"] == "ERROR"
        assert lines[-1]["message"] == "stopped by an unexpected RuntimeError (logged above)"
    else:
        assert err.splitlines()[-1] == (
            "scorpion-server: stopped by an unexpected RuntimeError (logged above)"
        )


@pytest.mark.parametrize("extra", [[], ["--migrate"]], ids=["serve", "migrate"])
def test_another_programs_postgresql_database_is_refused_and_left_alone(
    extra: list[str], server_postgres_url: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    url = server_postgres_url
    empty = ("DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    run_isolated(lambda: _admin(url, *empty, "CREATE TABLE users (id int)"))
    try:
        assert main([*QUICK, "--db-wait-s", "60", "--database-url", url, *extra]) == 2
        last = capsys.readouterr().err.splitlines()[-1]
        assert "another program's tables (users) and none of scorpion-server's" in last
        assert "--migrate`" not in last  # not the upgrade hint: it would not help
    finally:
        run_isolated(lambda: _admin(url, *empty))


def test_the_log_format_and_loop_are_read_in_any_case_as_the_log_level_is() -> None:
    settings = load_settings(
        ["--log-format", "JSON", "--event-loop", "AsyncIO", "--log-level", "debug"]
    )
    assert (settings.log_format, settings.event_loop) == ("json", "asyncio")
    assert requested_log_format(["--log-format=Json", "--port", "x"], {}) == "json"


def test_a_second_migrate_says_it_had_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/server.md: run twice, the second finds nothing to do; it said "schema
    upgraded" again."""
    argv = ["--migrate", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    assert "schema upgraded" in capsys.readouterr().err
    assert main(argv) == 0
    said = capsys.readouterr().err
    assert "schema current already: nothing to do" in said and "upgraded" not in said


def test_migrate_to_takes_the_schema_down_and_up_without_alembic_ini(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Going back was documented as ``alembic downgrade`` only, which an installed server
    cannot run (no alembic.ini ships). ``--migrate-to`` takes the same lock and settings
    as ``--migrate``; a revision this version does not have is refused in one line."""
    monkeypatch.chdir(tmp_path)  # no alembic.ini here, as on a host installed from the wheel
    argv = ["--data-dir", str(tmp_path)]
    head = schema_revision()

    def stamped() -> str:
        with contextlib.closing(sqlite3.connect(tmp_path / "scorpion.db")) as db:
            return str(db.execute("SELECT version_num FROM alembic_version").fetchone()[0])

    assert main([*argv, "--migrate"]) == 0
    assert main([*argv, "--migrate-to", "0009"]) == 0
    assert f"schema migrated from revision {head} to 0009" in capsys.readouterr().err
    assert stamped() == "0009"
    assert main([*argv, "--migrate-to", "0009"]) == 0
    assert "schema at revision 0009 already: nothing to do" in capsys.readouterr().err
    assert main([*argv, "--migrate-to", "9999"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"scorpion-server: --migrate-to (SCORPION_MIGRATE_TO): this version knows no revision "
        f"'9999' (it has 0001 to {head})"
    ]
    serving = SqliteLock(f"sqlite+aiosqlite:///{tmp_path}/scorpion.db")
    serving.acquire()  # as a running server holds it
    try:
        assert main([*argv, "--migrate-to", head]) == 2
        assert "stop it before migrating" in capsys.readouterr().err.splitlines()[-1]
    finally:
        serving.release()
    assert stamped() == "0009"
    assert main([*argv, "--migrate-to", head]) == 0
    assert stamped() == head


def test_an_empty_migrate_to_is_refused_and_an_empty_variable_is_unset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--migrate-to ""`` (a shell variable left unset) started serving and, on SQLite,
    upgraded the schema it was meant to take back: it is refused as an unknown revision.
    An empty ``SCORPION_MIGRATE_TO`` is unset, as every empty setting in an environment
    file."""
    argv = ["--data-dir", str(tmp_path)]
    assert load_settings([], {"SCORPION_MIGRATE_TO": ""}).migrate_to is None
    with pytest.raises(SettingsError, match="knows no revision ''"):
        load_settings([*argv, "--migrate-to", ""])
    assert main([*argv, "--migrate"]) == 0
    assert main([*argv, "--migrate-to", "0009"]) == 0
    capsys.readouterr()
    assert main([*argv, "--migrate-to", ""]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"scorpion-server: --migrate-to (SCORPION_MIGRATE_TO): this version knows no revision "
        f"'' (it has 0001 to {schema_revision()})"
    ]
    with contextlib.closing(sqlite3.connect(tmp_path / "scorpion.db")) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "0009"


def test_migrate_to_waits_for_the_database_as_migrate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--migrate-to`` opened the database once: another process holding SQLite's write
    lock longer than --db-timeout-ms, or PostgreSQL not listening yet, ended it at once,
    where ``--migrate`` waits up to --db-wait-s (deploy.md: the same settings)."""
    argv = ["--data-dir", str(tmp_path)]
    assert main([*argv, "--migrate"]) == 0
    holder = sqlite3.connect(
        tmp_path / "scorpion.db", isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as a backup or another program holds it
    releasing = threading.Timer(2.0, holder.execute, ("COMMIT",))
    releasing.start()
    capsys.readouterr()
    try:
        waiting = ["--db-timeout-ms", "300", "--db-wait-s", "30"]
        assert main([*argv, "--migrate-to", "0009", *waiting]) == 0
    finally:
        releasing.join()
        holder.close()
    err = capsys.readouterr().err
    assert "the database is not available yet" in err, err
    assert f"schema migrated from revision {schema_revision()} to 0009" in err, err
    assert main(["--migrate-to", "0009", "--database-url", NOWHERE, "--db-wait-s", "1"]) == 1
    err = capsys.readouterr().err
    assert "the database is not available yet" in err, err
    assert err.splitlines()[-1].startswith("scorpion-server: cannot use the database"), err


async def test_migrate_to_on_postgresql(server_postgres_url: str | None, tmp_path: Path) -> None:
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    await _admin(server_postgres_url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    settings = quiet_settings(tmp_path, database_url=server_postgres_url)
    assert await migrate_to(replace(settings, migrate_to="0005")) == (
        "schema migrated from revision (none) to 0005"
    )
    await migrate(settings)
    line = await migrate_to(replace(settings, migrate_to="0004"))
    assert line == f"schema migrated from revision {schema_revision()} to 0004"


async def test_a_serving_role_that_may_not_change_the_schema_version_serves(
    server_postgres_url: str | None, tmp_path: Path
) -> None:
    """A host may migrate as the schema's owner and serve as a role that only reads and
    writes the game's tables. The start's writability check updated ``alembic_version``,
    so such a role was refused as one that cannot write."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    await migrate(quiet_settings(tmp_path, database_url=server_postgres_url))
    role = f"scorpion_serving_{os.getpid()}"
    await _admin(
        server_postgres_url,
        f"DROP ROLE IF EXISTS {role}",
        f"CREATE ROLE {role} LOGIN",
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {role}",
    )
    serving_url = make_url(server_postgres_url).set(username=role)
    url = serving_url.render_as_string(hide_password=False)
    server = ScorpionServer(quiet_settings(tmp_path, database_url=url))
    try:
        await server.start()
        await server.stop()
        # A role that may not store moves is still refused at the start, at once.
        await _admin(server_postgres_url, f"REVOKE UPDATE ON games FROM {role}")
        with pytest.raises(StoreError):
            await ScorpionServer(quiet_settings(tmp_path, database_url=url)).start()
    finally:
        await _admin(server_postgres_url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


def test_a_role_that_may_only_read_is_refused_at_once_not_waited_for(
    server_postgres_url: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A role without the grants to play (SELECT alone) was taken for a database "not
    available yet" and retried for the whole --db-wait-s (60 s) before it was refused."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    run_isolated(lambda: migrate(quiet_settings(tmp_path, database_url=server_postgres_url)))
    role = f"scorpion_reading_{os.getpid()}"
    run_isolated(
        lambda: _admin(
            server_postgres_url,
            f"DROP ROLE IF EXISTS {role}",
            f"CREATE ROLE {role} LOGIN",
            f"GRANT USAGE ON SCHEMA public TO {role}",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
        )
    )
    url = make_url(server_postgres_url).set(username=role).render_as_string(hide_password=False)
    try:
        started = time.monotonic()
        assert main([*QUICK, "--database-url", url, "--db-wait-s", "60"]) == 1
        assert time.monotonic() - started < 20
    finally:
        run_isolated(
            lambda: _admin(server_postgres_url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")
        )
    err = capsys.readouterr().err
    assert "not available yet" not in err, err
    last = err.splitlines()[-1]
    assert last.startswith("scorpion-server: cannot use the database: ") and "permission" in last


def test_a_serving_role_without_the_grants_on_an_upgrades_new_table_is_refused(
    server_postgres_url: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A serving role granted its rights before an upgrade has none on a table the
    upgrade made (0009's issued_tokens). The start checked only that moves could be
    stored: the node started, said it was ready, and answered every registration and
    token rotation ``unavailable``. Refused at start, naming what is missing, until
    the grants are made again (deploy.md, Schema upgrades)."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    owner = server_postgres_url
    role = f"scorpion_upgraded_{os.getpid()}"
    grant = (
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {role}",
    )

    async def before_the_upgrade() -> None:
        await _admin(owner, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
        engine = create_engine(owner)
        try:
            await run_alembic(engine, "upgrade", "0008")
        finally:
            await engine.dispose()
        await _admin(
            owner,
            f"DROP ROLE IF EXISTS {role}",
            f"CREATE ROLE {role} LOGIN",
            f"GRANT USAGE ON SCHEMA public TO {role}",
            *grant,
        )

    run_isolated(before_the_upgrade)
    url = make_url(owner).set(username=role).render_as_string(hide_password=False)
    try:
        assert main([*QUICK, "--migrate", "--database-url", owner]) == 0
        with pytest.raises(StoreAccessRefused, match="lacks SELECT on table issued_tokens"):
            run_isolated(lambda: _start_and_stop(url, tmp_path))
        capsys.readouterr()
        assert main([*QUICK, "--database-url", url, "--db-wait-s", "60"]) == 1
        last = capsys.readouterr().err.splitlines()[-1]
        assert last.startswith("scorpion-server: cannot use the database: permission denied")
        assert "lacks SELECT on table issued_tokens" in last
        run_isolated(lambda: _admin(owner, *grant))  # as deploy.md says, after --migrate
        run_isolated(lambda: _start_and_stop(url, tmp_path))
    finally:
        run_isolated(lambda: _admin(owner, f"DROP OWNED BY {role}", f"DROP ROLE {role}"))


def test_a_serving_role_granted_column_by_column_and_sequences_by_update_starts(
    server_postgres_url: str | None, tmp_path: Path
) -> None:
    """Grants on every column serve as the table's, and UPDATE on a sequence serves
    ``nextval`` as USAGE does: the start-up check refused such a role, which can run
    every statement the server makes, as lacking SELECT on players."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    owner = server_postgres_url
    role = f"scorpion_columns_{os.getpid()}"
    by_column = (
        "DO $$ DECLARE t record; BEGIN FOR t IN SELECT c.relname AS name,"
        " string_agg(quote_ident(a.attname), ', ') AS cols FROM pg_class AS c"
        " JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' GROUP BY c.relname"
        " LOOP EXECUTE format('GRANT SELECT (%s), INSERT (%s), UPDATE (%s) ON %I TO "
        + role
        + "', t.cols, t.cols, t.cols, t.name); END LOOP; END $$"
    )

    async def set_up() -> None:
        await _admin(owner, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
        engine = create_engine(owner)
        try:
            await run_alembic(engine, "upgrade", "head")
        finally:
            await engine.dispose()
        await _admin(
            owner,
            f"DROP ROLE IF EXISTS {role}",
            f"CREATE ROLE {role} LOGIN",
            f"GRANT USAGE ON SCHEMA public TO {role}",
            by_column,
            f"GRANT DELETE ON ALL TABLES IN SCHEMA public TO {role}",
            f"GRANT UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}",
        )

    run_isolated(set_up)
    url = make_url(owner).set(username=role).render_as_string(hide_password=False)
    try:
        run_isolated(lambda: _start_and_stop(url, tmp_path))
    finally:
        run_isolated(lambda: _admin(owner, f"DROP OWNED BY {role}", f"DROP ROLE {role}"))


def test_a_role_without_usage_on_the_schema_is_refused_naming_it(
    server_postgres_url: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """deploy.md's grants but the first (``GRANT USAGE ON SCHEMA public``), where PUBLIC
    has no USAGE on the schema either (a schema made anew, as hardened hosts have it):
    the role sees none of the tables, so the node was told the database had no schema
    yet and to run --migrate, which as that role failed with "no schema has been
    selected to create in". Both are refused in one line naming the missing USAGE."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    owner = server_postgres_url
    role = f"{make_url(owner).database}_no_usage"

    async def set_up() -> None:
        await _admin(owner, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
        await migrate(quiet_settings(tmp_path, database_url=owner))
        await _admin(
            owner,
            f"DROP ROLE IF EXISTS {role}",
            f"CREATE ROLE {role} LOGIN",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
            f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}",
            f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {role}",
        )

    run_isolated(set_up)
    url = make_url(owner).set(username=role).render_as_string(hide_password=False)
    refused = (
        "scorpion-server: cannot use the database: permission denied: "
        "the database role lacks USAGE on schema public"
    )
    try:
        capsys.readouterr()
        for extra in ([], ["--migrate"]):
            started = time.monotonic()
            assert main([*QUICK, "--database-url", url, "--db-wait-s", "60", *extra]) == 1
            assert time.monotonic() - started < 20  # refused at once, not waited for
            err = capsys.readouterr().err
            assert "not available yet" not in err, err
            assert err.splitlines()[-1].startswith(refused), err
        # A schema of its own, first in the default search path ("$user", public): the
        # role could use a schema, and was told to migrate, which made a second, empty
        # copy of every table there.
        run_isolated(lambda: _admin(owner, f"CREATE SCHEMA AUTHORIZATION {role}"))
        for extra in ([], ["--migrate"]):
            assert main([*QUICK, "--database-url", url, *extra]) == 1
            err = capsys.readouterr().err
            assert err.splitlines()[-1].startswith(refused), err
        run_isolated(lambda: _admin(owner, f"DROP SCHEMA {role}"))
        run_isolated(lambda: _admin(owner, f"GRANT USAGE ON SCHEMA public TO {role}"))
        run_isolated(lambda: _start_and_stop(url, tmp_path))
    finally:
        run_isolated(lambda: _admin(owner, f"DROP OWNED BY {role}", f"DROP ROLE {role}"))


async def _start_and_stop(url: str, tmp_path: Path) -> None:
    server = ScorpionServer(quiet_settings(tmp_path, database_url=url))
    await server.start()
    await server.stop()


def test_waiting_does_not_cure_access_refused() -> None:
    assert not may_pass(StoreAccessRefused("the database named does not exist"))


async def test_a_node_with_ssl_in_its_url_hears_the_other_nodes(
    server_postgres_url: str | None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``?ssl=disable`` served, but the change listener never connected (it read the
    URL as a DSN, where ``ssl`` is a server setting PostgreSQL refuses)."""
    if server_postgres_url is None:
        pytest.skip("needs SCORPION_TEST_DATABASE_URL")
    settings = quiet_settings(tmp_path, database_url=f"{server_postgres_url}?ssl=disable")
    await migrate(settings)
    server = ScorpionServer(settings)
    with caplog.at_level(logging.WARNING, logger="server.store.notify"):
        await server.start()
        await server.stop()
    assert "change listener" not in caplog.text


def _rows(path: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_a_backup_put_in_place_while_the_server_runs_is_not_mixed_with_its_writes(
    tmp_path: Path,
) -> None:
    """A backup moved over the file while the server ran was served its writes: they
    went to the write-ahead log at the path, which the next start read as the backup's
    own (3 of 3: the restored file held the old one's players and games, and a move
    after the restore was acknowledged)."""
    running = Running(quiet_settings(tmp_path))
    await running.start()
    database = tmp_path / "scorpion.db"
    backup = tmp_path / "backup.db"
    try:
        ada = await running.player("ada")
        game = (await ada.request("new_game", level="hard", deal=1))["game"]
        with (
            contextlib.closing(sqlite3.connect(database)) as live,
            contextlib.closing(sqlite3.connect(backup)) as copy,
        ):
            live.backup(copy)  # the documented online backup: ada and her game
        assert (await ada.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
        await running.player("bob")  # written after the backup: in the log at the path
        os.replace(backup, database)  # the restore, while the server runs
        refused = await ada.request("undo", game=game, v=1)
        assert (refused["type"], refused.get("code")) == ("error", "unavailable"), refused
        late = await running.connect()
        await late.hello()
        assert (await late.request("register", name="cy")).get("code") == "unavailable"
    finally:
        await running.stop()
    # what a server started on it now reads: the backup, and nothing of the old file
    assert _rows(database, "players") == 1
    assert _rows(database, "game_actions") == 0
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_a_file_replaced_with_nothing_written_since_is_found_and_its_log_emptied(
    tmp_path: Path,
) -> None:
    """No move played (the writer's own connection never made) and nothing written after
    the restore: the log was left at the path, for a kill -9, or the next start, to read
    into the restored file. Now it is found within a second, and emptied."""
    running = Running(quiet_settings(tmp_path))
    await running.start()
    database, backup = tmp_path / "scorpion.db", tmp_path / "backup.db"
    try:
        await running.player("ada")
        with (
            contextlib.closing(sqlite3.connect(database)) as live,
            contextlib.closing(sqlite3.connect(backup)) as copy,
        ):
            live.backup(copy)
        await running.player("bob")  # in the log at the path
        assert (tmp_path / "scorpion.db-wal").stat().st_size > 0
        os.replace(backup, database)
        await asyncio.sleep(2.5)  # no write: the store looks once a second
        assert (tmp_path / "scorpion.db-wal").stat().st_size == 0
        assert _rows(database, "players") == 1  # read now, as a kill -9 would leave it
    finally:
        await running.stop()
    assert _rows(database, "players") == 1


async def test_a_file_replaced_while_the_server_starts_is_refused(tmp_path: Path) -> None:
    """The file was pinned only once checked: replaced between the schema's upgrade (whose
    connection stays in the pool, on the old file) and that check, the new file was
    pinned and the server wrote on into the old one, ready (3 of 8 by hand)."""
    settings = quiet_settings(tmp_path)
    make_sqlite_directory(settings)
    store = Store.connect(settings.store_url)
    try:
        await store.upgrade()
        database = tmp_path / "scorpion.db"
        with contextlib.closing(sqlite3.connect(tmp_path / "other.db")) as other:
            other.execute("CREATE TABLE t (x)")
        os.replace(tmp_path / "other.db", database)
        with pytest.raises(DatabaseReplaced):
            await store.check_writable()
    finally:
        await store.close()


@pytest.mark.parametrize("how", ["removed", "moved"])
async def test_no_file_is_made_nor_written_where_the_served_one_was(
    how: str, tmp_path: Path
) -> None:
    """The file removed or moved away: a connection made for the next write created an
    empty file at the path and the write failed ``internal`` (5 of 5), and the next start
    began on that empty file; moved away after writes, the writes stayed in the log at
    the old path, the moved file empty of them."""
    running = Running(quiet_settings(tmp_path))
    await running.start()
    database = tmp_path / "scorpion.db"
    try:
        ada = await running.player("ada")
        game = (await ada.request("new_game", level="hard", deal=1))["game"]
        assert (await ada.request("move", game=game, v=0, card="7C", to=5))["type"] == "ack"
        if how == "removed":
            database.unlink()
        else:
            database.rename(tmp_path / "moved.db")
        refused = await ada.request("undo", game=game, v=1)
        assert (refused["type"], refused.get("code")) == ("error", "unavailable"), refused
        bob = await running.connect()
        await bob.hello()
        registered = await bob.request("register", name="bob")
        assert registered.get("code") == "unavailable", registered
    finally:
        await running.stop()
    assert not database.exists()
    if how == "moved":
        moved = tmp_path / "moved.db"
        assert _rows(moved, "players") == 1 and _rows(moved, "game_actions") == 1
        wal = tmp_path / "scorpion.db-wal"
        assert not wal.exists() or wal.stat().st_size == 0


@pytest.mark.parametrize("how", ["removed", "replaced"])
async def test_readiness_fails_when_the_sqlite_file_is_taken_away(
    how: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server kept answering ``ready`` (and acknowledging moves) into a deleted file,
    all of it gone at the next start."""
    server = ScorpionServer(quiet_settings(tmp_path))
    await server.start()
    try:
        status, _, _ = await http_get(server.port, "/readyz")
        assert status == 200
        database = tmp_path / "scorpion.db"
        if how == "removed":
            database.unlink()
        else:
            database.rename(tmp_path / "moved.db")
            shutil.copy(tmp_path / "moved.db", database)
        await asyncio.sleep(READY_REUSE_S)  # the answer before serves no longer
        with caplog.at_level(logging.ERROR, logger="server.http"):
            status, _, body = await http_get(server.port, "/readyz")
        assert status == 503
        assert f"the database file {database} was removed or replaced" in body.decode()
        assert "was removed or replaced" in caplog.text
    finally:
        await server.stop()
