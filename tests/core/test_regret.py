"""Regret-first scoring: the pure definitions (RGT-1 to RGT-3)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.regret import (
    HARMFUL_REGRET,
    RunScore,
    StopClass,
    classify,
    regret_fraction,
    summarize_runs,
)

finite = st.floats(-1e6, 1e6)


def test_rgt1_regret_is_the_loss_over_the_gain() -> None:
    """RGT-1: (best - kept) / (best - first); no gain gives 0 or 1."""
    assert regret_fraction(best=1.0, first=0.0, kept=0.9) == pytest.approx(0.1)
    assert regret_fraction(best=1.0, first=0.5, kept=1.0) == 0.0
    assert regret_fraction(best=1.0, first=0.0, kept=-1.0) == pytest.approx(2.0)
    assert regret_fraction(best=1.0, first=1.0, kept=1.0) == 0.0
    assert regret_fraction(best=1.0, first=1.0, kept=0.2) == 1.0
    assert regret_fraction(best=2.0, first=0.0, kept=1.5) == 0.25  # a gain other than 1
    assert regret_fraction(best=0.5, first=0.25, kept=0.375) == 0.5


@given(finite, finite, finite)
def test_rgt1_regret_is_never_negative(best: float, first: float, kept: float) -> None:
    """RGT-1: a kept value above the best (a noisy best) costs nothing, never less."""
    assert regret_fraction(max(best, first), first, kept) >= 0.0


def test_rgt2_classes() -> None:
    """RGT-2: harmful above 5% of the gain, benign at or below; missed and ran when unstopped."""
    assert classify(True, HARMFUL_REGRET + 1e-9, False) is StopClass.HARMFUL
    assert classify(True, HARMFUL_REGRET, True) is StopClass.BENIGN
    assert classify(False, 0.8, True) is StopClass.MISSED
    assert classify(False, 0.0, False) is StopClass.RAN
    assert RunScore(True, 0.2, False).stop_class is StopClass.HARMFUL


def test_rgt3_summary_counts_and_rates() -> None:
    """RGT-3: recall over collapsing runs, harmful/benign rates over healthy runs, saved share."""
    runs = [
        RunScore(True, 0.0, True, post_peak=10.0, saved=6.0, delay=2),  # caught
        RunScore(False, 0.7, True, post_peak=10.0),  # missed
        RunScore(True, 0.3, False),  # harmful on a healthy run
        RunScore(True, 0.01, False),  # benign
        RunScore(False, 0.0, False),  # ran
    ]
    summary = summarize_runs(runs)
    assert (summary.runs, summary.collapsing, summary.healthy) == (5, 2, 3)
    assert (summary.harmful, summary.benign, summary.missed) == (1, 2, 1)
    assert summary.harmful_healthy == 1
    assert summary.recall == 0.5
    assert summary.harmful_rate == pytest.approx(1 / 3)
    assert summary.benign_rate == pytest.approx(1 / 3)
    assert summary.mean_regret == pytest.approx((0.7 + 0.3 + 0.01) / 5)
    assert summary.stop_regret == 0.0
    assert summary.saved_share == pytest.approx(6.0 / 20.0)
    assert summary.delay == 2.0


def test_rgt3_empty_denominators_are_nan() -> None:
    """RGT-3: no collapsing run gives NaN recall, saved share, stop regret and delay."""
    summary = summarize_runs([RunScore(False, 0.0, False)])
    assert math.isnan(summary.recall) and math.isnan(summary.saved_share)
    assert math.isnan(summary.stop_regret) and math.isnan(summary.delay)
    assert summary.harmful_rate == 0.0
