"""System metrics from an event log plus the hidden truth (spec ``MET``).

This is the only layer, with :mod:`evalstop.sim.detection`, that may read hidden labels and
noise-free quality. Everything is computed from the log in one pass, O(log length + jobs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.model import Job, JobId, JobKind
from evalstop.engine.collector import without_collector
from evalstop.engine.log import KIND_CODES, EventLog, LogColumns, LogKind
from evalstop.sim.run import Result

__all__ = [
    "FoldedOutcome",
    "JctStats",
    "JobOutcome",
    "SystemMetrics",
    "jct_stats",
    "job_outcomes",
    "kept_at",
    "mean_retained",
    "retained",
    "system_metrics",
]


@attrs.frozen(slots=True)
class JobOutcome:
    """How one job went.

    Attributes:
        job_id: the job's id.
        kind: its kind.
        gpus: the GPUs it holds while running.
        hacking: its hidden label (hidden truth).
        submit: arrival time.
        first_start: first start time.
        end: finish or stop time.
        stopped: True when a policy stopped it, False when it ran to its end.
        jct: ``end - submit`` (MET-1).
        queueing_delay: ``first_start - submit`` (MET-2).
        service: seconds of progress made.
        gpu_time: GPU-seconds held (overheads included).
        wasted_gpu_time: GPU-seconds of progress made after the true-quality peak (MET-5).
        kept_index: 0-based checkpoint the job ends with (the saved one if stopped, else the
            last), or -1 when it has none.
        quality_retained: its true quality over the peak checkpoint's (MET-6).
        stop_reason: the rule that stopped it ("" when it finished).
        evals_seen: checkpoints it reported before it ended.
    """

    job_id: JobId
    kind: JobKind
    gpus: int
    hacking: bool
    submit: int
    first_start: int
    end: int
    stopped: bool
    jct: int
    queueing_delay: int
    service: int
    gpu_time: int
    wasted_gpu_time: int
    kept_index: int
    quality_retained: float
    stop_reason: str
    evals_seen: int


@attrs.frozen(slots=True)
class FoldedOutcome:
    """What EvalStop with one detector does to one job, from the job's reports alone
    (:func:`~evalstop.sim.detection.folded_outcomes`, ``DQ-4``): the fields of a
    :class:`JobOutcome` that no schedule changes.

    Attributes:
        job_id: the job's id.
        kind: its kind.
        gpus: the GPUs it holds while running.
        hacking: its hidden label.
        stopped: True when the detector stopped it before its end.
        service: seconds of progress made (to the stopping report, or the whole run).
        evals_seen: checkpoints it reported before it ended.
        kept_index: 0-based checkpoint it ends with (MET-6).
        quality_retained: its true quality over the peak checkpoint's (MET-6).
    """

    job_id: JobId
    kind: JobKind
    gpus: int
    hacking: bool
    stopped: bool
    service: int
    evals_seen: int
    kept_index: int
    quality_retained: float


def _kept_index(job: Job, saved_step: int | None, evals: int) -> int:
    if saved_step is None:
        return evals - 1
    for index, obs in enumerate(job.observations):
        if obs.step == saved_step:
            return index
    raise ValueError(f"job {job.job_id}: saved step {saved_step} is not one of its checkpoints")


_START, _CHECKPOINT = LogKind.START, LogKind.CHECKPOINT
_PREEMPT, _STOP = LogKind.PREEMPT, LogKind.STOP
_ARRIVE = LogKind.ARRIVE
_CODES = KIND_CODES
_KINDS = tuple(LogKind)
_Facts = dict[JobId, tuple[Job, int, float]]
_last_facts: list[tuple[tuple[Job, ...], _Facts]] = []


def _facts(jobs: tuple[Job, ...]) -> _Facts:
    """Each job with its peak checkpoint's service and true quality, by id.

    Pure in ``jobs``, so the last answer is kept: the simulations of one workload share its
    ``jobs`` tuple (the reproduce runner runs up to 16 on one), and the peaks are found once.
    """
    if _last_facts and _last_facts[0][0] is jobs:
        return _last_facts[0][1]
    facts: _Facts = {}
    for job in jobs:
        quality = job.truth.quality
        peak = int(quality.argmax())  # JobTruth.peak_index: the first maximum
        facts[job.job_id] = (job, job.checkpoint_service(peak + 1), float(quality[peak]))
    _last_facts[:] = [(jobs, facts)]
    return facts


def retained(job: Job, kept: int, peak: float) -> float:
    """The true quality of ``job``'s checkpoint ``kept`` (0-based; -1: none kept, 0) over
    ``peak``, its peak checkpoint's (MET-6; NaN when the peak is not positive)."""
    if kept < 0 or peak <= 0:
        return 0.0 if kept < 0 else math.nan
    return float(job.truth.quality[kept]) / peak


_Event = tuple[int, LogKind, JobId, int, int | None, str]
_IntArray = npt.NDArray[np.signedinteger[Any]]


