"""The package as a host installs it: sdist, wheel, a fresh venv, migrate, serve, play.

``python -m build`` makes the sdist and then the wheel from the sdist, as a
release does, so a file missing from the sdist breaks the wheel. The wheel is
installed into a new venv outside the checkout with the pinned versions
(``constraints.txt``; pip's cache keeps it fast), and every program then runs
from that venv with the checkout out of reach: ``scorpion-server --migrate`` on
a temporary SQLite file, ``scorpion-server`` on an ephemeral port of
127.0.0.1, and the installed ``scorpion`` client plays a short game against it
(register, a new game, a move, resign). Where a C compiler exists the wheel
must carry the compiled search, and the server must say it runs it.

Without the ``build`` package (in the ``dev`` extra) the test skips; with
``SCORPION_REQUIRE_BUILD=1`` (CI) that is a failure instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
REQUIRED = os.environ.get("SCORPION_REQUIRE_BUILD", "") not in ("", "0")
HAS_COMPILER = shutil.which(os.environ.get("CC", "cc")) is not None
# What building, testing and hosting need, as paths inside the sdist.
SDIST_FILES = {
    "LICENSE",
    "README.md",
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "constraints.txt",
    "alembic.ini",
    "Makefile",
    "engine/solver/native.c",
    "engine/solver/easy_deals.txt",
    "protocol/schema.json",
    "protocol/PROTOCOL.md",
    "server/store/migrations/env.py",
    "server/store/migrations/script.py.mako",
    "server/store/migrations/versions/0001_initial_schema.py",
    "docs/server.md",
    "deploy/nginx.conf",
    "tests/packaging/test_wheel.py",
}
WHEEL_FILES = {
    "clients/cli/locale/fi.po",
    "engine/solver/easy_deals.txt",
    "protocol/schema.json",
    "protocol/PROTOCOL.md",
    "server/store/migrations/env.py",
    "server/store/migrations/script.py.mako",
    "server/store/migrations/versions/0001_initial_schema.py",
    f"scorpion_server-{VERSION}.dist-info/licenses/LICENSE",
}
SERVING = re.compile(r"serving on ws://127\.0\.0\.1:(\d+)/")

if importlib.util.find_spec("build") is None:
    if REQUIRED:
        raise RuntimeError("SCORPION_REQUIRE_BUILD is set but the `build` package is missing")
    pytest.skip("needs the `build` package (pip install -e '.[dev]')", allow_module_level=True)


def run(*args: str | Path, cwd: Path, env: dict[str, str], stdin: str = "") -> str:
    """Run a program to its end (bounded); its output, or a failure showing it."""
    done = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{output}"
    return output


def clean_env(home: Path) -> dict[str, str]:
    """The environment without anything that would let the checkout in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return env | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "NO_COLOR": "1"}


def build(out: Path) -> tuple[Path, Path]:
    """(sdist, wheel), built from this checkout into ``out``; the wheel from the sdist."""
    env = dict(os.environ) | {"SCORPION_REQUIRE_NATIVE": "1" if HAS_COMPILER else "0"}
    run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=ROOT, env=env)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    assert SDIST_FILES - names == set()
    assert not [name for name in names if "__pycache__" in name or name.endswith(".so")]


def check_wheel(wheel: Path) -> None:
    assert wheel.name.startswith(f"scorpion_server-{VERSION}-py3-none-")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert WHEEL_FILES - names == set()
    assert not [name for name in names if name.startswith(("tests/", "bench/", "migrations/"))]
    if HAS_COMPILER:
        assert "engine/solver/_native.so" in names


def install(wheel: Path, home: Path) -> Path:
    """A fresh venv in ``home`` with the wheel installed: its bin directory."""
    env = clean_env(home)
    run(sys.executable, "-m", "venv", home / "venv", cwd=home, env=env)
    pip = (home / "venv" / "bin" / "python", "-m", "pip", "install", "--quiet")
    run(*pip, "-c", ROOT / "constraints.txt", wheel, cwd=home, env=env)
    return home / "venv" / "bin"


