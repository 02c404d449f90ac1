"""The batch loop of :meth:`evalstop.live.monitor.Monitor.observe_many` for a rule with an
in-place fold (spec ``MON-17``): one tight loop over the triples that validates, folds in place
and builds a verdict only for an observation that stops its job. Internal to
:mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from evalstop.core.model import JobKind
from evalstop.live.state import JobKey, checked

__all__ = ["fold_many"]

R = TypeVar("R")
V = TypeVar("V")


def fold_many(
    observations: Iterable[Iterable[object]],
    jobs: dict[JobKey, Any],
    fold: Callable[[Any, int, float], bool],
    sign: float,
    register: Callable[[JobKey, int], Any],
    stop: Callable[[JobKey, int, R, Any], V],
    reasons: tuple[R, R],
) -> list[V]:
    """Fold ``(job_id, step, score)`` triples in order into ``jobs`` as ``Monitor.observe``
    does on the built-in rule's path (``MON-14``), and return the stops (``MON-17``).

    Args:
        observations: the triples.
        jobs: the monitor's records, updated in place.
        fold: the rule's in-place fold (``InPlace.fold``: ``decline_folder``, ``noise_folder``).
        sign: 1.0 in ``max`` mode, -1.0 in ``min`` mode (scores are negated at the edge).
        register: makes a new job's record (``Monitor._register``).
        stop: builds the ``Stop`` verdict of a job (``Monitor._stop``).
        reasons: ``Reason.COUNTED`` and ``Reason.NON_FINITE``.

    A triple whose types are not exactly ``str``/``int``, ``int`` and ``float`` goes through
    the same checks as ``observe``'s arguments: it raises before it changes anything.
    """
    (counted, non_finite), get, negate, stops = reasons, jobs.get, sign != 1.0, []
    for observation in observations:
        key, step, score = observation
        if not (
            (type(key) is str or type(key) is int)
            and type(step) is int
            and step >= 0
            and type(score) is float
        ):
            key, step, score, *_ = checked(key, step, score, _NAN, None, 0.0, _RLHF, 0)
        job = get(key)
        if job is None:
            job = register(key, step)
        elif job.fired_step is not None or step <= job.last_step:
            continue
        job.last_step = step
        job.seen += 1
        if fold(job, step, sign * score if negate else score):
            if job.fired_step is not None:
                stops.append(stop(key, step, counted, job))
        elif job.fired_step is not None:
            stops.append(stop(key, step, non_finite, job))
    return stops


_NAN = math.nan
_RLHF = JobKind.RLHF
