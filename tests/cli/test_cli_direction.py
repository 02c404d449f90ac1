"""The direction from the metric's name at the command line (MON-13, issue 24's attack)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstop.cli import main


def test_mon13_an_improving_val_mse_is_not_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MON-13: ``val_mse`` falling is improving: replay neither stops it nor keeps the worst
    checkpoint (the old guess read it as a score in decline and kept step 1)."""
    path = tmp_path / "log.csv"
    path.write_text("step,val_mse\n1,0.9\n2,0.5\n3,0.3\n4,0.2\n5,0.15\n6,0.1\n")
    assert main(["replay", str(path), "--json", "--detector", "evalstop"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["mode"], result["stopped"], result["kept_step"]) == ("min", False, 6)


@pytest.mark.parametrize("command", ["replay", "watch"])
def test_mon13_an_unknown_name_is_one_line_asking_for_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """MON-13: a metric name of no known word is one line naming --metric and --mode, exit 2;
    with --mode it runs."""
    (tmp_path / "run").mkdir()
    path = tmp_path / "run" / "log.csv"
    path.write_text("step,thing\n1,0.9\n2,0.5\n")
    target = str(path if command == "replay" else tmp_path)
    extra = [] if command == "replay" else ["--once", "--state", str(tmp_path / "s.db")]
    code = main([command, target, "--metric", "thing", *extra])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert captured.err.count("\n") == 1
    assert "--metric" in captured.err and "--mode" in captured.err and "'thing'" in captured.err
    assert main([command, target, "--metric", "thing", "--mode", "max", *extra]) == 0
