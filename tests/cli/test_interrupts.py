"""SIGINT and SIGTERM stop reproduce cleanly (REP-5, REP-6).

A real ``evalstop reproduce --quick`` is started in its own session and signalled mid-run,
with one and with two workers: it must print one line, exit 128 + the signal, leave the
previous results intact and no staged file behind, and leave no process of its group alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SEEDS = "6"
"""Twice the quick run's seeds: about 12 s unloaded (README: quick ~6 s), so the run is still
going when the signal comes; the test checks that it is."""


@pytest.fixture(scope="module")
def startup() -> float:
    """Seconds ``evalstop`` takes to import and build its parser here (more when loaded)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalstop", "--version"], check=True, capture_output=True)
    return time.perf_counter() - start


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_group_gone(pgid: int, limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_run_rep_5(workers: int, signum: int, tmp_path: Path, startup: float) -> None:
    """REP-5, REP-6: one line, no orphan worker, the previous results.json intact."""
    (tmp_path / "results.json").write_text("previous\n", encoding="utf-8")
    command = [sys.executable, "-m", "evalstop", "reproduce", "--quick", "--seeds", SEEDS]
    # A shell without job control starts a background command (so pytest, and its children)
    # with SIGINT ignored, and Python then installs no Ctrl-C handler. A handler here (not an
    # ignore) becomes the default in the child, as under a terminal, whatever started pytest.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(
        [*command, "--no-progress", "--workers", str(workers), "--out", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    signal.signal(signal.SIGINT, previous)
    try:
        time.sleep(1.0 + 2 * startup)  # past the imports: the handlers are installed
        assert proc.poll() is None, "the run ended before it could be interrupted"
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)  # Ctrl-C reaches the whole foreground group
        else:
            os.kill(proc.pid, signum)  # kill PID reaches the command alone
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    name = "interrupted" if signum == signal.SIGINT else "terminated"
    assert proc.returncode == 128 + signum
    assert err.splitlines() == [f"evalstop: {name}"]
    assert wait_group_gone(proc.pid), "a worker outlived the run"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert (tmp_path / "results.json").read_text(encoding="utf-8") == "previous\n"
