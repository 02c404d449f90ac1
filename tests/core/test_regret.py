"""Regret-first scoring: the pure definitions (RGT-1 to RGT-3, RGT-5)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.regret import (
    GAIN_FLOOR,
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


def test_rgt5_median_and_gain_floored_mean() -> None:
    """RGT-5: the median over all runs; the floored mean charges loss / max(gain, 0.02), and a
    run without gain keeps its RGT-1 value."""
    runs = [
        RunScore(False, 0.1, False, gain=0.5, lost=0.05),  # gain above the floor: its regret
        RunScore(False, 20.0, True, gain=0.001, lost=0.02),  # tiny gain: 0.02 / 0.02 = 1
        RunScore(False, 0.0, False, gain=0.0, lost=0.0),
        RunScore(True, 1.0, False, gain=0.0, lost=0.5),  # no gain: 1, not 0.5 / 0.02
    ]
    summary = summarize_runs(runs)
    assert summary.mean_regret == pytest.approx(21.1 / 4)
    assert summary.median_regret == pytest.approx(0.55)
    assert summary.floored_regret == pytest.approx((0.1 + 1.0 + 0.0 + 1.0) / 4)
    assert GAIN_FLOOR == 0.02
    assert summarize_runs(runs[:3]).median_regret == pytest.approx(0.1)


def test_rgt5_unknown_scale_gives_nan() -> None:
    """RGT-5: without a gain and a loss (no scale) the floored mean is NaN, the median is not."""
    summary = summarize_runs([RunScore(True, 0.3, False)])
    assert math.isnan(summary.floored_regret) and summary.median_regret == 0.3
    assert math.isnan(summarize_runs([]).median_regret)
    assert math.isnan(RunScore(True, 0.3, False, gain=0.1).floored_regret)


@given(st.floats(1e-6, 10.0), st.floats(0.0, 10.0))
def test_rgt5_the_floor_only_caps_tiny_gains(gain: float, lost: float) -> None:
    """RGT-5: with a gain the floored regret is lost / max(gain, floor), never above RGT-1's."""
    regret = regret_fraction(best=gain, first=0.0, kept=gain - lost)
    run = RunScore(False, regret, False, gain=gain, lost=lost)
    assert run.floored_regret == pytest.approx(lost / max(gain, GAIN_FLOOR))
    assert run.floored_regret <= regret * (1 + 1e-9)


def test_rgt7_share_of_runs_over_five_percent() -> None:
    """RGT-7: regrets 0, 0.05 (not over), 0.06 (a harmful stop) and 1 (a missed collapse):
    2 of 4 runs exceed 5% of their gain; no runs is NaN."""
    runs = [
        RunScore(stopped=False, regret=0.0, collapsing=False),
        RunScore(stopped=True, regret=0.05, collapsing=False),
        RunScore(stopped=True, regret=0.06, collapsing=False),
        RunScore(stopped=False, regret=1.0, collapsing=True),
    ]
    assert summarize_runs(runs).over_share == 0.5
    assert math.isnan(summarize_runs([]).over_share)