def _evals_seen(columns: LogColumns, kinds: _IntArray, jobs: _IntArray) -> dict[JobId, int]:
    """Each job's last CHECKPOINT index in the log of ``columns``: in bulk from the rows the
    columns hold (``dict`` keeps a job's last), then the odd records, each where it falls."""
    plain = kinds == _CODES[_CHECKPOINT]
    plain[list(columns.odd)] = False
    checkpoints = np.flatnonzero(plain)
    index = np.frombuffer(columns.index, dtype=columns.index.typecode)
    ids = jobs[checkpoints].tolist()
    evals = dict(zip(ids, index[checkpoints].tolist(), strict=True))
    odd = [(p, r) for p, r in sorted(columns.odd.items()) if r.kind is _CHECKPOINT]
    if odd:
        last = dict(zip(ids, checkpoints.tolist(), strict=True))
        for position, record in odd:
            if position > last.get(record.job_id, -1):
                evals[record.job_id], last[record.job_id] = record.index, position
    return evals


def _events(log: EventLog) -> tuple[dict[JobId, int], list[_Event]]:
    """The evaluations each job has seen (its last checkpoint's index), and every START,
    PREEMPT, FINISH and STOP record of ``log`` in order as ``(time, kind, job id, gpus, step,
    reason)``, read from the log's columns (MET-10, ENG-21)."""
    columns = log.columns()
    odd = columns.odd
    kinds = np.frombuffer(columns.kind, dtype=columns.kind.typecode)
    jobs = np.frombuffer(columns.job_id, dtype=columns.job_id.typecode)
    rows = np.flatnonzero((kinds != _CODES[_CHECKPOINT]) & (kinds != _CODES[_ARRIVE]))
    fields = (columns.time, columns.gpus, columns.step)
    times, gpus, steps = (np.frombuffer(c, dtype=c.typecode)[rows].tolist() for c in fields)
    events: list[_Event] = []
    for position, time, code, job_id, held, step in zip(
        rows.tolist(), times, kinds[rows].tolist(), jobs[rows].tolist(), gpus, steps, strict=True
    ):
        record = odd.get(position)
        if record is None:
            events.append((time, _KINDS[code], job_id, held, step, ""))
        else:
            events.append(
                (record.time, record.kind, record.job_id, record.gpus, record.step, record.reason)
            )
    return _evals_seen(columns, kinds, jobs), events


@without_collector  # MET-11: library code only, no reference cycles
def job_outcomes(result: Result) -> dict[JobId, JobOutcome]:
    """The outcome of every job of ``result``, keyed by job id (MET-1 to MET-6), read from
    its log's columns (MET-10)."""
    facts = _facts(result.jobs)
    held_since: dict[JobId, int] = {}
    gpu_time: dict[JobId, int] = {}
    first_start: dict[JobId, int] = {}
    progress: dict[JobId, int] = {}
    preempted: set[JobId] = set()
    overhead = result.cluster.preemption_overhead
    outcomes: dict[JobId, JobOutcome] = {}
    evals, events = _events(result.log)
    for time, kind, job_id, gpus, step, reason in events:
        if kind is _START:
            held_since[job_id] = time
            if job_id not in first_start:
                first_start[job_id] = time
            continue
        # PREEMPT, FINISH or STOP
        if job_id in held_since:
            start = held_since.pop(job_id)
            gpu_time[job_id] = gpu_time.get(job_id, 0) + gpus * (time - start)
            resumed_at = start + (overhead if job_id in preempted else 0)
            progress[job_id] = progress.get(job_id, 0) + max(0, time - resumed_at)
        if kind is _PREEMPT:
            preempted.add(job_id)
            continue
        job, peak_service, peak = facts[job_id]
        spec = job.spec
        stopped = kind is _STOP
        done = evals.get(job_id, 0)
        service = progress.get(job_id, 0)
        kept = _kept_index(job, step if stopped else None, done)
        began = first_start.get(job_id, time)
        outcomes[job_id] = JobOutcome(
            job_id,
            spec.kind,
            spec.gpus,
            job.truth.hacking,
            spec.submit_time,
            began,
            time,
            stopped,
            time - spec.submit_time,
            began - spec.submit_time,
            service,
            gpu_time.get(job_id, 0),
            spec.gpus * max(0, service - peak_service),
            kept,
            retained(job, kept, peak),
            reason,
            done,
        )
    return outcomes


def _best_index(job: Job, evals: int) -> int:
    """Index of the best valid eval score among the first ``evals`` reports (ties keep the
    earlier, DET-4); ``evals - 1`` when none is valid (a stop saving no checkpoint)."""
    best, index = None, evals - 1
    for position, obs in enumerate(job.observations[:evals]):
        score = obs.eval_score
        if score - score == 0.0 and (best is None or score > best):  # finite, strictly higher
            best, index = score, position
    return index


