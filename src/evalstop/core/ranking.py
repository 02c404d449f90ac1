"""The ordered state behind a built-in :class:`~evalstop.core.policies.PriorityPolicy` (``POL-6``).

:class:`PriorityState` keeps the queued jobs in one sorted list per GPU demand, keyed by the
policy's key (computed once, when a job joins the queue: the key of a queued job does not
move), and the running jobs ordered by their key at the last decision. A decision is then
exactly the policy's own (``POL-2``, ``POL-3``) without ranking a whole view:

- first fit in key order is "repeatedly take the smallest key among the demands that still
  fit": a job skipped for lack of room never fits later, since the room only shrinks; so each
  start costs O(D log n) for D distinct demands;
- a preemptive policy whose whole queue fits in the free GPUs starts it all in key order: the
  packing of every active job into the cluster then keeps every one of them;
- otherwise the packing of every active job is walked from change to change (:meth:`_walk`,
  ``POL-9``): between two changes every running job keeps its GPUs and every queued job stays
  queued, so only the next queued job that fits at its turn (the head of a demand's list) and
  the next running job that does not (found from the bottom of the running order) are looked
  at; a decision costs O((changes + 1) x D log n), not O(running + queued).

The running order is kept between decisions when the policy says how its keys move: a key
that is constant until ``moves_at`` (``POL-7``) is kept as it is; a key whose first part falls
by one a second until ``falls_until`` (``POL-8``, ``srtf-est``'s remaining estimate) is kept
as that part plus the time of ranking, which does not move, and compared at a decision's time
after subtracting it. A job is re-keyed only when it starts, reports, or reaches its time (a
heap of times). A policy that says neither has its running jobs sorted at each decision.

Longer than 400 lines: the state's three ways to decide (first fit, the walk, an arrival after
a settled decision, ``POL-11``) read and keep the same fields, and the walk's lazy reader of
the running jobs (:class:`RunningTail`) exists only for it; apart, each would reach into the
other's fields.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from sortedcontainers import SortedList

from evalstop.core.boundary import EventKind, JobView
from evalstop.core.decision import Decision, trusted_decision
from evalstop.core.model import JobId

__all__ = ["PriorityState", "RankingRule", "RunningTail", "walk"]

Ranked = tuple[Any, ...]
"""A job's place in a ranking: its key, which ends with its id (a policy's key, ``POL-6``;
fair share's ``(GPUs, submit time, id)``, ``FSH-4``). A flat key compares in one pass
(nested tuples recurse): a bisect over 3,000 entries costs 0.37 against 0.58 us."""
Bucket = list[Ranked] | SortedList[Ranked]
"""One GPU demand's queued jobs in key order: a sorted list, a ``SortedList`` once long."""
_NOTHING = Decision()
_LONG = 2_048
"""A bucket longer than this becomes a ``SortedList``: below it a plain list's C insort and
memmove cost less than a ``SortedList``'s Python bookkeeping (0.8 against 1.2 us an add and
a remove at 200 jobs), above it the memmove grows with the length (3.4 against 1.8 us at
10,000 jobs, 7.7 against 1.9 at 25,000; loss-aware's Philly queue averages 15,000)."""


class RankingRule(Protocol):
    """What :class:`PriorityState` reads of its policy (a
    :class:`~evalstop.core.policies.PriorityPolicy` has each member)."""

    @property
    def key(self) -> Callable[..., tuple[float, ...]]: ...

    @property
    def preemptive(self) -> bool: ...

    @property
    def reschedule_on_checkpoint(self) -> bool: ...

    @property
    def moves_at(self) -> Callable[[JobView, int], int | None] | None: ...

    @property
    def falls_until(self) -> Callable[[JobView, int], int | None] | None: ...


