"""``scorpion-engine`` given values and files it cannot use: one line, exit status 2.

Before: ``solve --budget-ms -5`` or ``nan`` was taken as a budget; ``easy-deals
--budget-ms -1`` never ended (each search gave up at once); ``solve-bench --deals
5..1`` ended in a ZeroDivisionError traceback and ``0..2`` in a DealNumberError one;
``verify /dev/zero`` read until the memory ran out; a malformed flag printed the
usage over several lines; ``solve --replay`` said ``[Errno 2] ...`` where
``verify`` names the file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import MAX_REPLAY_ACTIONS, MAX_REPLAY_VALUES, main
from engine.solver import native
from tests.helpers import interrupted_while_loading


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line ``scorpion-engine argv`` ends with, checking exit status 2."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse's refusals
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["solve", "--number", "5", "--budget-ms", "-5"],
            "argument --budget-ms: expected a finite",
        ),
        (
            ["solve", "--number", "5", "--budget-ms", "nan"],
            "argument --budget-ms: expected a finite",
        ),
        (
            ["solve", "--number", "5", "--budget-ms", "inf"],
            "argument --budget-ms: expected a finite",
        ),
        (["solve", "--number", "5", "--budget-ms", "0"], "argument --budget-ms: expected a finite"),
        (["easy-deals", "--budget-ms", "-1"], "argument --budget-ms: expected a finite"),
        (["easy-deals", "--count", "-1"], "argument --count: expected 0 or more"),
        (["solve-bench", "--deals", "5..1"], "argument --deals: expected A..B with 1 <= A <= B"),
        (["solve-bench", "--deals", "0..2"], "argument --deals: expected A..B with 1 <= A <= B"),
        (["solve-bench", "--deals", "1..2", "--budget-ms", "-1"], "argument --budget-ms"),
        (["bench", "--seconds", "0"], "argument --seconds: expected a finite number above 0"),
        (["deal", "--number", "abc"], "argument --number: invalid int value: 'abc'"),
        (["deal", "--level", "nope", "--number", "1"], "argument --level: invalid choice"),
    ],
)
def test_a_bad_value_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    line = refused(capsys, *argv)
    assert line.startswith(f"scorpion-engine {argv[0]}: {says}"), line
    assert line.endswith("(see --help)")


def test_no_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(capsys).startswith("scorpion-engine: the following arguments are required")


def test_solve_names_the_replay_it_cannot_use(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.json"
    assert refused(capsys, "solve", "--replay", str(missing)) == (
        f"scorpion-engine: cannot read {missing}: No such file or directory"
    )
    assert refused(capsys, "solve", "--replay", str(tmp_path)) == (
        f"scorpion-engine: cannot read {tmp_path}: Is a directory"
    )
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert refused(capsys, "solve", "--replay", str(empty)).startswith(
        "scorpion-engine: not a replay: "
    )
    illegal = tmp_path / "illegal.json"
    illegal.write_text(
        json.dumps(
            {
                "format": "scorpion-replay",
                "version": 1,
                "level": "hard",
                "deal": 5,
                "actions": [{"type": "move", "card": "AS", "to": 1, "t": 0}],
            }
        )
    )
    line = refused(capsys, "solve", "--replay", str(illegal))
    assert line.startswith(f"scorpion-engine: {illegal}: the rules refuse action 0: "), line


def test_verify_reads_no_more_than_a_replay_can_be(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.cli.MAX_REPLAY_BYTES", 1000)
    big = tmp_path / "big.json"
    big.write_text(" " * 2000 + "{}")
    assert (
        refused(capsys, "verify", str(big))
        == "scorpion-engine: not a replay: larger than 1,000 bytes"
    )
    zero = Path("/dev/zero")
    if zero.exists():
        assert "larger than" in refused(capsys, "verify", str(zero))


def _replay(actions: str, level: str = "hard") -> str:
    return (
        f'{{"format": "scorpion-replay", "version": 1, "level": "{level}", "deal": 5, '
        f'"actions": [{actions}]}}'
    )


def test_verify_stops_reading_past_the_most_actions_a_replay_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A 16 MB file of a million bare hints, under the size cap, took 98 s and 545 MB
    to verify (a 64 MB one, about 2 GB): reading stops at MAX_REPLAY_ACTIONS."""
    many = tmp_path / "many.json"
    many.write_text(_replay(",".join(['{"type": "hint"}'] * (MAX_REPLAY_ACTIONS + 1))))
    said = refused(capsys, "verify", str(many))
    assert said == f"scorpion-engine: not a replay: more than {MAX_REPLAY_ACTIONS:,} actions"
    flat = tmp_path / "flat.json"  # too many actions, though no object among them
    flat.write_text(_replay(",".join(["1"] * (MAX_REPLAY_ACTIONS + 1))))
    assert refused(capsys, "verify", str(flat)) == said


