"""Adapters: EvalStop inside Ray Tune and the Hugging Face ``Trainer`` (spec ``ADP``).

- :mod:`evalstop.adapters.ray_tune`: ``EvalStopStopper`` (a Tune ``Stopper``) and
  ``EvalStopScheduler`` (a Tune ``FIFOScheduler``), with ``pip install 'evalstop[ray]'``;
- :mod:`evalstop.adapters.hf`: ``EvalStopCallback`` (a ``TrainerCallback``), with
  ``pip install 'evalstop[hf]'``.

This package imports neither library: only its submodules do, and ``import evalstop`` imports
no adapter. :class:`MetricFeed`, the framework-free core both adapters share, serves any other
training loop that reports dicts of metrics.
"""

from evalstop.adapters._core import BestCheckpoint as BestCheckpoint
from evalstop.adapters._core import MetricFeed as MetricFeed

__all__ = ["BestCheckpoint", "MetricFeed"]