def kept_at(outcomes: Iterable[JobOutcome], jobs: dict[JobId, Job]) -> dict[JobId, JobOutcome]:
    """The outcomes of a run replayed on ``jobs``, which differ from the run's own only in
    their eval scores, for a system whose decisions read no eval score (spec ``MET-9``).

    Every job starts, stops and ends as in the run; a stopped job keeps the best valid eval
    score it reported up to its stop (DET-4) among its reports in ``jobs``, so only its kept
    checkpoint and the quality retained change. O(reports of the stopped jobs)."""
    out: dict[JobId, JobOutcome] = {}
    for outcome in outcomes:
        out[outcome.job_id] = outcome
        if outcome.stopped:
            job = jobs[outcome.job_id]
            kept = _best_index(job, outcome.evals_seen)
            if kept != outcome.kept_index:
                peak = float(job.truth.quality.max())
                out[outcome.job_id] = attrs.evolve(
                    outcome, kept_index=kept, quality_retained=retained(job, kept, peak)
                )
    return out


@attrs.frozen(slots=True)
class JctStats:
    """Mean, median and 95th percentile of job completion times, in seconds.

    Attributes:
        count: jobs summarised.
        mean: mean JCT (NaN when ``count`` is 0).
        median: median JCT.
        p95: 95th percentile, linearly interpolated.
    """

    count: int
    mean: float
    median: float
    p95: float


def jct_stats(values: Iterable[float]) -> JctStats:
    """Summary of ``values`` (NaN statistics when empty). p95 uses linear interpolation."""
    array = np.fromiter(values, dtype=np.float64)
    if array.size == 0:
        return JctStats(0, math.nan, math.nan, math.nan)
    return JctStats(
        count=int(array.size),
        mean=float(array.mean()),
        median=float(np.median(array)),
        p95=float(np.percentile(array, 95)),
    )


@attrs.frozen(slots=True)
class SystemMetrics:
    """Platform-level figures of one simulation (spec ``MET-1`` to ``MET-8``).

    Attributes:
        policy: the policy's name.
        jobs: jobs that ended (finished or stopped).
        jct: job completion times, end minus submit, in seconds (``MET-1``).
        jct_by_kind: the same per job kind (``"rlhf"``, ``"dpo"``, ``"lora"``), for the kinds
            present.
        queueing_delay_mean: mean of first start minus submit, in seconds (``MET-2``).
        makespan: last end minus first submit, in seconds (``MET-3``).
        utilization: GPU-seconds held over ``gpus * makespan``, within [0, 1] (``MET-4``).
        gpu_time: GPU-seconds held by all jobs.
        wasted_gpu_time: post-peak GPU-seconds (``MET-5``).
        quality_retained_rlhf: mean quality retained by RLHF jobs (``MET-6``); NaN without
            RLHF jobs.
        stopped: jobs stopped by a detector.
        rlhf_gpu_time: GPU-seconds held by RLHF jobs (``MET-8``), the measure the paper's
            "wasted compute" is closest to.
    """

    policy: str
    jobs: int
    jct: JctStats
    jct_by_kind: dict[str, JctStats]
    queueing_delay_mean: float
    makespan: int
    utilization: float
    gpu_time: int
    wasted_gpu_time: int
    quality_retained_rlhf: float
    stopped: int
    rlhf_gpu_time: int


def mean_retained(outcomes: Iterable[JobOutcome | FoldedOutcome]) -> float:
    """The mean quality retained by the RLHF jobs among ``outcomes`` (MET-6), in their order;
    NaN without RLHF jobs."""
    rlhf = [o.quality_retained for o in outcomes if o.kind is JobKind.RLHF]
    return float(np.mean(rlhf)) if rlhf else math.nan


def system_metrics(result: Result, outcomes: Sequence[JobOutcome] | None = None) -> SystemMetrics:
    """Aggregate the outcomes of ``result``.

    Args:
        result: a finished simulation.
        outcomes: its per-job outcomes, when already computed (:func:`job_outcomes`).

    Returns:
        The platform-level figures; utilisation is within [0, 1] by ``ENG-3``.

    Raises:
        ValueError: no job ended.
    """
    done = list(job_outcomes(result).values()) if outcomes is None else list(outcomes)
    if not done:
        raise ValueError("no job ended: cannot compute metrics of an empty run")
    first_submit = min(o.submit for o in done)
    makespan = max(o.end for o in done) - first_submit
    gpu_time = sum(o.gpu_time for o in done)
    capacity = result.cluster.gpus * makespan
    return SystemMetrics(
        policy=result.policy,
        jobs=len(done),
        jct=jct_stats(o.jct for o in done),
        jct_by_kind={
            kind.value: jct_stats(o.jct for o in done if o.kind is kind)
            for kind in JobKind
            if any(o.kind is kind for o in done)
        },
        queueing_delay_mean=float(np.mean([o.queueing_delay for o in done])),
        makespan=makespan,
        utilization=gpu_time / capacity if capacity > 0 else 0.0,
        gpu_time=gpu_time,
        wasted_gpu_time=sum(o.wasted_gpu_time for o in done),
        quality_retained_rlhf=mean_retained(done),
        stopped=sum(o.stopped for o in done),
        rlhf_gpu_time=sum(o.gpu_time for o in done if o.kind is JobKind.RLHF),
    )
