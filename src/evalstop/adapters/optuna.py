"""EvalStop as an Optuna pruner: prune a trial at the k-th consecutive decline (spec ``ADP-10``).

Install with ``pip install 'evalstop[optuna]'``. :class:`EvalStopPruner` is an
``optuna.pruners.BasePruner``: the objective reports its eval score with
``trial.report(value, step)`` and asks ``trial.should_prune()``, as with any Optuna pruner.
At each question the pruner folds the trial's intermediate values, in step order, into a fresh
one-job :class:`~evalstop.live.monitor.Monitor` (spec ``ADP-1``) and answers True from the
trigger on. Being stateless, it decides the same in every process of a distributed study and
after a restart; a question costs O(values reported so far).

This module imports optuna at import time when it is installed; without it the module still
imports, and building the pruner raises ``ImportError`` (``ADP-9``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalstop.adapters._core import BestCheckpoint, MetricFeed, optional_class

if TYPE_CHECKING:
    import optuna
    from optuna.pruners import BasePruner

    from evalstop.core.detectors import Detector
    from evalstop.live.monitor import Mode, MonitorVerdict
else:
    BasePruner = optional_class("optuna.pruners", "BasePruner", "optuna")

__all__ = ["EvalStopPruner"]

_RUN = 0
_METRIC = "value"


class EvalStopPruner(BasePruner):
    """Prune an Optuna trial whose reported values decline k consecutive times.

    Args:
        mode: ``"max"`` when higher reported values are better, ``"min"`` when lower are; None
            (default) follows the study's direction (``maximize`` is ``"max"``).
        k: stop at the k-th consecutive decline; give ``k`` or ``detector`` (default: the
            monitor's default rule).
        detector: any :class:`~evalstop.core.detectors.Detector` instead.
        check_finite: a NaN or infinite reported value prunes the trial at once (default True,
            as Optuna's own pruners prune a NaN); spec ``ADP-15``.

    Raises:
        ImportError: optuna is not installed.
    """

    def __init__(
        self,
        mode: Mode | None = None,
        k: int | None = None,
        detector: Detector[Any] | None = None,
        *,
        check_finite: bool = True,
    ) -> None:
        # Arguments are checked before the base class, so without optuna too (ADP-14).
        if mode not in (None, "max", "min"):
            raise ValueError(f"mode must be 'max', 'min' or None, got {mode!r}")
        # Checks k, detector and the flag now, not at a trial.
        MetricFeed(_METRIC, "max", k, detector, check_finite=check_finite)
        super().__init__()
        self._check_finite = check_finite
        self._mode = mode
        self._k = k
        self._detector = detector

    def _mode_of(self, study: optuna.study.Study) -> Mode:
        if self._mode is not None:
            return self._mode
        import optuna

        return "max" if study.direction == optuna.study.StudyDirection.MAXIMIZE else "min"

    def verdict(
        self, study: optuna.study.Study, trial: optuna.trial.FrozenTrial
    ) -> MonitorVerdict | None:
        """The rule's verdict on the trial's reported values, or None before the first."""
        mode = self._mode_of(study)
        feed = MetricFeed(_METRIC, mode, self._k, self._detector, check_finite=self._check_finite)
        verdict: MonitorVerdict | None = None
        for step in sorted(trial.intermediate_values):
            verdict = feed.feed(_RUN, step, {_METRIC: trial.intermediate_values[step]})
            if verdict is not None and verdict.stopped:
                break
        return verdict

    def prune(self, study: optuna.study.Study, trial: optuna.trial.FrozenTrial) -> bool:
        """True once the rule has fired on the trial's reported values (it latches)."""
        verdict = self.verdict(study, trial)
        return verdict is not None and verdict.stopped

    def best(
        self, study: optuna.study.Study, trial: optuna.trial.FrozenTrial
    ) -> BestCheckpoint | None:
        """The step and value of the trial's best report up to the stop (spec ``ADP-4``)."""
        verdict = self.verdict(study, trial)
        if verdict is None or verdict.best_step is None or verdict.best_score is None:
            return None
        return BestCheckpoint(verdict.best_step, verdict.best_score)
