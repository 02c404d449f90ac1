"""Counts of the built-in detectors are integers (DET-2, DET-7)."""

from __future__ import annotations

import math

import pytest

from evalstop.core.detectors import DeclineDetector, LossPlateau


@pytest.mark.parametrize("bad", [True, False, 2.5, 2.0, math.nan, math.inf, "2", None])
def test_k_and_patience_must_be_ints(bad: object) -> None:
    """DET-2, DET-7: ``k`` and ``patience`` that are not ints (a bool, a float even when
    whole, NaN, a string) are a ValueError; before, ``k=True`` and ``k=2.5`` were accepted
    and NaN built a detector that never fires."""
    with pytest.raises(ValueError, match="must be an integer"):
        DeclineDetector(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be an integer"):
        LossPlateau(patience=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [1, 2, 10**30])
def test_any_positive_int_k(k: int) -> None:
    """DET-2: every int from 1 up is a valid k."""
    assert DeclineDetector(k).k == k
