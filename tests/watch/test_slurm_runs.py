"""Slurm jobs as runs and stopping them, against a fake squeue/scancel (spec SLM)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evalstop.watch.slurm import MARKER, SlurmClient, SlurmRuns, job_id_of
from evalstop.watch.slurm_jobs import FolderRule, JobFilter
from evalstop.watch.source import Sides


class FakeSlurm:
    """Answers squeue with the listed jobs; records every argv; can fail on demand."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []
        self.calls: list[list[str]] = []
        self.fail: BaseException | tuple[int, str] | None = None
        self.raw: str | None = None

    def add(self, job_id: int, folder: Path, **fields: Any) -> None:
        self.jobs.append(
            {
                "job_id": job_id,
                "name": f"job{job_id}",
                "user_name": "alice",
                "partition": "gpu",
                "job_state": "RUNNING",
                "current_working_directory": str(folder),
                "comment": "",
                **fields,
            }
        )

    def __call__(self, argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
        self.calls.append(list(argv))
        if isinstance(self.fail, BaseException):
            raise self.fail
        if self.fail is not None:
            return self.fail[0], "", self.fail[1]
        if argv[0] == "squeue":
            return 0, self.raw if self.raw is not None else json.dumps({"jobs": self.jobs}), ""
        return 0, "", ""

    def actions(self) -> list[list[str]]:
        return [call for call in self.calls if call[0] == "scancel"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run_folder(root: Path, name: str, points: int = 3) -> Path:
    folder = root / name
    folder.mkdir()
    lines = [json.dumps({"step": s, "score": 0.1 * s}) for s in range(points)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def make(
    fake: FakeSlurm,
    clock: Clock | None = None,
    rule: FolderRule | None = None,
    job_filter: JobFilter | None = None,
) -> SlurmRuns:
    return SlurmRuns(
        SlurmClient(runner=fake),
        job_filter or JobFilter("alice"),
        rule or FolderRule("workdir"),
        "score",
        signal="USR1",
        grace=10.0,
        clock=clock or Clock(),
    )


def decision(job_id: int, folder: Path, best_step: int = 2) -> dict[str, Any]:
    return {"run": f"slurm:{job_id}", "name": f"job{job_id}", "path": str(folder),
            "best_step": best_step}  # fmt: skip


def test_slm1_slm2_only_the_filters_running_jobs_are_runs(tmp_path: Path) -> None:
    """SLM-1, SLM-2: other users, other partitions, pending jobs are never runs."""
    fake = FakeSlurm()
    fake.add(1, run_folder(tmp_path, "a"))
    fake.add(2, run_folder(tmp_path, "b"), user_name="bob")
    fake.add(3, run_folder(tmp_path, "c"), partition="cpu")
    fake.add(4, run_folder(tmp_path, "d"), job_state="PENDING")
    fake.add(5, run_folder(tmp_path, "e"), name="eval-e")
    runs, problems = make(fake, job_filter=JobFilter("alice", "gpu", "job.*")).runs()
    assert problems == []
    assert [(r.key, r.name, r.folder) for r in runs] == [("slurm:1", "job1", str(tmp_path / "a"))]
    assert [s.key for s in runs[0].sources] == [str(tmp_path / "a" / "metrics.jsonl")]
    assert fake.calls == [["squeue", "--json"]]


def test_slm2_comment_and_file_rules(tmp_path: Path) -> None:
    """SLM-2: the comment (relative to the working directory) and a file the job wrote."""
    folder = run_folder(tmp_path, "run")
    fake = FakeSlurm()
    fake.add(1, tmp_path, comment="run")
    assert [r.folder for r in make(fake, rule=FolderRule("comment")).runs()[0]] == [str(folder)]
    table = tmp_path / "jobs"
    table.mkdir()
    (table / "1").write_text(f"{folder}\n", encoding="utf-8")
    rule = FolderRule("file", str(table))
    assert [r.folder for r in make(fake, rule=rule).runs()[0]] == [str(folder)]


def test_slm2_a_job_without_its_folder_is_one_line_the_others_go_on(tmp_path: Path) -> None:
    """SLM-2: no comment / no file / not a directory: a line each; job 9 is still served."""
    fake = FakeSlurm()
    fake.add(1, tmp_path / "missing")
    fake.add(9, run_folder(tmp_path, "ok"))
    runs, problems = make(fake).runs()
    assert [r.key for r in runs] == ["slurm:9"]
    assert problems == [f"slurm job 1 (job1): run folder {tmp_path / 'missing'} is not a directory"]
    runs, problems = make(fake, rule=FolderRule("comment")).runs()
    assert runs == [] and len(problems) == 2 and all("has no comment" in p for p in problems)
    runs, problems = make(fake, rule=FolderRule("file", str(tmp_path / "nowhere"))).runs()
    assert runs == [] and all("cannot read its run folder" in p for p in problems)


@pytest.mark.parametrize(
    ("failure", "says"),
    [
        (OSError(2, "No such file or directory"), "squeue: cannot run (No such file"),
        (subprocess.TimeoutExpired("squeue", 30), "squeue: no answer within 30 s"),
        ((1, "slurm_load_jobs error: Unable to contact slurm controller\n"), "exit 1: slurm_load"),
    ],
)
def test_slm4_a_daemon_gone_is_one_line_and_the_last_listing_stays(
    tmp_path: Path, failure: Any, says: str
) -> None:
    """SLM-4: squeue failing is a line; the followed job is still read, nothing is cancelled."""
    fake = FakeSlurm()
    fake.add(1, run_folder(tmp_path, "a"))
    runs = make(fake)
    assert [r.key for r in runs.runs()[0]] == ["slurm:1"]
    fake.fail = failure
    found, problems = runs.runs()
    assert [r.key for r in found] == ["slurm:1"]
    assert len(problems) == 1 and says in problems[0]
    assert runs.act(decision(1, tmp_path / "a"))  # scancel fails too: a line, no exception
    assert fake.actions() == [["scancel", "--signal=USR1", "--full", "1"]]
    marker = json.loads((tmp_path / "a" / MARKER).read_text(encoding="utf-8"))
    assert marker["slurm"]["signalled_at"] is None
    runs.runs()  # still away: the signal is not tried without a listing
    assert len(fake.actions()) == 1
    fake.fail = None
    assert runs.runs()[1] == []  # back: the signal is sent at this poll, once
    runs.runs()
    assert fake.actions() == [["scancel", "--signal=USR1", "--full", "1"]] * 2
    marker = json.loads((tmp_path / "a" / MARKER).read_text(encoding="utf-8"))
    assert marker["slurm"]["signalled_at"] == 1000.0


def test_slm4_a_malformed_answer_keeps_the_last_listing(tmp_path: Path) -> None:
    """SLM-3, SLM-4: a broken answer is one line; the runs of the last listing are served."""
    fake = FakeSlurm()
    fake.add(1, run_folder(tmp_path, "a"))
    runs = make(fake)
    runs.runs()
    fake.raw = '{"jobs": [tru'
    found, problems = runs.runs()
    assert [r.key for r in found] == ["slurm:1"]
    assert len(problems) == 1 and problems[0].startswith("squeue --json: not JSON")


def test_slm5_a_stop_marks_signals_then_cancels_after_the_grace(tmp_path: Path) -> None:
    """SLM-5: marker with checkpoint and slurm keys, signal by argv, scancel once after grace."""
    folder = run_folder(tmp_path, "a")
    (folder / "checkpoint-2").mkdir()
    fake, clock = FakeSlurm(), Clock()
    fake.add(1, folder)
    runs = make(fake, clock)
    runs.runs()
    assert runs.act(decision(1, folder)) == []
    marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    assert marker["checkpoint"] == str(folder / "checkpoint-2")
    assert marker["slurm"] == {"job_id": 1, "signal": "USR1", "signalled_at": 1000.0}
    assert marker["best_step"] == 2
    assert fake.actions() == [["scancel", "--signal=USR1", "--full", "1"]]
    clock.now = 1009.9
    runs.runs()
    assert len(fake.actions()) == 1
    clock.now = 1010.0
    runs.runs()
    runs.runs()
    assert fake.actions()[1:] == [["scancel", "1"]]


def test_slm5_no_checkpoint_folder_is_null(tmp_path: Path) -> None:
    """SLM-5: checkpoint is null when checkpoint-<best_step> does not exist."""
    folder = run_folder(tmp_path, "a")
    fake = FakeSlurm()
    fake.add(1, folder)
    runs = make(fake)
    runs.runs()
    runs.act(decision(1, folder, best_step=5))
    assert json.loads((folder / MARKER).read_text(encoding="utf-8"))["checkpoint"] is None


def test_slm1_a_decision_for_a_job_outside_the_filter_is_never_acted_on(tmp_path: Path) -> None:
    """SLM-1: bob's job, a job that ended, and a run that is not a job: no scancel at all."""
    fake = FakeSlurm()
    fake.add(2, run_folder(tmp_path, "b"), user_name="bob")
    runs = make(fake)
    runs.runs()
    assert runs.act(decision(2, tmp_path / "b")) == [
        "slurm job 2: not running in the filter, not signalled"
    ]
    assert runs.act(decision(3, tmp_path / "b"))
    assert runs.act({"run": str(tmp_path / "b"), "path": str(tmp_path / "b")}) == []
    assert fake.actions() == []
    assert not (tmp_path / "b" / MARKER).exists()


def test_slm6_a_restarted_watcher_cancels_from_the_marker_without_a_second_signal(
    tmp_path: Path,
) -> None:
    """SLM-6: the signal time is read back from the marker by a new SlurmRuns."""
    folder = run_folder(tmp_path, "a")
    fake, clock = FakeSlurm(), Clock()
    fake.add(1, folder)
    first = make(fake, clock)
    first.runs()
    first.act(decision(1, folder))
    clock.now = 1020.0
    second = make(fake, clock)  # a new process: nothing in memory
    second.runs()
    assert fake.actions() == [["scancel", "--signal=USR1", "--full", "1"], ["scancel", "1"]]


def test_slm6_a_marker_of_another_job_does_not_count(tmp_path: Path) -> None:
    """SLM-6: a folder reused by a new job: the old job's marker starts no grace."""
    folder = run_folder(tmp_path, "a")
    marker = {"slurm": {"job_id": 1, "signal": "TERM", "signalled_at": 0.0}}
    (folder / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    fake = FakeSlurm()
    fake.add(2, folder)
    make(fake).runs()
    assert fake.actions() == []


def test_slm2_job_ids_of_run_keys() -> None:
    """SLM-2: runs are named slurm:<job id>; other keys have none."""
    assert job_id_of("slurm:42") == 42
    assert job_id_of("/runs/slurm:42") is None
    assert job_id_of("slurm:x") is None


def test_slm6_an_action_redone_after_a_restart_sends_no_second_signal(tmp_path: Path) -> None:
    """SLM-6: WCH-4 redoes an action cut short; the marker says the signal went out."""
    folder = run_folder(tmp_path, "a")
    fake = FakeSlurm()
    fake.add(1, folder)
    first = make(fake)
    first.runs()
    first.act(decision(1, folder))
    second = make(fake)
    second.runs()
    assert second.act(decision(1, folder)) == []
    assert fake.actions() == [["scancel", "--signal=USR1", "--full", "1"]]


def test_slm5_stop_is_the_runsource_action_and_runs_carry_the_job_id(tmp_path: Path) -> None:
    """SLM-5, SLM-2: stop() acts and reports its problem lines; each run's facts name the job
    (EVALSTOP_SLURM_JOB_ID for --on-stop); another source's decision is ignored."""
    folder = run_folder(tmp_path, "a")
    fake = FakeSlurm()
    fake.add(1, folder)
    lines: list[str] = []
    runs = SlurmRuns(SlurmClient(runner=fake), JobFilter("alice"), FolderRule("workdir"),
                     "score", report=lines.append)  # fmt: skip
    found, _ = runs.runs()
    assert dict(found[0].facts) == {"SLURM_JOB_ID": "1"}
    runs.stop({"run": str(folder), "path": str(folder)})
    assert fake.actions() == [] and lines == []
    fake.fail = (1, "scancel: error: Kill job error on job id 1\n")
    runs.stop(decision(1, folder))
    assert lines == [
        "scancel --signal=TERM --full 1: exit 1: scancel: error: Kill job error on job id 1"
    ]


def test_wch16_slurm_run_folders_read_the_given_side_keys(tmp_path: Path) -> None:
    """WCH-16, SLM-2: a Slurm job's run folder is read with the side-signal keys given on the
    command line, as every other run folder is (not only the defaults)."""
    folder = tmp_path / "run"
    folder.mkdir()
    lines = [json.dumps({"step": s, "score": 0.1 * s, "rm": 2.0 * s, "kl": 9.0}) for s in (1, 2)]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fake = FakeSlurm()
    fake.add(1, folder)
    sides = Sides("rm", None, frozenset({"rm"}))
    slurm = SlurmRuns(SlurmClient(runner=fake), JobFilter("alice"), FolderRule("workdir"),
                      "score", sides=sides)  # fmt: skip
    runs, problems = slurm.runs()
    assert problems == []
    points, _ = runs[0].sources[0].read(None)
    assert [(p.step, p.proxy_reward, p.kl) for p in points] == [(1, 2.0, None), (2, 4.0, None)]
    default, _ = make(fake).runs()
    points, _ = default[0].sources[0].read(None)
    assert [(p.proxy_reward, p.kl) for p in points] == [(None, 9.0), (None, 9.0)]
