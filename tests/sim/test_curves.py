"""Training curves after Gao et al. (CRV-1 to CRV-5)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evalstop.sim.curves import (
    HACKING_PEAK_RANGE,
    HEALTHY_PEAK_RANGE,
    gold_shape,
    rlhf_curves,
    saturating_curves,
)

FRACTIONS = np.arange(1, 11, dtype=np.float64) / 10
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def test_crv1_gold_shape_is_gao_normalised() -> None:
    """CRV-1: g(x) = x(1 - ln x) is R(d)/R(d*) for d = x d*, whatever alpha and beta."""
    alpha, beta = 0.38, 0.15
    d_star = math.exp(alpha / beta - 1)
    x = np.array([0.2, 0.5, 1.0, 1.7, math.e, 3.0])
    d = x * d_star
    gold = d * (alpha - beta * np.log(d))
    np.testing.assert_allclose(gold_shape(x), gold / (beta * d_star), rtol=1e-12, atol=1e-12)
    assert gold_shape(np.array([0.0]))[0] == 0.0
    assert gold_shape(np.array([1.0]))[0] == 1.0
    assert abs(gold_shape(np.array([math.e]))[0]) < 1e-12


@given(seeds)
def test_crv2_hacking_runs_peak_inside_and_healthy_beyond(seed: int) -> None:
    """CRV-2: a hacking run's true quality peaks strictly inside; a healthy one keeps rising."""
    rng = np.random.default_rng(seed)
    hack = rlhf_curves(FRACTIONS, hacking=True, rng=rng, eval_noise=0.0, loss_noise=0.0)
    assert HACKING_PEAK_RANGE[0] <= hack.peak_fraction <= HACKING_PEAK_RANGE[1]
    assert int(np.argmax(hack.quality)) < len(FRACTIONS) - 1
    assert hack.quality[-1] < hack.quality.max()
    healthy = rlhf_curves(FRACTIONS, hacking=False, rng=rng, eval_noise=0.0, loss_noise=0.0)
    assert HEALTHY_PEAK_RANGE[0] <= healthy.peak_fraction <= HEALTHY_PEAK_RANGE[1]
    assert np.all(np.diff(healthy.quality) > 0)


@given(seeds, st.booleans())
def test_crv3_proxy_rises_and_loss_falls_whatever_the_quality(seed: int, hacking: bool) -> None:
    """CRV-3: the decoupling: noise-free proxy up and loss down at every checkpoint."""
    rng = np.random.default_rng(seed)
    sample = rlhf_curves(FRACTIONS, hacking=hacking, rng=rng, eval_noise=0.0, loss_noise=0.0)
    assert sample.proxy_reward is not None
    assert np.all(np.diff(sample.proxy_reward) > 0)
    assert np.all(np.diff(sample.loss) < 0)


@given(seeds)
def test_crv4_dpo_and_lora_saturate_without_declining(seed: int) -> None:
    """CRV-4: saturating quality, normalised to 1 at the end, falling loss."""
    rng = np.random.default_rng(seed)
    sample = saturating_curves(FRACTIONS, rng=rng, eval_noise=0.0, loss_noise=0.0)
    assert np.all(np.diff(sample.quality) > 0)
    assert math.isclose(sample.quality[-1], 1.0)
    assert np.all(np.diff(sample.loss) < 0)
    assert sample.proxy_reward is None


def test_crv5_eval_noise_has_the_configured_sigma() -> None:
    """CRV-5: observed - true quality is Gaussian with standard deviation sigma."""
    rng = np.random.default_rng(7)
    fractions = np.linspace(0.01, 1.0, 20_000)
    sample = rlhf_curves(fractions, hacking=True, rng=rng, eval_noise=0.05, loss_noise=0.0)
    residual = sample.eval_score - sample.quality
    assert abs(residual.mean()) < 0.002
    assert abs(residual.std() - 0.05) < 0.002
    noiseless = rlhf_curves(fractions, hacking=True, rng=rng, eval_noise=0.0, loss_noise=0.0)
    np.testing.assert_array_equal(noiseless.eval_score, noiseless.quality)
