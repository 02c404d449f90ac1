"""Slurm's answers, parsed: jobs, the filter that says which are ours, run-folder rules.

Pure: no process, no file, no clock (spec ``SLM``). :func:`parse_squeue` reads the JSON of
``squeue --json`` (Slurm 21.08 and later; 22.05 writes a job's ``job_state`` as a string,
23.02 and later as a list) into :class:`SlurmJob` values plus one problem line per entry it
cannot read (``SLM-3``). :class:`JobFilter` is the only gate to an action: a job that does not
match it is never a run and never signalled (``SLM-1``). Slurm 22.05's ``squeue --json``
ignores ``--user``, ``--partition`` and ``--states``, so the filter is applied here, always.
:class:`FolderRule` says where a job's run folder is (``SLM-2``):

| rule | the run folder |
|---|---|
| ``workdir`` | the job's working directory (``sbatch --chdir``, default the submit directory) |
| ``comment`` | the job's comment (``sbatch --comment PATH``), relative to the working directory |
| ``file:DIR`` | the path written in ``DIR/<job id>`` by the job itself |
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from evalstop.core.errors import EvalStopError

__all__ = ["FolderRule", "JobFilter", "SlurmError", "SlurmJob", "parse_folder_rule", "parse_squeue"]

_WHO = "squeue --json"


class SlurmError(EvalStopError, ValueError):
    """A bad Slurm option (a folder rule, a filter's pattern): one line saying what is wrong."""


@attrs.frozen(slots=True)
class SlurmJob:
    """One job of ``squeue --json``, the fields the watcher uses.

    Attributes:
        job_id: Slurm's job id.
        name: the job's name (``sbatch --job-name``).
        user: the name of the user who owns it.
        partition: its partition.
        state: its state (``RUNNING``, ``PENDING``...); the first one when Slurm lists several.
        workdir: its working directory.
        comment: its comment ("" when it has none).
    """

    job_id: int
    name: str
    user: str
    partition: str
    state: str
    workdir: str
    comment: str


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as error:
        raise SlurmError(f"--slurm-name: bad pattern {pattern!r} ({error})") from None


@attrs.frozen(slots=True)
class JobFilter:
    """Which jobs the watcher may follow and act on: all of the given conditions hold.

    Attributes:
        user: the owner's user name (required: a watcher never acts on everyone's jobs).
        partition: the partition, or None for any.
        name: a regular expression the whole job name must match, or None for any.
    """

    user: str
    partition: str | None = None
    name: str | None = None
    _pattern: re.Pattern[str] | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not self.user:
            raise SlurmError("--slurm-user: empty user name")
        object.__setattr__(self, "_pattern", _compile(self.name))

    def matches(self, job: SlurmJob) -> bool:
        """True when ``job`` is running and is this filter's (``SLM-1``)."""
        return (
            job.state == "RUNNING"
            and job.user == self.user
            and (self.partition is None or job.partition == self.partition)
            and (self._pattern is None or self._pattern.fullmatch(job.name) is not None)
        )


FolderKind = Literal["workdir", "comment", "file"]


@attrs.frozen(slots=True)
class FolderRule:
    """Where a job's run folder is (the module's table).

    Attributes:
        kind: ``workdir``, ``comment`` or ``file``.
        directory: for ``file``, the folder where each job writes ``<job id>``; else "".
    """

    kind: FolderKind
    directory: str = ""

    def __str__(self) -> str:
        return f"file:{self.directory}" if self.kind == "file" else self.kind


def parse_folder_rule(text: str) -> FolderRule:
    """``workdir``, ``comment`` or ``file:DIR`` (the CLI's ``--slurm-folder``).

    Raises:
        SlurmError: any other text, or ``file:`` without a folder.
    """
    if text == "workdir":
        return FolderRule("workdir")
    if text == "comment":
        return FolderRule("comment")
    if text.startswith("file:") and text.removeprefix("file:"):
        return FolderRule("file", text.removeprefix("file:"))
    raise SlurmError(f"--slurm-folder: expected workdir, comment or file:DIR, got {text!r}")


def _text(entry: dict[str, Any], key: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{key!r} is not a string")
    return value


def _state(entry: dict[str, Any]) -> str:
    value = entry.get("job_state")
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return str(value[0])  # 23.02 and later: a list of flags, the base state first
    if isinstance(value, str):
        return value
    raise ValueError("'job_state' is neither a string nor a list of strings")


def _job(entry: object) -> SlurmJob:
    if not isinstance(entry, dict):
        raise ValueError("not an object")
    job_id = entry.get("job_id")
    if not isinstance(job_id, int) or isinstance(job_id, bool) or job_id < 1:
        raise ValueError("no positive integer 'job_id'")
    try:
        return SlurmJob(
            job_id=job_id,
            name=_text(entry, "name"),
            user=_text(entry, "user_name"),
            partition=_text(entry, "partition"),
            state=_state(entry),
            workdir=_text(entry, "current_working_directory"),
            comment=_text(entry, "comment", ""),
        )
    except ValueError as error:
        raise ValueError(f"job {job_id}: {error}") from None


def parse_squeue(text: str) -> tuple[list[SlurmJob], list[str]]:
    """The jobs of an answer of ``squeue --json``, and one problem line per unreadable part.

    An answer that is not a JSON object with a list ``jobs`` gives no jobs and one line; an
    entry of ``jobs`` that lacks a field (or has one of the wrong type) is left out with one
    line naming it, and the others are kept; each message of the answer's ``errors`` list is
    one line too (``SLM-3``).
    """
    try:
        answer = json.loads(text)
    except ValueError as error:
        return [], [f"{_WHO}: not JSON ({error})"]
    if not isinstance(answer, dict) or not isinstance(answer.get("jobs"), list):
        return [], [f"{_WHO}: the answer has no list 'jobs'"]
    problems = [f"{_WHO}: Slurm says {_error_text(e)}" for e in _errors(answer)]
    jobs: list[SlurmJob] = []
    for index, entry in enumerate(answer["jobs"]):
        try:
            jobs.append(_job(entry))
        except ValueError as error:
            problems.append(f"{_WHO}: entry {index} of 'jobs': {error}")
    return jobs, problems


def _errors(answer: dict[str, Any]) -> Sequence[object]:
    errors = answer.get("errors", [])
    return errors if isinstance(errors, list) else [errors]


def _error_text(error: object) -> str:
    """``source: description (error)`` of an item of Slurm's ``errors`` list, as it has them."""
    if not isinstance(error, dict):
        return str(error)
    source, description = error.get("source"), error.get("description")
    text = str(error.get("error") or "")
    if description:
        text = f"{description} ({text})" if text else str(description)
    return f"{source}: {text}" if source else text or json.dumps(error)
