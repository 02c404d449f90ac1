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
    named = [o.job_id for o in stop] + list(preempt) + list(start)
    if len(named) != len(set(named)):
        raise InvalidDecisionError(f"a job is named twice in {decision}")

    def gpus_of(job_id: JobId, running: bool | None, verb: str, state: str) -> tuple[int, bool]:
        job = active.get(job_id)
        where = None if job is None else placed(job)
        if where is None or (running is not None and where[1] != running):
            raise InvalidDecisionError(f"cannot {verb} job {job_id}: it is not {state}")
        return where

    freed = 0
    for order in decision.stop:
        gpus, runs = gpus_of(order.job_id, None, "stop", "active")
        freed += gpus if runs else 0
    for job_id in decision.preempt:
        freed += gpus_of(job_id, True, "preempt", "running")[0]
    wanted = sum(gpus_of(job_id, False, "start", "queued")[0] for job_id in decision.start)
    if wanted > free + freed:
        raise InvalidDecisionError(
            f"starts need {wanted} GPUs but only {free + freed} would be free"
        )
