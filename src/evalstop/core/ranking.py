"""The ordered state behind a built-in :class:`~evalstop.core.policies.PriorityPolicy` (``POL-6``).

:class:`PriorityState` keeps the queued jobs in one ``SortedList`` per GPU demand, keyed by the
policy's key (computed once, when a job joins the queue: the key of a queued job does not
move), and the running jobs in start order. A decision is then exactly the policy's own
(``POL-2``, ``POL-3``) without ranking a whole view:

- first fit in key order is "repeatedly take the smallest key among the demands that still
  fit": a job skipped for lack of room never fits later, since the room only shrinks; so each
  start costs O(D log n) for D distinct demands;
- a preemptive policy whose whole queue fits in the free GPUs starts it all in key order: the
  packing of every active job into the cluster then keeps every one of them;
- otherwise the running jobs are ranked at the decision's time (their keys move as they
  attain service) and merged with the queue; once they are all placed, the rest of the queue
  is first-fitted by demand as above. A policy that says when a running job's key can next
  move (``moves_at``, ``POL-7``) has its running jobs kept in a ``SortedList`` between
  decisions, re-keyed only when they start, report, or reach that time (a heap of times); the
  merge stops as soon as the queued jobs ranked before the running ones are placed and the
  remaining running jobs fit.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sortedcontainers import SortedList

from evalstop.core.boundary import EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.model import JobId

if TYPE_CHECKING:
    from evalstop.core.policies import PriorityPolicy

__all__ = ["PriorityState"]

Ranked = tuple[tuple[float, ...], JobId]
_NOTHING = Decision()


class PriorityState:
    """One run's ordered view of the active jobs for a :class:`PriorityPolicy`."""

    __slots__ = (
        "_buckets",
        "_dirty",
        "_moves",
        "_order",
        "_policy",
        "_queued",
        "_queued_gpus",
        "_ranked",
        "_running",
        "_running_gpus",
        "_total",
    )

    def __init__(self, policy: PriorityPolicy, total_gpus: int) -> None:
        self._policy = policy
        self._total = total_gpus
        self._buckets: dict[int, SortedList[Ranked]] = {}
        self._queued: dict[JobId, tuple[Ranked, int]] = {}
        self._queued_gpus = 0
        self._running: dict[JobId, JobView] = {}
        self._running_gpus = 0
        # POL-7 (only with policy.moves_at): running jobs in key order, as of the last decision
        self._order: SortedList[Ranked] = SortedList()
        self._ranked: dict[JobId, tuple[Ranked, int | None]] = {}  # key and when it may move
        self._dirty: set[JobId] = set()  # running jobs to (re-)key at the next decision
        self._moves: list[tuple[int, JobId]] = []  # (time its key may move, job), lazy

    @property
    def checkpoint_views(self) -> bool:
        return self._policy.reschedule_on_checkpoint

    def queued(self, job: JobView) -> None:
        # The view of a queued job does not change until it starts, and an incremental
        # policy's key of a queued job does not depend on the time (POL-6): any time will do.
        ranked = (self._policy.key(job, now=0), job.job_id)
        self._stop_running(job.job_id)
        self._queued[job.job_id] = (ranked, job.gpus)
        self._queued_gpus += job.gpus
        bucket = self._buckets.get(job.gpus)
        if bucket is None:
            bucket = self._buckets[job.gpus] = SortedList()
        bucket.add(ranked)

    def _unqueue(self, job_id: JobId) -> bool:
        entry = self._queued.pop(job_id, None)
        if entry is None:
            return False
        ranked, gpus = entry
        self._buckets[gpus].remove(ranked)
        self._queued_gpus -= gpus
        return True

    def started(self, job: JobView) -> None:
        self._unqueue(job.job_id)
        if job.job_id not in self._running:
            self._running_gpus += job.gpus
        self.reported(job)

    def reported(self, job: JobView) -> None:
        self._running[job.job_id] = job
        if self._policy.moves_at is not None:
            self._unrank(job.job_id)
            self._dirty.add(job.job_id)

    def ended(self, job_id: JobId) -> None:
        if not self._unqueue(job_id):
            self._stop_running(job_id)

    def _stop_running(self, job_id: JobId) -> None:
        view = self._running.pop(job_id, None)
        if view is not None:
            self._running_gpus -= view.gpus
            self._unrank(job_id)
            self._dirty.discard(job_id)

    def _unrank(self, job_id: JobId) -> None:
        entry = self._ranked.pop(job_id, None)
        if entry is not None:
            self._order.remove(entry[0])

    def _rank(self, job_id: JobId, time: int) -> None:
        moves_at = self._policy.moves_at
        assert moves_at is not None
        view = self._running[job_id]
        ranked = (self._policy.key(view, now=time), job_id)
        moves = moves_at(view, time)
        self._ranked[job_id] = (ranked, moves)
        self._order.add(ranked)
        if moves is not None:
            heapq.heappush(self._moves, (moves, job_id))

    def _running_order(self, time: int) -> SortedList[Ranked] | list[Ranked]:
        """The running jobs ranked at ``time`` (decisions come in time order)."""
        if self._policy.moves_at is None:
            key = functools.partial(self._policy.key, now=time)
            return sorted((key(view), job_id) for job_id, view in self._running.items())
        for job_id in self._dirty:
            self._rank(job_id, time)
        self._dirty.clear()
        moves, ranked = self._moves, self._ranked
        while moves and moves[0][0] <= time:
            when, job_id = heapq.heappop(moves)
            entry = ranked.get(job_id)
            if entry is not None and entry[1] == when:  # else an older entry: skip
                self._unrank(job_id)
                self._rank(job_id, time)
        return self._order

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        if not self._queued:
            return _NOTHING
        if not self._policy.preemptive:
            if free_gpus == 0:
                return _NOTHING
            return Decision(start=tuple(self._fit(free_gpus, None)))
        if self._queued_gpus <= free_gpus:
            return Decision(start=tuple(j for _, j in sorted(r for r, _ in self._queued.values())))
        return self._rank_all(time)

    def _fit(self, room: int, after: Ranked | None) -> Iterator[JobId]:
        """First fit of the queued jobs ranked after ``after`` into ``room`` GPUs."""
        heads = {
            gpus: bisect.bisect_right(bucket, after) if after is not None else 0
            for gpus, bucket in self._buckets.items()
        }
        while True:
            best: Ranked | None = None
            best_gpus = 0
            for gpus, at in heads.items():
                if gpus > room or at >= len(bucket := self._buckets[gpus]):
                    continue
                if best is None or bucket[at] < best:
                    best, best_gpus = bucket[at], gpus
            if best is None:
                return
            heads[best_gpus] += 1
            room -= best_gpus
            yield best[1]

    def _rank_all(self, time: int) -> Decision:
        """Rank queued and running jobs together and first-fit them into the cluster."""
        if not self._running:
            return Decision(start=tuple(self._fit(self._total, None)))
        running = self._running_order(time)
        last = running[-1]
        # the queued jobs that rank before some running job, smallest last
        queue = sorted(
            (r for b in self._buckets.values() for r in b.islice(0, b.bisect_left(last))),
            reverse=True,
        )
        room, rest = self._total, self._running_gpus  # rest: GPUs of running jobs not placed
        starts: list[JobId] = []
        dropped: set[JobId] = set()
        for ranked in running:
            if not queue and rest <= room:
                break  # no queued job ranks before the rest, and they all fit: all kept
            while queue and queue[-1] < ranked:
                head = queue.pop()
                gpus = self._queued[head[1]][1]
                if gpus <= room:
                    starts.append(head[1])
                    room -= gpus
            gpus = self._running[ranked[1]].gpus
            rest -= gpus
            if gpus <= room:
                room -= gpus
            else:
                dropped.add(ranked[1])
        starts.extend(self._fit(room - rest, last))
        preempt = tuple(j for j in self._running if j in dropped) if dropped else ()
        return Decision(start=tuple(starts), preempt=preempt)
