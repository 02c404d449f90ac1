"""The simulation state and what a transition reads and returns besides it (spec ``ENG-4``).

:class:`SimState` is immutable: a transition builds the next one. Ended jobs live in a
persistent chain (:class:`Ended`) that is shared between states, not copied.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from evalstop.core.boundary import JobView
from evalstop.core.detectors import Watch
from evalstop.core.model import Job, JobId
from evalstop.core.policy import Policy
from evalstop.engine.events import Event
from evalstop.engine.log import LogRecord

__all__ = [
    "ActiveJob",
    "Ended",
    "JobStatus",
    "Scenario",
    "SimState",
    "Transition",
    "check_invariants",
    "initial_state",
]


class JobStatus(enum.Enum):
    """Where a job is: exactly one of these once it has arrived (spec ``ENG-4``)."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"


@attrs.frozen(slots=True)
class Ended:
    """A persistent chain of ended jobs (newest first): O(1) to extend, shared between states."""

    job_id: JobId
    status: JobStatus
    parent: Ended | None

    def __iter__(self) -> Iterator[tuple[JobId, JobStatus]]:
        node: Ended | None = self
        while node is not None:
            yield node.job_id, node.status
            node = node.parent


@attrs.frozen(slots=True)
class ActiveJob:
    """Engine bookkeeping for a queued or running job.

    ``view`` is what policies see; ``next_index`` the next checkpoint (1-based); ``epoch``
    counts run segments so that checkpoints of a preempted segment go stale; ``watches`` holds
    one detector fold per detector of the policy, aligned with ``policy.detectors``.
    """

    view: JobView
    next_index: int
    epoch: int
    watches: tuple[Watch[Any], ...]


@attrs.frozen(slots=True)
class SimState:
    """The whole simulation state; immutable, replaced by every transition."""

    time: int
    total_gpus: int
    free_gpus: int
    queued: tuple[JobId, ...] = ()
    running: tuple[JobId, ...] = ()
    active: Mapping[JobId, ActiveJob] = attrs.field(factory=dict)
    ended: Ended | None = None
    ended_count: int = 0

    def status(self, job_id: JobId) -> JobStatus | None:
        """Where ``job_id`` is, or None if it has not arrived. O(1) if active, else O(ended)."""
        if job_id in self.active:
            return (
                JobStatus.RUNNING
                if self.active[job_id].view.running_since is not None
                else JobStatus.QUEUED
            )
        for ended_id, status in self.ended or ():
            if ended_id == job_id:
                return status
        return None

    def ended_jobs(self) -> dict[JobId, JobStatus]:
        """Every ended job and how it ended. O(ended)."""
        return dict(self.ended or ())


def initial_state(total_gpus: int) -> SimState:
    """An empty cluster of ``total_gpus`` GPUs at time 0."""
    if total_gpus <= 0:
        raise ValueError(f"total_gpus must be > 0, got {total_gpus}")
    return SimState(time=0, total_gpus=total_gpus, free_gpus=total_gpus)


@attrs.frozen(slots=True)
class Scenario:
    """What a transition reads besides the state: the jobs, the policy and the cost model.

    ``preemption_overhead`` is the seconds a resumed job holds its GPUs before it makes
    progress again (restoring its checkpoint); progress itself is kept exactly
    (spec ``ENG-11``).
    """

    jobs: Mapping[JobId, Job]
    policy: Policy
    preemption_overhead: int = 30

    def __attrs_post_init__(self) -> None:
        if self.preemption_overhead < 0:
            raise ValueError(f"preemption_overhead must be >= 0, got {self.preemption_overhead}")


@attrs.frozen(slots=True)
class Transition:
    """The result of one :func:`step`."""

    state: SimState
    events: tuple[Event, ...]
    log: tuple[LogRecord, ...]


def check_invariants(state: SimState, jobs: Mapping[JobId, Job]) -> list[str]:
    """Every invariant of ``spec/engine.md`` that ``state`` breaks (empty when sound). O(n)."""
    problems: list[str] = []
    allocated = sum(jobs[j].spec.gpus for j in state.running)
    if state.free_gpus + allocated != state.total_gpus:
        problems.append(
            f"ENG-3: free {state.free_gpus} + allocated {allocated} != total {state.total_gpus}"
        )
    if state.free_gpus < 0:
        problems.append(f"ENG-6: negative free GPUs {state.free_gpus}")
    ended = state.ended_jobs()
    groups = [set(state.queued), set(state.running), set(ended)]
    total = sum(len(g) for g in groups)
    if len(set().union(*groups)) != total or len(state.queued) + len(state.running) != total - len(
        ended
    ):
        problems.append("ENG-4: a job is in more than one of queued, running, ended")
    if set(state.active) != set(state.queued) | set(state.running):
        problems.append("ENG-4: active map disagrees with queued and running")
    if len(ended) != state.ended_count:
        problems.append("ENG-4: ended_count disagrees with the ended chain")
    for job_id in state.running:
        if state.active[job_id].view.running_since is None:
            problems.append(f"ENG-4: running job {job_id} has no running_since")
    for job_id in state.queued:
        if state.active[job_id].view.running_since is not None:
            problems.append(f"ENG-4: queued job {job_id} has a running_since")
    return problems
