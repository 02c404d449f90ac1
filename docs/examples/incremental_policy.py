"""A custom policy that keeps its own ordered state, checked against its plain form.

Run it with ``python docs/examples/incremental_policy.py`` (a few seconds).
"""

from __future__ import annotations

from typing import Any

import attrs
from sortedcontainers import SortedList

from evalstop import (
    ClusterView,
    Decision,
    Detector,
    EngineError,
    EventKind,
    JobView,
    evalstop,
)
from evalstop.sim import WorkloadConfig, generate, simulate


@attrs.frozen
class SmallestFirst:
    """Start queued jobs with the fewest GPUs first (first fit, never preempts)."""

    name: str = "smallest-first"
    detectors: tuple[Detector[Any], ...] = ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return cause is not EventKind.CHECKPOINT

    def __call__(self, view: ClusterView) -> Decision:  # O(queued log queued) a decision
        free = view.free_gpus
        start: list[int] = []
        for job in sorted(view.queued, key=lambda j: (j.gpus, j.submit_time, j.job_id)):
            if job.gpus <= free:
                start.append(job.job_id)
                free -= job.gpus
        return Decision(start=tuple(start))


class SmallestFirstState:
    """One run's queued jobs, kept in the policy's order as the engine reports each change.

    A decision reads them in that order and stops at the first that does not fit: sorted by
    GPUs, no later one fits either. O(starts x log n) a decision instead of a sort.
    """

    def __init__(self, drop_started: bool = True) -> None:
        self._queued: SortedList[tuple[int, int, int]] = SortedList()
        self._keys: dict[int, tuple[int, int, int]] = {}
        self._drop_started = drop_started

    @property
    def checkpoint_views(self) -> bool:
        return False  # a checkpoint changes nothing this policy reads

    def queued(self, job: JobView) -> None:
        key = self._keys[job.job_id] = (job.gpus, job.submit_time, job.job_id)
        self._queued.add(key)

    def started(self, job: JobView) -> None:
        if self._drop_started:
            self._drop(job.job_id)

    def reported(self, job: JobView) -> None:
        pass

    def ended(self, job_id: int) -> None:
        self._drop(job_id)

    def _drop(self, job_id: int) -> None:
        key = self._keys.pop(job_id, None)
        if key is not None:
            self._queued.remove(key)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        start: list[int] = []
        for gpus, _, job_id in self._queued:
            if gpus > free_gpus:
                break
            start.append(job_id)
            free_gpus -= gpus
        return Decision(start=tuple(start))


@attrs.frozen
class IncrementalSmallestFirst(SmallestFirst):
    """The same policy, with its state for the fast engine (spec ``POL-6``)."""

    drop_started: bool = True

    def start_run(self, total_gpus: int) -> SmallestFirstState:
        return SmallestFirstState(self.drop_started)


workload = generate(WorkloadConfig(n_jobs=400, load=1.2), seed=1)
for plain, fast in (
    (SmallestFirst(), IncrementalSmallestFirst()),
    (evalstop(SmallestFirst()), evalstop(IncrementalSmallestFirst())),
):
    # check=True: at every decision the engine also asks the policy itself on the whole
    # cluster view and raises if the state decided otherwise (and checks its invariants)
    checked = simulate(workload, fast, check=True)
    same = checked.log == simulate(workload, plain).log
    print(f"{fast.name}: {len(checked.log):,} log records, equal to the plain form's: {same}")

# A state that forgets to drop the jobs it started is caught at its first wrong decision.
try:
    simulate(workload, IncrementalSmallestFirst(drop_started=False), check=True)
except EngineError as error:
    print(f"caught: {str(error)[:75]}...")
else:
    print("not caught")