class RunningTail:
    """The running jobs of one decision from the lowest ranked up, read lazily (``POL-9``).

    ``_entries`` are ``(ranked, gpus)`` in falling rank order and ``_held[i]`` the GPUs of
    entries ``0..i``; only as many are drawn from the source as the questions asked need, so
    each question costs O(log n) besides the entries it draws.
    """

    __slots__ = ("_entries", "_held", "_source")

    def __init__(self, source: Iterator[tuple[Ranked, int]]) -> None:
        self._source = source
        self._entries: list[tuple[Ranked, int]] = []
        self._held: list[int] = []

    def _draw(self, gpus: int) -> int:
        """Draw entries until they hold ``gpus`` GPUs or the source ends; the index of the
        first entry at which they hold that many (``len`` if none)."""
        held, entries = self._held, self._entries
        total = held[-1] if held else 0
        if total < gpus:
            for entry in self._source:
                entries.append(entry)
                total += entry[1]
                held.append(total)
                if total >= gpus:
                    return len(held) - 1
            return len(held)
        return bisect.bisect_left(held, gpus)

    def holds_after(self, ranked: Ranked, gpus: int) -> bool:
        """Whether the running jobs ranked after ``ranked`` hold at least ``gpus`` GPUs."""
        held, entries = self._held, self._entries
        if held and held[-1] >= gpus:
            return entries[bisect.bisect_left(held, gpus)][0] > ranked
        if entries and entries[-1][0] <= ranked:
            return False  # every job not drawn yet ranks before it
        total = held[-1] if held else 0
        for entry in self._source:
            entries.append(entry)
            total += entry[1]
            held.append(total)
            if entry[0] <= ranked:
                return False
            if total >= gpus:
                return True
        return False

    def first_failing(self, after: Ranked | None, deficit: int) -> tuple[Ranked, int] | None:
        """The highest ranked job after ``after`` whose lower ranked jobs hold fewer than
        ``deficit`` GPUs (the first running job that no longer fits), or None."""
        entries = self._entries
        at = min(self._draw(deficit), len(entries) - 1)
        if at < 0:
            return None
        if after is None or entries[at][0] > after:
            return entries[at]
        low, high = 0, at  # entries[low:] ... the first entry not ranked after `after`
        while low < high:
            mid = (low + high) // 2
            if entries[mid][0] > after:
                low = mid + 1
            else:
                high = mid
        return entries[low - 1] if low else None


def _lowest_first(
    fixed: list[Ranked], moving: list[Ranked], time: int, running: dict[JobId, JobView]
) -> Iterator[tuple[Ranked, int]]:
    """The running jobs ranked at ``time`` from the lowest up, with their GPUs: the constant
    keys and the falling ones (``POL-8``: stored as first part + time of ranking) merged.
    Keys are unique (they end with the job id), so the merge needs no tie rule."""
    if not moving:  # las, loss-aware; srtf-est while no running key is constant
        for ranked in reversed(fixed):
            yield ranked, running[ranked[-1]].gpus
        return
    if not fixed:
        for stored in reversed(moving):
            yield (stored[0] - time, *stored[1:]), running[stored[-1]].gpus
        return
    kept, falling = reversed(fixed), reversed(moving)
    low = next(kept, None)
    entry = next(falling, None)
    down = None if entry is None else (entry[0] - time, *entry[1:])
    while down is not None:
        if low is not None and low > down:
            yield low, running[low[-1]].gpus
            low = next(kept, None)
            continue
        yield down, running[down[-1]].gpus
        entry = next(falling, None)
        down = None if entry is None else (entry[0] - time, *entry[1:])
    while low is not None:
        yield low, running[low[-1]].gpus
        low = next(kept, None)


