"""A benchmark refuses a bad flag, file or output in one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bench import abuse, commit, compare, echo, hints, idle, load, profile, stored
from bench.common import BenchError, run_main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (load.main, ["--players", "0"], "--players: must be at least 1: '0'"),
        (load.main, ["--players", "-1"], "--players: must be at least 1"),
        (load.main, ["--actions", "0"], "--actions: must be at least 1"),
        (load.main, ["--actions", "-3"], "--actions: must be at least 1"),
        (load.main, ["--players", "x"], "--players: not a whole number: 'x'"),
        (load.main, ["--loop", "bogus"], "--loop: invalid choice: 'bogus'"),
        (load.main, ["--database-url", "bogus://x"], "--database-url: not a sqlite"),
        (idle.main, ["--connections", "0"], "--connections: must be at least 1"),
        (idle.main, ["--connections", "-1"], "--connections: must be at least 1"),
        (commit.main, ["--commits", "0"], "--commits: must be at least 1"),
        (commit.main, ["--commits", "2", "--database-url", "bogus"], "--database-url"),
        (stored.main, ["--many", "-1"], "--many: must be at least 1"),
        (stored.main, ["--rounds", "0"], "--rounds: must be at least 1"),
        (hints.main, ["--easy", "-1"], "--easy: must be at least 0"),
        (hints.main, ["--levels", "bogus"], "--levels: unknown level 'bogus'"),
        (profile.main, ["x.prof", "--top", "-1"], "--top: must be at least 1"),
        (echo.main, ["--port", "-1"], "--port: must be at least 1"),
        (echo.main, ["--port", "99999"], "--port: must be at most 65535"),
        (abuse.main, ["--other", "/nonexistent"], "--other: no checkout"),
        (compare.main, ["x=HEAD", "--rounds", "0"], "--rounds: must be at least 1"),
    ],
)
def test_a_bad_flag_is_refused_in_one_line(
    main: Callable[[Sequence[str] | None], int],
    argv: list[str],
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("file", "said"),
    [
        ("/nonexistent", "cannot read /nonexistent: No such file or directory"),
        ("/", "cannot read /: Is a directory"),
        (sys.executable, "is not a py-spy raw sample file"),
    ],
)
def test_an_unreadable_profile_is_said_in_one_line(
    file: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert profile.main([file]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m bench.profile: ") and said in err and err.count("\n") == 1


def test_an_unknown_revision_is_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="no such revision: 'nonexistentrev'"):
        compare.export("nonexistentrev", tmp_path)
    with pytest.raises(BenchError, match="no revision given"):
        compare.export("", tmp_path)


def _main_raising(error: BaseException) -> Callable[[Sequence[str] | None], int]:
    def main(_argv: Sequence[str] | None) -> int:
        raise error

    return main


def test_ctrl_c_ends_quietly_with_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main("bench", _main_raising(KeyboardInterrupt())) == 130
    assert capsys.readouterr().err == ""


def test_another_failure_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    failing = _main_raising(ConnectionRefusedError(111, "Connection refused"))
    assert run_main("python -m bench.x", failing) == 1
    assert capsys.readouterr().err == "python -m bench.x: Connection refused\n"


def _bench(args: list[str], stdout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_reader_that_left_ends_quietly_with_141(tmp_path: Path) -> None:
    samples = tmp_path / "empty.prof"
    samples.write_text("")
    read, write = os.pipe()
    os.close(read)  # the reader left before the first line
    try:
        done = _bench(["bench.profile", str(samples)], write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["bench.load", "--help"], ["bench.profile", "/dev/null"]])
def test_an_output_that_cannot_be_written_is_said(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = _bench(args, full.fileno())
    assert done.returncode == 1
    assert done.stderr == f"python -m {args[0]}: cannot write the output: No space left on device\n"
