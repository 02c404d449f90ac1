"""EvalStop inside Ray Tune: a ``Stopper`` and a ``TrialScheduler`` (spec ``ADP-5``, ``ADP-6``).

Install with ``pip install 'evalstop[ray]'``. Both classes watch one reported metric of every
trial and stop a trial at the k-th consecutive decline of that metric, keeping the trial's best
checkpoint; they differ only in where Tune asks them:

- :class:`EvalStopStopper` goes in ``tune.RunConfig(stop=...)`` (Tune's ``Stopper``
  interface: ``__call__(trial_id, result) -> bool`` and ``stop_all() -> bool``);
- :class:`EvalStopScheduler` goes in ``tune.TuneConfig(scheduler=...)``: a
  ``FIFOScheduler`` whose ``on_trial_result`` answers ``STOP`` at the trigger, else
  ``CONTINUE``; it can take ``metric`` and ``mode`` from ``TuneConfig``.

Every trial's state lives in one :class:`~evalstop.live.monitor.Monitor` (``ADP-1``), keyed by the
trial id, with the result's ``training_iteration`` (or ``step_key``) as the step.
``best(trial_id)`` names the step and score of the checkpoint to keep and
``best_checkpoint(result)`` finds that checkpoint among the ones Tune kept.

This module imports Ray at import time when it is installed; without Ray it still imports,
and building an adapter raises ``ImportError`` (``ADP-9``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalstop.adapters._core import (
    BestCheckpoint,
    MetricFeed,
    as_step,
    check_mapping,
    check_name,
    optional_class,
)
from evalstop.core.detectors import Detector
from evalstop.live.direction import ModeChoice
from evalstop.live.monitor import Mode, Monitor, MonitorVerdict

if TYPE_CHECKING:
    from ray.tune import Checkpoint, Result, Stopper
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.experiment import Trial
    from ray.tune.schedulers import FIFOScheduler
else:
    Stopper = optional_class("ray.tune", "Stopper", "ray")
    FIFOScheduler = optional_class("ray.tune.schedulers", "FIFOScheduler", "ray")

__all__ = ["BestCheckpoint", "EvalStopScheduler", "EvalStopStopper"]

STEP_KEY = "training_iteration"
"""The default step of a Tune result: Tune fills it in, 1 for the first report."""


class _Trials:
    """What both adapters do with one trial's result, over a :class:`MetricFeed`."""

    __slots__ = ("feed", "step_key")

    def __init__(self, feed: MetricFeed, step_key: str) -> None:
        self.feed = feed
        self.step_key = step_key

    def observe(self, trial_id: str, result: Mapping[str, Any]) -> bool:
        """Feed one result; True when the trial is to stop (now or already)."""
        check_mapping("a Tune result", result)
        if self.feed.find(result) is None:  # not an evaluation: no observation (ADP-3)
            return self.feed.stopped(trial_id)
        if self.step_key not in result:
            raise ValueError(f"a Tune result with {self.feed.metric!r} has no {self.step_key!r}")
        step = as_step(self.step_key, result[self.step_key])
        verdict = self.feed.feed(trial_id, step, result)
        return verdict is not None and verdict.stopped

    def best_checkpoint(self, result: Result) -> Checkpoint | None:
        trial_id = (result.metrics or {}).get("trial_id")
        best = None if trial_id is None else self.feed.best(str(trial_id))
        if best is None:
            return None
        for checkpoint, metrics in result.best_checkpoints or ():
            if metrics.get(self.step_key) == best.step:
                found: Checkpoint = checkpoint
                return found
        return None


class _Queries:
    """The per-trial questions both adapters answer, from their :class:`_Trials`."""

    __slots__ = ()

    @property
    def _trials(self) -> _Trials:
        raise NotImplementedError

    @property
    def monitor(self) -> Monitor:
        """The monitor holding every trial's state (``to_json`` saves it, spec ``MON-11``)."""
        return self._trials.feed.monitor

    def verdict(self, trial_id: str) -> MonitorVerdict | None:
        """The verdict of the trial's last result with the metric, or None before one."""
        return self._trials.feed.verdict(trial_id)

    def stopped(self, trial_id: str) -> bool:
        """True once the rule has stopped the trial (it latches)."""
        return self._trials.feed.stopped(trial_id)

    def stop_step(self, trial_id: str) -> int | None:
        """The step at which the rule stopped the trial, or None."""
        return self._trials.feed.stop_step(trial_id)

    def best(self, trial_id: str) -> BestCheckpoint | None:
        """The step and score of the trial's checkpoint to keep (spec ``ADP-4``)."""
        return self._trials.feed.best(trial_id)

    def best_checkpoint(self, result: Result) -> Checkpoint | None:
        """Among the checkpoints Tune kept for ``result``'s trial, the one at :meth:`best`.

        None when the trial has no finite score or Tune did not keep that checkpoint (keep
        them all, or rank them by the same metric and mode in ``tune.CheckpointConfig``).
        """
        return self._trials.best_checkpoint(result)


