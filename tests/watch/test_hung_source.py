"""A run source that never answers cannot hold the watcher (spec WCH-15)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from evalstop.watch.actions import ActionRunner
from evalstop.watch.bounded import BoundedListing
from evalstop.watch.source import Run
from watch_builders import jsonl_run


class Hung:
    """A run source whose ``stop`` blocks forever (a server that never answers)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = threading.Event()

    def runs(self) -> tuple[list[Run], list[str]]:
        return [], []

    def stop(self, decision: Mapping[str, Any]) -> None:
        self.calls.append(str(decision["run"]))
        self.release.wait()


def test_wch15_a_stop_that_never_returns_is_left_behind(tmp_path: Path) -> None:
    """WCH-15: with a 0.3 s timeout and one worker, two decisions whose source's stop hangs
    both finish (their commands run) within seconds, each reported once."""
    hung, lines = Hung(), list[str]()
    log = tmp_path / "ran.txt"
    runner = ActionRunner(
        [hung], ["sh", "-c", f"echo {{name}} >> {log}"], timeout=0.3, jobs=1, report=lines.append
    )
    began = time.monotonic()
    done: list[int] = []
    for seq in (1, 2):
        while not runner.start(seq, {"run": f"/r/{seq}", "name": f"n{seq}"}):
            time.sleep(0.01)
        while seq not in done:
            done += runner.finished()
            time.sleep(0.01)
    assert time.monotonic() - began < 5
    runner.close(1.0)
    assert hung.calls == ["/r/1", "/r/2"]
    assert log.read_text().split() == ["n1", "n2"]
    assert [line.split(":")[0] for line in lines] == ["/r/1", "/r/2"]
    assert all("did not act on the stop within 0.3 s" in line for line in lines)
    hung.release.set()


CHILD = """
import socket, sys
import evalstop.cli.watch as cli_watch
from evalstop.cli import main
from evalstop.watch.source import Run

port, where = int(sys.argv[1]), sys.argv[2]

def hang():
    connection = socket.create_connection(("127.0.0.1", port))
    connection.recv(1)  # the server accepts and never answers

class HungLog:
    key = "hung:1/score"

    def read(self, position):
        hang()

class Hung:
    def runs(self):
        if where == "runs":
            hang()
        if where == "read":
            return [Run("hung:1", "hung", None, (HungLog(),))], []
        return [], []

    def stop(self, decision):
        hang()

real = cli_watch._sources
cli_watch._sources = lambda args, roots: [*real(args, roots), Hung()]
sys.exit(main(["watch", *sys.argv[3:]]))
"""


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A listening TCP socket that never answers (``accept`` tells when a client came)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(60)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def silent_server(silent: socket.socket) -> int:
    """The port of :func:`silent`."""
    return int(silent.getsockname()[1])


def _start(tmp_path: Path, port: int, where: str) -> subprocess.Popen[str]:
    options = ["--metric", "score", "--detector", "evalstop", "--interval", "0.2"]
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(port),
            where,
            str(tmp_path / "runs"),
            *options,
            "--state",
            str(tmp_path / "s.db"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _terminate(child: subprocess.Popen[str]) -> tuple[float, str, str]:
    began = time.monotonic()
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    return time.monotonic() - began, out, err


def test_wch15_sigterm_ends_a_watcher_whose_source_stop_hangs(
    tmp_path: Path, silent_server: int
) -> None:
    """WCH-15, WCH-7: the run is stopped, the source's stop hangs on a silent server; SIGTERM
    ends the watcher within 10 s, exit 0, the decision's line printed once."""
    jsonl_run(tmp_path / "runs" / "a")
    child = _start(tmp_path, silent_server, "stop")
    deadline = time.monotonic() + 60
    while not (tmp_path / "runs" / "a" / "evalstop-stop.json").exists():
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)  # the stop is now blocked in recv
    took, out, err = _terminate(child)
    assert child.returncode == 0, err
    assert took < 10
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["a"]
    assert "Traceback" not in err


def test_wch15_a_listing_that_never_answers_holds_no_other_run(
    tmp_path: Path, silent_server: int
) -> None:
    """WCH-15: a source whose listing never returns is skipped after one interval (1 s at
    least), with one line: the folder run beside it is still stopped, and SIGTERM ends the
    watcher as usual, exit 0."""
    jsonl_run(tmp_path / "runs" / "a")
    child = _start(tmp_path, silent_server, "runs")
    deadline = time.monotonic() + 60
    while not (tmp_path / "runs" / "a" / "evalstop-stop.json").exists():
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    took, out, err = _terminate(child)
    assert child.returncode == 0, err
    assert took < 10
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["a"]
    assert err.splitlines() == ["evalstop watch: Hung: its runs did not come within 1 s; skipped"]


def test_wch15_sigterm_ends_a_watcher_blocked_reading_a_run(
    tmp_path: Path, silent: socket.socket, silent_server: int
) -> None:
    """WCH-15: a run whose log is read from a server that never answers blocks the poll;
    SIGTERM still ends the watcher within 10 s, exit 0, with one line saying why."""
    jsonl_run(tmp_path / "runs" / "a")
    child = _start(tmp_path, silent_server, "read")
    connection, _ = silent.accept()  # the watcher is now blocked reading the hung run
    time.sleep(0.2)
    assert child.poll() is None
    took, _out, err = _terminate(child)
    connection.close()
    assert child.returncode == 0, err
    assert took < 10
    assert err.count("\n") == 1 and "still busy 8 s after the signal" in err


class Slow:
    """A run source whose listing waits for ``release``; counts its calls."""

    def __init__(self, fail: bool = False) -> None:
        self.calls, self.fail = 0, fail
        self.release = threading.Event()

    def runs(self) -> tuple[list[Run], list[str]]:
        self.calls += 1
        self.release.wait()
        if self.fail:
            raise ConnectionError("refused")
        return [Run("slow:1", "one", None, ())], ["a problem"]

    def stop(self, decision: Mapping[str, Any]) -> None:
        return None


def test_wch15_a_pending_listing_is_collected_later_and_asked_once() -> None:
    """WCH-15: while a listing is pending it is not asked again; its answer comes at the
    first poll after it returns; its exception is a problem line."""
    slow = Slow()
    listing = BoundedListing(slow, 0.05)
    assert listing.runs() == ([], ["Slow: its runs did not come within 0.05 s; skipped"])
    assert listing.runs()[0] == [] and slow.calls == 1
    slow.release.set()
    runs, problems = listing.runs()
    assert ([r.key for r in runs], problems, slow.calls) == (["slow:1"], ["a problem"], 1)
    assert listing.runs()[0][0].key == "slow:1" and slow.calls == 2
    failing = Slow(fail=True)
    failing.release.set()
    assert BoundedListing(failing, 5.0).runs() == ([], ["Slow: cannot list its runs (refused)"])
