"""``simulate(workload, policy, cluster) -> Result``: one run of the platform (spec ``SIM``).

No global state: every call builds its own engine, so calls are safe from many processes at
once, and the same inputs give an equal result (``SIM-1``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import attrs

from evalstop.core.model import Job
from evalstop.core.policy import Policy
from evalstop.engine.errors import EngineError
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import EventLog
from evalstop.sim.workload import Workload

__all__ = ["Cluster", "Result", "simulate"]


@attrs.frozen(slots=True)
class Cluster:
    """A homogeneous GPU cluster and its preemption cost.

    Attributes:
        gpus: GPUs in the cluster.
        preemption_overhead: seconds a preempted job spends restoring its checkpoint when it
            resumes, without progress (spec ``ENG-11``).

    Raises:
        ValueError: ``gpus < 1`` or a negative overhead.
    """

    gpus: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    preemption_overhead: int = attrs.field(default=30, validator=attrs.validators.ge(0))


@attrs.frozen(slots=True)
class Result:
    """What one simulation produced: the event log plus what is needed to score it.

    ``jobs`` carries the hidden truth; only :mod:`evalstop.sim.metrics` and
    :mod:`evalstop.sim.detection` read it.

    Attributes:
        policy: the policy's name.
        cluster: the cluster it ran on.
        jobs: the jobs as submitted, hidden truth included.
        log: the event log, in the order the engine wrote it (an immutable sequence of
            :class:`~evalstop.engine.log.LogRecord`, stored in columns: spec ``ENG-16``).
        events: events the engine handled, stale checkpoint events included.
    """

    policy: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    log: EventLog
    events: int


def _submitted(
    jobs: tuple[Job, ...], policy: Policy, cluster: Cluster, check: bool
) -> FastSimulator:
    """A fresh engine for ``policy`` with ``jobs`` submitted in (submit time, job id) order,
    stable (``SIM-3``): in one pass when they come in that order, reading each job once (a
    run of 100,000 jobs is where a second pass over them costs: they are no longer in cache);
    otherwise, or if a submit raised on jobs not in order, again on a fresh engine, sorted."""

    def engine() -> FastSimulator:
        return FastSimulator(
            policy, cluster.gpus, preemption_overhead=cluster.preemption_overhead, check=check
        )

    simulator = engine()
    submit, last = simulator.submit, None
    try:
        for job in jobs:
            spec = job.spec
            key = (spec.submit_time, spec.job_id)
            if last is not None and key < last:
                break
            last = key
            submit(job)
        else:
            return simulator
    except EngineError:
        if _in_order(jobs):
            raise  # the sorted order would meet the same job first
    simulator = engine()
    for job in sorted(jobs, key=_order):
        simulator.submit(job)
    return simulator


def _order(job: Job) -> tuple[int, int]:
    """A job's place in the submission order (``SIM-3``)."""
    spec = job.spec
    return (spec.submit_time, spec.job_id)


def _in_order(jobs: tuple[Job, ...]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(map(_order, jobs)))


def simulate(
    workload: Workload | Sequence[Job],
    policy: Policy,
    cluster: Cluster | None = None,
    *,
    check: bool = False,
) -> Result:
    """Run ``policy`` on ``workload`` until every job has finished or been stopped.

    Args:
        workload: a generated :class:`~evalstop.sim.workload.Workload` or any jobs.
        policy: the system to run (see :func:`~evalstop.core.registry.make_policy`).
        cluster: the cluster; default 64 GPUs and a 30 s preemption overhead.
        check: verify every engine invariant after every event (slow; for tests).

    Returns:
        The event log and what is needed to score it
        (:func:`~evalstop.sim.metrics.system_metrics`).

    Raises:
        TypeError: ``policy`` lacks a member of the ``Policy`` protocol (spec ``ENG-14``).
        EngineError: the policy returned an invalid decision, or ``check`` found a broken
            invariant.
    """
    cluster = Cluster() if cluster is None else cluster
    jobs = tuple(workload.jobs if isinstance(workload, Workload) else workload)
    simulator = _submitted(jobs, policy, cluster, check)
    simulator.run()
    return Result(policy.name, cluster, jobs, simulator.log, simulator.events_handled)
