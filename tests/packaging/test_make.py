"""``make`` beside a ``.venv`` it cannot use: one line saying to run ``make clean``.

README: "an older ``python3``, or a ``.venv`` that is broken or was made by one, stops
``make`` with one line saying what to do". A ``.venv`` that is a dangling link passed
the check (``[ -e ]`` is false for it) and ``venv`` failed with ``File exists``; one
without pip failed with ``No module named pip``; one whose packages were removed after
make installed them failed with ``.venv/bin/ruff: No such file or directory``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A directory with the Makefile and the files its install step depends on."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml", "setup.py", "constraints.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def refused(checkout: Path, target: str) -> str:
    done = subprocess.run(
        ["make", "-s", target, f"PYTHON={sys.executable}"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("make: .venv is broken"), done.stderr
    assert "make clean" in lines[0] and "Error 1" in lines[1], done.stderr  # make's own line
    return lines[0]


def test_a_dangling_link(checkout: Path) -> None:
    (checkout / ".venv").symlink_to(checkout / "gone")
    assert "too old" in refused(checkout, "lint")


def test_a_venv_without_pip(checkout: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", ".venv"], cwd=checkout, check=True
    )
    assert "no pip" in refused(checkout, "test")


def test_a_venv_whose_packages_are_gone(checkout: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=checkout, check=True)
    (checkout / ".venv" / ".installed").touch()  # make installed once; then they were removed
    assert "packages make installed are gone" in refused(checkout, "lint")
