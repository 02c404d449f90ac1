"""What the live monitor keeps per job, and the checks its inputs pass (spec ``MON-1``)."""

from __future__ import annotations

import numbers
from typing import Any, Literal, TypeAlias

import attrs

from evalstop.core.detectors import Watch

__all__ = ["JobKey", "JobState", "Mode", "check_key", "check_score", "check_step"]

JobKey: TypeAlias = str | int
"""A job's key in the monitor: a string or an integer (``1`` and ``"1"`` are different jobs)."""

Mode: TypeAlias = Literal["max", "min"]
"""``max``: higher scores are better (default); ``min``: lower scores are better."""


@attrs.frozen(slots=True)
class JobState:
    """Everything the monitor keeps about one job: constant size (spec ``MON-10``).

    Attributes:
        serial: the job's registration number in this monitor, used as the ``job_id`` of its
            checkpoint views (job keys may be strings; views carry integer ids).
        last_step: step of the last accepted observation.
        seen: accepted observations, finite or not (the next view's ``index`` is ``seen + 1``).
        watch: the detector's watch, in the monitor's internal (higher-is-better) units.
    """

    serial: int
    last_step: int
    seen: int
    watch: Watch[Any]


def check_key(job_id: object) -> JobKey:
    if isinstance(job_id, bool) or not isinstance(job_id, str | int):
        raise TypeError(f"job_id must be a str or an int, got {job_id!r}")
    return job_id


def check_step(step: object) -> int:
    # numbers.Integral admits numpy's integer scalars (registered with it), not bools.
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"step must be an int, got {step!r}")
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    return int(step)


def check_score(score: object) -> float:
    # numbers.Real admits numpy's float and integer scalars (numpy.bool_ is not one).
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise TypeError(f"score must be a float, got {score!r}")
    return float(score)
