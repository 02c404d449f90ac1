"""Hostile files never stop the watcher, nor the healthy runs beside them (spec WCH-12).

Each attack of issue 24 is a run folder under one root, beside a healthy run that must still
be stopped, on the first pass and after a restart: one problem line per hostile run, no
traceback, exit 0. The process tests end a real watcher with SIGTERM and time it.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from watch_builders import PEAK, cli, jsonl_run, once, tfwrite

DEEP = 200_000


def _deep_line(folder: Path) -> None:
    (folder / "m.jsonl").write_text('{"step": 1, "score": ' + "[" * DEEP + "]" * DEEP + "}\n")


def _deep_state(folder: Path) -> None:
    (folder / "checkpoint-3").mkdir()
    nested = "[" * DEEP + "]" * DEEP
    (folder / "checkpoint-3" / "trainer_state.json").write_text(f'{{"log_history": {nested}}}')


def _digits(folder: Path) -> None:
    (folder / "m.jsonl").write_text('{"step": 1, "score": ' + "7" * 5000 + "}\n")


def _long_csv_field(folder: Path) -> None:
    (folder / "log.csv").write_text("step,score\n1," + "9" * 300_000 + "\n")


def _endless_line(folder: Path) -> None:
    with (folder / "m.jsonl").open("wb") as handle:
        handle.write(b'{"step": 1, "score": 0.5, "pad": "')
        handle.truncate(17 * 2**20)  # sparse: 17 MiB of a line with no newline


def _events(folder: Path, records: list[bytes]) -> None:
    tf = tfwrite()
    data, _ = tf.tf_file([])
    (folder / "events.out.tfevents.1.host").write_bytes(data + b"".join(records))


def _huge_tensor(folder: Path) -> None:
    tf = tfwrite()
    # float32, 8e9 elements: 29.8 GiB if it were allocated.
    _events(folder, [tf.record(tf.tensor_event(1, "score", [8_000_000_000]))])


def _huge_record(folder: Path) -> None:
    tf = tfwrite()
    header = struct.pack("<Q", 2**62)
    _events(folder, [header + struct.pack("<I", tf.masked_crc32c(header)) + b"x" * 64])


def _fifo_state(folder: Path) -> None:
    (folder / "checkpoint-7").mkdir()
    os.mkfifo(folder / "checkpoint-7" / "trainer_state.json")


ATTACKS: dict[str, tuple[Callable[[Path], None], str | None]] = {
    "deep-jsonl": (_deep_line, "nested deeper than"),
    "deep-state": (_deep_state, "nested deeper than"),
    "digits": (_digits, "digits"),
    "csv-field": (_long_csv_field, "not CSV"),
    "endless-line": (_endless_line, "a line longer than"),
    "huge-tensor": (_huge_tensor, None),  # skipped, never allocated: no evaluation, no line
    "huge-record": (_huge_record, "claims 4611686018427387904 bytes"),
    "fifo-state": (_fifo_state, None),  # not a regular file: not a source, never opened
}


def test_wch12_hostile_runs_are_one_line_each_and_the_healthy_run_stops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-12: deep nesting, a 5000-digit number, an over-long CSV field or line, a tensor
    asking 29.8 GiB, a record claiming 2^62 bytes, a FIFO as a trainer state: each is at most
    one problem line, at the first pass and after a restart; the healthy run is stopped."""
    root = tmp_path / "runs"
    for name, (make, _) in ATTACKS.items():
        (root / name).mkdir(parents=True)
        make(root / name)
    jsonl_run(root / "healthy")
    state = tmp_path / "s.db"
    code, out, err = cli(capsys, str(root), *once(state))
    assert code == 0, err
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["healthy"]
    assert "Traceback" not in err
    lines = err.splitlines()
    for name, (_, problem) in ATTACKS.items():
        mine = [line for line in lines if f"/{name}/" in line]
        assert len(mine) == (0 if problem is None else 1), (name, lines)
        assert problem is None or problem in mine[0], (name, mine)
    assert len(lines) == sum(problem is not None for _, problem in ATTACKS.values())
    jsonl_run(root / "later")
    code, out, err = cli(capsys, str(root), *once(state))
    assert code == 0 and "Traceback" not in err
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["later"]


WATCH = [sys.executable, "-m", "evalstop", "watch"]


def _start(root: Path, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    options = ["--metric", "score", "--detector", "evalstop", "--interval", "0.2"]
    return subprocess.Popen(
        [*WATCH, str(root), *options, "--state", str(tmp_path / "s.db"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _wait_for(path: Path, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _terminate(watcher: subprocess.Popen[str]) -> tuple[float, str, str]:
    began = time.monotonic()
    watcher.send_signal(signal.SIGTERM)
    out, err = watcher.communicate(timeout=30)
    return time.monotonic() - began, out, err


def test_wch12_a_fifo_never_hangs_and_sigterm_ends_it(tmp_path: Path) -> None:
    """WCH-12, WCH-7: with FIFOs at checkpoint-N/trainer_state.json and under a log's name,
    the watcher stops the healthy run and SIGTERM ends it within 10 s, exit 0."""
    root = tmp_path / "runs"
    (root / "fifo").mkdir(parents=True)
    _fifo_state(root / "fifo")
    (root / "fifo-log").mkdir()
    os.mkfifo(root / "fifo-log" / "m.jsonl")
    jsonl_run(root / "healthy")
    watcher = _start(root, tmp_path)
    _wait_for(root / "healthy" / "evalstop-stop.json")
    time.sleep(0.5)  # a few more polls over the FIFOs
    took, out, err = _terminate(watcher)
    assert watcher.returncode == 0, err
    assert took < 10
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["healthy"]
    assert "Traceback" not in err


def test_wch9_sigterm_during_a_long_command_ends_it_and_the_command_is_redone(
    tmp_path: Path,
) -> None:
    """WCH-9, WCH-7: SIGTERM while ``--on-stop`` runs a 60 s command ends the watcher within
    10 s (the command is killed); a restart runs the command again (at least once)."""
    root = tmp_path / "runs"
    jsonl_run(root / "a")
    log = tmp_path / "started.txt"
    command = ["--on-stop", f"sh -c 'echo $EVALSTOP_NAME >> {log}; sleep 60'"]
    watcher = _start(root, tmp_path, *command)
    _wait_for(log)
    took, out, err = _terminate(watcher)
    assert watcher.returncode == 0, err
    assert took < 10
    assert out.count("\n") == 1
    again = subprocess.run(
        [
            *WATCH,
            str(root),
            "--metric",
            "score",
            "--detector",
            "evalstop",
            "--once",
            "--state",
            str(tmp_path / "s.db"),
            "--on-stop",
            f"sh -c 'echo again >> {log}'",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (again.returncode, again.stdout) == (0, ""), again.stderr
    assert log.read_text().splitlines() == ["a", "again"]


def test_wch9_slow_commands_do_not_delay_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-9: three runs stop in one pass; their 2 s commands run side by side, so the pass
    takes far less than the 6 s they would take one after another."""
    root = tmp_path / "runs"
    for name in ("a", "b", "c"):
        jsonl_run(root / name, PEAK)
    began = time.monotonic()
    code, out, err = cli(capsys, str(root), *once(tmp_path / "s.db"), "--on-stop", "sleep 2")
    took = time.monotonic() - began
    assert (code, err) == (0, "")
    assert out.count("\n") == 3
    assert 2 <= took < 5
