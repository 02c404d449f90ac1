"""The per-call fast path of :meth:`~evalstop.live.monitor.Monitor.observe` for the noise-aware
rule, used in the opt-in compiled build only (spec ``MON-18``).

Compiled, this call reads and updates the job's record natively and saves the interpreted
monitor most of its work per observation; interpreted, it would only add a call, so the pure
build does not use it (:func:`evalstop.live.native.compiled`). It handles the common case (a
known, running job, a later step, a finite score after the first) and returns None, having
changed nothing, for every other, which ``observe`` then handles itself. Internal to
:mod:`evalstop.live.monitor`.
"""

from __future__ import annotations

import importlib.machinery
from collections.abc import Callable
from typing import Any

from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.records import NoiseRecord
from evalstop.live.state import JobKey

__all__ = ["COMPILED_HERE", "NoiseObserver", "observer"]

COMPILED_HERE = __file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
"""Whether this module was loaded from a compiled extension."""


class NoiseObserver:
    """``observer(key, step, score)``: ``Monitor.observe(key, step, score)`` for a known
    running job of the noise-aware rule with a later step and a finite score (spec
    ``MON-14``), or None (nothing changed) for any other observation.

    Args:
        jobs: the monitor's records.
        fold: the rule's ``noise_folder``.
        sign: 1.0 in ``max`` mode, -1.0 in ``min`` mode.
        build: builds a ``Continue`` from its six fields (``_continue_of``).
        stop: builds the ``Stop`` of a job (``Monitor._stop``).
        counted: ``Reason.COUNTED``.
    """

    def __init__(
        self,
        jobs: dict[JobKey, object],
        fold: Callable[[NoiseRecord, int, float], bool],
        sign: float,
        build: Callable[[JobKey, int, Any, int, int | None, float | None], object],
        stop: Callable[[JobKey, int, Any, NoiseRecord], object],
        counted: object,
    ) -> None:
        self.jobs, self.fold, self.sign = jobs, fold, sign
        self.build, self.stop, self.counted = build, stop, counted

    def __call__(self, key: JobKey, step: int, score: float) -> object:
        job = self.jobs.get(key)
        if type(job) is not NoiseRecord:  # an unknown job: observe registers it
            return None
        fired = job.fired_step  # a local: narrowing job.fired_step would outlive the fold
        if fired is not None or step <= job.last_step or job.origin is None:
            return None
        sign = self.sign
        value = sign * score
        if value - value != 0.0:  # NaN or infinite
            return None
        job.last_step = step
        job.seen += 1
        self.fold(job, step, value)
        if job.fired_step is not None:
            return self.stop(key, step, self.counted, job)
        best = job.best_score
        best = None if best is None else sign * best
        return self.build(key, step, self.counted, job.evals, job.best_step, best)


def observer(detector: object, *parts: Any) -> NoiseObserver | None:
    """``NoiseObserver(*parts)`` for a monitor of the built-in ``NoiseAwareDetector`` when this
    module is compiled; None otherwise (the pure build keeps ``observe``'s own path)."""
    if type(detector) is not NoiseAwareDetector or not COMPILED_HERE:
        return None
    return NoiseObserver(*parts)
