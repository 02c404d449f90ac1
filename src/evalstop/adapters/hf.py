"""EvalStop inside the Hugging Face ``Trainer``: a ``TrainerCallback`` (spec ``ADP-7``, ``ADP-8``).

Install with ``pip install 'evalstop[hf]'``. :class:`EvalStopCallback` watches one eval metric
at every evaluation the ``Trainer`` runs, feeds it with ``state.global_step`` to an
:class:`~evalstop.live.monitor.Monitor` (spec ``ADP-1``), and at the k-th consecutive decline sets
``control.should_training_stop``. It records the best checkpoint's step and score and points
the ``Trainer`` at that checkpoint, as ``EarlyStoppingCallback`` does with
``load_best_model_at_end=True``:

- with ``metric_for_best_model`` unset, the callback writes ``state.best_metric``,
  ``state.best_global_step`` and, once that checkpoint is on disk,
  ``state.best_model_checkpoint``, so the ``Trainer`` keeps that checkpoint out of
  ``save_total_limit`` rotation;
- with ``metric_for_best_model`` naming the same metric and ``greater_is_better`` matching
  the mode, the ``Trainer`` tracks the same best itself and ``load_best_model_at_end=True``
  restores it at the end; a different metric or direction with ``load_best_model_at_end=True``
  raises ``ValueError`` when training begins.

Save a checkpoint at every evaluation (``save_strategy`` equal to ``eval_strategy`` and
``save_steps`` equal to ``eval_steps``) so that every evaluated step, the best one included,
has a checkpoint. The callback's state is saved in each checkpoint's ``trainer_state.json``
and restored on ``resume_from_checkpoint`` with ``restore_callback_states_from_checkpoint=True``
(a built-in detector only: a custom one cannot be rebuilt from JSON, and restoring it raises
``ValueError``).

This module imports transformers at import time when it is installed; without it the module
still imports, and building the callback raises ``ImportError`` (``ADP-9``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from evalstop.adapters._core import (
    BestCheckpoint,
    FeedViews,
    MetricFeed,
    check_name,
    check_path,
    optional_class,
)
from evalstop.core.detectors import Detector
from evalstop.live.monitor import Mode, Monitor, MonitorVerdict

if TYPE_CHECKING:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_callback import ExportableState
else:
    TrainerCallback = optional_class("transformers", "TrainerCallback", "hf")
    ExportableState = optional_class("transformers.trainer_callback", "ExportableState", "hf")

__all__ = ["BestCheckpoint", "EvalStopCallback"]

logger = logging.getLogger(__name__)
trainer_logger = logging.getLogger("transformers.trainer")
"""The ``Trainer``'s own logger: the stop and the evaluation-off warning go through it, so they
show with the ``Trainer``'s output and follow its ``log_level``."""

Event: TypeAlias = Literal["evaluate", "log"]
"""Where the callback reads its metric: eval metrics (``on_evaluate``) or every log
(``on_log``: the training metrics TRL's trainers report, ``reward``, ``kl``, ...)."""

RUN: int = 0
"""The monitor's key for the one run a callback watches."""

CHECKPOINT_PREFIX = "checkpoint"
"""The ``Trainer`` saves the checkpoint of step ``s`` in ``<output_dir>/checkpoint-<s>``."""


def _value(option: object) -> object:
    """An enum option's value (``IntervalStrategy.NO`` is ``"no"``), else the option."""
    return getattr(option, "value", option)


def _eval_key(metric: str) -> str:
    return metric if metric.startswith("eval_") else f"eval_{metric}"


