"""One tenant's active jobs in submit order, for fair share's ordered state (spec ``FSH-4``).

Fair share (:mod:`evalstop.core.fairshare`, ``FSH-1``) ranks a job by the GPUs its tenant's
earlier active jobs ask for, then by submit time and id. A job that ends lowers that sum for
every later job of its tenant, so the sum is not kept per job: :class:`TenantOrder` numbers a
tenant's jobs in the order they join it (submit order) and keeps their GPUs in a Fenwick tree,
so that a job's sum, or the first position whose sum reaches a bound, costs O(log n).
"""

from __future__ import annotations

from bisect import bisect_left

from evalstop.core.model import JobId

__all__ = ["Ranked", "Running", "TenantOrder"]

Ranked = tuple[int, int, JobId]
"""A job's fair-share key: (GPUs its tenant's earlier active jobs ask for, submit time, id), flat
(a flat tuple compares in one pass, nested ones recurse)."""
Running = tuple[int, int, JobId, int]
"""A running job in its tenant's order: its key's three fields, then its GPUs (flat, so that
lowering the keys of a tenant's later jobs builds one tuple a job)."""


class TenantOrder:
    """One tenant's active jobs in submit order (``FSH-4``): index ``i`` (1, 2, ... in the
    order they joined, which is submit order) holds ``ids[i]`` = (submit time, id); ``fen``
    is a Fenwick tree of their GPUs (0 once a job ended), so that the GPUs its earlier
    active jobs ask for (the first part of its key) cost O(log n); the queued jobs' indices
    per GPU demand, ascending, in plain lists (its jobs of one demand start in order, so a
    start takes the first, an arrival comes last and a preempted job goes first: C-level
    bisects and moves, no sorted container's Python bookkeeping); the running jobs in order,
    with their keys and GPUs."""

    __slots__ = ("fen", "gpus", "ids", "queued", "run", "run_idx")

    def __init__(self) -> None:
        self.fen = [0]  # 1-based; fen[0] unused
        self.ids: list[tuple[int, JobId]] = [(-1, -1)]
        self.gpus = 0  # GPUs of its active jobs
        self.queued: dict[int, list[int]] = {}  # ascending
        self.run: list[Running] = []  # running jobs' (*key, GPUs), in order
        self.run_idx: list[int] = []  # their indices

    def append(self, submit: int, job_id: JobId, gpus: int) -> int:
        """A job joins last in submit order: its index."""
        fen = self.fen
        i = len(fen)
        total, j, stop = gpus, i - 1, i - (i & -i)
        while j > stop:  # fen[i] sums positions i - lowbit(i) + 1 .. i
            total += fen[j]
            j &= j - 1
        fen.append(total)
        self.ids.append((submit, job_id))
        return i

    def add(self, i: int, change: int) -> None:
        fen, size = self.fen, len(self.fen)
        while i < size:
            fen[i] += change
            i += i & -i

    def prefix(self, i: int) -> int:
        """GPUs of the active jobs at indices 1..i."""
        fen, total = self.fen, 0
        while i > 0:
            total += fen[i]
            i &= i - 1
        return total

    def below(self, gpus: float) -> int:
        """The largest index m such that the active jobs at 1..m ask for fewer than ``gpus``
        GPUs (-1 when ``gpus`` <= 0)."""
        if gpus <= 0:
            return -1
        fen, size = self.fen, len(self.fen)
        pos, step = 0, 1 << (size - 1).bit_length()
        while step:
            nxt = pos + step
            if nxt < size and fen[nxt] < gpus:
                pos = nxt
                gpus -= fen[nxt]
            step >>= 1
        return pos

    def key(self, i: int) -> Ranked:
        submit, job_id = self.ids[i]
        return (self.prefix(i - 1), submit, job_id)

    def second(self, gpus: int) -> Ranked | None:
        """The key of its second queued job of ``gpus`` GPUs (the first one after its first:
        keys grow with the index), or None."""
        indices = self.queued[gpus]
        return self.key(indices[1]) if len(indices) > 1 else None

    def after(self, gpus: int, at: Ranked) -> Ranked | None:
        """The key of its first queued job of ``gpus`` GPUs ranked after ``at``: keys grow
        with the index, and the jobs at indices up to ``below(at's GPUs) + 1`` rank before."""
        indices = self.queued[gpus]
        p = bisect_left(indices, self.below(at[0]) + 2)
        while p < len(indices):
            key = self.key(indices[p])
            if key > at:
                return key
            p += 1
        return None
