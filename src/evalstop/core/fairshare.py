"""Fair share between tenants: a base policy that reads each job's tenant (spec ``FSH``).

A shared cluster serves several teams (Philly's virtual clusters, a lab's groups). FIFO or SRTF
over all their jobs lets one team that submits a burst hold the whole cluster; a fair-share
policy divides it between tenants. :data:`fair_share` is max-min fairness on GPU counts
(Bertsekas & Gallager's max-min share, the per-tenant share of Gavel's and Themis' fairness
policies), first come first served inside a tenant:

- every active job (queued or running) is ranked by the GPUs that its tenant's *earlier*
  active jobs (in submit order, ties by id) already ask for, then by submit time and id;
- the ranking is packed first fit into the whole cluster, and a running job that falls out of
  the packing is preempted (as ``POL-3``).

Ranking by "what my tenant already holds" grows every tenant's allocation in lockstep: a
tenant asking for less than an equal share gets all it asks, the others split the rest
evenly, as far as whole jobs allow. With one tenant it is preemptive FIFO with backfilling.
It re-plans at arrivals and completions; a checkpoint changes no rank.

For the fast engine (``POL-6``) :class:`FairShareState` keeps the active jobs between events
and decides on them with the same ranking, without a :class:`ClusterView` being built. While
every active job belongs to one tenant (a synthetic workload, a single-team cluster) the
ranking is submit order, and the state decides through an ordered state of preemptive
submit order (:class:`~evalstop.core.ranking.PriorityState`, ``POL-9``) kept beside it
(``FSH-4``); with several tenants it ranks every active job at each decision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.gpus import first_fit
from evalstop.core.model import JobId
from evalstop.core.policy import PolicyState
from evalstop.core.ranking import PriorityState

__all__ = ["FairShare", "FairShareState", "fair_share", "fair_share_ranking"]

_NOTHING = Decision()


def fair_share_ranking(jobs: tuple[JobView, ...]) -> list[JobView]:
    """``jobs`` in fair-share order: by GPUs the tenant's earlier jobs ask for, then submit
    time, then id (``FSH-1``)."""
    asked: dict[str, int] = {}
    keyed: list[tuple[int, int, int, JobView]] = []
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.job_id)):
        before = asked.get(job.tenant, 0)
        asked[job.tenant] = before + job.gpus
        keyed.append((before, job.submit_time, job.job_id, job))
    keyed.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in keyed]


@attrs.frozen(slots=True)
class FairShare:
    """Max-min fair share of the GPUs between tenants (module docstring); preemptive.

    Attributes:
        name: the policy's name.
        preemptive: True: a running job that falls out of the packing is preempted.
    """

    name: str = "fair-share"
    preemptive: bool = True

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        """Re-plan at arrivals and completions; a checkpoint changes no rank (``FSH-2``)."""
        return cause is not EventKind.CHECKPOINT

    def start_run(self, total_gpus: int) -> PolicyState:
        """The active jobs of one run, kept for the fast engine (``POL-6``, ``FSH-4``)."""
        return FairShareState(total_gpus, PriorityState(_SUBMIT_ORDER, total_gpus))

    def __call__(self, view: ClusterView) -> Decision:
        return _decide(view.queued, view.running, view.total_gpus)


def _decide(queued: tuple[JobView, ...], running: tuple[JobView, ...], total: int) -> Decision:
    if not queued:
        return _NOTHING
    ranked = fair_share_ranking(queued + running)
    picked = {ranked[i].job_id for i in first_fit([job.gpus for job in ranked], total)}
    waiting = {job.job_id for job in queued}
    return Decision(
        start=tuple(job.job_id for job in ranked if job.job_id in picked and job.job_id in waiting),
        preempt=tuple(job.job_id for job in running if job.job_id not in picked),
    )


def _submit_key(job: JobView, now: int) -> tuple[float, ...]:
    return (job.submit_time, job.job_id)


def _never(job: JobView, now: int) -> int | None:
    return None  # the key reads only the view


@attrs.frozen(slots=True)
class _SubmitOrder:
    """Preemptive first fit in submit order, as the ordered state reads a policy (``FSH-4``)."""

    key: Callable[..., tuple[float, ...]] = _submit_key
    preemptive: bool = True
    reschedule_on_checkpoint: bool = False
    moves_at: Callable[[JobView, int], int | None] | None = _never
    falls_until: Callable[[JobView, int], int | None] | None = None


_SUBMIT_ORDER = _SubmitOrder()


class FairShareState:
    """The queued (arrival order) and running (start order) jobs of one run (``POL-6``), and
    their order as one tenant's (``FSH-4``)."""

    __slots__ = ("_one", "_queued", "_running", "_tenants", "_total")

    def __init__(self, total_gpus: int, one_tenant: PolicyState | None) -> None:
        self._total = total_gpus
        self._queued: dict[JobId, JobView] = {}
        self._running: dict[JobId, JobView] = {}
        self._tenants: dict[str, int] = {}  # active jobs per tenant
        self._one = one_tenant  # preemptive submit order over the same jobs

    @property
    def checkpoint_views(self) -> bool:
        return False

    def queued(self, job: JobView) -> None:
        job_id = job.job_id
        if self._running.pop(job_id, None) is None and job_id not in self._queued:
            self._tenants[job.tenant] = self._tenants.get(job.tenant, 0) + 1
        self._queued[job_id] = job
        if self._one is not None:
            self._one.queued(job)

    def started(self, job: JobView) -> None:
        job_id = job.job_id
        if self._queued.pop(job_id, None) is None and job_id not in self._running:
            self._tenants[job.tenant] = self._tenants.get(job.tenant, 0) + 1
        self._running[job_id] = job
        if self._one is not None:
            self._one.started(job)

    def reported(self, job: JobView) -> None:
        if job.job_id in self._running:
            self._running[job.job_id] = job

    def ended(self, job_id: JobId) -> None:
        job = self._queued.pop(job_id, None) or self._running.pop(job_id, None)
        if job is None:
            return
        left = self._tenants[job.tenant] - 1
        if left:
            self._tenants[job.tenant] = left
        else:
            del self._tenants[job.tenant]
        if self._one is not None:
            self._one.ended(job_id)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        if self._one is not None and len(self._tenants) <= 1:
            # one tenant: the jobs it asked for before a job grow with submit order (every
            # job asks for a GPU at least), so FSH-1's ranking is submit order (FSH-4)
            return self._one.decide(time, free_gpus, cause, changed)
        return _decide(tuple(self._queued.values()), tuple(self._running.values()), self._total)


fair_share = FairShare()
"""The fair-share base policy, registered as ``fair-share``."""
