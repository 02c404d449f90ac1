"""What the live monitor keeps per job, and the checks its inputs pass (spec ``MON-1``)."""

from __future__ import annotations

import math
import numbers
from typing import Any, Literal, TypeAlias

import attrs

from evalstop.core.detectors import Detector, Watch
from evalstop.core.model import JobKind

__all__ = [
    "JobKey",
    "JobState",
    "Mode",
    "check_detector",
    "check_extras",
    "check_key",
    "check_score",
    "check_step",
    "checked",
    "ordinary_extras",
]

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


def check_detector(detector: object) -> Detector[Any]:
    """``detector`` if it has a detector's members (a ``str`` ``name``, callable ``initial``,
    ``update`` and ``fired``), else ``TypeError`` naming its type (spec ``MON-16``)."""
    methods = ("initial", "update", "fired")
    if not isinstance(getattr(detector, "name", None), str) or not all(
        callable(getattr(detector, method, None)) for method in methods
    ):
        raise TypeError(
            "detector must be a Detector (a str name; initial, update and fired methods), "
            f"got {type(detector).__name__}"
        )
    found: Detector[Any] = detector  # type: ignore[assignment]  # checked structurally above
    return found


def check_key(job_id: object) -> JobKey:
    if isinstance(job_id, bool) or not isinstance(job_id, str | int):
        raise TypeError(f"job_id must be a str or an int, got {type(job_id).__name__}")
    return job_id


def check_step(step: object) -> int:
    # numbers.Integral admits numpy's integer scalars (registered with it), not bools.
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError(f"step must be an int, got {type(step).__name__}")
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    return int(step)


def check_score(score: object, name: str = "score") -> float:
    """A real number as a float (NaN and infinities kept); an int too big for a float is a
    ValueError, never an OverflowError."""
    # numbers.Real admits numpy's float and integer scalars (numpy.bool_ is not one).
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise TypeError(f"{name} must be a float, got {type(score).__name__}")
    try:
        return float(score)
    except OverflowError:
        raise ValueError(f"{name} is too large for a float") from None


def check_extras(
    loss: object, proxy_reward: object, estimated_progress: object, kind: object, time: object
) -> tuple[float, float | None, float, JobKind, int]:
    """The keyword arguments of ``Monitor.observe`` checked (spec ``MON-16``): ``loss`` and
    ``proxy_reward`` real numbers (``proxy_reward`` may be None), ``estimated_progress`` a
    finite number >= 0, ``kind`` a :class:`JobKind`, ``time`` an int >= 0."""
    loss = check_score(loss, "loss")
    proxy = None if proxy_reward is None else check_score(proxy_reward, "proxy_reward")
    progress = check_score(estimated_progress, "estimated_progress")
    if not (math.isfinite(progress) and progress >= 0):
        raise ValueError(f"estimated_progress must be finite and >= 0, got {progress}")
    if not isinstance(kind, JobKind):
        raise TypeError(f"kind must be a JobKind, got {kind!r}"[:200])
    if isinstance(time, bool) or not isinstance(time, numbers.Integral):
        raise TypeError(f"time must be an int, got {type(time).__name__}")
    if time < 0:
        raise ValueError(f"time must be >= 0, got {time}")
    return loss, proxy, progress, kind, int(time)


def ordinary_extras(
    loss: object, proxy: object, progress: object, kind: object, time: object, kl: object = None
) -> bool:
    """Exact-type fast check of ``observe``'s keywords; anything else goes to :func:`checked`."""
    return (
        type(loss) is float
        and proxy is None
        and kl is None
        and type(progress) is float
        and 0.0 <= progress < math.inf
        and type(kind) is JobKind
        and type(time) is int
        and time >= 0
    )


def checked(
    key: object,
    step: object,
    score: object,
    loss: object,
    proxy: object,
    progress: object,
    kind: object,
    time: object,
    kl: object = None,
) -> tuple[JobKey, int, float, float, float | None, float, JobKind, int, float | None]:
    """Every argument of ``observe`` checked and normalised (spec ``MON-1``, ``MON-16``;
    ``kl`` a real number or None, ``SIG-1``)."""
    extras = check_extras(loss, proxy, progress, kind, time)
    checked_kl = None if kl is None else check_score(kl, "kl")
    return (check_key(key), check_step(step), check_score(score), *extras, checked_kl)