def walk(
    tail: RunningTail,
    slack: int,
    heads: dict[int, Ranked | None],
    after: Callable[[int, Ranked], Ranked | None],
    first_start: tuple[Ranked, int] | None = None,
) -> tuple[list[JobId], list[JobId]]:
    """First fit of every active job, in key order, into the whole cluster (``POL-3``), from
    change to change (``POL-9``; fair share's tenants' orders walk it too, ``FSH-4``).
    ``slack`` is the room at the walk's position minus the GPUs of the running jobs not
    reached yet: a running job keeps its GPUs when the jobs ranked after it hold at least
    ``-slack``; a queued job of ``d`` GPUs starts when they hold at least ``d - slack``.
    ``tail``: the running jobs; ``heads``: each demand's first queued job, fewest GPUs first
    (advanced in place); ``after(gpus, at)``: the first queued job of ``gpus`` GPUs ranked
    after ``at``; ``first_start``: the walk's first change, a queued job and its GPUs, when
    known (``POL-11``). The starts in rank order, and the running jobs that fall out."""
    at: Ranked | None = None  # the walk's position: everything up to it is decided
    starts: list[JobId] = []
    dropped: list[JobId] = []
    if first_start is not None:  # the walk goes on from its first change
        at, slack = first_start[0], slack - first_start[1]
        starts.append(at[-1])
    # tail.holds_after(x, need) is inlined where the entries drawn already hold `need`
    held, entries, holds_after, left = tail._held, tail._entries, tail.holds_after, bisect_left
    while True:
        best = tail.first_failing(at, -slack) if slack < 0 else None
        first, best_gpus, queued = (best[0], best[1], False) if best else (None, 0, False)
        for gpus, head in heads.items():
            entry, need = head, gpus - slack
            if at is not None and entry is not None and entry <= at:
                # when none of this demand fits at the position, none after it fits
                # before the next change (fewer running jobs rank after it), nor any job
                # of a larger demand (they lack more): not looked up
                if need > 0:
                    if held and held[-1] >= need:
                        if entries[left(held, need)][0] <= at:
                            break
                    elif not holds_after(at, need):
                        break
                entry = heads[gpus] = after(gpus, at)
            if entry is None or (first is not None and entry > first):
                continue
            if need > 0:  # not fitting, nor does a later one of its demand before a change
                if held and held[-1] >= need:
                    if entries[left(held, need)][0] <= entry:
                        continue
                elif not holds_after(entry, need):
                    continue
            first, best_gpus, queued = entry, gpus, True
        if first is None:
            break
        at = first
        if queued:
            starts.append(first[-1])
            slack -= best_gpus
        else:
            dropped.append(first[-1])
            slack += best_gpus
    return starts, dropped


