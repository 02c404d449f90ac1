"""Events of the simulation and the ordering that makes equal-time ties deterministic."""

from __future__ import annotations

import enum

import attrs

from evalstop.model import JobId

__all__ = ["Event", "EventKind", "LogKind", "LogRecord"]


class EventKind(enum.IntEnum):
    """What an event is; the value is its rank among events at the same time (spec ``ENG-2``).

    A job's last checkpoint is its completion, so completions free GPUs before the other
    checkpoints and arrivals of the same second are handled.
    """

    COMPLETION = 0
    CHECKPOINT = 1
    ARRIVAL = 2


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


class LogKind(enum.Enum):
    """What happened, as written to the event log."""

    ARRIVE = "arrive"
    START = "start"
    CHECKPOINT = "checkpoint"
    PREEMPT = "preempt"
    FINISH = "finish"
    STOP = "stop"


@attrs.frozen(slots=True)
class LogRecord:
    """One line of the event log: the only output of a simulation besides its final state.

    Attributes:
        time: when it happened.
        kind: what happened.
        job_id: to which job.
        gpus: GPUs the job holds (START, PREEMPT, FINISH, STOP) or asks for (ARRIVE).
        index: checkpoint index (CHECKPOINT; the last one for FINISH).
        step: training step of that checkpoint, or of the saved checkpoint (STOP).
        score: observed eval score at that checkpoint, or of the saved checkpoint (STOP).
        reason: why a job was stopped (STOP).
    """

    time: int
    kind: LogKind
    job_id: JobId
    gpus: int = 0
    index: int = 0
    step: int | None = None
    score: float | None = None
    reason: str = ""
