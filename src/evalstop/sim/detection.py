"""Detection quality against the hidden labels (spec ``DQ``) and regret-first scores (``RGT``).

A job counts as *flagged* when a policy stopped it before its end. Hacking RLHF jobs are the
positives. Only this module and :mod:`evalstop.sim.metrics` read hidden labels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from evalstop.core.boundary import CheckpointView, checkpoint_report
from evalstop.core.detectors import Detector, start_watch
from evalstop.core.model import Job, JobId, JobKind
from evalstop.core.registry import InPlace, in_place, never_fires
from evalstop.core.regret import (
    HARMFUL_REGRET,
    RegretSummary,
    RunScore,
    regret_fraction,
    summarize_runs,
)
from evalstop.sim.metrics import FoldedOutcome, JobOutcome, retained

__all__ = [
    "DetectionMetrics",
    "confusion_rates",
    "detection_metrics",
    "fold_job",
    "folded_outcomes",
    "job_run_score",
    "job_views",
    "ratio",
    "regret_metrics",
    "run_scorer",
]


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, or NaN when the denominator is 0 (an undefined rate)."""
    return numerator / denominator if denominator else math.nan


def confusion_rates(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float, float]:
    """``(precision, recall, FPR)`` of a confusion table, NaN where undefined (DQ-2)."""
    return ratio(tp, tp + fp), ratio(tp, tp + fn), ratio(fp, fp + tn)


@attrs.frozen(slots=True)
class DetectionMetrics:
    """Confusion counts and rates over RLHF jobs; a rate with a zero denominator is NaN (DQ-2).

    Attributes:
        tp: hacking jobs stopped.
        fp: healthy jobs stopped.
        fn: hacking jobs not stopped.
        tn: healthy jobs not stopped.
        precision: ``tp / (tp + fp)``.
        recall: ``tp / (tp + fn)``.
        fpr: ``fp / (fp + tn)``.
        f1: the harmonic mean of precision and recall.
        delay_evals: mean over true positives of the evaluations from the true-quality peak
            checkpoint to the stop; negative when the stop came before the peak (DQ-3).
        delay_gpu_hours: the same in GPU-hours of progress.
    """

    tp: int
    fp: int
    fn: int
    tn: int
    precision: float
    recall: float
    fpr: float
    f1: float
    delay_evals: float
    delay_gpu_hours: float

    @property
    def jobs(self) -> int:
        return self.tp + self.fp + self.fn + self.tn


def detection_metrics(
    outcomes: Iterable[JobOutcome | FoldedOutcome], jobs: Mapping[JobId, Job]
) -> DetectionMetrics:
    """Precision, recall, FPR, F1 and delay over the RLHF jobs among ``outcomes`` (DQ-1).

    Args:
        outcomes: per-job outcomes of a run (:func:`~evalstop.sim.metrics.job_outcomes`), or
            of a detector folded over jobs (:func:`folded_outcomes`).
        jobs: the run's jobs by id, hidden truth included (the hacking labels and peaks).

    Returns:
        The confusion counts, rates and detection delay.
    """
    tp = fp = fn = tn = 0
    delays: list[float] = []
    delay_gpu: list[float] = []
    for outcome in outcomes:
        if outcome.kind is not JobKind.RLHF:
            continue
        if outcome.hacking and outcome.stopped:
            tp += 1
            job = jobs[outcome.job_id]
            peak = job.truth.peak_index + 1
            delays.append(outcome.evals_seen - peak)
            peak_service = job.checkpoint_service(peak)
            delay_gpu.append(outcome.gpus * (outcome.service - peak_service) / 3600.0)
        elif outcome.stopped:
            fp += 1
        elif outcome.hacking:
            fn += 1
        else:
            tn += 1
    precision, recall, fpr = confusion_rates(tp, fp, fn, tn)
    f1 = (
        2 * precision * recall / (precision + recall)
        if tp and not math.isnan(precision + recall)
        else (0.0 if tp + fp + fn else math.nan)
    )
    return DetectionMetrics(
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=precision,
        recall=recall,
        fpr=fpr,
        f1=f1,
        delay_evals=float(np.mean(delays)) if delays else math.nan,
        delay_gpu_hours=float(np.mean(delay_gpu)) if delay_gpu else math.nan,
    )


def job_views(job: Job) -> tuple[CheckpointView, ...]:
    """Every report of ``job``, in order, as the engine builds it (for :func:`fold_job`)."""
    return tuple(_report(job, index) for index in range(1, len(job.observations) + 1))


def _report(job: Job, index: int) -> CheckpointView:
    """Checkpoint ``index``'s report as the engine builds it (``BND-5``) for a job that ran
    alone from time 0: reported at its service."""
    return checkpoint_report(job, index, job.checkpoint_service(index))


def fold_job(
    detector: Detector[Any], job: Job, views: Sequence[CheckpointView] | None = None
) -> tuple[int | None, int | None]:
    """``(stop, kept)``: 0-based checkpoints where ``detector`` stops ``job`` and what it keeps.

    The detector sees the job's reports one by one, as under EvalStop in the simulator; a fire
    at the last checkpoint is not a stop (the job ends there anyway), so ``stop`` is None and
    ``kept`` the last checkpoint then (spec ``RGT-4``). ``kept`` is None only for a stop
    before any finite score. ``views`` (:func:`job_views`) saves building the reports again
    when several detectors fold the same job.
    """
    last = len(job.observations) - 1
    if never_fires(detector):  # the job runs to its end
        return None, last
    fold = in_place(detector)
    if fold is not None:  # a built-in rule (DET-12)
        return _fold_fast(fold, detector, job, last)
    return _fold_generic(detector, job, last, views)