def check_programs(venv: Path, home: Path) -> None:
    """Every console script runs from the venv (not the checkout) and says one version."""
    env = clean_env(home)
    where = run(venv / "python", "-c", "import server; print(server.__file__)", cwd=home, env=env)
    assert Path(where.strip()).is_relative_to(venv.parent), where
    engine = run(venv / "scorpion-engine", "--version", cwd=home, env=env)
    assert engine.startswith(f"scorpion-engine {VERSION} ("), engine
    if HAS_COMPILER:
        assert "(compiled search)" in engine
    server = run(venv / "scorpion-server", "--version", cwd=home, env=env)
    assert re.fullmatch(rf"scorpion-server {re.escape(VERSION)} \(schema \d{{4}}\)", server.strip())
    client = run(venv / "scorpion", "--version", cwd=home, env=env)
    assert client.strip() == f"scorpion-cli {VERSION}"


@contextmanager
def serving(venv: Path, home: Path) -> Iterator[tuple[str, list[str]]]:
    """The installed server, migrated, then serving: (its URL, its log lines so far)."""
    env = clean_env(home)
    database = f"sqlite+aiosqlite:///{home / 'scorpion.db'}"
    log = run(venv / "scorpion-server", "--migrate", "--database-url", database, cwd=home, env=env)
    assert "schema upgraded" in log and (home / "scorpion.db").exists()
    flags = ["--database-url", database, "--port", "0", "--workers", "1", "--easy-pool", "0"]
    command = [str(venv / "scorpion-server"), *flags]
    with subprocess.Popen(command, cwd=home, env=env, stderr=subprocess.PIPE, text=True) as process:
        assert process.stderr is not None
        lines: list[str] = []
        try:
            for line in process.stderr:  # ends when the server exits
                lines.append(line)
                if found := SERVING.search(line):
                    yield f"ws://127.0.0.1:{found.group(1)}", lines
                    break
            else:
                pytest.fail("the installed server exited before serving:\n" + "".join(lines))
        finally:
            process.terminate()  # SIGTERM: a graceful stop, exit status 0
            lines.append(process.communicate(timeout=30)[1])
    assert process.returncode == 0, "".join(lines)


def play(venv: Path, home: Path, url: str) -> None:
    """Register, a new game, a move, resign, with the installed client."""
    env = clean_env(home) | {"SCORPION_SERVER": url}
    assert "registered" in run(venv / "scorpion", "register", "ada", cwd=home, env=env).lower()
    game = (venv / "scorpion", "play", "--level", "hard", "--deal", "1")
    out = run(*game, stdin="7c 5\nresign\ny\n", cwd=home, env=env)
    assert "moved 7♣ (7 cards) from column 7 to column 5" in out
    assert "the game is lost (resigned)" in out
    games = run(venv / "scorpion", "games", cwd=home, env=env)
    assert re.search(r"^\d+ +hard +lost +1 ", games, re.MULTILINE), games


def test_a_host_installs_the_wheel_migrates_serves_and_plays(tmp_path: Path) -> None:
    sdist, wheel = build(tmp_path / "dist")
    check_sdist(sdist)
    check_wheel(wheel)
    home = tmp_path / "host"
    home.mkdir()
    venv = install(wheel, home)
    check_programs(venv, home)
    with serving(venv, home) as (url, log):
        play(venv, home, url)
    if HAS_COMPILER:
        assert any("solver: 1 worker(s), compiled search" in line for line in log), log


