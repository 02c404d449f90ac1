"""Slurm jobs as ``evalstop watch`` runs, and stopping them (spec ``SLM``).

:class:`SlurmRuns` lists, at each poll, the running jobs of a
:class:`~evalstop.watch.slurm_jobs.JobFilter` through ``squeue --json`` and makes each one a
run named ``slurm:<job id>``, read from the run folder its
:class:`~evalstop.watch.slurm_jobs.FolderRule` finds (``SLM-1``, ``SLM-2``). At a stop,
:meth:`SlurmRuns.stop` writes the kept checkpoint and the job into the marker, sends the job
the configured signal (``scancel --signal=SIG --full ID``: the batch shell and every step)
and, once ``grace`` seconds have passed with the job still running, cancels it
(``scancel ID``) at a later poll (``SLM-5``). Every command is an argv list, never a shell
line, and runs with a timeout; a command that fails or a daemon that is gone is one problem
line, never an exception, so the watcher keeps serving its other runs (``SLM-4``). The
parsing is :mod:`evalstop.watch.slurm_jobs`'s; this module is its edge.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalstop.watch.folders import run_sources
from evalstop.watch.slurm_jobs import FolderRule, JobFilter, SlurmJob, parse_squeue
from evalstop.watch.source import Run, Sides

__all__ = ["MARKER", "PREFIX", "SlurmClient", "SlurmRuns", "job_id_of"]

PREFIX = "slurm:"
"""A Slurm run's key is ``slurm:<job id>``."""

MARKER = "evalstop-stop.json"
"""The marker file in a stopped run's folder (the same as ``evalstop watch``'s)."""

Runner = Callable[[Sequence[str], float], tuple[int, str, str]]
"""Runs an argv with a timeout: ``(exit code, stdout, stderr)``; raises ``OSError`` or
``subprocess.TimeoutExpired``."""

_DEFAULT_SIDES = Sides()