def _fold_generic(
    detector: Detector[Any], job: Job, last: int, views: Sequence[CheckpointView] | None
) -> tuple[int | None, int | None]:
    """:func:`fold_job` by the detector's ``update``: :func:`observe`'s watch (its best
    checkpoint, ``DET-4``, or the rule's own, ``DET-12``, and its first fire) kept in local
    variables instead of a new watch per report, equal to folding with ``observe``."""
    update, fired = detector.update, detector.fired
    kept = getattr(detector, "kept", None)  # the optional hook (NAD-10, DET-12)
    rule = detector.initial()
    best: int | None = None
    best_score: float | None = None
    for index in range(last + 1):
        view = _report(job, index + 1) if views is None else views[index]
        rule = update(rule, view)
        score = view.eval_score
        if math.isfinite(score) and (best_score is None or score > best_score):
            best, best_score = view.step, score  # improves (DET-4)
        if kept is not None and (checkpoint := kept(rule)) is not None:
            best, best_score = checkpoint
        if fired(rule):
            if index == last:  # a fire at the last checkpoint is no stop
                break
            return index, None if best is None else _index_of_step(job, best)
    return None, last


def folded_outcomes(detector: Detector[Any], jobs: Iterable[Job]) -> list[FoldedOutcome]:
    """The outcome of each RLHF job of ``jobs`` (in their order) under EvalStop with
    ``detector``, folded over its reports (:func:`fold_job`, ``DQ-4``): stopped at the report
    the detector fires on, with the service of that report, keeping what the detector keeps
    (its last report when it keeps none, as :func:`~evalstop.sim.metrics.job_outcomes` reads a
    stop that saved no checkpoint); or run to its end, keeping its last checkpoint. A
    simulation that wraps any base with ``detector`` gives each of these jobs the same fields
    (``RGT-4``)."""
    out: list[FoldedOutcome] = []
    for job in jobs:
        if job.spec.kind is not JobKind.RLHF:
            continue
        stop, kept = fold_job(detector, job)
        seen = len(job.observations) if stop is None else stop + 1
        index = seen - 1 if kept is None else kept  # a stop saving none: its last (MET-6)
        quality = job.truth.quality
        peak = float(quality[job.truth.peak_index])
        service = job.truth.duration if stop is None else job.checkpoint_service(seen)
        spec = job.spec
        out.append(
            FoldedOutcome(
                spec.job_id,
                spec.kind,
                spec.gpus,
                job.truth.hacking,
                stop is not None,
                service,
                seen,
                index,
                retained(job, index, peak),
            )
        )
    return out


def _fold_fast(
    fold: InPlace, detector: Detector[Any], job: Job, last: int
) -> tuple[int | None, int | None]:
    """:func:`fold_job` for a rule with an in-place fold, from each report's step and score
    alone (``DET-12``), equal to the generic fold."""
    fired: int | None = None
    best: int | None = None
    state, fold_in = fold.kind(start_watch(detector)), fold.fold
    for index, obs in enumerate(job.observations):
        fold_in(state, obs.step, obs.eval_score)
        if state.fired_step is not None:
            fired, best = index, state.best_step
            break
    if fired is None or fired == last:
        return None, last
    return fired, None if best is None else _index_of_step(job, best)


def _index_of_step(job: Job, step: int) -> int:
    for index, obs in enumerate(job.observations):
        if obs.step == step:
            return index
    raise ValueError(f"job {job.job_id}: step {step} is not one of its checkpoints")


def job_run_score(job: Job, stop: int | None, kept: int | None) -> RunScore:
    """The regret-first score of ``job`` stopped at checkpoint ``stop`` keeping ``kept``.

    Quality is the hidden noise-free quality, a rate (full scale 1: ``gain`` and ``lost`` are
    in its units, ``RGT-5``); compute is GPU-seconds (spec ``RGT-4``).
    """
    return run_scorer(job)(stop, kept)


def run_scorer(job: Job) -> Callable[[int | None, int | None], RunScore]:
    """``score(stop, kept)``, :func:`job_run_score` of ``job``: what no stop changes (its peak,
    first and last quality, its peak's service) is found once, for several detectors' folds."""
    quality = job.truth.quality
    peak = job.truth.peak_index
    best, first = float(quality[peak]), float(quality[0])
    gpus, duration = job.spec.gpus, job.truth.duration
    peak_service = job.checkpoint_service(peak + 1)
    post_peak = float(gpus * (duration - peak_service))
    collapsing = regret_fraction(best, first, float(quality[-1])) > HARMFUL_REGRET

    def score(stop: int | None, kept: int | None) -> RunScore:
        kept_value = first if kept is None else float(quality[kept])
        saved = 0.0
        if stop is not None:
            stop_service = job.checkpoint_service(stop + 1)
            saved = float(gpus * (duration - max(stop_service, peak_service)))
        return RunScore(
            stopped=stop is not None,
            regret=regret_fraction(best, first, kept_value),
            collapsing=collapsing,
            post_peak=post_peak,
            saved=saved,
            delay=None if stop is None else stop - peak,
            gain=best - first,
            lost=max(best - kept_value, 0.0),
        )

    return score


def regret_metrics(outcomes: Iterable[JobOutcome], jobs: Mapping[JobId, Job]) -> RegretSummary:
    """Regret-first scores of a simulation's outcomes over its RLHF jobs, the jobs EvalStop
    watches (spec ``RGT-4``)."""
    scores = []
    for outcome in outcomes:
        if outcome.kind is not JobKind.RLHF:
            continue
        job = jobs[outcome.job_id]
        stop = outcome.evals_seen - 1 if outcome.stopped else None
        kept = outcome.kept_index if outcome.kept_index >= 0 else None
        scores.append(job_run_score(job, stop, kept))
    return summarize_runs(scores)
