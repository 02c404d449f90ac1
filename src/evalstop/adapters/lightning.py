"""EvalStop inside a Lightning ``Trainer``: a ``Callback`` (spec ``ADP-11``).

Install with ``pip install 'evalstop[lightning]'``. :class:`EvalStopCallback` reads one logged
metric at the end of every validation (not the sanity check), feeds it with
``trainer.global_step`` to a :class:`~evalstop.live.monitor.Monitor` (spec ``ADP-1``) and, at
the trigger, sets ``trainer.should_stop``. The best checkpoint is kept by Lightning's own
``ModelCheckpoint`` monitoring the same metric in the same mode (``save_top_k=1`` keeps the
best; a tie keeps the earlier, as the monitor does); :attr:`EvalStopCallback.best_checkpoint`
is its ``best_model_path``. With ``stop_file`` the callback also stops the run cleanly once
that file exists (the marker ``evalstop watch`` writes), checked after every training batch.
The callback's monitor is saved in Lightning checkpoints (``state_dict``) and restored on
resume.

This module imports lightning at import time when it is installed; without it the module still
imports, and building the callback raises ``ImportError`` (``ADP-9``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalstop.adapters._core import (
    FeedViews,
    MetricFeed,
    check_name,
    check_path,
    optional_class,
)
from evalstop.live.monitor import Stop

if TYPE_CHECKING:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import Callback

    from evalstop.core.detectors import Detector
    from evalstop.live.monitor import Mode
else:
    Callback = optional_class("lightning.pytorch.callbacks", "Callback", "lightning")

__all__ = ["EvalStopCallback"]

logger = logging.getLogger(__name__)

_RUN = 0


class EvalStopCallback(FeedViews, Callback):
    """Stop a Lightning ``Trainer`` at the k-th consecutive decline of a logged metric.

    Args:
        monitor: the logged metric (``self.log("val_score", ...)``), as ``EarlyStopping``'s
            ``monitor``.
        mode: ``"max"`` or ``"min"``; None (default): the direction of the metric's name
            (a table of known names, spec ``MON-13``; an unknown name raises asking for it).
        k: stop at the k-th consecutive decline; give ``k`` or ``detector``.
        detector: any :class:`~evalstop.core.detectors.Detector` instead.
        stop_file: stop cleanly once this file exists (``evalstop watch``'s marker).
        strict: a validation without the metric raises ``MissingMetricError`` naming the
            logged ones (default True, as ``EarlyStopping``: a misspelt name must not train to
            the end silently); spec ``ADP-15``.
        check_finite: a NaN or infinite value stops training at once, keeping the best
            checkpoint so far (default True, as ``EarlyStopping``).

    Raises:
        ImportError: lightning is not installed.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        mode: Mode | None = None,
        k: int | None = None,
        detector: Detector[Any] | None = None,
        stop_file: str | os.PathLike[str] | None = None,
        *,
        strict: bool = True,
        check_finite: bool = True,
    ) -> None:
        # Arguments are checked before the base class, so without Lightning too (ADP-14).
        check_name("monitor", monitor)
        direction = "auto" if mode is None else mode
        feed = MetricFeed(monitor, direction, k, detector, strict=strict, check_finite=check_finite)
        stop_path = check_path("stop_file", stop_file)
        super().__init__()
        self._feed = feed
        self._stop_file = stop_path
        self._checkpoint: Any = None

    @property
    def monitor(self) -> str:
        """The metric's name."""
        return self._feed.metric

    @property
    def best_checkpoint(self) -> str | None:
        """The ``best_model_path`` of the ``ModelCheckpoint`` that monitors the same metric in
        the same mode, or None without one (or before it saved)."""
        path = None if self._checkpoint is None else self._checkpoint.best_model_path
        return path or None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Find the ``ModelCheckpoint`` that keeps this metric's best, if any."""
        self._checkpoint = next(
            (
                callback
                for callback in trainer.checkpoint_callbacks
                if getattr(callback, "monitor", None) == self.monitor
                and getattr(callback, "mode", None) == self.mode
            ),
            None,
        )

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Feed the metric at ``trainer.global_step``; stop the trainer at the trigger."""
        if trainer.sanity_checking:
            return
        metrics: Mapping[str, Any] = trainer.callback_metrics
        verdict = self._feed.feed(_RUN, int(trainer.global_step), metrics)
        if not isinstance(verdict, Stop):
            return
        if not trainer.should_stop:
            logger.warning(
                "EvalStop: %s fired on %r at step %d; best step %s (%s)",
                self._feed.monitor.detector.name,
                self.monitor,
                verdict.stop_step,
                verdict.best_step,
                verdict.best_score,
            )
        trainer.should_stop = True

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        """Stop cleanly once ``stop_file`` exists."""
        stop_file = self._stop_file
        if stop_file is not None and not trainer.should_stop and os.path.exists(stop_file):
            logger.warning("EvalStop: %s exists, stopping", stop_file)
            trainer.should_stop = True

    def state_dict(self) -> dict[str, Any]:
        """The monitor, saved in Lightning checkpoints (spec ``MON-11``)."""
        return {"monitor_state": self._feed.monitor.to_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Go on from a saved monitor."""
        self._feed.restore(state_dict["monitor_state"])
