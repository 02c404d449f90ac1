"""The nasty-case corpus replays with no traceback, no hang and no silent truncation (TRC-13).

``tests/data/bad`` holds the files (built by ``bad_corpus.py``); the cases whose path must be
made at run time -- a named pipe with no writer, devices, a shell's process substitution, a
symlink loop -- run in a subprocess with a 5 s limit, so a hang fails instead of blocking.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from bad_corpus import BAD, SPECIAL

from evalstop.cli import main

CASES: dict[str, dict[str, Any]] = json.loads((BAD / "cases.json").read_text(encoding="utf-8"))
LIMIT = 5.0


def outcome(code: int, out: str, err: str) -> str:
    """``ok``, ``partial`` or ``error``; anything else is returned as a description."""
    lines = err.strip().splitlines()
    if code == 2 and len(lines) == 1 and lines[0].startswith("evalstop: error: "):
        return "error"
    if code == 0:
        result = json.loads(out)
        return "partial" if result["truncated"] else "ok"
    return f"exit {code}: {err!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_case_trc_13(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """TRC-13, TRC-14: each corpus file gives its expected outcome in under 5 s."""
    case = CASES[name]
    monkeypatch.chdir(BAD)
    start = time.perf_counter()
    code = main(["replay", "--json", "--mode", "max", *case["args"]])  # readers, not direction
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    assert outcome(code, captured.out, captured.err) == case["expect"]
    assert elapsed < LIMIT


def test_corrupt_tensorboard_record_names_the_offset_trc_14(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """TRC-14: the mid-file bad checksum is an error at the corrupt record's offset."""
    monkeypatch.chdir(BAD)
    assert main(["replay", "events.out.tfevents.tb_bad_crc_mid"]) == 2
    assert "record at byte 163: bad data checksum" in capsys.readouterr().err


def special_path(name: str, tmp: Path) -> str:
    if name == "fifo_no_writer":
        os.mkfifo(tmp / "pipe.csv")
        return str(tmp / "pipe.csv")
    if name.startswith("dev_"):
        return "/dev/" + name.removeprefix("dev_")
    if name == "directory_no_events":
        return str(tmp)
    if name == "symlink_loop":
        (tmp / "loop.csv").symlink_to(tmp / "loop.csv")
        return str(tmp / "loop.csv")
    if name == "long_path":
        return "x" * 5000 + ".csv"
    source = tmp / "source"
    if name.endswith("csv"):
        source.write_text("step,acc\n1,0.5\n2,0.7\n3,0.6\n", encoding="utf-8")
    else:
        shutil.copy(BAD / "events.out.tfevents.tb_good", source)
    return f"<(cat {source})"


@pytest.fixture(scope="module")
def startup() -> float:
    """Seconds the interpreter takes to start evalstop here (a loaded machine is slower)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalstop", "--version"], check=True, capture_output=True)
    return time.perf_counter() - start


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_path_trc_13(name: str, tmp_path: Path, startup: float) -> None:
    """TRC-13: pipes and devices are refused at once; ``<(...)`` streams are read.

    The limit is 5 s beyond twice the interpreter's start-up time, so a hang (a FIFO read
    blocks forever) fails while a busy machine's slow start does not.
    """
    path = special_path(name, tmp_path)
    command = f"{sys.executable} -m evalstop replay --json {path}"
    limit = LIMIT + 2 * startup
    proc = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=limit, check=False
    )
    assert outcome(proc.returncode, proc.stdout, proc.stderr) == SPECIAL[name]