def test_verify_stops_before_reading_more_values_than_a_replay_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """32 MiB of empty lists in a field no reader knows (11 million of them) cost
    870 MB and seconds in C, where Ctrl-C waits: the values are counted first."""
    lists = tmp_path / "lists.json"
    lists.write_text(
        _replay("").replace('"actions"', '"x": [' + "[]," * MAX_REPLAY_VALUES + '[]], "actions"')
    )
    said = f"scorpion-engine: not a replay: more than {MAX_REPLAY_VALUES:,} values"
    assert refused(capsys, "verify", str(lists)) == said
    # and lists in lists, which need no comma: 32 MiB of them nested 400 deep took 1.7 GB
    nested = tmp_path / "nested.json"
    deep = "[" * 400 + "]" * 400
    nested.write_text(
        _replay("").replace(
            '"actions"', '"x": [' + deep * (MAX_REPLAY_VALUES // 400) + '], "actions"'
        )
    )
    assert refused(capsys, "verify", str(nested)) == said


def test_verify_reads_actions_with_fields_it_does_not_know(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Readers ignore fields they do not know (PROTOCOL.md section 14): 50,000 hints with
    six such objects each were refused as "more than 100,000 actions"."""
    later = tmp_path / "later.json"
    hint = '{"type": "hint", "a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}}'
    later.write_text(_replay(",".join([hint] * 50_000)))
    assert main(["verify", str(later)]) == 0
    assert json.loads(capsys.readouterr().out)["hints"] == 50_000


def test_a_key_given_twice_among_many_is_found_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The search for the key given twice was quadratic: 40,000 keys took 113 s."""
    keys = ", ".join(f'"k{i}": 0' for i in range(100_000))
    many = tmp_path / "many.json"
    many.write_text(_replay("").replace('"actions"', '"x": {' + keys + ', "k0": 1}, "actions"'))
    started = time.monotonic()
    assert refused(capsys, "verify", str(many)) == (
        "scorpion-engine: not a replay: the key 'k0' is given twice in one object"
    )
    assert time.monotonic() - started < 30  # quadratic: about 12 minutes


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (_replay("").replace('"deal": 5', '"deal": 5, "deal": 4'), "deal"),
        (_replay("").replace('"level": "hard"', '"level": "classic", "level": "hard"'), "level"),
        (_replay('{"type": "deal", "t": 5, "t": 1}'), "t"),
    ],
)
def test_verify_refuses_a_key_given_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, key: str
) -> None:
    """{"deal": 5, ..., "deal": 4} was judged as deal 4, where a reader taking the
    first would judge deal 5: one file, two verdicts."""
    twice = tmp_path / "twice.json"
    twice.write_text(text)
    assert refused(capsys, "verify", str(twice)) == (
        f"scorpion-engine: not a replay: the key {key!r} is given twice in one object"
    )


