"""Detection quality against the hidden labels, over RLHF jobs (spec ``DQ``).

A job counts as *flagged* when a policy stopped it before its end. Hacking RLHF jobs are the
positives. Only this module and :mod:`evalstop.sim.metrics` read hidden labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs
import numpy as np

from evalstop.core.model import Job, JobId, JobKind
from evalstop.sim.metrics import JobOutcome

__all__ = ["DetectionMetrics", "confusion_rates", "detection_metrics", "ratio"]


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, or NaN when the denominator is 0 (an undefined rate)."""
    return numerator / denominator if denominator else math.nan


def confusion_rates(tp: int, fp: int, fn: int, tn: int) -> tuple[float, float, float]:
    """``(precision, recall, FPR)`` of a confusion table, NaN where undefined (DQ-2)."""
    return ratio(tp, tp + fp), ratio(tp, tp + fn), ratio(fp, fp + tn)


@attrs.frozen(slots=True)
class DetectionMetrics:
    """Confusion counts and rates; a rate with a zero denominator is NaN (DQ-2).

    ``delay_evals`` and ``delay_gpu_hours`` are means over true positives of the evaluations
    and GPU-hours of progress from the true-quality peak checkpoint to the stop; negative when
    the stop came before the peak (DQ-3).
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
    outcomes: Iterable[JobOutcome], jobs: Mapping[JobId, Job]
) -> DetectionMetrics:
    """Precision, recall, FPR, F1 and delay over the RLHF jobs among ``outcomes`` (DQ-1)."""
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
