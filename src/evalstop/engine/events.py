"""Events in the simulation queue; their kind's rank makes equal-time ties deterministic."""

from __future__ import annotations

import attrs

from evalstop.core.boundary import EventKind
from evalstop.core.model import JobId

__all__ = ["Event"]


@attrs.frozen(slots=True)
class Event:
    """A future happening in the queue.

    ``epoch`` ties a checkpoint to one run segment of its job: a preemption starts a new
    segment, so checkpoints scheduled for the old one become stale and are ignored
    (spec ``ENG-7``). Arrivals use epoch 0.
    """

    time: int
    kind: EventKind
    job_id: JobId
    index: int = 0
    epoch: int = 0

    @property
    def rank(self) -> int:
        return int(self.kind)