class PriorityState:
    """One run's ordered view of the active jobs for a policy ranked by a key
    (:class:`~evalstop.core.policies.PriorityPolicy`)."""

    __slots__ = (
        "_buckets",
        "_decided_at",
        "_dirty",
        "_dirty_moves",
        "_falls",
        "_fixed",
        "_fresh",
        "_keep",
        "_kept",
        "_moves",
        "_moves_at",
        "_moving",
        "_pending",
        "_policy",
        "_queued",
        "_queued_gpus",
        "_ranked",
        "_report_keeps",
        "_reports",
        "_running",
        "_running_gpus",
        "_seq",
        "_settled",
        "_started",
        "_tells_nothing",
        "_top",
        "_total",
    )

    def __init__(self, policy: RankingRule, total_gpus: int) -> None:
        self._policy = policy
        self._keep = policy.key
        self._falls = policy.falls_until
        # POL-13, an optional member (False when absent): a report moves no key
        self._report_keeps: bool = getattr(policy, "reports_keep_keys", False)
        self._moves_at = policy.moves_at
        self._total = total_gpus
        # GPU demand -> its queued jobs in key order (Bucket), demands ascending; a bucket
        # emptied stays (demands recur)
        self._buckets: dict[int, Bucket] = {}
        self._queued: dict[JobId, tuple[Ranked, int]] = {}
        self._queued_gpus = 0
        self._running: dict[JobId, JobView] = {}
        self._running_gpus = 0
        self._started: dict[JobId, int] = {}  # start order, for the order of preemptions
        self._seq = 0
        # POL-7, POL-8: running jobs in key order as of their ranking, kept between decisions
        self._kept = policy.moves_at is not None or policy.falls_until is not None
        # sorted lists (insort; del at a bisect): one entry per running job, at most one
        # a GPU, so a C memmove beats a SortedList's Python-level bookkeeping
        self._fixed: list[Ranked] = []  # keys constant until their time
        self._moving: list[Ranked] = []  # first part + time of ranking
        self._ranked: dict[JobId, tuple[Ranked, bool, int | None]] = {}  # entry, moving, until
        self._dirty: set[JobId] = set()  # running jobs to (re-)key at the next decision
        self._moves: list[tuple[int, JobId]] = []  # (time its key may move, job), lazy
        # POL-11: since the last decision nothing changed but what it said, arrivals, keys
        # falling and reports: its packing may still be a fixed point (_still_settled)
        self._settled = True
        self._pending: set[JobId] = set()  # its starts and preemptions not told yet
        self._fresh: list[tuple[Ranked, int]] = []  # jobs that arrived since, with their GPUs
        # a key at least as large as every active job's but theirs (queued, or ranked running)
        self._top: Ranked | None = None
        self._reports: dict[JobId, JobView] = {}  # reported since: the view it was ranked by
        self._decided_at = 0  # the time of the last decision
        # POL-14: the earliest move time of the jobs started and not ranked yet (_dirty), each
        # read from the decision that started it; read only while _dirty is not empty
        self._dirty_moves: float = math.inf
        self._tells_nothing = (
            self._report_keeps and self._falls is None and self._moves_at is not None
        )

    @property
    def checkpoint_views(self) -> bool:
        return self._policy.reschedule_on_checkpoint

    @property
    def decides_nothing(self) -> Callable[[int], bool] | None:
        """``POL-14``: :meth:`_decides_nothing` when the policy's reports move no key
        (``POL-13``) and its running keys move only at their times (``POL-7``), else None (a
        property: the bound method is not kept, so the state holds no reference to itself)."""
        return self._decides_nothing if self._tells_nothing else None

    def watched(self, job: JobView) -> bool:
        """``POL-12``: a verdict matters at a checkpoint only if the policy re-plans there."""
        return self._policy.reschedule_on_checkpoint

    def queued(self, job: JobView) -> None:
        # The view of a queued job does not change until it starts, and an incremental
        # policy's key of a queued job does not depend on the time (POL-6): any time will do.
        job_id, gpus = job.job_id, job.gpus
        ranked = self._keep(job, now=0)  # it ends with job_id (POL-6)
        if job_id in self._running:  # preempted
            self._stop_running(job_id)
            if job_id in self._pending:
                self._pending.discard(job_id)
            else:
                self._unsettle()
        elif self._settled:
            self._fresh.append((ranked, gpus))
        elif self._top is None or ranked > self._top:
            self._top = ranked
        self._queued[job_id] = (ranked, gpus)
        self._queued_gpus += gpus
        bucket = self._buckets.get(gpus)
        if bucket is None:
            bucket = self._new_bucket(gpus)
        if isinstance(bucket, list):
            insort(bucket, ranked)
            if len(bucket) > _LONG:
                self._buckets[gpus] = SortedList(bucket)
        else:
            bucket.add(ranked)

    def _new_bucket(self, gpus: int) -> Bucket:
        """An empty bucket for a demand not seen before; the buckets stay fewest GPUs first."""
        buckets = self._buckets
        bucket: Bucket = []
        buckets[gpus] = bucket
        self._buckets = dict(sorted(buckets.items()))
        return bucket

    def _unqueue(self, job_id: JobId) -> bool:
        entry = self._queued.pop(job_id, None)
        if entry is None:
            return False
        ranked, gpus = entry
        bucket = self._buckets[gpus]
        if isinstance(bucket, list):
            del bucket[bisect_left(bucket, ranked)]
        else:
            bucket.remove(ranked)
        self._queued_gpus -= gpus
        return True

    def started(self, job: JobView) -> None:
        job_id, pending, running = job.job_id, self._pending, self._running
        if job_id in pending:
            pending.discard(job_id)
        else:
            self._unsettle()
        self._unqueue(job_id)
        if job_id not in running:
            self._running_gpus += job.gpus
            self._started[job_id] = self._seq
            self._seq += 1
        running[job_id] = job  # to be (re-)keyed at the next decision
        if self._kept:
            dirty = self._dirty
            # POL-14: its key is constant from the last decision until its move time (a bound
            # over the jobs in _dirty, started afresh when _dirty was emptied)
            if self._tells_nothing and (moves_at := self._moves_at) is not None:
                moves = moves_at(job, self._decided_at)
                bound = math.inf if moves is None else moves
                if not dirty or bound < self._dirty_moves:
                    self._dirty_moves = bound
            dirty.add(job_id)

    def reported(self, job: JobView) -> None:
        if self._report_keeps:  # POL-13: its entry and move time stand, and so does the packing
            job_id = job.job_id
            if self._settled:  # the view its key at the last decision is read from (POL-11)
                self._reports.setdefault(job_id, self._running[job_id])
            self._running[job_id] = job
            return
        job_id, running = job.job_id, self._running
        if self._settled and self._kept:
            # POL-11: whether its key moved later is seen at the next decision, at its time
            self._reports.setdefault(job_id, running[job_id])
        else:
            self._unsettle()
        running[job_id] = job  # to be (re-)keyed at the next decision
        if self._kept:
            self._dirty.add(job_id)  # its entry stays until then: the key may not move

    def ended(self, job_id: JobId) -> None:
        if self._unqueue(job_id) or self._stop_running(job_id):
            self._unsettle()

    def _unsettle(self) -> None:
        """Something changed that the last decision did not say: the next one walks."""
        if self._settled:
            self._settled = False
            self._reports.clear()
            fresh = self._fresh
            if fresh:
                newest = max(fresh)[0]
                if self._top is None or newest > self._top:
                    self._top = newest
                fresh.clear()

    def _stop_running(self, job_id: JobId) -> bool:
        view = self._running.pop(job_id, None)
        if view is None:
            return False
        self._running_gpus -= view.gpus
        del self._started[job_id]
        self._unrank(job_id)
        self._dirty.discard(job_id)
        return True

    def _unrank(self, job_id: JobId) -> None:
        entry = self._ranked.pop(job_id, None)
        if entry is not None:
            order = self._moving if entry[1] else self._fixed
            del order[bisect_left(order, entry[0])]

    def _rank(self, job_id: JobId, time: int, key: tuple[float, ...] | None = None) -> None:
        """(Re-)key running job ``job_id`` at ``time``; ``key``: its key then, when known."""
        view = self._running[job_id]
        if key is None:
            key = self._keep(view, now=time)
        top = self._top
        if top is None or key > top:  # POL-11: no active key is above _top
            self._top = key
        falls, moves_at = self._falls, self._moves_at
        until = falls(view, time) if falls is not None else None
        moving = until is not None
        if moving:  # POL-8: key(view, t)[0] == key[0] - (t - time) until `until`
            entry: Ranked = (key[0] + time, *key[1:])
        else:
            entry = key
            until = moves_at(view, time) if moves_at is not None else None
        old = self._ranked.get(job_id)
        if old is None or old[0] != entry or old[1] != moving:
            # a new place (a report that moved no key, or a falling key read again, keeps
            # its entry: no sorted-list update)
            if old is not None:
                order = self._moving if old[1] else self._fixed
                del order[bisect_left(order, old[0])]
            insort(self._moving if moving else self._fixed, entry)
        elif old[2] == until:
            return  # the same entry and the same time: the pending move stands
        self._ranked[job_id] = (entry, moving, until)
        if until is not None:
            heapq.heappush(self._moves, (until, job_id))

    def _tail(self, time: int) -> RunningTail:
        """The running jobs ranked at ``time``, lowest first (decisions come in time order)."""
        running = self._running
        if not self._kept:
            key = functools.partial(self._policy.key, now=time)
            ranked: list[Ranked] = sorted(map(key, running.values()), reverse=True)
            return RunningTail((r, running[r[-1]].gpus) for r in ranked)
        for job_id in self._dirty:
            self._rank(job_id, time)
        self._dirty.clear()
        if self._moves and self._moves[0][0] <= time:
            for job_id in self._due(time):
                self._rank(job_id, time)
        return RunningTail(_lowest_first(self._fixed, self._moving, time, running))

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        fresh = self._fresh
        if not self._queued or (self._queued_gpus <= free_gpus and self._policy.preemptive):
            # nothing queued, or the whole queue fits the free GPUs: the decision is at hand,
            # with no walk, settled or not (the jobs started or reported since are ranked
            # when a decision needs the running order)
            decision = self._decide(time, free_gpus)
        elif self._still_settled(time):
            decision = self._arrived(time, free_gpus, self._top)  # POL-11
        else:
            decision = self._decide(time, free_gpus)
        top = self._top
        if fresh:
            newest = max(fresh)[0]
            if top is None or newest > top:
                self._top = newest
            fresh.clear()
        self._reports.clear()
        self._settled = True
        self._decided_at = time
        if decision.start or decision.preempt:
            self._pending = {*decision.start, *decision.preempt}
        return decision

    def _still_settled(self, time: int) -> bool:
        """Whether the last decision's packing is still a fixed point at ``time`` (``POL-11``):
        it was applied, and no queued job that a running key moving later passed now fits
        (:meth:`_passed_fits`; a job started or reported since: its key now against its view's
        then; a job whose ``moves_at`` time has come: its key now against its key then; falling
        keys only fall).
        A running job whose key moves earlier keeps its GPUs and takes none from a job that
        ran (all running jobs fit the cluster together), and a queued job it passes has even
        less room than before."""
        if not self._settled or self._pending or not self._kept:
            return False
        key, running, then = self._keep, self._running, self._decided_at
        reports, dirty, rank = self._reports, self._dirty, self._rank
        later: list[tuple[Ranked, Ranked]] = []  # the keys that moved later: from, to
        if dirty:
            for job_id in dirty:
                view = running[job_id]
                now = key(view, now=time)
                before = key(reports.get(job_id, view), now=then)
                if now > before:
                    later.append((before, now))
                rank(job_id, time, now)  # ranked now, as the walk would: move times known
            dirty.clear()
        moves = self._moves
        if moves and moves[0][0] <= time:  # keys that moved at their time, ranked now
            for job_id in self._due(time):
                view = running[job_id]
                now = key(view, now=time)
                before = key(reports.get(job_id, view), now=then)  # reported since: POL-13
                if now > before:
                    later.append((before, now))
                rank(job_id, time, now)
        return not later or not self._passed_fits(time, later)

    def _decides_nothing(self, time: int) -> bool:
        """``POL-14`` (a policy whose reports move no key, ``POL-13``): whether a decision at a
        checkpoint at ``time`` is empty and may be skipped with its report. With nothing queued
        it is (nothing to start, and every running job fits), and it is taken here as
        :meth:`decide` takes it; else when the last decision is settled and applied, no job
        arrived since, and no running job's key can have moved later by ``time``
        (:meth:`_still_settled` would find none, and :meth:`_arrived` no newcomer). O(1)
        besides the older move-time entries it drops, as :meth:`_due` would."""
        if self._fresh:
            return False
        if not self._queued:  # decide's first branch, and what it notes after
            self._reports.clear()
            self._settled = True
            self._decided_at = time
            return True
        if not self._settled or self._pending:
            return False
        if self._dirty and self._dirty_moves <= time:
            return False
        moves = self._moves
        while moves and moves[0][0] <= time:
            when, job_id = moves[0]
            entry = self._ranked.get(job_id)
            if entry is not None and entry[2] == when:
                return False  # its key may move now
            heapq.heappop(moves)  # an older entry (the job re-keyed or ended since)
        return True

    def _due(self, time: int) -> list[JobId]:
        """The running jobs whose ``moves_at`` time (``POL-7``) has come by ``time``, taken
        out of the order to be ranked again; the heap's older entries are dropped."""
        moves, kept, due = self._moves, self._ranked, []
        while moves and moves[0][0] <= time:
            when, job_id = heapq.heappop(moves)
            entry = kept.get(job_id)
            if entry is not None and entry[2] == when:  # else an older entry: skip
                self._unrank(job_id)
                due.append(job_id)
        return due

    def _passed_fits(self, time: int, later: list[tuple[Ranked, Ranked]]) -> bool:
        """Whether a demand's first queued job that a running key moving later passed
        (``POL-11``) now fits at its turn. A demand's first job that none passed has no more
        room than at the last decision (the running jobs ranked after it are the same, less
        those whose keys fell past it), so it still does not fit; nor, then, does any later
        job of its demand (fewer running jobs rank after it). The jobs that arrived since
        are looked at after (:meth:`_arrived`). Every first job between the lowest ``from``
        and the highest ``to`` is looked at: one that none passed does not fit either."""
        low, high = min(later)[0], max(to for _, to in later)
        slack = self._total - self._running_gpus
        tail: RunningTail | None = None
        for gpus, bucket in self._buckets.items():
            if not bucket or not low < (head := bucket[0]) < high:
                continue
            if gpus <= slack:
                return True
            if tail is None:
                tail = self._tail(time)
            if tail.holds_after(head, gpus - slack):
                return True
        return False

    def _arrived(self, time: int, free: int, top: Ranked | None) -> Decision:
        """``POL-11``: the decision while the last one's packing is a fixed point and only
        jobs arrived since: each newcomer that does not fit at its turn (the room its rank
        leaves) changes nothing, so with none fitting nothing is done. Newcomers ranked after
        every job seen are first fitted, in key order, into the free GPUs; any other that fits
        makes the decision walk (POL-9)."""
        fresh = self._fresh
        if not fresh:
            return _NOTHING
        if len(fresh) > 1:
            fresh.sort()
        if top is not None and fresh[0][0] <= top:
            tail = self._tail(time)
            for ranked, gpus in fresh:
                if gpus <= free or tail.holds_after(ranked, gpus - free):
                    # the walk's first change: no job ranked before it fits at its turn
                    return self._walk(time, tail, (ranked, gpus))
            return _NOTHING
        starts: list[JobId] = []
        for ranked, gpus in fresh:
            if gpus <= free:
                starts.append(ranked[-1])
                free -= gpus
        return trusted_decision(tuple(starts), (), ()) if starts else _NOTHING

    def _decide(self, time: int, free_gpus: int) -> Decision:
        if not self._queued:
            return _NOTHING
        if not self._policy.preemptive:
            if free_gpus == 0:
                return _NOTHING
            return trusted_decision(tuple(self._fit(free_gpus)), (), ())
        if self._queued_gpus <= free_gpus:
            ranked = sorted(r for r, _ in self._queued.values())
            return trusted_decision(tuple([r[-1] for r in ranked]), (), ())
        if not self._running:
            return trusted_decision(tuple(self._fit(self._total)), (), ())
        return self._walk(time)

    def _fit(self, room: int) -> Iterator[JobId]:
        """First fit of the queued jobs into ``room`` GPUs."""
        heads = dict.fromkeys(self._buckets, 0)
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
            yield best[-1]

    def _walk(
        self, time: int, tail: RunningTail | None = None, first: tuple[Ranked, int] | None = None
    ) -> Decision:
        """First fit of every active job, in key order, into the whole cluster (``POL-3``),
        from change to change (``POL-9``, :func:`walk`); the preemptions in start order.
        ``tail``: the running jobs at ``time``, when read already; ``first``: the walk's first
        change, when known (``POL-11``)."""
        buckets = self._buckets

        def after(gpus: int, at: Ranked) -> Ranked | None:
            bucket = buckets[gpus]
            index = (
                bisect_right(bucket, at) if isinstance(bucket, list) else bucket.bisect_right(at)
            )
            return bucket[index] if index < len(bucket) else None

        starts, dropped = walk(
            self._tail(time) if tail is None else tail,
            self._total - self._running_gpus,
            {gpus: bucket[0] for gpus, bucket in buckets.items() if bucket},
            after,
            first,
        )
        dropped.sort(key=self._started.__getitem__)
        return trusted_decision(tuple(starts), tuple(dropped), ())
