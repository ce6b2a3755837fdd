"""``python -m bench.run`` reads its command line and checks its settings first."""

from __future__ import annotations

import pytest

from bench import run
from bench.common import SettingError


def _no_section(*_args: object) -> str:
    raise AssertionError("a section ran")


def test_help_describes_the_run_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(run, "engine_section", _no_section)
    assert run.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "BENCH_SECONDS" in out and "BENCH_LEVELS" in out and "Exit status" in out


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BENCH_SECONDS", "abc"),
        ("BENCH_SECONDS", "-1"),
        ("BENCH_LEVELS", "bogus"),
        ("BENCH_DEALS", "x"),
        ("BENCH_DEALS", "5..1"),
        ("BENCH_DEALS_HARD", "1..x"),
        ("BENCH_BUDGET_MS", "0"),
        ("BENCH_PLAYERS", "x"),
        ("BENCH_PLAYERS", "-1"),
        ("BENCH_ACTIONS", "0"),
        ("BENCH_STORED", "-5"),
        ("BENCH_HINT_EASY", "1.5"),
    ],
)
def test_a_bad_setting_is_refused_before_anything_runs(
    name: str,
    value: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SettingError, match=f"^{name}: "):
        run.settings({name: value})
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(run, "engine_section", _no_section)
    monkeypatch.setattr(run, "solver_section", _no_section)
    assert run.main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m bench.run: {name}: ") and err.count("\n") == 1


def test_the_defaults_are_accepted() -> None:
    chosen = run.settings({"BENCH_LEVELS": "hard,relaxed", "BENCH_SECONDS": "0"})
    assert chosen["levels"] == ["hard", "relaxed"] and chosen["seconds"] == 0
    assert run.settings({"BENCH_LEVELS": "none"})["levels"] == []
