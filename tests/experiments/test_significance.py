"""Wilson intervals, McNemar's exact test and the paired bootstrap (SCB-9), checked against
hand-worked values and independent recomputations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.experiments.significance import BOOTSTRAP_SEED, mcnemar, paired_bootstrap, wilson


def test_scb10_wilson_hand_worked() -> None:
    """SCB-9: 8 of 10 at 95%: centre (0.8 + 1.92 / 10) / 1.384 = 0.7167, half-width
    1.96 sqrt(0.016 + 0.0096) / 1.384 = 0.2266 (to 4 places); 0 of 10 starts at 0."""
    low, high = wilson(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == pytest.approx(1.0)
    assert all(math.isnan(v) for v in wilson(0, 0))
    with pytest.raises(ValueError):
        wilson(3, 2)


@given(st.integers(0, 500), st.integers(1, 500))
def test_scb10_wilson_contains_the_rate(k: int, n: int) -> None:
    """SCB-9: the interval lies in [0, 1] and contains k / n."""
    k = min(k, n)
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_scb10_mcnemar_hand_worked() -> None:
    """SCB-9: 1 vs 9 discordant: 2 (1 + 10) / 1024 = 0.0215; 5 vs 5 is 1; none is 1."""
    assert mcnemar(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar(9, 1) == mcnemar(1, 9)
    assert mcnemar(5, 5) == 1.0
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(0, 6) == pytest.approx(2 / 64)
    with pytest.raises(ValueError):
        mcnemar(-1, 2)


def test_scb10_paired_bootstrap() -> None:
    """SCB-9: a constant shift has that mean and a tiny p-value; equal lists give p = 1; the
    same inputs give the same numbers."""
    first = [0.1 * i for i in range(50)]
    shifted = [v + 0.5 for v in first]
    result = paired_bootstrap(shifted, first)
    assert result.mean == pytest.approx(0.5)
    assert result.p_value == 0.0
    assert result.low == pytest.approx(0.5) and result.high == pytest.approx(0.5)
    assert paired_bootstrap(first, first).p_value == 1.0
    noisy = [v + (0.3 if i % 2 else -0.3) for i, v in enumerate(first)]
    assert paired_bootstrap(noisy, first) == paired_bootstrap(noisy, first)
    assert paired_bootstrap(noisy, first).p_value > 0.5
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=40), st.integers(1, 60))
def test_scb9_bootstrap_resamples_from_the_fixed_seed(diffs: list[float], reps: int) -> None:
    """SCB-9: the bootstrap's resampled runs are those of a fresh generator at the fixed seed,
    whatever was resampled before (they are drawn once per length and kept): its figures
    equal a recomputation with its own draw, before and after a pair of another length."""
    zeros = [0.0] * len(diffs)
    picks = np.random.default_rng(BOOTSTRAP_SEED).integers(0, len(diffs), (reps, len(diffs)))
    means = np.asarray(diffs)[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    for _ in range(2):
        got = paired_bootstrap(diffs, zeros, reps=reps)
        if any(diffs):
            assert (got.low, got.high) == (float(low), float(high))
            below = float(np.mean(means <= 0.0))
            assert got.p_value == min(1.0, 2.0 * min(below, float(np.mean(means >= 0.0))))
        paired_bootstrap([*diffs, 0.5], [*zeros, 0.0], reps=reps)
