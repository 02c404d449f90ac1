"""Base scheduling policies: pure functions of a :class:`~evalstop.boundary.ClusterView`.

Every base policy is a :class:`PriorityPolicy`: a sort key over job views plus a flag that says
whether it preempts. Keys read only :class:`~evalstop.boundary.JobView` fields (spec ``BND-4``).
All of them backfill: a job that does not fit is skipped, never blocks the queue (``POL-2``).

=========== ============================================ =========== =========================
name        order (ties: submit time, then job id)       preempts    source
=========== ============================================ =========== =========================
fifo        submit time                                  no          the platform default
sjf-est     estimated duration                           no          SJF on user estimates
srtf-est    estimated remaining = estimate - service     yes         SRTF on user estimates
loss-aware  largest recent normalised loss drop first;   yes         SLAQ (Zhang et al. 2017)
            jobs without two losses yet come first
las         Tiresias 2D-LAS queue level of attained      yes         Tiresias (Gu et al. 2019)
            GPU-seconds (thresholds 1 h, 10 h GPU-time)
=========== ============================================ =========== =========================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from evalstop.boundary import ClusterView, JobView
from evalstop.cluster import first_fit
from evalstop.decision import Decision
from evalstop.detectors import Detector

__all__ = [
    "BASE_POLICIES",
    "LAS_THRESHOLDS",
    "Policy",
    "PriorityPolicy",
    "base_policy",
    "fifo",
    "las",
    "loss_aware",
    "sjf_est",
    "srtf_est",
]


class Policy(Protocol):
    """A scheduling policy: a pure function from a cluster view to a decision.

    ``detectors`` lists the detectors whose verdicts the policy reads; the engine folds each
    job's checkpoints through them and shows the verdicts on the job views.
    """

    @property
    def name(self) -> str: ...

    @property
    def detectors(self) -> tuple[Detector[Any], ...]: ...

    def __call__(self, view: ClusterView) -> Decision: ...


SortKey = Callable[[JobView, int], tuple[float, ...]]


@attrs.frozen(slots=True)
class PriorityPolicy:
    """Start jobs in the order of ``key`` (smallest first), first fit.

    Non-preemptive: running jobs keep running; queued jobs fill the free GPUs.
    Preemptive: all active jobs are ranked together and packed into the whole cluster; a
    running job that falls out of the packing is preempted (spec ``POL-3``). O(n log n).
    """

    name: str
    key: SortKey = attrs.field(eq=False)
    preemptive: bool = False

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def __call__(self, view: ClusterView) -> Decision:
        now = view.time
        if not self.preemptive:
            queued = sorted(view.queued, key=lambda job: self.key(job, now))
            fits = first_fit([job.gpus for job in queued], view.free_gpus)
            return Decision(start=tuple(queued[i].job_id for i in fits))
        ranked = sorted(view.queued + view.running, key=lambda job: self.key(job, now))
        picked = {ranked[i].job_id for i in first_fit([j.gpus for j in ranked], view.total_gpus)}
        to_start = picked.intersection(job.job_id for job in view.queued)
        return Decision(
            start=tuple(job.job_id for job in ranked if job.job_id in to_start),
            preempt=tuple(job.job_id for job in view.running if job.job_id not in picked),
        )


def _arrival(job: JobView) -> tuple[float, float]:
    return (float(job.submit_time), float(job.job_id))


def _fifo_key(job: JobView, now: int) -> tuple[float, ...]:
    return _arrival(job)


def _sjf_key(job: JobView, now: int) -> tuple[float, ...]:
    return (float(job.estimated_duration), *_arrival(job))


def _srtf_key(job: JobView, now: int) -> tuple[float, ...]:
    return (float(job.estimated_remaining(now)), *_arrival(job))


def _loss_key(job: JobView, now: int) -> tuple[float, ...]:
    drop = job.recent_loss_drop()
    return (-math.inf if drop is None else -drop, *_arrival(job))


LAS_THRESHOLDS: tuple[int, ...] = (3_600, 36_000)
"""Tiresias queue thresholds in attained GPU-seconds (1 and 10 GPU-hours)."""


def _las_key(job: JobView, now: int) -> tuple[float, ...]:
    attained = job.attained_gpu_service(now)
    level = sum(1 for threshold in LAS_THRESHOLDS if attained >= threshold)
    return (float(level), *_arrival(job))


fifo = PriorityPolicy("fifo", _fifo_key, preemptive=False)
sjf_est = PriorityPolicy("sjf-est", _sjf_key, preemptive=False)
srtf_est = PriorityPolicy("srtf-est", _srtf_key, preemptive=True)
loss_aware = PriorityPolicy("loss-aware", _loss_key, preemptive=True)
las = PriorityPolicy("las", _las_key, preemptive=True)

BASE_POLICIES: dict[str, PriorityPolicy] = {
    policy.name: policy for policy in (fifo, sjf_est, srtf_est, loss_aware, las)
}


def base_policy(name: str) -> PriorityPolicy:
    """The base policy called ``name``; raises ``KeyError`` naming the choices."""
    try:
        return BASE_POLICIES[name]
    except KeyError:
        choices = ", ".join(sorted(BASE_POLICIES))
        raise KeyError(f"unknown policy {name!r}; choose one of: {choices}") from None