def test_verify_reads_a_replay_after_a_byte_order_mark(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A replay saved by an editor that writes a byte order mark was "not a replay"."""
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + _replay('{"type": "deal"}').encode())
    assert main(["verify", str(marked)]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True


def test_solve_refuses_a_level_beside_a_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--level easy beside a replay of hard was ignored: the verdict was hard's, unsaid."""
    replay = tmp_path / "hard.json"
    replay.write_text(_replay(""))
    assert refused(capsys, "solve", "--replay", str(replay), "--level", "easy") == (
        "scorpion-engine: --level does not go with --replay: the replay names its level"
    )
    assert refused(capsys, "solve", "--replay", "", "--level", "easy") == (
        "scorpion-engine: --level does not go with --replay: the replay names its level"
    )
    assert refused(capsys, "solve", "--replay", "") == (
        "scorpion-engine: cannot read : No such file or directory"
    )
    assert main(["solve", "--replay", str(replay), "--budget-ms", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"] in ("won", "lost", "unknown")


def test_the_help_names_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # as wrapped for any width
    assert "Exit status: 0 done; 1 verify" in out and "130 Ctrl-C; 141" in out


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv", [["deal", "--number", "1"], ["--help"], ["--version"]], ids=["deal", "help", "version"]
)
def test_output_that_cannot_be_written_is_one_line_not_a_traceback(argv: list[str]) -> None:
    """Output into a full disk (``/dev/full``) ended in an OSError traceback; --help and
    --version's were dropped unsaid (argparse's own), ending 0."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "engine", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "scorpion-engine: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("argv", [["deal", "--number", "1"], ["--help"]], ids=["deal", "help"])
def test_standard_output_closed_is_one_line_not_a_traceback(argv: list[str]) -> None:
    """Started with standard output closed (``>&-``): ``sys.stdout`` is None, and the
    output's flush ended in an AttributeError traceback (--help: nothing said, 0)."""
    done = subprocess.run(
        [sys.executable, "-m", "engine", *argv],
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "scorpion-engine: cannot write the output: standard output is closed\n"


def at_work(process: subprocess.Popen[str], cpu_s: float = 1.0) -> None:
    """Wait until ``process`` has used ``cpu_s`` of CPU: loaded and at work, however busy
    the machine (2 s of waiting were not, on a machine loaded ten times over: the signal
    came while Python was still starting, and ended it as SIGINT does)."""
    stat = Path(f"/proc/{process.pid}/stat")
    if not stat.exists():  # no /proc: time must do
        time.sleep(2)
        return
    ticks = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        used = stat.read_text().rsplit(")", 1)[1].split()[11:13]  # utime, stime
        if sum(map(int, used)) / ticks >= cpu_s:
            return
        time.sleep(0.05)
    raise AssertionError(f"the process did not get to work: {process.communicate()}")


def test_ctrl_c_during_a_command_ends_130_with_nothing_printed() -> None:
    """A long bench (or solve) interrupted printed a KeyboardInterrupt traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "engine", "bench", "--seconds", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    at_work(process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err == "" and out == ""


LONG = ("--budget-ms", "600000")


@pytest.mark.skipif(not native.available(), reason="the compiled search is not built")
def test_ctrl_c_during_the_compiled_search_ends_at_once() -> None:
    """Ctrl-C in a long compiled search was seen only when the search returned:
    18 to 26 s for relaxed deal 15 (Python runs its signal handler between its own
    instructions, and the search is C)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "engine", "solve", "--level", "relaxed", "--number", "15", *LONG],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    at_work(process)
    assert process.poll() is None, process.communicate()
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err == "" and out == ""
    assert time.monotonic() - sent < 5  # the search itself runs for 8 s or more


@pytest.mark.parametrize("after_s", [0.05, 0.15])
def test_ctrl_c_while_loading_ends_as_the_signal_does(after_s: float) -> None:
    """Ctrl-C while Python loads the engine and its solver printed a traceback."""
    done = interrupted_while_loading(
        [sys.executable, "-m", "engine", "bench", "--seconds", "30"], after_s
    )
    assert done.returncode in (-signal.SIGINT, 130), done.stdout
    assert "Traceback" not in done.stdout and "KeyboardInterrupt" not in done.stdout, done.stdout


def test_easy_deals_with_a_budget_that_decides_none_gives_up_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--budget-ms 0.0001`` is a finite number above 0, and no deal is decided in it:
    it searched for ever, printing nothing."""
    line = refused(capsys, "easy-deals", "--count", "1", "--budget-ms", "0.0001")
    assert line.startswith("scorpion-engine: none of 100 deals in a row was won"), line
    assert line.endswith("give the search a larger --budget-ms"), line


def test_a_card_of_ten_million_characters_is_quoted_short(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    replay = tmp_path / "long.json"
    action = {"type": "move", "card": "A" * 10_000_000, "to": 5, "t": 0}
    replay.write_text(
        json.dumps(
            {
                "format": "scorpion-replay",
                "version": 1,
                "level": "hard",
                "deal": 5,
                "actions": [action],
            }
        )
    )
    line = refused(capsys, "verify", str(replay))
    assert len(line) < 200 and "10,000,000 characters" in line, line[:300]