class EvalStopCallback(FeedViews, TrainerCallback, ExportableState):
    """Stop a ``Trainer`` at the k-th consecutive decline of an eval metric; keep the best.

    Args:
        metric: the eval metric, as in ``metric_for_best_model``: ``"eval_loss"`` (default),
            ``"eval_win_rate"`` or ``"win_rate"`` (``eval_`` is tried when the key is
            absent).
        mode: ``"max"`` when higher is better, ``"min"`` when lower is better; None (default)
            takes the direction from the metric's name, extending the ``Trainer``'s own rule
            for ``greater_is_better`` with a table of known names (spec ``MON-13``); an unknown
            name raises asking for the mode.
        k: stop at the k-th consecutive decline (``DeclineDetector(k)``, the paper's rule);
            give ``k`` or ``detector``. With neither: the one default detector
            (``default_detector()``, ``SIG-11``).
        detector: any :class:`~evalstop.core.detectors.Detector`.
        strict: an evaluation without the metric raises ``MissingMetricError`` naming the
            metrics it has (default False: the ``Trainer``'s ``EarlyStoppingCallback`` only
            warns); spec ``ADP-15``.
        check_finite: a NaN or infinite value stops training at once, keeping the best
            checkpoint so far (default False, as the ``Trainer``'s).

    An evaluation without the metric is skipped (unless ``strict``); a NaN or infinite value is
    skipped by the rule (spec ``ADP-3``; unless ``check_finite``). A new training run (global
    step 0 at ``on_train_begin``) starts afresh; a resumed one goes on from the callback's state
    (``ADP-8``).

    Raises:
        ImportError: transformers is not installed.
    """

    def __init__(
        self,
        metric: str = "eval_loss",
        mode: Mode | None = None,
        k: int | None = None,
        detector: Detector[Any] | None = None,
        *,
        event: Event = "evaluate",
        stop_file: str | os.PathLike[str] | None = None,
        strict: bool = False,
        check_finite: bool = False,
    ) -> None:
        # Arguments are checked before the base class, so without transformers too (ADP-14).
        if event not in ("evaluate", "log"):
            raise ValueError(f"event must be 'evaluate' or 'log', got {event!r}")
        check_name("metric", metric)
        aliases = (_eval_key(metric),) if event == "evaluate" else ()
        direction = "auto" if mode is None else mode
        feed = MetricFeed(
            metric,
            direction,
            k,
            detector,
            aliases=aliases,
            strict=strict,
            check_finite=check_finite,
        )
        stop_path = check_path("stop_file", stop_file)
        super().__init__()
        self._feed = feed
        self._k = k  # as given: what state() saves, so a resumed callback is built the same
        self._event: Event = event
        self._stop_file = stop_path
        self._output_dir: str | None = None
        self._owns_best = True
        self._warned_no_eval = False
        self._stopped_by_file = False

    # -- what the callback knows ------------------------------------------------------------

    @property
    def metric(self) -> str:
        """The metric's key, as given."""
        return self._feed.metric

    @property
    def event(self) -> Event:
        """Where the metric is read: ``"evaluate"`` (eval metrics) or ``"log"`` (every log)."""
        return self._event

    @property
    def monitor(self) -> Monitor:
        """The monitor holding the run's state."""
        return self._feed.monitor

    @property
    def best_checkpoint(self) -> str | None:
        """The directory of the best step's checkpoint, or None while it is not on disk."""
        best = self.best
        if best is None or self._output_dir is None:
            return None
        path = os.path.join(self._output_dir, f"{CHECKPOINT_PREFIX}-{best.step}")
        return path if os.path.isdir(path) else None

    # -- Trainer events -----------------------------------------------------------------------

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Start afresh on a new run; check that the ``Trainer``'s best means ours."""
        self._output_dir = str(args.output_dir)
        if int(state.global_step) == 0:
            self._feed.forget(RUN)
        eval_off = self._event == "evaluate" and str(_value(args.eval_strategy)) == "no"
        if eval_off and not self._warned_no_eval:
            self._warned_no_eval = True
            trainer_logger.warning(
                "EvalStopCallback: evaluation is off (eval_strategy='no'), so it can never "
                "stop training: set eval_strategy, or event='log' for a logged metric"
            )
        tracked = args.metric_for_best_model
        if tracked is None:
            self._owns_best = True
            return
        self._owns_best = False
        same = _eval_key(str(tracked)) == _eval_key(self.metric) and bool(
            args.greater_is_better
        ) == (self.mode == "max")
        if not same and args.load_best_model_at_end:
            raise ValueError(
                f"load_best_model_at_end restores the best {tracked!r} "
                f"(greater_is_better={args.greater_is_better}) but EvalStopCallback keeps the "
                f"best {self.metric!r} in mode {self.mode!r}: set metric_for_best_model and "
                "greater_is_better to match"
            )

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Feed the metric at ``state.global_step``; stop training at the trigger."""
        self._output_dir = str(args.output_dir)
        if metrics is None or self._event != "evaluate":
            return
        verdict = self._feed.feed(RUN, int(state.global_step), metrics)
        if verdict is None:
            logger.warning("EvalStopCallback: no %r in the eval metrics, skipped", self.metric)
            return
        self._apply(verdict, state, control)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """With ``event="log"``: feed the metric of each log that has it (TRL's rewards)."""
        self._output_dir = str(args.output_dir)
        if logs is None or self._event != "log":
            return
        verdict = self._feed.feed(RUN, int(state.global_step), logs)
        if verdict is not None:
            self._apply(verdict, state, control)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Stop cleanly once ``stop_file`` exists (``evalstop watch``'s marker)."""
        if self._stop_file is None or control.should_training_stop:
            return
        if os.path.exists(self._stop_file):
            if not self._stopped_by_file:
                self._stopped_by_file = True
                trainer_logger.warning(
                    "EvalStop: %s exists, stopping at step %d; best checkpoint %s",
                    self._stop_file,
                    state.global_step,
                    self.best_checkpoint,
                )
            control.should_training_stop = True

    def _apply(self, verdict: MonitorVerdict, state: TrainerState, control: TrainerControl) -> None:
        if self._owns_best and verdict.best_step is not None:
            state.best_metric = verdict.best_score
            state.best_global_step = verdict.best_step
        if verdict.stopped:
            if not control.should_training_stop:
                trainer_logger.warning(
                    "EvalStop: %s fired on %r at step %d; best step %s (%s), checkpoint %s",
                    self._feed.monitor.detector.name,
                    self.metric,
                    verdict.step,
                    verdict.best_step,
                    verdict.best_score,
                    self.best_checkpoint,
                )
            control.should_training_stop = True

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Point ``state.best_model_checkpoint`` at the best checkpoint once it is on disk."""
        self._output_dir = str(args.output_dir)
        path = self.best_checkpoint
        if self._owns_best and path is not None:
            state.best_model_checkpoint = path

    # -- resumption (transformers' ExportableState) -------------------------------------------

    def state(self) -> dict[str, Any]:
        """The callback's arguments and monitor, saved in each checkpoint's trainer state."""
        return {
            "args": {
                "metric": self.metric,
                "mode": self.mode,
                "k": self._k,
                "event": self._event,
                "stop_file": self._stop_file,
                "strict": self._feed.strict,
                "check_finite": self._feed.check_finite,
            },
            "attributes": {"monitor_state": self._feed.monitor.to_dict()},
        }

    @property
    def monitor_state(self) -> dict[str, Any]:
        """The monitor as JSON values; setting it restores a saved monitor (``MON-11``)."""
        return self._feed.monitor.to_dict()

    @monitor_state.setter
    def monitor_state(self, data: Mapping[str, Any]) -> None:
        self._feed.restore(data)
