"""``ENG-8`` written once: whether a decision can be applied whole, for both engines.

The pure ``step`` looks jobs up in its state's active map, the fast engine in its records; each
passes how to read a job's GPUs and whether it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from evalstop.core.decision import Decision
from evalstop.core.model import JobId
from evalstop.engine.errors import InvalidDecisionError

__all__ = ["validate"]

T = TypeVar("T")


def validate(
    decision: Decision,
    active: Mapping[JobId, T],
    free: int,
    placed: Callable[[T], tuple[int, bool]],
) -> None:
    """Raise :class:`InvalidDecisionError` unless ``decision`` can be applied whole (``ENG-8``).

    ``placed(job)`` gives an active job's GPUs and whether it is running. O(jobs named by the
    decision): each is looked up in ``active``.
    """
    start, preempt, stop = decision.start, decision.preempt, decision.stop
    if not (preempt or stop):  # starts only: the common decision, checked in one pass
        if len(start) > 1 and len(set(start)) != len(start):
            raise InvalidDecisionError(f"a job is named twice in {decision}")
        wanted = 0
        for job_id in start:
            job = active.get(job_id)
            where = None if job is None else placed(job)
            if where is None or where[1]:
                raise InvalidDecisionError(f"cannot start job {job_id}: it is not queued")
            wanted += where[0]
        if wanted > free:
            raise InvalidDecisionError(f"starts need {wanted} GPUs but only {free} would be free")
        return
    if not preempt and len(stop) == 1:  # one stop, then any starts: the stop path
        stopped = stop[0].job_id
        if start and (stopped in start or (len(start) > 1 and len(set(start)) != len(start))):
            raise InvalidDecisionError(f"a job is named twice in {decision}")
        freed = _gpus_of(active, placed, stopped, None, "stop", "active")
    else:
        named = [o.job_id for o in stop]
        named.extend(preempt)
        named.extend(start)
        if len(named) != len(set(named)):
            raise InvalidDecisionError(f"a job is named twice in {decision}")
        freed = 0
        for order in stop:
            freed += _gpus_of(active, placed, order.job_id, None, "stop", "active")
        for job_id in preempt:
            freed += _gpus_of(active, placed, job_id, True, "preempt", "running")
    wanted = 0
    for job_id in start:
        wanted += _gpus_of(active, placed, job_id, False, "start", "queued")
    if wanted > free + freed:
        raise InvalidDecisionError(
            f"starts need {wanted} GPUs but only {free + freed} would be free"
        )


def _gpus_of(
    active: Mapping[JobId, T],
    placed: Callable[[T], tuple[int, bool]],
    job_id: JobId,
    running: bool | None,
    verb: str,
    state: str,
) -> int:
    """The GPUs ``job_id`` frees (stopped or preempted) or asks for (started): those it holds
    or asks for, 0 for a stopped queued job; raises unless it is active and, when
    ``running`` is given, running or queued as that says."""
    job = active.get(job_id)
    where = None if job is None else placed(job)
    if where is None or (running is not None and where[1] != running):
        raise InvalidDecisionError(f"cannot {verb} job {job_id}: it is not {state}")
    return where[0] if running is not None or where[1] else 0
