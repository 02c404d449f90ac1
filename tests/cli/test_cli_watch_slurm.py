"""``evalstop watch --slurm``: its options and their errors (spec SLM-7)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from evalstop.cli import main


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["watch", "--metric", "score", "--mode", "max", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--slurm", "--slurm-grace", "-1"], "--slurm-grace must be >= 0"),
        (["--slurm", "--slurm-grace", "nan"], "--slurm-grace must be >= 0"),
        (["--slurm", "--slurm-signal", "NOPE"], "--slurm-signal: unknown signal 'NOPE'"),
        (["--slurm", "--slurm-folder", "cwd"], "--slurm-folder: expected workdir"),
        (["--slurm", "--slurm-name", "("], "--slurm-name: bad pattern"),
        (["--slurm", "--slurm-user", ""], "--slurm-user: empty user name"),
        (["--slurm-user", "bob"], "--slurm-user needs --slurm"),
        (["--slurm-grace", "5"], "--slurm-grace needs --slurm"),
        ([], "give at least one DIR or --mlflow URI, or --slurm"),
    ],
)
def test_slm7_a_bad_slurm_option_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    """SLM-7: one line naming the option, exit 2, no traceback, nothing started."""
    folders = [str(tmp_path)] if argv and "--slurm" not in argv else []  # a DIR, no --slurm
    code, out, err = cli(capsys, *folders, *argv, "--once", "--state", str(tmp_path / "w.db"))
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1 and says in err
    assert "Traceback" not in err


def test_slm7_slm4_once_with_a_fake_squeue_reads_the_users_jobs_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SLM-7, SLM-1, SLM-4: --slurm --once polls the jobs squeue lists, keeps the filter's;
    a lowercase signal name is accepted; a missing scancel is a line, not a crash."""
    run = tmp_path / "run"
    run.mkdir()
    lines = [json.dumps({"step": s, "score": v}) for s, v in enumerate([1, 2, 3, 2, 1, 0.5])]
    (run / "m.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    jobs = [
        {"job_id": 5, "name": "a", "user_name": "alice", "partition": "gpu",
         "job_state": "RUNNING", "current_working_directory": str(run)},
        {"job_id": 6, "name": "b", "user_name": "bob", "partition": "gpu",
         "job_state": "RUNNING", "current_working_directory": str(run)},
    ]  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text(f"#!/bin/sh\necho '{json.dumps({'jobs': jobs})}'\n", encoding="utf-8")
    squeue.chmod(squeue.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/nonexistent")
    code, out, err = cli(
        capsys, "--slurm", "--slurm-user", "alice", "--slurm-signal", "usr1", "--once",
        "--detector", "evalstop", "--k", "2", "--state", str(tmp_path / "w.sqlite"),
    )  # fmt: skip
    assert code == 0
    decided = [json.loads(line) for line in out.splitlines()]
    assert [d["run"] for d in decided] == ["slurm:5"]
    assert err.splitlines() == ["evalstop watch: scancel: cannot run (No such file or directory)"]
    marker = json.loads((run / "evalstop-stop.json").read_text(encoding="utf-8"))
    assert marker["slurm"] == {"job_id": 5, "signal": "USR1", "signalled_at": None}
