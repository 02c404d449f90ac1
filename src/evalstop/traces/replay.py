"""Replay a recorded trace through the online monitor: would a detector have stopped it?

A trace is fed, step by step, to a one-job :class:`~evalstop.live.monitor.Monitor`, so replay
decides with exactly the rule a live scheduler and the simulator use (spec ``RPL-2``).
Because the whole run is on disk, replay knows the run's length: the estimated progress of a
checkpoint is its step over the last step, which makes ``stopat`` a true fixed-progress rule
here (``RPL-4``).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from evalstop.core.detectors import DeclineDetector, Detector
from evalstop.core.regret import classify, regret_fraction
from evalstop.live.direction import ModeChoice, resolve_mode
from evalstop.live.monitor import Mode, Monitor
from evalstop.traces.model import Trace

__all__ = ["ReplayResult", "replay"]

_JOB = "trace"


@attrs.frozen(slots=True)
class ReplayResult:
    """What a detector does on one trace (spec ``RPL-5``).

    Attributes:
        path: the trace's source.
        metric: the replayed metric.
        mode: ``max`` or ``min``.
        detector: the detector's name.
        stopped: whether it would have stopped the run.
        stop_step: the step at which it fires, or None.
        best_step: the checkpoint kept: the best up to the stop, or the best of the whole run
            when there is no stop. None only when a rule (``stopat``, ``lossplateau``) fired
            before any finite value, so that nothing scored can be kept.
        best_value: that checkpoint's value (in the trace's units), None with ``best_step``.
        n_evals: finite evaluations the detector consumed (up to the stop, else all).
        last_step: the trace's last step.
        steps_saved: ``last_step - stop_step`` (0 without a stop).
        curve_best_step: step of the best value of the whole trace.
        curve_best_value: that value.
        regret: how much worse the kept checkpoint is than the curve's best (>= 0), None
            when nothing is kept.
        truncated: None, or where the trace's incomplete last record was left out (a
            TensorBoard log still being written, spec ``TRC-14``).
        fired_at_end: the detector fired at the last step, which is not a stop (``RPL-9``).
        kept_step: the checkpoint the run ends with, as in the simulator: the best up to the
            stop, or the last finite one when the run is not stopped (``RPL-9``).
        kept_value: that checkpoint's value.
        relative_regret: the kept checkpoint's regret as a fraction of the run's gain
            (``RGT-1``, in the mode's direction), None when nothing is kept.
        stop_class: ``harmful`` or ``benign`` for a stop (``RGT-2``), ``none`` without one.
    """

    path: str
    metric: str
    mode: Mode
    detector: str
    stopped: bool
    stop_step: int | None
    best_step: int | None
    best_value: float | None
    n_evals: int
    last_step: int
    steps_saved: int
    curve_best_step: int
    curve_best_value: float
    regret: float | None
    truncated: str | None = None
    fired_at_end: bool = False
    kept_step: int | None = None
    kept_value: float | None = None
    relative_regret: float | None = None
    stop_class: str = "none"

    def to_json_dict(self) -> dict[str, Any]:
        """The result as JSON-compatible values, keys in field order."""
        return attrs.asdict(self)


def _losses(trace: Trace, loss: Trace | None, mode: Mode) -> list[float]:
    if loss is None:
        sign = -1.0 if mode == "max" else 1.0
        return [sign * value for value in trace.values]
    by_step = dict(zip(loss.steps, loss.values, strict=True))
    return [by_step.get(step, math.nan) for step in trace.steps]


def _relative(trace: Trace, mode: Mode, kept_value: float | None) -> float | None:
    """RGT-1 regret of ``kept_value`` on ``trace``, in the mode's direction."""
    sign = 1.0 if mode == "max" else -1.0
    finite = [sign * v for v in trace.values if math.isfinite(v)]
    if kept_value is None or not finite:
        return None
    return regret_fraction(max(finite), finite[0], sign * kept_value)


def _last_finite(trace: Trace) -> tuple[int, float] | None:
    for step, value in zip(reversed(trace.steps), reversed(trace.values), strict=True):
        if math.isfinite(value):
            return step, value
    return None


def _kept(
    trace: Trace, mode: Mode, stop: int | None, best_step: int | None, best_value: float | None
) -> tuple[int | None, float | None, float | None, str]:
    """``(kept_step, kept_value, relative_regret, stop_class)`` of a replay (``RPL-9``)."""
    kept_step, kept_value = (best_step, best_value) if stop is not None else (None, None)
    final = _last_finite(trace)
    if stop is None and final is not None:
        kept_step, kept_value = final
    relative = _relative(trace, mode, kept_value)
    stop_class = "none"
    if stop is not None and relative is not None:
        stop_class = classify(True, relative, collapsing=False).value
    return kept_step, kept_value, relative, stop_class


def _at_steps(trace: Trace, side: Trace | None) -> list[float | None]:
    """``side``'s value at each step of ``trace`` (None where it has none or is not finite)."""
    if side is None:
        return [None] * len(trace.steps)
    by_step = dict(zip(side.steps, side.values, strict=True))
    values = [by_step.get(step) for step in trace.steps]
    return [v if v is not None and math.isfinite(v) else None for v in values]


def _feed(
    monitor: Monitor, trace: Trace, losses: list[float], proxy: Trace | None, kl: Trace | None
) -> tuple[int | None, int | None, float | None, int, bool]:
    """Feed ``trace`` to ``monitor`` up to its stop: ``(stop step, best step, best value,
    evaluations, fired at the last step)``."""
    last = trace.last_step
    best_step: int | None = None
    best_value: float | None = None
    evals = 0
    sides = zip(_at_steps(trace, proxy), _at_steps(trace, kl), strict=True)
    for step, value, loss_value, (proxy_value, kl_value) in zip(
        trace.steps, trace.values, losses, sides, strict=True
    ):
        progress = step / last if last > 0 else 1.0
        verdict = monitor.observe(
            _JOB,
            step,
            value,
            loss=loss_value,
            estimated_progress=progress,
            proxy_reward=proxy_value,
            kl=kl_value,
        )
        best_step, best_value, evals = verdict.best_step, verdict.best_score, verdict.evals
        if verdict.stopped:
            at_end = verdict.step == last
            return None if at_end else verdict.step, best_step, best_value, evals, at_end
    return None, best_step, best_value, evals, False


def replay(
    trace: Trace,
    detector: Detector[Any] | None = None,
    mode: ModeChoice = "auto",
    loss: Trace | None = None,
    proxy: Trace | None = None,
    kl: Trace | None = None,
) -> ReplayResult:
    """Run ``detector`` (default ``DeclineDetector(k=2)``, the paper's rule) over ``trace``.

    ``mode="auto"`` takes the direction from the metric's name (``MON-13``); the result's
    ``mode`` is the direction used. Each checkpoint reports the trace value as its eval score,
    ``step / last_step`` as its estimated progress, and as its loss the value of ``loss`` at
    the same step (NaN where it has none) or, without ``loss``, the score turned
    lower-is-better, so ``lossplateau`` watches the metric itself (spec ``RPL-4``); its proxy
    reward and KL are ``proxy``'s and ``kl``'s values at the same step (None where they have
    none; ``SIG-10``). A fire at the trace's last step is not a stop: the run ends there anyway
    (``RPL-9``).
    """
    direction = resolve_mode(mode, trace.metric)
    monitor = Monitor(DeclineDetector() if detector is None else detector, direction)
    last = trace.last_step
    losses = _losses(trace, loss, direction)
    stop_step, best_step, best_value, evals, fired_at_end = _feed(monitor, trace, losses, proxy, kl)
    best_index = trace.best_index(direction)
    curve_best = trace.values[best_index]
    kept_step, kept_value, relative, stop_class = _kept(
        trace, direction, stop_step, best_step, best_value
    )
    return ReplayResult(
        path=trace.path,
        metric=trace.metric,
        mode=direction,
        detector=monitor.detector.name,
        stopped=stop_step is not None,
        stop_step=stop_step,
        best_step=best_step,
        best_value=best_value,
        n_evals=evals,
        last_step=last,
        steps_saved=0 if stop_step is None else last - stop_step,
        curve_best_step=trace.steps[best_index],
        curve_best_value=curve_best,
        regret=None if best_value is None else abs(curve_best - best_value),
        truncated=trace.truncated,
        fired_at_end=fired_at_end,
        kept_step=kept_step,
        kept_value=kept_value,
        relative_regret=relative,
        stop_class=stop_class,
    )
