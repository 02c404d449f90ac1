"""A policy's decision: which jobs start, which are preempted and which are stopped."""

from __future__ import annotations

import attrs

from evalstop.core.model import JobId

__all__ = ["Decision", "StopOrder"]


@attrs.frozen(slots=True)
class StopOrder:
    """Stop a job for good and keep its best checkpoint.

    Attributes:
        job_id: the job to stop.
        reason: the rule that fired (a detector's name).
        saved_step: step of the checkpoint kept (None when there is none).
        saved_score: its observed eval score.
    """

    job_id: JobId
    reason: str
    saved_step: int | None = None
    saved_score: float | None = None


@attrs.frozen(slots=True)
class Decision:
    """What a policy wants done now; the engine applies stops, then preemptions, then starts.

    A decision is validated before anything is applied (spec ``ENG-8``): an unknown job, a
    job named twice, or starts that do not fit raise
    :class:`~evalstop.engine.errors.InvalidDecisionError`.

    Attributes:
        start: queued jobs to start, in order; together they must fit in the free GPUs.
        preempt: running jobs to preempt (they keep their service and go back to the queue).
        stop: jobs to stop for good, each with the checkpoint to keep.
    """

    start: tuple[JobId, ...] = ()
    preempt: tuple[JobId, ...] = ()
    stop: tuple[StopOrder, ...] = ()

    def with_stops(self, stops: tuple[StopOrder, ...]) -> Decision:
        """This decision with ``stops`` added in front of its own.

        Args:
            stops: the stop orders to apply before this decision's own.

        Returns:
            A new decision (this one when ``stops`` is empty).
        """
        if not stops:
            return self
        return Decision(self.start, self.preempt, stops + self.stop)
