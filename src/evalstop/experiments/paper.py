"""The figures the source paper reports (``../shared/paper.md``), for side-by-side tables.

A value is a number, a ``(low, high)`` range, or a string for a qualitative claim; None where
the paper reports nothing.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PAPER"]

PaperValue = float | tuple[float, float] | str | None

PAPER: Final[dict[str, dict[str, dict[str, PaperValue]]]] = {
    "main": {
        "srtf-est": {"jct_change_pct": 0.0, "wasted_change_pct": 0.0},
        "evalstop+srtf-est": {
            "jct_change_pct": -9.4,
            "wasted_change_pct": -21.8,
            "precision": 0.983,
            "recall": 0.99,
            "fpr": 0.015,
        },
        "stopat-0.65+srtf-est": {
            "jct_change_pct": "similar to EvalStop",
            "precision": "= base rate (0.6)",
            "fpr": 0.645,
        },
        "lossplateau+srtf-est": {"recall": 0.383},
    },
    "composability": {
        "any": {"jct_change_pct": (-25.2, -8.9)},
    },
    "noise": {
        "evalstop": {"precision_at_0.01": 1.0, "precision_at_0.12": 0.81},
    },
    "base_rate": {
        "evalstop": {"precision_min": 0.89},
        "stopat-0.65": {"precision": "= base rate"},
    },
    "k": {
        "evalstop": {"best_k": 2.0},
    },
}
