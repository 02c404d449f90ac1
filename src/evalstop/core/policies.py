"""Base scheduling policies: pure functions of a :class:`~evalstop.core.boundary.ClusterView`.

Every base policy is a :class:`PriorityPolicy`: a sort key over job views plus a flag that says
whether it preempts. Keys read only :class:`~evalstop.core.boundary.JobView` fields (spec
``BND-4``). All of them backfill: a job that does not fit is skipped, never blocks the queue
(``POL-2``).

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
fair-share  GPUs the job's tenant's earlier jobs ask     yes         max-min share between
            for (:mod:`~evalstop.core.fairshare`)                    tenants (spec ``FSH``)
=========== ============================================ =========== =========================

``fair-share`` is not a :class:`PriorityPolicy`: its rank of a job depends on the tenant's
other jobs, so it is a :class:`~evalstop.core.fairshare.FairShare`.

``fifo``, ``sjf-est`` and ``srtf-est`` re-plan at arrivals and completions (SRTF preempts on
arrival, as the classic rule does); ``loss-aware`` and ``las`` also re-plan at every
checkpoint, where their priorities change (new loss, more attained service).
"""

from __future__ import annotations

import bisect
import functools
import math
from typing import Any, Protocol

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.fairshare import FairShare, fair_share
from evalstop.core.firstfit import FirstFitState
from evalstop.core.gpus import first_fit
from evalstop.core.policy import PolicyState
from evalstop.core.ranking import PriorityState

__all__ = [
    "BASE_POLICIES",
    "LAS_THRESHOLDS",
    "BasePolicy",
    "FairShare",
    "PriorityPolicy",
    "fair_share",
    "fifo",
    "las",
    "loss_aware",
    "sjf_est",
    "srtf_est",
]


class SortKey(Protocol):
    """A priority key: smaller sorts first. ``now`` is a keyword so it can be bound."""

    def __call__(self, job: JobView, now: int) -> tuple[float, ...]: ...


class MovesAt(Protocol):
    """When a running job's key can next change (``POL-7``): a time after ``now`` before which
    ``key(job, t) == key(job, now)``, or None if it never changes (the view unchanged)."""

    def __call__(self, job: JobView, now: int) -> int | None: ...


class FallsUntil(Protocol):
    """Until when a running job's key falls by one a second (``POL-8``): a time ``u > now``
    with ``key(job, t) == (key(job, now)[0] - (t - now), *key(job, now)[1:])`` for every
    ``t`` in ``[now, u]``, or None when it does not fall at ``now`` (the view unchanged)."""

    def __call__(self, job: JobView, now: int) -> int | None: ...


@attrs.frozen(slots=True)
class PriorityPolicy:
    """Start jobs in the order of ``key`` (smallest first), first fit.

    Non-preemptive: running jobs keep running; queued jobs fill the free GPUs.
    Preemptive: all active jobs are ranked together and packed into the whole cluster; a
    running job that falls out of the packing is preempted (spec ``POL-3``). O(n log n).

    ``incremental=True`` lets the fast engine keep the jobs ordered between events
    (:class:`~evalstop.core.ranking.PriorityState`, spec ``POL-6``) instead of sorting them at
    every decision. It promises two things of ``key``: it ends with the job id (keys are
    unique), and the key of a queued job does not depend on ``now`` (a running job's key may
    move with its attained service, and with its checkpoints when
    ``reschedule_on_checkpoint``). Every built-in policy keeps both promises.

    Attributes:
        name: the policy's name (``srtf-est``).
        key: the sort key over job views; smaller starts first.
        preemptive: rank running jobs with the queued ones and preempt those that fall out.
        reschedule_on_checkpoint: re-plan at checkpoints too, where the key can move.
        incremental: let the fast engine keep the order between events (see above).
        moves_at: when a running job's key can next change (``POL-7``); with it the ordered
            state keeps the running jobs sorted between decisions. None (and no
            ``falls_until``): re-rank them at each preemptive decision.
        falls_until: until when a running job's key falls by one a second (``POL-8``); such
            a key is kept ordered between decisions too, and ``moves_at`` then says when a
            key that does not fall can next change.
        reports_keep_keys: a report leaves a running job's key at every later time as it was
            (``POL-13``, ``las``); the ordered state then neither re-keys the job nor treats
            the report as a change.
    """

    name: str
    key: SortKey = attrs.field(eq=False)
    preemptive: bool = False
    reschedule_on_checkpoint: bool = False
    incremental: bool = False
    moves_at: MovesAt | None = attrs.field(default=None, eq=False)
    falls_until: FallsUntil | None = attrs.field(default=None, eq=False)
    reports_keep_keys: bool = False

    def start_run(self, total_gpus: int) -> PolicyState | None:
        """A fresh ordered state for one run (``POL-6``), or None unless ``incremental``: per
        GPU demand heaps of the queued jobs when non-preemptive (``POL-10``), else the
        ordered queued and running jobs (``POL-7`` to ``POL-9``)."""
        if not self.incremental:
            return None
        if not self.preemptive:
            return FirstFitState(self.key, self.reschedule_on_checkpoint)
        return PriorityState(self, total_gpus)

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        """Re-plan at arrivals and completions; at checkpoints only if the priorities move."""
        return cause is not EventKind.CHECKPOINT or self.reschedule_on_checkpoint

    def __call__(self, view: ClusterView) -> Decision:
        # Fast path, exact: with nothing queued there is nothing to start, and first fit over
        # the running jobs alone keeps them all (they fit now), so nothing is preempted.
        if not view.queued:
            return _NOTHING
        # functools.partial is implemented in C: no Python frame per key call.
        key = functools.partial(self.key, now=view.time)
        if not self.preemptive:
            if view.free_gpus == 0:
                return _NOTHING
            queued = sorted(view.queued, key=key)
            fits = first_fit([job.gpus for job in queued], view.free_gpus)
            return Decision(start=tuple(queued[i].job_id for i in fits))
        ranked = sorted(view.queued + view.running, key=key)
        picked = {ranked[i].job_id for i in first_fit([j.gpus for j in ranked], view.total_gpus)}
        to_start = picked.intersection(job.job_id for job in view.queued)
        return Decision(
            start=tuple(job.job_id for job in ranked if job.job_id in to_start),
            preempt=tuple(job.job_id for job in view.running if job.job_id not in picked),
        )


