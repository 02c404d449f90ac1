"""The ordered state behind a non-preemptive :class:`~evalstop.core.policies.PriorityPolicy`
(``POL-6``, ``POL-10``).

:class:`FirstFitState` keeps the queued jobs in one heap per GPU demand, keyed by the policy's
key (computed once, when a job joins the queue: the key of a queued job does not move). Its
decision is the policy's own first fit in key order (``POL-2``) without ranking a view:

- first fit in key order is "repeatedly take the smallest key among the demands that still
  fit": a job skipped for lack of room never fits later, since the room only shrinks; so each
  start costs O(D log n) for D distinct demands;
- after a decision no queued job fits in the room it left (each was skipped with less room
  than its GPUs), so while the free GPUs are no more than that room, only the jobs queued
  since can fit: such a decision (an arrival's, on a busy cluster) fits just them, in key
  order, and never reads the heaps; a decision that found nothing queued leaves any room
  (no queued job is older than the next ones), so the arrivals that follow it on a cluster
  that is not full take that path too;
- the decision takes the jobs it starts off the queue itself (``keeps_starts``), and the
  state reads nothing of a running job, so the engine need not tell it that they started.

A job that leaves the queue otherwise (it ended, or was told started) is dropped from the
index of queued jobs and its heap entry skipped when it comes to the top.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from evalstop.core.boundary import EventKind, JobView
from evalstop.core.decision import Decision, trusted_decision
from evalstop.core.model import JobId

__all__ = ["FirstFitState"]

Ranked = tuple[tuple[float, ...], JobId]
_NOTHING = Decision()
_NONE: tuple[JobId, ...] = ()
_ANY = float("inf")  # the room after a decision with nothing queued: any room fits none


class FirstFitState:
    """One run's queued jobs for a non-preemptive policy ranked by a key (see the module).

    Args:
        key: the policy's key over job views (``key(view, now=...)``; smaller first), which
            ends with the job id and does not depend on ``now`` for a queued job.
        checkpoint_views: whether the policy re-plans at checkpoints (it then decides at
            them too, and finds nothing new to start).
    """

    __slots__ = ("_buckets", "_checkpoint_views", "_fresh", "_key", "_queued", "_room")

    def __init__(
        self, key: Callable[..., tuple[float, ...]], checkpoint_views: bool = False
    ) -> None:
        self._key = key
        self._checkpoint_views = checkpoint_views
        self._buckets: dict[int, list[Ranked]] = {}  # GPU demand -> heap; stale entries skipped
        self._queued: dict[JobId, tuple[Ranked, int]] = {}  # every queued job's entry
        self._fresh: list[tuple[Ranked, int]] = []  # queued since the last decision
        # the room the last decision left (None: none yet); infinite when nothing was queued
        self._room: float | None = None

    @property
    def checkpoint_views(self) -> bool:
        return self._checkpoint_views

    @property
    def keeps_starts(self) -> bool:
        """``POL-10``: :meth:`decide` takes its starts off the queue; :meth:`started` need not
        be called for them."""
        return True

    def watched(self, job: JobView) -> bool:
        """``POL-12``: whether a fired verdict of ``job`` can make the policy need a decision
        at one of its checkpoints: only when it re-plans at checkpoints at all."""
        return self._checkpoint_views

    def queued(self, job: JobView) -> None:
        # An incremental policy's key of a queued job does not depend on the time (POL-6).
        entry = ((self._key(job, now=0), job.job_id), job.gpus)
        self._queued[job.job_id] = entry
        self._fresh.append(entry)

    def started(self, job: JobView) -> None:
        self._queued.pop(job.job_id, None)

    def reported(self, job: JobView) -> None:
        pass  # nothing of a running job is read

    def ended(self, job_id: JobId) -> None:
        self._queued.pop(job_id, None)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        queued, fresh = self._queued, self._fresh
        if not queued:
            fresh.clear()
            self._room = _ANY
            return _NOTHING
        room = self._room
        starts: list[JobId] = []
        if room is not None and free_gpus <= room:  # only the jobs queued since can fit
            if not fresh:
                return _NOTHING
            if len(fresh) > 1:
                fresh.sort()
            buckets = self._buckets
            for entry in fresh:
                ranked, gpus = entry
                if queued.get(ranked[1]) is not entry:
                    continue  # left the queue already
                if gpus <= free_gpus:
                    del queued[ranked[1]]
                    starts.append(ranked[1])
                    free_gpus -= gpus
                else:
                    self._push(buckets, ranked, gpus)
            fresh.clear()
        else:
            self._flush()
            if free_gpus:
                free_gpus = self._fit(free_gpus, starts)
        self._room = free_gpus
        return trusted_decision(tuple(starts), _NONE, ()) if starts else _NOTHING

    @staticmethod
    def _push(buckets: dict[int, list[Ranked]], ranked: Ranked, gpus: int) -> None:
        bucket = buckets.get(gpus)
        if bucket is None:
            buckets[gpus] = [ranked]
        else:
            heapq.heappush(bucket, ranked)

    def _flush(self) -> None:
        """The jobs queued since the last decision into their demands' heaps."""
        queued, buckets = self._queued, self._buckets
        for entry in self._fresh:
            if queued.get(entry[0][1]) is entry:
                self._push(buckets, *entry)
        self._fresh.clear()

    def _fit(self, free: int, starts: list[JobId]) -> int:
        """First fit in key order into ``free`` GPUs, appending to ``starts`` and taking the
        jobs off the queue; the room left."""
        queued, buckets, pop = self._queued, self._buckets, heapq.heappop
        empty: list[int] = []
        while free:
            best: Ranked | None = None
            take = 0
            for gpus, heap in buckets.items():
                if gpus > free:
                    continue
                head = heap[0]
                entry = queued.get(head[1])
                while entry is None or entry[0] is not head:  # stale: the job left the queue
                    pop(heap)
                    if not heap:
                        break
                    head = heap[0]
                    entry = queued.get(head[1])
                if not heap:
                    empty.append(gpus)
                elif best is None or head < best:
                    best, take = head, gpus
            for gpus in empty:
                del buckets[gpus]
            empty.clear()
            if best is None:
                break
            heap = buckets[take]
            pop(heap)
            if not heap:
                del buckets[take]
            del queued[best[1]]
            free -= take
            starts.append(best[1])
        return free
