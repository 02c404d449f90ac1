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
(``FSH-4``). Once jobs of several tenants are active it keeps each tenant's order
(:class:`~evalstop.core.tenantorder.TenantOrder`) and walks the merged ranking from change to
change as ``POL-9`` does (``FSH-4``); an arrival after a settled decision that fits nowhere
decides nothing without a walk (``FSH-5``). Its decision takes the jobs it starts off the
queue itself, so the engine need not tell it (``FSH-6``).

Longer than 400 lines: the state's bookkeeping of the tenants' orders (as jobs join, start,
are preempted and end), its settled check and its walk read and keep the same fields (each
tenant's running order, the first queued job of each demand per tenant); apart, each would
reach into the other's fields. The per-tenant order itself is in its own module.
"""

from __future__ import annotations

import bisect
import heapq
from bisect import insort
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision, trusted_decision
from evalstop.core.detectors import Detector
from evalstop.core.gpus import first_fit
from evalstop.core.model import JobId
from evalstop.core.policy import PolicyState
from evalstop.core.ranking import PriorityState, RunningTail, walk
from evalstop.core.tenantorder import Ranked, Running, TenantOrder

__all__ = ["FairShare", "FairShareState", "fair_share", "fair_share_ranking"]

_NOTHING = Decision()
_Low = tuple[int, int, int, int, list[Running]]
"""A running order's entry in the merge's heap: its key negated, its position from the end."""


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
    either their order as one tenant's or each tenant's order (``FSH-4``)."""

    __slots__ = (
        "_active",
        "_fresh",
        "_heads",
        "_least",
        "_lows",
        "_one",
        "_pending",
        "_queued",
        "_running",
        "_running_gpus",
        "_seconds",
        "_settled",
        "_sole",
        "_start_order",
        "_starts",
        "_tenants",
        "_total",
        "_where",
    )

    def __init__(self, total_gpus: int, one_tenant: PolicyState | None) -> None:
        self._total = total_gpus
        self._queued: dict[JobId, JobView] = {}
        self._running: dict[JobId, JobView] = {}
        self._running_gpus = 0
        # with the tenants' orders: each running job's place in start order, the order of a
        # decision's preemptions (FSH-4: sorted, not read off every running job)
        self._start_order: dict[JobId, int] = {}
        self._starts = 0
        self._active: dict[str, int] = {}  # active jobs per tenant
        # each tenant's order: built once jobs of two tenants are active (FSH-4; with no
        # order of one tenant beside it, from the start), kept from then on
        self._tenants: dict[str, TenantOrder] | None = None if one_tenant is not None else {}
        self._where: dict[JobId, tuple[TenantOrder, int]] = {}  # an active job's tenant, index
        # per GPU demand, each tenant's first queued job of that demand: its key
        self._heads: dict[int, dict[str, Ranked]] = {}
        # per GPU demand, fewest first, the least of its tenants' first queued jobs (a walk's
        # heads, kept as they change)
        self._least: dict[int, Ranked] = {}
        # each tenant with running jobs: its lowest ranked one as the merge of the running
        # orders reads it first (_lowest_first), kept as it changes
        self._lows: dict[str, _Low] = {}
        # during a decision: a tenant's first queued job of a demand that the walk read past,
        # and that tenant's next one of the demand (its first once the other starts)
        self._seconds: dict[JobId, Ranked | None] = {}
        self._one = one_tenant  # preemptive submit order over the same jobs
        # while it decides: the one tenant with active jobs (the counts of active jobs per
        # tenant, the GPUs running and the tenants' orders are made when a second comes)
        self._sole: str | None = None
        # FSH-5: since the last decision nothing changed but what it said and arrivals
        self._settled = False
        self._pending: set[JobId] = set()  # its preemptions not told yet
        self._fresh: list[tuple[Ranked, int]] = []  # jobs that arrived since: keys, GPUs

    @property
    def checkpoint_views(self) -> bool:
        return False

    @property
    def keeps_starts(self) -> bool:
        """``POL-10``, ``FSH-6``: :meth:`decide` takes its starts off the queue itself (it
        reads of a running job only what its view said while queued); :meth:`started` need
        not be called for them."""
        return True

    def watched(self, job: JobView) -> bool:
        """``POL-12``: fair-share never re-plans at a checkpoint (``FSH-2``)."""
        return False

    def queued(self, job: JobView) -> None:
        one = self._alone(job, self._running, self._queued)
        if one is not None:
            one.queued(job)
            return
        job_id = job.job_id
        was = self._running.pop(job_id, None)
        known = job_id in self._queued
        self._queued[job_id] = job
        if was is not None:
            self._running_gpus -= was.gpus
            del self._start_order[job_id]
            self._preempted(job)
            self._told(job_id)
        elif not known:
            key = self._join(job, False)
            if key is None:
                self._unsettle()
            elif self._settled:
                self._fresh.append((key, job.gpus))

    def started(self, job: JobView) -> None:
        one = self._alone(job, self._queued, self._running)
        job_id = job.job_id
        if one is not None:
            one.started(job)
        elif job_id in self._running:  # told again
            self._running[job_id] = job
        else:
            self._running[job_id] = job
            self._running_gpus += job.gpus
            self._start_order[job_id] = self._starts
            self._starts += 1
            if self._queued.pop(job_id, None) is None:  # it joins running
                self._join(job, True)
                self._unsettle()
            else:
                self._started(job)
                self._told(job_id)

    def reported(self, job: JobView) -> None:
        if job.job_id in self._running:
            self._running[job.job_id] = job

    def ended(self, job_id: JobId) -> None:
        one = self._one
        if one is not None:
            if self._queued.pop(job_id, None) or self._running.pop(job_id, None):
                one.ended(job_id)
            return
        job = self._queued.pop(job_id, None)
        running = job is None
        if job is None:
            job = self._running.pop(job_id, None)
            if job is None:
                return
            self._running_gpus -= job.gpus
            del self._start_order[job_id]
        tenant = job.tenant
        count = self._active[tenant] - 1
        if count:
            self._active[tenant] = count
        else:
            del self._active[tenant]
        self._leave(job, running)
        self._settled = False  # _unsettle, inline
        self._fresh.clear()

    def _alone(
        self, job: JobView, out_of: dict[JobId, JobView], into: dict[JobId, JobView]
    ) -> PolicyState | None:
        """While the ordered state of one tenant decides and ``job`` is that tenant's
        (``FSH-4``; a job of another tenant when no job is active makes that tenant the one):
        the job moved from ``out_of`` into ``into``, and that state. Else None: the tenants'
        orders decide, built from the active jobs when ``job`` is a second tenant's
        (:meth:`_split`)."""
        one = self._one
        if one is None:
            return None
        tenant = job.tenant
        if tenant != self._sole:
            if self._queued or self._running:
                self._split()
                return None
            self._sole = tenant
        out_of.pop(job.job_id, None)
        into[job.job_id] = job
        return one

    def _split(self) -> None:
        """Jobs of a second tenant come: each tenant's order from the active jobs (``FSH-4``),
        which decide from now on, one tenant or several; the counts of active jobs per
        tenant and the GPUs running, kept from now on."""
        active = self._active
        for view in (*self._queued.values(), *self._running.values()):
            active[view.tenant] = active.get(view.tenant, 0) + 1
        self._running_gpus = sum([view.gpus for view in self._running.values()])
        self._start_order = {job_id: at for at, job_id in enumerate(self._running)}
        self._starts = len(self._start_order)
        self._tenants = {}
        self._one = None
        for name in active:
            self._rebuild(name)
        self._unsettle()

    def _told(self, job_id: JobId) -> None:
        """A job started or was preempted: as the last decision said, or a change."""
        if job_id in self._pending:
            self._pending.discard(job_id)
        else:
            self._unsettle()

    def _unsettle(self) -> None:
        self._settled = False
        self._fresh.clear()

    def _join(self, job: JobView, running: bool) -> Ranked | None:
        """A job not seen before (in the dicts already); its key when it joined its tenant's
        order last, else None."""
        tenant = job.tenant
        self._active[tenant] = self._active.get(tenant, 0) + 1
        tenants = self._tenants
        assert tenants is not None  # built with a second tenant's first job (_split)
        order = tenants.get(tenant)
        if order is None:
            order = tenants[tenant] = TenantOrder()
        elif (job.submit_time, job.job_id) < order.ids[-1]:
            self._rebuild(tenant)  # joined before a job it follows: indices anew
            return None
        return self._place(order, job, running)

    def _rebuild(self, name: str) -> None:
        """Tenant ``name``'s order from its active jobs."""
        assert self._tenants is not None
        old = self._tenants.pop(name, None)
        self._lows.pop(name, None)
        if old is not None:
            for gpus in old.queued:
                heads = self._heads[gpus]
                del heads[name]
                if not heads:
                    del self._heads[gpus]
                self._renew(gpus)
        views = [v for v in (*self._queued.values(), *self._running.values()) if v.tenant == name]
        if views:
            order = self._tenants[name] = TenantOrder()
            for view in sorted(views, key=lambda v: (v.submit_time, v.job_id)):
                self._place(order, view, view.job_id in self._running)

    def _place(self, order: TenantOrder, job: JobView, running: bool) -> Ranked:
        """Job ``job`` joins its tenant's ``order`` last: its key."""
        gpus = job.gpus
        i = order.append(job.submit_time, job.job_id, gpus)
        key: Ranked = (order.gpus, job.submit_time, job.job_id)
        order.gpus += gpus
        self._where[job.job_id] = (order, i)
        if running:
            order.run.append((key[0], key[1], key[2], gpus))
            order.run_idx.append(i)
            self._lows[job.tenant] = (-key[0], -key[1], -key[2], -1, order.run)
        else:
            self._queue_at(order, job.tenant, i, key, gpus)
        return key

    def _queue_at(self, order: TenantOrder, name: str, i: int, key: Ranked, gpus: int) -> None:
        indices = order.queued.get(gpus)
        if indices is None:
            order.queued[gpus] = [i]
        elif i > indices[-1]:
            indices.append(i)  # an arrival: last in its tenant's order
        else:
            insort(indices, i)  # a preempted job: before its demand's queued jobs
        heads = self._heads.get(gpus)
        if heads is None:
            heads = self._heads[gpus] = {}
        head = heads.get(name)
        if head is None or key < head:
            heads[name] = key
            least = self._least
            head = least.get(gpus)
            if head is None:
                in_order = not least or gpus > next(reversed(least))
                least[gpus] = key
                if not in_order:  # the demands stay fewest GPUs first
                    self._least = dict(sorted(least.items()))
            elif key < head:
                least[gpus] = key

    def _renew(self, gpus: int) -> None:
        """Demand ``gpus``'s least first queued job, after its tenants' first ones changed
        other than by falling."""
        heads = self._heads.get(gpus)
        if heads:
            self._least[gpus] = min(heads.values())
        else:
            self._least.pop(gpus, None)

    def _lowest(self, name: str, run: list[Running]) -> None:
        """Tenant ``name``'s running order ``run`` changed at its end: its lowest entry anew."""
        if run:
            asked, submit, job_id, _ = run[-1]
            self._lows[name] = (-asked, -submit, -job_id, -1, run)
        else:
            self._lows.pop(name, None)

    def _preempted(self, job: JobView) -> None:
        order, i = self._where[job.job_id]
        run = order.run
        at = bisect.bisect_left(order.run_idx, i)
        asked, submit, job_id, gpus = run[at]
        del run[at], order.run_idx[at]
        if at == len(run):  # it was its tenant's lowest ranked running job
            self._lowest(job.tenant, run)
        self._queue_at(order, job.tenant, i, (asked, submit, job_id), gpus)

    def _started(self, job: JobView) -> None:
        order, i = self._where[job.job_id]
        gpus, name = job.gpus, job.tenant
        indices = order.queued[gpus]
        if indices[0] == i:  # _unqueue, inline: a start takes the first (FSH-4)
            del indices[0]
        else:
            del indices[bisect.bisect_left(indices, i)]
        heads = self._heads[gpus]
        key = heads[name]
        if key[2] == job.job_id:  # its demand's first: the next one is
            if indices:
                heads[name] = self._seconds.get(job.job_id) or order.key(indices[0])
            else:
                del heads[name]
                if not heads:
                    del self._heads[gpus]
            if self._least[gpus][2] == job.job_id:  # _renew, inline
                if heads:
                    self._least[gpus] = min(heads.values())
                else:
                    del self._least[gpus]
        else:
            key = order.key(i)
        if not indices:
            del order.queued[gpus]
        run = order.run
        at = bisect.bisect_left(order.run_idx, i)
        run.insert(at, (key[0], key[1], key[2], gpus))
        order.run_idx.insert(at, i)
        if at == len(run) - 1:  # its tenant's lowest ranked running job now
            self._lows[name] = (-key[0], -key[1], -key[2], -1, run)

    def _leave(self, job: JobView, running: bool) -> None:
        """An active job ended: its tenant's later jobs ask for ``gpus`` GPUs less before."""
        order, i = self._where.pop(job.job_id)
        gpus, name = job.gpus, job.tenant
        order.add(i, -gpus)
        order.gpus -= gpus
        at = bisect.bisect_left(order.run_idx, i)
        first = False  # whether it was its demand's first queued job
        if running:
            del order.run[at], order.run_idx[at]
        else:
            indices = order.queued[gpus]
            _unqueue(indices, i)
            first = self._heads[gpus][name][2] == job.job_id
            if not indices:
                del order.queued[gpus]
        run = order.run
        if at < len(run):
            run[at:] = [(b - gpus, s, j, g) for b, s, j, g in run[at:]]
            self._lowest(name, run)
        elif running:  # it was its tenant's lowest ranked running job
            self._lowest(name, run)
        where, least = self._where, self._least
        for demand in order.queued:
            heads = self._heads[demand]
            head = heads[name]
            if not (first and demand == gpus) and where[head[2]][1] > i:
                head = heads[name] = (head[0] - gpus, head[1], head[2])
                least[demand] = min(least[demand], head)
        if first:
            heads = self._heads[gpus]
            if gpus in order.queued:
                heads[name] = order.key(order.queued[gpus][0])
            else:
                del heads[name]
                if not heads:
                    del self._heads[gpus]
            self._renew(gpus)
        if name not in self._active:
            del self._tenants[name]  # type: ignore[union-attr]  # and its run is empty

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        if not self._queued:
            self._settled = True  # every active job runs: a fixed point
            self._pending.clear()
            self._fresh.clear()
            return _NOTHING
        one = self._one
        if one is not None:
            # one tenant: the jobs it asked for before a job grow with submit order (every
            # job asks for a GPU at least), so FSH-1's ranking is submit order (FSH-4)
            decision = one.decide(time, free_gpus, cause, changed)
        else:
            settled = self._settled and not self._pending
            decision = self._arrived(free_gpus) if settled else self._walk()
            self._settled = True
            self._fresh.clear()
            if decision.preempt:
                self._pending = {*decision.preempt}
            elif self._pending:
                self._pending = set()
        if decision.start:
            self._take(decision.start)
        if self._seconds:
            self._seconds.clear()
        return decision

    def _take(self, starts: tuple[JobId, ...]) -> None:
        """``FSH-6``: the jobs a decision starts leave the queue (as :meth:`started` says,
        with the views they were queued with), in its order."""
        queued, running, one = self._queued, self._running, self._one
        if one is not None:
            for job_id in starts:
                job = running[job_id] = queued.pop(job_id)
                one.started(job)
            return
        order = self._start_order
        for job_id in starts:
            job = running[job_id] = queued.pop(job_id)
            self._running_gpus += job.gpus
            order[job_id] = self._starts
            self._starts += 1
            self._started(job)

    def _arrived(self, free: int) -> Decision:
        """``FSH-5``: the last decision's packing is still a fixed point but for the jobs
        that arrived since (each last in its tenant's order: no other key moved). The
        placed jobs are the running ones, so the room at a newcomer's turn is the free GPUs
        plus those of the running jobs ranked after it; one that does not fit there changes
        nothing, so with none fitting nothing is done, else the decision walks."""
        fresh = self._fresh
        if len(fresh) > 1:
            fresh.sort()
        for key, gpus in fresh:
            if gpus <= free or self._held_after(key, gpus - free):
                # the walk's first change: no job ranked before it fits at its turn
                return self._walk((key, gpus))
        return _NOTHING

    def _held_after(self, key: Ranked, gpus: int) -> bool:
        """Whether the running jobs ranked after ``key`` hold at least ``gpus`` GPUs."""
        held, after = 0, (-key[0], -key[1], -key[2])
        for low in self._lows.values():  # each tenant's lowest ranked running job, negated
            if low < after:  # a running job's key is not a queued job's key
                run = low[4]
                at = bisect.bisect_right(run, key)
                held += sum([entry[3] for entry in run[at:]])
                if held >= gpus:
                    return True
        return False

    def _after(self, gpus: int, at: Ranked) -> Ranked | None:
        """The first queued job of ``gpus`` GPUs ranked after ``at``: the least of each
        tenant's."""
        assert self._tenants is not None
        tenants, best, job_id = self._tenants, None, at[2]
        for name, head in self._heads[gpus].items():
            if head > at:
                entry: Ranked | None = head
            elif head[2] == job_id:  # the walk's position is its first: the next one is
                entry = self._seconds[job_id] = tenants[name].second(gpus)
            else:
                entry = tenants[name].after(gpus, at)
            if entry is not None and (best is None or entry < best):
                best = entry
        return best

    def _walk(self, first: tuple[Ranked, int] | None = None) -> Decision:
        """First fit of the ranking into the cluster (``FSH-1``) from change to change, as
        ``POL-9`` walks a preemptive priority order (:func:`~evalstop.core.ranking.walk`,
        ``FSH-4``): the running jobs are read from the lowest ranked up (the tenants' running
        orders merged), and each demand's next queued job is the least of the tenants' first
        ones after the walk's position; the preemptions in start order. ``first``: the walk's
        first change, when known (``FSH-5``)."""
        assert self._tenants is not None  # built once several tenants were active
        tail = RunningTail(_lowest_first([*self._lows.values()]))
        heads: dict[int, Ranked | None] = {**self._least}
        starts, out = walk(tail, self._total - self._running_gpus, heads, self._after, first)
        if len(out) > 1:
            out.sort(key=self._start_order.__getitem__)
        preempt = tuple(out)
        return trusted_decision(tuple(starts), preempt, ())


def _lowest_first(heap: list[_Low]) -> Iterator[tuple[Ranked, int]]:
    """The tenants' running orders merged, the lowest ranked first, as (key, GPUs): a heap of
    each order's lowest entry not yet read (``heap``: each order's last, its position -1), by
    its key negated (fair-share keys are integers, and unique)."""
    heapq.heapify(heap)
    while heap:
        _, _, _, at, run = heap[0]
        asked, submit, job_id, gpus = run[at]
        yield (asked, submit, job_id), gpus
        if at + len(run):  # an entry before it
            at -= 1
            asked, submit, job_id, _ = run[at]
            heapq.heapreplace(heap, (-asked, -submit, -job_id, at, run))
        else:
            heapq.heappop(heap)


def _unqueue(indices: list[int], i: int) -> None:
    """Take index ``i`` out of a demand's queued indices: a start takes the first (``FSH-4``:
    of a tenant's jobs of one demand, those before a started one start too)."""
    if indices[0] == i:
        del indices[0]
    else:
        del indices[bisect.bisect_left(indices, i)]


fair_share = FairShare()
"""The fair-share base policy, registered as ``fair-share``."""