@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_an_editable_install_without_a_compiler_runs_the_pure_python_search(
    tmp_path: Path, mode: str
) -> None:
    """``make run`` (``pip install -e``) on a machine whose C compiler fails: the build
    goes on without the compiled search, says so once, and the package runs the
    pure-Python one. The editable build expected the library it could not compile and
    stopped at copying it (``can't copy ... _native.so: doesn't exist``), in setuptools'
    default (lenient) editable mode as in its strict one. A copy of the sources is
    installed, so nothing is written into the checkout; CC=/bin/false is the compiler
    that fails."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy2(ROOT / name, source / name)
    junk = shutil.ignore_patterns("node_modules", "__pycache__", "*.so", "*.egg-info")
    for package in ("engine", "protocol", "server", "clients"):
        shutil.copytree(ROOT / package, source / package, ignore=junk)
    home = tmp_path / "host"
    home.mkdir()
    env = clean_env(home) | {"CC": "/bin/false", "SCORPION_REQUIRE_NATIVE": "0"}
    run(sys.executable, "-m", "venv", home / "venv", cwd=home, env=env)
    python = home / "venv" / "bin" / "python"
    editable = ("-e", source, "--config-settings", f"editable_mode={mode}")
    log = run(python, "-m", "pip", "install", "-v", "--no-deps", *editable, cwd=home, env=env)
    assert log.count("could not compile engine/solver/native.c") == 1, log
    assert "pure-Python search" in log
    assert not list((source / "engine" / "solver").glob("_native*")), "a library without a compiler"
    which = "from engine.solver import native; print(native.__file__, native.describe())"
    where, search = run(python, "-c", which, cwd=home, env=env).split(" ", 1)
    assert Path(where).is_relative_to(source), where
    assert search.startswith("pure-Python search (no compiled solver at "), search


def test_the_image_installs_the_server_extra() -> None:
    """The Dockerfile installs the wheel as a host does, with the ``server`` extra: the
    image ran on asyncio's own loop, though README says a production install runs on
    uvloop. (Read, not built: building images needs a Docker daemon.)"""
    installs = [
        line
        for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if "pip install" in line and ".whl" in line
    ]
    assert installs, "the Dockerfile installs no wheel"
    assert all(".whl)[server]" in line for line in installs), installs


def web_stage_copies() -> list[tuple[list[str], str, bool]]:
    """The Dockerfile's ``web`` stage, read: for each COPY from the build context, (the
    sources as checkout paths, the destination as an absolute path, whether it is a
    directory the sources go into)."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    workdir, copies, in_stage = "/", [], False
    for line in text.splitlines():
        instruction, _, rest = line.strip().partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            if in_stage:
                break
            in_stage = rest.split()[-1:] == ["web"]
        elif in_stage and instruction == "WORKDIR":
            workdir = posixpath.join(workdir, rest.strip())
        elif in_stage and instruction == "COPY":
            words = json.loads(rest) if rest.lstrip().startswith("[") else rest.split()
            if any(word.startswith("--from") for word in words):
                continue
            *sources, destination = [word for word in words if not word.startswith("--")]
            path = posixpath.normpath(posixpath.join(workdir, destination))
            into = len(sources) > 1 or destination.endswith(("/", "."))
            copies.append(([posixpath.normpath(source) for source in sources], path, into))
    assert in_stage, "the Dockerfile has no `FROM ... AS web` stage"
    return copies


def in_web_stage(path: str, copies: list[tuple[list[str], str, bool]]) -> str | None:
    """Where the web stage puts the checkout's file ``path`` (None: it does not copy it);
    the last COPY that names it wins, as the last one written over it does."""
    found = None
    for sources, destination, into in copies:
        for source in sources:
            if source == ".":
                found = posixpath.join(destination, path)
            elif path == source and (ROOT / source).is_file():
                found = posixpath.join(destination, posixpath.basename(path) if into else "")
            elif path.startswith(source + "/") and (ROOT / source).is_dir():
                found = posixpath.join(destination, posixpath.relpath(path, source))
    return posixpath.normpath(found) if found else None


IMPORT = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}/[^"']+)["']""")


def test_the_image_builds_the_web_client_with_what_it_imports() -> None:
    """The web client's sources import files from outside clients/web (src/checks.ts reads
    protocol/schema.json): the image's ``web`` stage, where ``vite build`` runs, must have
    each at the path the import names relative to the importing file, or the build fails
    with vite's UNRESOLVED_IMPORT. (Read, not built: building images needs a Docker daemon.)"""
    copies = web_stage_copies()
    web = ROOT / "clients" / "web"
    outside = []
    for source in sorted((web / "src").rglob("*.ts")):
        importer = source.relative_to(ROOT).as_posix()
        for specifier in IMPORT.findall(source.read_text(encoding="utf-8")):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
            if target.startswith("clients/web/"):
                continue
            assert (ROOT / target).is_file(), f"{importer} imports {specifier}: not in the checkout"
            outside.append((importer, specifier, target))
    assert outside, "no source of the web client imports from outside clients/web any more"
    for importer, specifier, target in outside:
        placed = in_web_stage(importer, copies)
        assert placed, f"the web stage does not copy {importer}"
        wanted = posixpath.normpath(posixpath.join(posixpath.dirname(placed), specifier))
        assert in_web_stage(target, copies) == wanted, (
            f"{importer} imports {specifier}, which the web stage must copy to {wanted}"
        )
