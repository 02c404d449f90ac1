"""Adapters: EvalStop inside Ray Tune, Hugging Face, TRL, Optuna and Lightning (spec ``ADP``).

- :mod:`evalstop.adapters.ray_tune`: ``EvalStopStopper`` (a Tune ``Stopper``) and
  ``EvalStopScheduler`` (a Tune ``FIFOScheduler``), with ``pip install 'evalstop[ray]'``;
- :mod:`evalstop.adapters.hf`: ``EvalStopCallback`` (a ``TrainerCallback``; TRL's logged
  rewards with ``event="log"``), with ``pip install 'evalstop[hf]'``;
- :mod:`evalstop.adapters.optuna`: ``EvalStopPruner`` (an Optuna pruner);
- :mod:`evalstop.adapters.lightning`: ``EvalStopCallback`` (a Lightning ``Callback``).

MLflow runs, as sources of ``evalstop watch``, are :mod:`evalstop.watch.mlflow`.

This package imports none of those libraries: only its submodules do, and ``import evalstop``
imports no adapter. :class:`MetricFeed`, the framework-free core the adapters share, serves any
other training loop that reports dicts of metrics.
"""

from evalstop.adapters._core import BestCheckpoint as BestCheckpoint
from evalstop.adapters._core import MetricFeed as MetricFeed
from evalstop.adapters._core import MissingMetricError as MissingMetricError

__all__ = ["BestCheckpoint", "MetricFeed", "MissingMetricError"]