_NOTHING = Decision()


def _fifo_key(job: JobView, now: int) -> tuple[float, ...]:
    return (job.submit_time, job.job_id)


def _sjf_key(job: JobView, now: int) -> tuple[float, ...]:
    return (job.estimated_duration, job.submit_time, job.job_id)


def _srtf_key(job: JobView, now: int) -> tuple[float, ...]:
    # JobView.estimated_remaining(now), inlined: this key is the simulator's hottest line.
    since = job.running_since
    attained = job.service if since is None or now <= since else job.service + now - since
    remaining = job.estimated_duration - attained
    return (remaining if remaining > 0 else 0, job.submit_time, job.job_id)


def _srtf_moves_at(job: JobView, now: int) -> int | None:
    """Restoring its checkpoint (``ENG-11``) a job attains nothing: its key waits until then;
    at 0 remaining it never moves again."""
    since = job.running_since
    return since if since is not None and now < since else None


def _srtf_falls_until(job: JobView, now: int) -> int | None:
    """Making progress, the remaining estimate falls by one a second until it reaches 0."""
    since = job.running_since
    if since is None or now < since:
        return None
    remaining = job.estimated_duration - job.service - (now - since)
    return now + remaining if remaining > 0 else None


def _loss_key(job: JobView, now: int) -> tuple[float, ...]:
    # JobView.recent_loss_drop(), inlined: a key read at every report
    previous, last, first = job.previous_loss, job.last_loss, job.first_loss
    if previous is None or last is None or first is None:
        return (-math.inf, job.submit_time, job.job_id)
    return (-((previous - last) / (abs(first) or 1.0)), job.submit_time, job.job_id)


def _never(job: JobView, now: int) -> int | None:
    return None  # the key reads only the view


LAS_THRESHOLDS: tuple[int, ...] = (3_600, 36_000)
"""Tiresias queue thresholds in attained GPU-seconds (1 and 10 GPU-hours), ascending."""
_reached = bisect.bisect_right


def _las_key(job: JobView, now: int) -> tuple[float, ...]:
    # JobView.attained_gpu_service(now), inlined; the level is the count of thresholds
    # reached (they ascend: bisect counts them)
    since = job.running_since
    service = job.service if since is None or now <= since else job.service + now - since
    return (_reached(LAS_THRESHOLDS, job.gpus * service), job.submit_time, job.job_id)


def _las_moves_at(job: JobView, now: int) -> int | None:
    """The first time the job's attained GPU service reaches the next threshold."""
    since = job.running_since
    if since is None:
        return None  # not running: its attained service does not grow
    service = job.service  # JobView.attained_gpu_service(now), inlined as in _las_key
    attained = job.gpus * (service if now <= since else service + now - since)
    for threshold in LAS_THRESHOLDS:
        if attained < threshold:
            # gpus * (service + t - since) >= threshold, for t > since
            return since - service - (-threshold // job.gpus)
    return None


fifo = PriorityPolicy("fifo", _fifo_key, preemptive=False, incremental=True)
sjf_est = PriorityPolicy("sjf-est", _sjf_key, preemptive=False, incremental=True)
srtf_est = PriorityPolicy(
    "srtf-est",
    _srtf_key,
    preemptive=True,
    incremental=True,
    moves_at=_srtf_moves_at,
    falls_until=_srtf_falls_until,
)
loss_aware = PriorityPolicy(
    "loss-aware",
    _loss_key,
    preemptive=True,
    reschedule_on_checkpoint=True,
    incremental=True,
    moves_at=_never,
)
las = PriorityPolicy(
    "las",
    _las_key,
    preemptive=True,
    reschedule_on_checkpoint=True,
    incremental=True,
    moves_at=_las_moves_at,
    reports_keep_keys=True,  # a report carries the attained service the job had (POL-13)
)

BasePolicy = PriorityPolicy | FairShare
"""What a base policy is: an order over job views, or the tenants' fair share."""

BASE_POLICIES: dict[str, BasePolicy] = {
    policy.name: policy for policy in (fifo, sjf_est, srtf_est, loss_aware, las, fair_share)
}
