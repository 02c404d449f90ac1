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

import heapq
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from sortedcontainers import SortedList

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
    """The queued (arrival order) and running (start order) jobs of one run (``POL-6``), each
    tenant's active jobs in submit order, and their order as one tenant's (``FSH-4``)."""

    __slots__ = (
        "_active",
        "_demands",
        "_one",
        "_queued",
        "_running",
        "_running_gpus",
        "_tenants",
        "_total",
    )

    def __init__(self, total_gpus: int, one_tenant: PolicyState | None) -> None:
        self._total = total_gpus
        self._queued: dict[JobId, JobView] = {}
        self._running: dict[JobId, JobView] = {}
        self._running_gpus = 0
        self._demands: dict[int, int] = {}  # queued jobs per GPU demand
        self._active: dict[str, int] = {}  # active jobs per tenant
        # each tenant's (submit, id), in order: built once jobs of two tenants are active
        # (FSH-4; with no order of one tenant beside it, from the start), kept from then on
        self._tenants: dict[str, SortedList[tuple[int, JobId]]] | None = (
            None if one_tenant is not None else {}
        )
        self._one = one_tenant  # preemptive submit order over the same jobs

    @property
    def checkpoint_views(self) -> bool:
        return False

    def watched(self, job: JobView) -> bool:
        """``POL-12``: fair-share never re-plans at a checkpoint (``FSH-2``)."""
        return False

    def _join(self, job: JobView) -> None:
        tenant = job.tenant
        self._active[tenant] = self._active.get(tenant, 0) + 1
        tenants = self._tenants
        if tenants is None:
            if len(self._active) < 2:
                return
            tenants = self._tenants = self._by_tenant()
        jobs = tenants.get(tenant)
        if jobs is None:
            jobs = tenants[tenant] = SortedList()
        jobs.add((job.submit_time, job.job_id))

    def _by_tenant(self) -> dict[str, SortedList[tuple[int, JobId]]]:
        """Each tenant's active jobs in submit order, from the queued and running ones."""
        keys: dict[str, list[tuple[int, JobId]]] = {}
        for view in (*self._queued.values(), *self._running.values()):
            keys.setdefault(view.tenant, []).append((view.submit_time, view.job_id))
        return {tenant: SortedList(jobs) for tenant, jobs in keys.items()}

    def _count(self, gpus: int, change: int) -> None:
        left = self._demands.get(gpus, 0) + change
        if left:
            self._demands[gpus] = left
        else:
            del self._demands[gpus]

    def queued(self, job: JobView) -> None:
        job_id = job.job_id
        was = self._running.pop(job_id, None)
        if was is not None:
            self._running_gpus -= was.gpus
        elif job_id not in self._queued:
            self._join(job)
        if job_id not in self._queued:
            self._count(job.gpus, 1)
        self._queued[job_id] = job
        if self._one is not None:
            self._one.queued(job)

    def started(self, job: JobView) -> None:
        job_id = job.job_id
        if self._queued.pop(job_id, None) is not None:
            self._count(job.gpus, -1)
        elif job_id not in self._running:
            self._join(job)
        if job_id not in self._running:
            self._running_gpus += job.gpus
        self._running[job_id] = job
        if self._one is not None:
            self._one.started(job)

    def reported(self, job: JobView) -> None:
        if job.job_id in self._running:
            self._running[job.job_id] = job

    def ended(self, job_id: JobId) -> None:
        job = self._queued.pop(job_id, None)
        if job is not None:
            self._count(job.gpus, -1)
        else:
            job = self._running.pop(job_id, None)
            if job is None:
                return
            self._running_gpus -= job.gpus
        tenant = job.tenant
        count = self._active[tenant] - 1
        if count:
            self._active[tenant] = count
        else:
            del self._active[tenant]
        if self._tenants is not None:
            jobs = self._tenants[tenant]
            jobs.remove((job.submit_time, job_id))
            if not jobs:
                del self._tenants[tenant]
        if self._one is not None:
            self._one.ended(job_id)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        if not self._queued:
            return _NOTHING
        if self._one is not None and len(self._active) <= 1:
            # one tenant: the jobs it asked for before a job grow with submit order (every
            # job asks for a GPU at least), so FSH-1's ranking is submit order (FSH-4)
            return self._one.decide(time, free_gpus, cause, changed)
        return self._walk()

    def _tenant_heads(self) -> list[tuple[int, int, JobId, Iterator[tuple[int, JobId]]]]:
        """A heap of each tenant's first active job in FSH-1's order (GPUs asked before it: 0,
        submit time, id), with the tenant's later jobs to read."""
        if self._tenants is None:  # several tenants are active whenever it is read
            self._tenants = self._by_tenant()
        heap = []
        for jobs in self._tenants.values():
            following = iter(jobs)
            submit, job_id = next(following)  # a tenant is kept while it has an active job
            heap.append((0, submit, job_id, following))
        heapq.heapify(heap)
        return heap

    def _walk(self) -> Decision:
        """First fit of the ranking into the cluster (``FSH-1``), read only as far as it can
        change something (``FSH-4``): past the last running job, only while a queued job's
        demand still fits in the room left. The ranking is the tenants' submit orders merged
        as it is read: one heap entry per tenant, replaced in place by its next job (ids are
        unique, so entries never compare past them)."""
        slack = self._total - self._running_gpus  # room minus the running GPUs not reached
        left = self._running_gpus
        demands = dict(self._demands)  # queued jobs not reached yet, per demand
        starts: list[JobId] = []
        dropped: set[JobId] = set()
        queued, running, replace = self._queued, self._running, heapq.heapreplace
        heap = self._tenant_heads()
        while heap:
            if not left and (not demands or min(demands) > slack):
                break  # every running job placed; no queued job fits in what is left
            before, _, job_id, following = heap[0]
            view = queued.get(job_id)
            if view is None:
                gpus = running[job_id].gpus
                left -= gpus
                if slack + left < 0:
                    dropped.add(job_id)
                    slack += gpus
            else:
                gpus = view.gpus
                if gpus <= slack + left:
                    starts.append(job_id)
                    slack -= gpus
                count = demands[gpus] - 1  # reached: started or never (room only shrinks)
                if count:
                    demands[gpus] = count
                else:
                    del demands[gpus]
            after = next(following, None)
            if after is None:
                heapq.heappop(heap)
            else:
                replace(heap, (before + gpus, after[0], after[1], following))
        preempt = tuple(j for j in self._running if j in dropped) if dropped else ()
        return Decision(start=tuple(starts), preempt=preempt)


fair_share = FairShare()
"""The fair-share base policy, registered as ``fair-share``."""
