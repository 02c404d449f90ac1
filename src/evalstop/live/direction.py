"""Which way a metric improves, from its name (spec ``MON-13``).

``mode="auto"`` is the default of the monitor, trace replay and the adapters: a metric whose
name contains ``loss``, ``error`` or ``perplexity``, or has ``wer`` as a word (``eval_wer``,
``test/wer``), is lower-is-better (``"min"``); any other metric is higher-is-better
(``"max"``). This extends the rule the Hugging Face ``Trainer`` applies to
``greater_is_better`` (a name ending in ``loss``).
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

from evalstop.live.state import Mode

__all__ = ["LOWER_IS_BETTER", "ModeChoice", "direction_for", "resolve_mode"]

ModeChoice: TypeAlias = Literal["max", "min", "auto"]
"""A direction as a user gives it: ``max``, ``min`` or ``auto`` (from the metric's name)."""

LOWER_IS_BETTER: tuple[str, ...] = ("loss", "error", "perplexity")
"""Name parts that make a metric lower-is-better wherever they appear."""

_WORD = re.compile(r"[^0-9a-z]+")


def direction_for(metric: str) -> Mode:
    """``"min"`` for a loss, error, WER or perplexity metric, else ``"max"`` (``MON-13``)."""
    name = metric.lower()
    if any(part in name for part in LOWER_IS_BETTER):
        return "min"
    return "min" if "wer" in _WORD.split(name) else "max"


def resolve_mode(mode: str, metric: str | None) -> Mode:
    """``mode`` itself for ``max`` / ``min``; for ``auto`` the direction of ``metric`` (``max``
    without a metric name). ``ValueError`` for anything else."""
    if mode == "max":
        return "max"
    if mode == "min":
        return "min"
    if mode == "auto":
        return "max" if metric is None else direction_for(metric)
    raise ValueError(f"mode must be 'max', 'min' or 'auto', got {mode!r}")