class EvalStopStopper(_Queries, Stopper):
    """A Tune ``Stopper`` that stops a trial at the k-th consecutive decline of ``metric``.

    Args:
        metric: the reported eval score (a ``/``-separated path finds a nested key).
        mode: ``"max"`` when higher is better, ``"min"`` when lower is better, ``"auto"``
            (default) from the metric's name (spec ``MON-13``).
        k: stop at the k-th consecutive decline (the paper's rule); give ``k`` or
            ``detector``; with neither, the one default detector (``SIG-11``).
        detector: any :class:`~evalstop.core.detectors.Detector` instead of ``DeclineDetector(k)``.
        step_key: the result key used as the step (default ``training_iteration``).
        strict: a result without ``metric`` raises ``MissingMetricError`` (default False:
            Tune's own stoppers skip it); spec ``ADP-15``.
        check_finite: a NaN or infinite value stops the trial at once (default False, as
            Tune's stoppers).

    A result without ``metric`` is not an evaluation and never stops the trial; a NaN or
    infinite value is skipped by the rule (spec ``ADP-3``). ``stop_all()`` is always False:
    EvalStop stops trials, never the experiment (``ADP-5``).

    Raises:
        ImportError: Ray Tune is not installed.
    """

    def __init__(
        self,
        metric: str,
        mode: ModeChoice = "auto",
        k: int | None = None,
        detector: Detector[Any] | None = None,
        *,
        step_key: str = STEP_KEY,
        strict: bool = False,
        check_finite: bool = False,
    ) -> None:
        # Arguments are checked before the base class, so without Ray too (spec ADP-14).
        feed = MetricFeed(metric, mode, k, detector, strict=strict, check_finite=check_finite)
        trials = _Trials(feed, check_name("step_key", step_key))
        super().__init__()
        self._fixed = trials

    def __call__(self, trial_id: str, result: Mapping[str, Any]) -> bool:
        """True when ``trial_id`` is to stop after this result (it stays True once stopped)."""
        return self._trials.observe(trial_id, result)

    def stop_all(self) -> bool:
        """Always False: EvalStop stops single trials, never the whole experiment."""
        return False

    @property
    def _trials(self) -> _Trials:
        return self._fixed


class EvalStopScheduler(_Queries, FIFOScheduler):
    """A Tune ``FIFOScheduler`` that answers ``STOP`` at the k-th consecutive decline.

    Args:
        metric: the reported eval score; None to take it from ``tune.TuneConfig(metric=...)``.
        mode: ``"max"`` or ``"min"``; None to take it from ``TuneConfig`` (from the metric's
            name if neither gives one, spec ``MON-13``).
        k: stop at the k-th consecutive decline (the paper's rule); give ``k`` or
            ``detector``; with neither, the one default detector (``SIG-11``).
        detector: any :class:`~evalstop.core.detectors.Detector` instead of ``DeclineDetector(k)``.
        step_key: the result key used as the step (default ``training_iteration``).
        strict: as :class:`EvalStopStopper`'s (default False; Tune's own metric check stays).
        check_finite: as :class:`EvalStopStopper`'s (default False).

    Trials are run in submission order, as by ``FIFOScheduler``; every result goes to the
    same rule as :class:`EvalStopStopper` (spec ``ADP-6``). Tune checks that every result
    carries the scheduler's metric unless ``TUNE_DISABLE_STRICT_METRIC_CHECKING=1``.

    Raises:
        ImportError: Ray Tune is not installed.
    """

    def __init__(
        self,
        metric: str | None = None,
        mode: Mode | None = None,
        k: int | None = None,
        detector: Detector[Any] | None = None,
        *,
        step_key: str = STEP_KEY,
        strict: bool = False,
        check_finite: bool = False,
    ) -> None:
        # Arguments are checked before the base class, so without Ray too (spec ADP-14): the
        # feed is built at the first result, but a throwaway one checks k and detector now.
        if mode not in (None, "max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        name = "metric" if metric is None else metric
        MetricFeed(name, "max", k, detector, strict=strict, check_finite=check_finite)
        self._strict, self._check_finite = strict, check_finite
        check_name("step_key", step_key)
        super().__init__()  # type: ignore[no-untyped-call, unused-ignore]  # Ray's is unannotated
        self._metric: str | None = metric
        self._mode: Mode | None = mode
        self._k = k
        self._detector = detector
        self._step_key = step_key
        self._state: _Trials | None = None

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        """Take ``metric`` and ``mode`` from ``TuneConfig``; False when already given here."""
        if metric is not None and not isinstance(metric, str):
            raise TypeError(f"metric must be a str or None, got {type(metric).__name__}")
        if (self._metric and metric) or (self._mode and mode) or self._state is not None:
            return False
        if mode not in (None, "max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        if metric:
            self._metric = metric
        if mode is not None:
            self._mode = "max" if mode == "max" else "min"
        return True

    @property
    def _trials(self) -> _Trials:
        if self._state is None:
            if not self._metric:
                raise ValueError("EvalStopScheduler needs a metric: metric= or TuneConfig")
            mode = self._mode or "auto"
            feed = MetricFeed(
                self._metric,
                mode,
                self._k,
                self._detector,
                strict=self._strict,
                check_finite=self._check_finite,
            )
            self._state = _Trials(feed, self._step_key)
        return self._state

    def on_trial_result(
        self, tune_controller: TuneController, trial: Trial, result: dict[str, Any]
    ) -> str:
        """``STOP`` at the trigger (and after it), else ``CONTINUE``."""
        stop = self._trials.observe(str(trial.trial_id), result)
        return str(FIFOScheduler.STOP if stop else FIFOScheduler.CONTINUE)

    def debug_string(self) -> str:
        """One line for Tune's status output."""
        rule = self._trials.feed.monitor.detector.name if self._metric else "EvalStop"
        return f"Using FIFO scheduling with {rule} on {self._metric!r}."
