"""Run folders: keyed by their resolved path, never followed out of their root (WCH-11)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalstop.watch.folders import discover_runs
from watch_builders import cli, jsonl_run, once


def test_wch11_a_symlink_out_of_the_root_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-11: a run folder linking outside the root is one problem line; nothing is written
    into its target; a link to a folder inside the root is the same run, once."""
    outside = jsonl_run(tmp_path / "elsewhere" / "secret")
    root = tmp_path / "runs"
    jsonl_run(root / "real")
    (root / "escape").symlink_to(outside)
    (root / "alias").symlink_to(root / "real")
    code, out, err = cli(capsys, str(root), *once(tmp_path / "s.db"))
    assert code == 0
    assert [json.loads(line)["run"] for line in out.splitlines()] == [str(root / "real")]
    assert err.count("\n") == 1 and "escape: a symlink out of" in err
    assert sorted(p.name for p in outside.iterdir()) == ["m.jsonl"]


def test_wch11_relative_and_absolute_roots_name_the_same_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WCH-11: a restart with the root spelled relative, or through a symlink, re-delivers
    no past stop."""
    jsonl_run(tmp_path / "runs" / "a")
    (tmp_path / "via").symlink_to(tmp_path / "runs")
    state = tmp_path / "s.db"
    code, out, _ = cli(capsys, str(tmp_path / "runs"), *once(state))
    assert code == 0 and out.count("\n") == 1
    monkeypatch.chdir(tmp_path)
    for spelling in ("runs", "./runs/", "via", os.path.join("runs", "..", "runs")):
        assert cli(capsys, spelling, *once(state)) == (0, "", "")


def test_wch11_special_files_are_not_sources(tmp_path: Path) -> None:
    """WCH-11: a named pipe under a log's name, in a run folder or at
    ``checkpoint-N/trainer_state.json``, is never a source (never opened)."""
    (tmp_path / "a" / "checkpoint-5").mkdir(parents=True)
    os.mkfifo(tmp_path / "a" / "checkpoint-5" / "trainer_state.json")
    (tmp_path / "b").mkdir()
    os.mkfifo(tmp_path / "b" / "m.jsonl")
    runs, problems = discover_runs([tmp_path], "score")
    assert (runs, problems) == ([], [])
