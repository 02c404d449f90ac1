"""The mutable per-job records behind the monitor's :class:`~evalstop.live.state.JobState`.

On a built-in rule's path (spec ``MON-14``) a job's record is the rule's in-place fold state
(:func:`~evalstop.core.registry.in_place`) with the monitor's own three fields, updated in
place on each observation: no :class:`~evalstop.core.detectors.Watch` or detector state is
built per observation. A record's ``snapshot`` builds the immutable values only when read
(``job_state``, ``to_dict``). Internal to :mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from evalstop.core.detectors import Detector, Watch
from evalstop.core.registry import InPlace, in_place
from evalstop.live.state import JobState

__all__ = ["WatchRecord", "fast_path", "record_of", "record_type"]


class WatchRecord:
    """A job's record for any detector: the watch itself, replaced on each observation.

    Attributes:
        serial: the job's registration number.
        last_step: step of the last accepted observation.
        seen: accepted observations.
        watch: the detector's watch.
    """

    __slots__ = ("last_step", "seen", "serial", "watch")

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[Any]) -> None:
        self.serial = serial
        self.last_step = last_step
        self.seen = seen
        self.watch = watch

    @property
    def evals(self) -> int:
        """Valid evaluations folded."""
        return self.watch.evals

    @property
    def best_step(self) -> int | None:
        """Step of the best valid score."""
        return self.watch.best_step

    @property
    def best_score(self) -> float | None:
        """The best valid score (internal, higher-is-better units)."""
        return self.watch.best_score

    @property
    def fired_step(self) -> int | None:
        """Step at which the detector fired; None until then."""
        return self.watch.fired_step

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


@functools.cache
def record_type(kind: type[Any]) -> type[Any]:
    """The monitor's record class for the in-place fold state ``kind`` (``InPlace.kind``): a
    subclass with the monitor's fields ``serial`` (the job's registration number),
    ``last_step`` (step of the last accepted observation) and ``seen`` (accepted
    observations), built as ``record(serial, last_step, seen, watch)`` (spec ``MON-14``)."""

    def init(self: Any, serial: int, last_step: int, seen: int, watch: Watch[Any]) -> None:
        kind.__init__(self, watch)
        self.serial = serial
        self.last_step = last_step
        self.seen = seen

    def snapshot(self: Any) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, InPlace.watch(self))

    members = {"__slots__": ("last_step", "seen", "serial"), "__init__": init}
    members |= {"snapshot": snapshot, "__module__": __name__, "__doc__": record_type.__doc__}
    return type(f"{kind.__name__}Record", (kind,), members)


def fast_path(detector: Detector[Any]) -> tuple[Any, Callable[[Any, int, float], bool] | None]:
    """The record type and the in-place fold of ``detector`` (``MON-14``): the fold's record
    and fold for a rule with an in-place fold, ``WatchRecord`` and None for any other."""
    fold = in_place(detector)
    if fold is None:
        return WatchRecord, None
    kind: Any = fold.kind  # a class: hashable
    return record_type(kind), fold.fold


def record_of(state: JobState, detector: Detector[Any]) -> Any:
    """The mutable record of a saved job state, for ``detector``'s path (spec ``MON-14``)."""
    return fast_path(detector)[0](state.serial, state.last_step, state.seen, state.watch)
