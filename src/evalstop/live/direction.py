"""Which way a metric improves, from a table of known metric names (spec ``MON-13``).

``mode="auto"`` is the default of the monitor, trace replay, ``evalstop watch`` and the
adapters. The metric's name is split into words (``eval/val_mse`` -> ``eval``, ``val``,
``mse``; a word's trailing digits also count without them: ``rouge1``, ``bleu4``), and each
word is looked up in two tables: :data:`LOWER_IS_BETTER` (losses, errors, divergences) and
:data:`HIGHER_IS_BETTER` (accuracies, rewards, scores). A name with words of only one table
has that direction; a name with words of neither (``val_thing``), or of both
(``reward_loss``), is an :class:`UnknownDirectionError` asking for ``mode``: never a guess.
The tables come from the metrics that the Hugging Face ``evaluate`` library, torchmetrics,
TRL and common training logs name, not from evaluation data.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

from evalstop.core.errors import EvalStopError
from evalstop.live.state import Mode

__all__ = [
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "ModeChoice",
    "UnknownDirectionError",
    "direction_for",
    "resolve_mode",
]

ModeChoice: TypeAlias = Literal["max", "min", "auto"]
"""A direction as a user gives it: ``max``, ``min`` or ``auto`` (from the metric's name)."""

LOWER_IS_BETTER: frozenset[str] = frozenset(
    [
        "loss",
        "losses",
        "error",
        "errors",
        "err",
        "mse",
        "mae",
        "rmse",
        "rmsle",
        "msle",
        "mape",
        "smape",
        "nll",
        "perplexity",
        "ppl",
        "wer",
        "cer",
        "ter",
        "kl",
        "kld",
        "kldiv",
        "divergence",
        "regret",
        "cost",
        "distance",
        "bpc",
        "bpd",
        "bpb",
        "fid",
        "kid",
        "brier",
        "hamming",
        "logloss",
        "crossentropy",
        "xent",
    ]
)
"""Words that make a metric lower-is-better: a loss, an error, a divergence, a cost."""

HIGHER_IS_BETTER: frozenset[str] = frozenset(
    [
        "accuracy",
        "acc",
        "accuracies",
        "f1",
        "fscore",
        "auc",
        "auroc",
        "auprc",
        "roc",
        "ap",
        "map",
        "reward",
        "rewards",
        "return",
        "returns",
        "win",
        "winrate",
        "wins",
        "score",
        "scores",
        "precision",
        "recall",
        "bleu",
        "sacrebleu",
        "rouge",
        "rougel",
        "rougelsum",
        "meteor",
        "chrf",
        "bertscore",
        "ndcg",
        "mrr",
        "hit",
        "hits",
        "em",
        "exact",
        "match",
        "iou",
        "miou",
        "dice",
        "r2",
        "pass",
        "success",
        "correlation",
        "spearman",
        "pearson",
        "kappa",
        "mcc",
        "tpr",
        "specificity",
        "sensitivity",
        "elbo",
        "psnr",
        "ssim",
        "mauve",
        "coverage",
        "judge",
        "top",
    ]
)
"""Words that make a metric higher-is-better: an accuracy, a reward, a score."""

_QUALIFIERS = frozenset({"top"})
"""Higher-is-better words that yield to a lower-is-better one (``top1_error``)."""

_WORD = re.compile(r"[^0-9a-z]+")


class UnknownDirectionError(EvalStopError, ValueError):
    """``mode="auto"`` cannot tell from the metric's name which way it improves."""


def _words(name: str) -> set[str]:
    words = {word for word in _WORD.split(name.lower()) if word}
    return words | {word.rstrip("0123456789") for word in words} - {""}


def direction_for(metric: str) -> Mode:
    """``"min"`` or ``"max"`` for a metric whose name's words are in one table (``MON-13``).

    Raises:
        UnknownDirectionError: the name's words are in neither table, or in both.
    """
    words = _words(metric)
    lower, higher = words & LOWER_IS_BETTER, words & HIGHER_IS_BETTER
    if lower and higher <= _QUALIFIERS:
        higher = set()  # top1_error: the error of the top-1 guess
    if lower and not higher:
        return "min"
    if higher and not lower:
        return "max"
    why = (
        f"its words {sorted(lower)} say lower and {sorted(higher)} higher is better"
        if lower
        else "no word of it is a known metric"
    )
    raise UnknownDirectionError(
        f"cannot tell whether {metric!r} improves up or down ({why}); give the mode "
        "(--mode max or --mode min, mode='max' or mode='min')"
    )


def resolve_mode(mode: str, metric: str | None) -> Mode:
    """``mode`` itself for ``max`` / ``min``; for ``auto`` the direction of ``metric`` (``max``
    without a metric name: a score).

    Raises:
        UnknownDirectionError: ``auto`` and a metric name :func:`direction_for` cannot place.
        ValueError: any other mode.
    """
    if mode == "max":
        return "max"
    if mode == "min":
        return "min"
    if mode == "auto":
        return "max" if metric is None else direction_for(metric)
    raise ValueError(f"mode must be 'max', 'min' or 'auto', got {mode!r}")
