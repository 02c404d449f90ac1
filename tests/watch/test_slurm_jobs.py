"""Parsing Slurm's answers, the job filter and the run-folder rules (spec SLM), pure."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.errors import EvalStopError
from evalstop.watch.slurm_jobs import (
    FolderRule,
    JobFilter,
    SlurmError,
    SlurmJob,
    parse_folder_rule,
    parse_squeue,
)


def entry(job_id: Any = 7, **fields: Any) -> dict[str, Any]:
    """One job as Slurm 22.05's squeue --json writes it (the fields the parser reads)."""
    base: dict[str, Any] = {
        "job_id": job_id,
        "name": "ppo-a",
        "user_name": "alice",
        "partition": "gpu",
        "job_state": "RUNNING",
        "current_working_directory": "/runs/a",
        "comment": "",
        "priority": 4294901759,
    }
    base.update(fields)
    return base


def answer(*jobs: Any, errors: Any = ()) -> str:
    return json.dumps({"meta": {}, "errors": list(errors), "jobs": list(jobs)})


def job(**fields: Any) -> SlurmJob:
    base: dict[str, Any] = {
        "job_id": 7,
        "name": "ppo-a",
        "user": "alice",
        "partition": "gpu",
        "state": "RUNNING",
        "workdir": "/runs/a",
        "comment": "",
    }
    base.update(fields)
    return SlurmJob(**base)


def test_slm3_reads_the_fields_of_22_05_and_of_later_releases() -> None:
    """SLM-3: a 22.05 entry (state a string) and a 23.02 one (a list) read the same job."""
    old = entry(comment="/runs/x")
    new = entry(comment="/runs/x", job_state=["RUNNING", "COMPLETING"])
    for raw in (old, new):
        jobs, problems = parse_squeue(answer(raw))
        assert problems == []
        assert jobs == [job(comment="/runs/x")]


def test_slm3_a_missing_comment_is_empty() -> None:
    """SLM-3: comment is optional (older answers leave it out)."""
    raw = entry()
    del raw["comment"]
    assert parse_squeue(answer(raw))[0][0].comment == ""


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[1, 2]", '{"jobs": 3}', '{"meta": {}}', "null", '{"jobs": {"a": 1}}'],
)
def test_slm3_a_malformed_answer_is_one_line_and_no_jobs(text: str) -> None:
    """SLM-3: not an object with a list 'jobs': no jobs, exactly one problem line."""
    jobs, problems = parse_squeue(text)
    assert jobs == []
    assert len(problems) == 1
    assert problems[0].startswith("squeue --json: ")
    assert "\n" not in problems[0]


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("oops", "not an object"),
        (entry(job_id="7"), "job_id"),
        (entry(job_id=True), "job_id"),
        (entry(job_id=0), "job_id"),
        (entry(name=None), "'name'"),
        (entry(user_name=3), "'user_name'"),
        (entry(job_state=[]), "job_state"),
        (entry(job_state=[1]), "job_state"),
        (entry(partition=["gpu"]), "'partition'"),
        ({k: v for k, v in entry().items() if k != "current_working_directory"}, "directory"),
    ],
)
def test_slm3_a_bad_entry_is_left_out_with_one_line_the_others_kept(bad: Any, says: str) -> None:
    """SLM-3: one line naming the entry; the good entries around it are kept."""
    jobs, problems = parse_squeue(answer(entry(job_id=1), bad, entry(job_id=3)))
    assert [j.job_id for j in jobs] == [1, 3]
    assert len(problems) == 1
    assert "entry 1 of 'jobs'" in problems[0]
    assert says in problems[0]


def test_slm3_each_error_of_the_answer_is_a_line() -> None:
    """SLM-3: Slurm's own errors list is reported, the jobs still read."""
    away = {  # what 22.05 prints, exit code 0, when the controller cannot be reached
        "description": "Failed while looking for jobs",
        "error_number": -1,
        "error": "Unspecified error",
        "source": "slurm_load_jobs",
    }
    text = answer(entry(), errors=[away, {"error": "busy"}, "odd", {}])
    jobs, problems = parse_squeue(text)
    assert len(jobs) == 1
    says = "squeue --json: Slurm says "
    assert problems == [
        says + "slurm_load_jobs: Failed while looking for jobs (Unspecified error)",
        says + "busy",
        says + "odd",
        says + "{}",
    ]


@given(st.text(max_size=200))
def test_slm3_any_text_parses_to_jobs_and_lines_without_raising(text: str) -> None:
    """SLM-3: whatever squeue prints, the parser returns; every problem is one line."""
    jobs, problems = parse_squeue(text)
    assert all("\n" not in line for line in problems)
    assert all(isinstance(j, SlurmJob) for j in jobs)


def test_slm1_the_filter_wants_running_jobs_of_its_user() -> None:
    """SLM-1: state RUNNING and the user are always required."""
    mine = JobFilter("alice")
    assert mine.matches(job())
    assert not mine.matches(job(user="bob"))
    assert not mine.matches(job(state="PENDING"))
    assert not mine.matches(job(state="COMPLETING"))


def test_slm1_partition_and_whole_name_match() -> None:
    """SLM-1: the partition when given, and a name the pattern matches whole."""
    strict = JobFilter("alice", partition="gpu", name="ppo-.*")
    assert strict.matches(job())
    assert not strict.matches(job(partition="cpu"))
    assert not strict.matches(job(name="my-ppo-a"))  # a search would match; fullmatch does not
    assert not JobFilter("alice", name="ppo").matches(job())


def test_slm1_a_filter_needs_a_user_and_a_valid_pattern() -> None:
    """SLM-1, SLM-7: an empty user or a broken pattern is a SlurmError (also ValueError)."""
    with pytest.raises(SlurmError, match="--slurm-user"):
        JobFilter("")
    with pytest.raises(SlurmError, match="--slurm-name: bad pattern"):
        JobFilter("alice", name="(")
    assert issubclass(SlurmError, EvalStopError)
    assert issubclass(SlurmError, ValueError)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("workdir", FolderRule("workdir")),
        ("comment", FolderRule("comment")),
        ("file:/scratch/jobs", FolderRule("file", "/scratch/jobs")),
    ],
)
def test_slm2_folder_rules_parse_and_print_back(text: str, rule: FolderRule) -> None:
    """SLM-2: the three rules, written as the CLI takes them."""
    assert parse_folder_rule(text) == rule
    assert str(rule) == text


@pytest.mark.parametrize("text", ["", "cwd", "file:", "file", "Workdir"])
def test_slm2_a_bad_folder_rule_is_an_error_naming_the_option(text: str) -> None:
    """SLM-2, SLM-7: anything else is one line naming --slurm-folder."""
    with pytest.raises(SlurmError, match=r"^--slurm-folder: "):
        parse_folder_rule(text)