def _run(argv: Sequence[str], timeout: float) -> tuple[int, str, str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout, done.stderr


def job_id_of(run: str) -> int | None:
    """The job id of a run key ``slurm:<id>``; None for any other run."""
    rest = run.removeprefix(PREFIX)
    return int(rest) if run.startswith(PREFIX) and rest.isdigit() else None


class SlurmClient:
    """``squeue`` and ``scancel`` as argv commands, each with a timeout.

    Args:
        timeout: seconds a command may take before it counts as a failure.
        runner: runs an argv (tests pass a fake one).
    """

    def __init__(self, timeout: float = 30.0, runner: Runner = _run) -> None:
        self._timeout, self._runner = timeout, runner

    def _call(self, argv: Sequence[str]) -> tuple[str | None, str]:
        """``(stdout, "")`` on success, ``(None, problem)`` on any failure."""
        try:
            code, out, err = self._runner(argv, self._timeout)
        except subprocess.TimeoutExpired:
            return None, f"{argv[0]}: no answer within {self._timeout:g} s"
        except OSError as error:
            return None, f"{argv[0]}: cannot run ({error.strerror or error})"
        if code != 0:
            last = (err.strip().splitlines() or ["no message"])[-1]
            return None, f"{' '.join(argv)}: exit {code}: {last}"
        return out, ""

    def jobs(self) -> tuple[list[SlurmJob], list[str]]:
        """Every job ``squeue --json`` lists, and the problem lines."""
        out, problem = self._call(["squeue", "--json"])
        if out is None:
            return [], [problem]
        return parse_squeue(out)

    def signal(self, job_id: int, signal: str) -> str:
        """Send ``signal`` to the job's batch shell and steps; "" or the problem line."""
        return self._call(["scancel", f"--signal={signal}", "--full", str(job_id)])[1]

    def cancel(self, job_id: int) -> str:
        """Cancel the job (Slurm's SIGTERM, ``KillWait``, SIGKILL); "" or the problem line."""
        return self._call(["scancel", str(job_id)])[1]


def _folder(job: SlurmJob, rule: FolderRule) -> Path:
    """The job's run folder by ``rule``; raises ``ValueError`` naming what is missing."""
    if rule.kind == "workdir":
        text = job.workdir
    elif rule.kind == "comment":
        text = job.comment.strip()
        if not text:
            raise ValueError("has no comment naming its run folder")
    else:
        named = Path(rule.directory) / str(job.job_id)
        try:
            text = named.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{named}: cannot read its run folder ({error})") from None
    folder = Path(job.workdir, text) if job.workdir else Path(text)
    if not folder.is_dir():
        raise ValueError(f"run folder {folder} is not a directory")
    return folder


class SlurmRuns:
    """The running jobs of a filter as runs; stopping them.

    Args:
        client: the commands.
        job_filter: which jobs are ours (``SLM-1``).
        rule: where a job's run folder is (``SLM-2``).
        metric: the metric the sources read.
        step_column: the step column or key of CSV and JSONL logs.
        sides: the side signals read beside the metric (``WCH-16``), as for run folders.
        signal: the signal a stop sends first (a name Slurm knows: TERM, USR1, INT...).
        grace: seconds after the signal before ``scancel``.
        clock: wall-clock seconds (the grace is measured with it, across restarts).
        report: receives the problem lines of :meth:`stop` (it runs in an action thread).
    """

    def __init__(
        self,
        client: SlurmClient,
        job_filter: JobFilter,
        rule: FolderRule,
        metric: str,
        *,
        step_column: str | None = None,
        sides: Sides = _DEFAULT_SIDES,
        signal: str = "TERM",
        grace: float = 30.0,
        clock: Callable[[], float] = time.time,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self._client, self._filter, self._rule = client, job_filter, rule
        self._report = report
        self._lock = threading.Lock()  # stop() runs in an action thread, runs() in the loop
        self._metric, self._step_column, self._sides = metric, step_column, sides
        self._signal, self._grace, self._clock = signal, grace, clock
        self._running: dict[int, SlurmJob] = {}
        self._folders: dict[int, Path] = {}
        self._cancelled: set[int] = set()

    def runs(self) -> tuple[list[Run], list[str]]:
        """This poll's runs (one per running job of the filter whose folder is found), and
        the problem lines; cancels the jobs whose grace is over first (``SLM-5``)."""
        jobs, problems = self._client.jobs()
        listed = bool(jobs) or not problems
        if listed:  # a failed listing keeps the last one: nothing is cancelled on no news
            self._running = {job.job_id: job for job in jobs if self._filter.matches(job)}
        runs: list[Run] = []
        for job in sorted(self._running.values(), key=lambda j: j.job_id):
            try:
                folder = _folder(job, self._rule)
                sources = run_sources(folder, self._metric, self._step_column, self._sides)
            except (ValueError, OSError) as error:
                problems.append(f"slurm job {job.job_id} ({job.name}): {error}")
                continue
            self._folders[job.job_id] = folder
            if listed:
                with self._lock:
                    problems.extend(self._escalate(job, folder))
            facts = {"SLURM_JOB_ID": str(job.job_id)}
            runs.append(Run(f"{PREFIX}{job.job_id}", job.name, str(folder), sources, facts))
        return runs, problems

    def _escalate(self, job: SlurmJob, folder: Path) -> list[str]:
        """Finish the stop the marker records: send a signal not yet sent (a failed or
        interrupted attempt), or ``scancel`` a job still running ``grace`` seconds after its
        signal (once)."""
        marker = _marker(folder, job.job_id)
        if marker is None or job.job_id in self._cancelled:
            return []
        signalled = marker["slurm"].get("signalled_at")
        if signalled is None:
            return self._send(job.job_id, folder, marker)
        if self._clock() < float(signalled) + self._grace:
            return []
        self._cancelled.add(job.job_id)
        problem = self._client.cancel(job.job_id)
        return [problem] if problem else []

    def stop(self, decision: Mapping[str, Any]) -> None:
        """The :class:`~evalstop.watch.source.RunSource` action: :meth:`act`, its problem
        lines to ``report``."""
        for problem in self.act(decision):
            if self._report is not None:
                self._report(problem)

    def act(self, body: Mapping[str, Any]) -> list[str]:
        """Stop the job of a decision: the marker, then the signal; the problem lines.

        Does nothing for a run that is not a Slurm job, or for a job that is not running in
        the filter at the last listing (it ended, or it is not ours: ``SLM-1``), or whose
        marker says it was signalled (a restart redoing the action: ``SLM-6``). A signal that
        cannot be sent now (the controller is away) is sent at a later poll (``SLM-4``).
        """
        job_id = job_id_of(str(body.get("run")))
        if job_id is None:
            return []
        folder = self._folders.get(job_id)
        if job_id not in self._running or folder is None:
            return [f"slurm job {job_id}: not running in the filter, not signalled"]
        with self._lock:
            if _marker(folder, job_id) is not None:
                return []  # the signal went out, or failed and is retried by the polls
            marker = {
                **body,
                "checkpoint": _checkpoint(folder, body.get("best_step")),
                "slurm": {"job_id": job_id, "signal": self._signal, "signalled_at": None},
            }
            return self._send(job_id, folder, marker)

    def _send(self, job_id: int, folder: Path, marker: dict[str, Any]) -> list[str]:
        """Record the signal's time in the marker, then send it; a signal that fails is
        recorded as not sent (``signalled_at`` null), for a later poll (``SLM-5``).
        Recording first makes the signal at most once across restarts; the cancel after the
        grace makes the stop sure."""
        sent = {**marker, "slurm": {**marker["slurm"], "signalled_at": self._clock()}}
        try:
            _write_marker(folder, sent)
        except OSError as error:
            return [f"{folder}: cannot write {MARKER} ({error.strerror or error})"]
        problem = self._client.signal(job_id, self._signal)
        if not problem:
            return []
        try:
            _write_marker(folder, marker)
        except OSError as error:
            return [problem, f"{folder}: cannot write {MARKER} ({error.strerror or error})"]
        return [problem]


def _checkpoint(folder: Path | None, best_step: object) -> str | None:
    """The kept checkpoint's folder (``checkpoint-<best_step>``) when the run has one."""
    if folder is None or not isinstance(best_step, int):
        return None
    candidate = folder / f"checkpoint-{best_step}"
    return str(candidate) if candidate.is_dir() else None


def _write_marker(folder: Path, body: Mapping[str, Any]) -> None:
    """Atomically, by rename, never writing through a symlink planted at the temporary."""
    path = folder / MARKER
    temporary = path.with_name(f".{MARKER}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(dict(body), allow_nan=False) + "\n")
    os.replace(temporary, path)


def _marker(folder: Path, job_id: int) -> dict[str, Any] | None:
    """The marker of a stop of this job (None: no stop yet, or another job's marker)."""
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        slurm = marker["slurm"]
        signalled = slurm["signalled_at"]
        if slurm["job_id"] == job_id and (signalled is None or _is_number(signalled)):
            return dict(marker)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
