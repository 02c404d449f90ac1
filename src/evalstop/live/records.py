"""The mutable per-job records behind the monitor's :class:`~evalstop.live.state.JobState`.

On the built-in rule's path (spec ``MON-14``) the monitor updates a job's record in place on
each observation: no :class:`~evalstop.core.detectors.Watch` or detector state is built per
observation. A record's ``watch`` and ``snapshot`` build the immutable values
only when they are read (``job_state``, ``verdict``, ``to_dict``). Internal to
:mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalstop.core.detectors import DeclineDetector, DeclineState, Detector, Watch
from evalstop.core.noise_aware import NoiseAwareDetector, NoiseState
from evalstop.core.noise_fold import NoiseFold, noise_folder
from evalstop.live.state import JobState

__all__ = [
    "DeclineRecord",
    "NoiseRecord",
    "WatchRecord",
    "decline_folder",
    "fast_path",
    "record_of",
]


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


class DeclineRecord:
    """A job's record for the built-in :class:`~evalstop.core.detectors.DeclineDetector`:
    the watch's fields and the rule's two numbers, updated in place (spec ``MON-14``).

    Attributes:
        serial: the job's registration number.
        last_step: step of the last accepted observation.
        seen: accepted observations.
        declines: consecutive declines (the rule's ``DeclineState.declines``).
        previous: the last valid score (``DeclineState.previous``).
        evals: valid evaluations folded.
        best_step: step of the best valid score.
        best_score: that score (internal units).
        fired_step: step at which the rule fired; None until then.
    """

    __slots__ = (
        "best_score",
        "best_step",
        "declines",
        "evals",
        "fired_step",
        "last_step",
        "previous",
        "seen",
        "serial",
    )

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[DeclineState]) -> None:
        self.serial = serial
        self.last_step = last_step
        self.seen = seen
        self.declines = watch.rule.declines
        self.previous = watch.rule.previous
        self.evals = watch.evals
        self.best_step = watch.best_step
        self.best_score = watch.best_score
        self.fired_step = watch.fired_step

    @property
    def watch(self) -> Watch[DeclineState]:
        """The job's watch, built from the record."""
        rule = DeclineState(self.declines, self.previous)
        return Watch(rule, self.evals, self.best_step, self.best_score, self.fired_step)

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


def record_of(
    state: JobState, detector: Detector[Any]
) -> WatchRecord | DeclineRecord | NoiseRecord:
    """The mutable record of a saved job state, for ``detector``'s path (spec ``MON-14``)."""
    parts = (state.serial, state.last_step, state.seen, state.watch)
    if type(detector) is DeclineDetector:
        return DeclineRecord(*parts)
    if type(detector) is NoiseAwareDetector:
        return NoiseRecord(*parts)
    return WatchRecord(*parts)


class NoiseRecord(NoiseFold):
    """A job's record for the built-in :class:`~evalstop.core.noise_aware.NoiseAwareDetector`:
    a :class:`~evalstop.core.noise_fold.NoiseFold` (the watch, folded in place by a
    ``noise_folder``, spec ``MON-14``) plus the monitor's own fields.

    Attributes:
        serial: the job's registration number.
        last_step: step of the last accepted observation.
        seen: accepted observations.
    """

    __slots__ = ("last_step", "seen", "serial")

    def __init__(self, serial: int, last_step: int, seen: int, watch: Watch[NoiseState]) -> None:
        super().__init__(watch)
        self.serial = serial
        self.last_step = last_step
        self.seen = seen

    def snapshot(self) -> JobState:
        """The job's state as an immutable value."""
        return JobState(self.serial, self.last_step, self.seen, self.watch)


def decline_folder(rule: DeclineDetector) -> Callable[[DeclineRecord, int, float], bool]:
    """The function ``fold(record, step, value)`` that folds an accepted observation of
    internal score ``value`` at ``step`` into the record's rule fields in place, as
    ``observe_decline`` does (spec ``DET-10``, ``DET-11``); True when ``value`` is finite. The
    caller updates ``last_step`` and ``seen``."""
    k, min_delta, warmup_steps = rule.k, rule.min_delta, rule.warmup_steps

    def fold(record: DeclineRecord, step: int, value: float) -> bool:
        if value - value == 0.0:  # finite: inf - inf and NaN - NaN are NaN
            if step < warmup_steps:  # the rule ignores the report (DET-11)
                declines = record.declines
            else:
                previous = record.previous
                fall = previous is not None and value < previous - min_delta
                record.declines = declines = record.declines + 1 if fall else 0
                record.previous = value
            record.evals += 1
            best = record.best_score
            if best is None or value > best:
                record.best_step, record.best_score = step, value
            if declines >= k and record.fired_step is None:
                record.fired_step = step
            return True
        if record.declines >= k and record.fired_step is None:
            record.fired_step = step
        return False

    return fold


def fast_path(
    detector: Detector[Any],
) -> tuple[Any, Callable[[Any, int, float], bool] | None]:
    """The record type and the in-place fold of a built-in rule (MON-14); None for others."""
    if type(detector) is DeclineDetector:
        return DeclineRecord, decline_folder(detector)
    if type(detector) is NoiseAwareDetector:
        return NoiseRecord, noise_folder(detector)
    return WatchRecord, None
