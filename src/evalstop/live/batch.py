"""The batch loop of :meth:`evalstop.live.monitor.Monitor.observe_many` for a built-in rule
(spec ``MON-17``): one tight loop over the triples that validates, folds in place and builds a
verdict only for an observation that stops its job. Internal to :mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from evalstop.core.detectors import DeclineDetector
from evalstop.core.model import JobKind
from evalstop.live.records import DeclineRecord, NoiseRecord
from evalstop.live.state import JobKey, checked

if TYPE_CHECKING:
    from evalstop.live.monitor import Reason, Stop

__all__ = ["decline_many", "fold_many"]


def fold_many(
    observations: Iterable[Iterable[object]],
    jobs: dict[JobKey, NoiseRecord],
    fold: Callable[[NoiseRecord, int, float], bool],
    sign: float,
    register: Callable[[JobKey, int], NoiseRecord],
    stop: Callable[[JobKey, int, Reason, NoiseRecord], Stop],
    reasons: tuple[Reason, Reason],
) -> list[Stop]:
    """Fold ``(job_id, step, score)`` triples in order into ``jobs`` as ``Monitor.observe``
    does on the built-in rule's path (``MON-14``), and return the stops (``MON-17``).

    Args:
        observations: the triples.
        jobs: the monitor's records, updated in place.
        fold: the rule's in-place fold (``decline_folder`` or ``noise_folder``).
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


def decline_many(
    observations: Iterable[Iterable[object]],
    jobs: dict[JobKey, DeclineRecord],
    rule: DeclineDetector,
    sign: float,
    register: Callable[[JobKey, int], DeclineRecord],
    stop: Callable[[JobKey, int, Reason, DeclineRecord], Stop],
    reasons: tuple[Reason, Reason],
) -> list[Stop]:
    """:func:`fold_many` for ``DeclineDetector`` with ``decline_folder``'s fold written out in
    the loop (one call less per observation; ``MON-17`` property-tests both against
    ``observe``). The arguments are :func:`fold_many`'s, ``rule`` for ``fold``."""
    k, min_delta, warmup_steps = rule.k, rule.min_delta, rule.warmup_steps
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
        value = sign * score if negate else score
        if value - value == 0.0:  # finite
            if step < warmup_steps:  # DET-11
                declines = job.declines
            else:
                previous = job.previous
                fall = previous is not None and value < previous - min_delta
                job.declines = declines = job.declines + 1 if fall else 0
                job.previous = value
            job.evals += 1
            best = job.best_score
            if best is None or value > best:
                job.best_step, job.best_score = step, value
            if declines >= k:  # not fired before: it would have been skipped
                job.fired_step = step
                stops.append(stop(key, step, counted, job))
        elif job.declines >= k:
            job.fired_step = step
            stops.append(stop(key, step, non_finite, job))
    return stops
