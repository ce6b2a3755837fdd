"""A benchmark's server does not outlive the benchmark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A benchmark that starts a "server" (a long sleep), says its pid, and waits to be killed.
BENCH = """
import sys, time
from bench.load import started
with started([sys.executable, "-c", "import time; time.sleep(120)"]) as server:
    print(server.pid, flush=True)
    time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone as well: it only waits for its parent (here, init) to reap it.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_benchmark_takes_its_server_with_it(how: signal.Signals) -> None:
    command = [sys.executable, "-c", BENCH]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as bench:
        assert bench.stdout is not None
        server = int(bench.stdout.readline())
        assert not _gone(server)
        bench.send_signal(how)
        bench.wait(timeout=30)
    deadline = time.monotonic() + 10
    while not _gone(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _gone(server):
        os.kill(server, signal.SIGKILL)
        pytest.fail(f"the server {server} outlived the benchmark ({how.name})")


# A benchmark, as bench.load is, under run_main: a temporary data directory and a
# "server" in it; says both and waits to be ended.
CLEANED = """
import sys, tempfile, time
from bench.common import run_main
from bench.load import started

def main(argv):
    with tempfile.TemporaryDirectory() as data:
        with started([sys.executable, "-c", "import time; time.sleep(120)"]) as server:
            print(data, server.pid, flush=True)
            time.sleep(120)
    return 0

sys.exit(run_main("bench", main))
"""


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_an_ended_benchmark_removes_its_files_and_server(how: signal.Signals) -> None:
    command = [sys.executable, "-c", CLEANED]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as bench:
        assert bench.stdout is not None and bench.stderr is not None
        data, pid = bench.stdout.readline().split()
        assert Path(data).is_dir()
        bench.send_signal(how)
        assert bench.wait(timeout=30) == 130
        assert bench.stderr.read() == ""  # quietly: no traceback
    assert not Path(data).exists()
    assert _gone(int(pid))
