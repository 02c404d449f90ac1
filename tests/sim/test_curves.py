"""Training curves after Gao et al. (CRV-1 to CRV-6)."""

from __future__ import annotations

import math

import attrs
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evalstop.sim.curves import (
    GAIN_RANGE,
    HALF_LOSS_X,
    INITIAL_RANGE,
    PLATEAU_SLOPE,
    gold_shape,
    rlhf_curves,
    saturating_curves,
)
from evalstop.sim.worlds import CALIBRATED, PAPER, World

FRACTIONS = np.arange(1, 11, dtype=np.float64) / 10
seeds = st.integers(min_value=0, max_value=2**32 - 1)
worlds = st.sampled_from([PAPER, CALIBRATED])
ALL_PLATEAU = attrs.evolve(PAPER, name="plateau", plateau_share=1.0)


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
    assert abs(gold_shape(np.array([HALF_LOSS_X]))[0] - 0.5) < 1e-4


def _curves(world: World, seed: int, hacking: bool, noise: float = 0.0) -> tuple[float, ...]:
    sample = rlhf_curves(
        FRACTIONS,
        hacking=hacking,
        world=world,
        rng=np.random.default_rng(seed),
        eval_noise=noise,
        loss_noise=0.0,
    )
    return tuple(sample.quality)


@given(seeds, worlds)
def test_crv2_hacking_runs_peak_at_their_turn_and_collapse(seed: int, world: World) -> None:
    """CRV-2: a hacking run turns inside the world's range, peaks there and ends lower."""
    rng = np.random.default_rng(seed)
    hack = rlhf_curves(
        FRACTIONS, hacking=True, world=world, rng=rng, eval_noise=0.0, loss_noise=0.0
    )
    low, high = world.turn_range
    assert low <= hack.peak_fraction <= high
    peak = int(np.argmax(hack.quality))
    assert peak < len(FRACTIONS) - 1
    assert hack.quality[-1] < hack.quality.max()
    assert np.all(np.diff(hack.quality[: peak + 1]) > 0)
    assert np.all(np.diff(hack.quality[peak:]) < 0)


@given(seeds)
def test_crv2_healthy_runs_rise_through_the_end_or_plateau(seed: int) -> None:
    """CRV-2: a healthy run's true quality rises at every checkpoint (peak at the end); a
    plateaued one gains almost nothing after its turn."""
    rising = rlhf_curves(
        FRACTIONS,
        hacking=False,
        world=PAPER,
        rng=np.random.default_rng(seed),
        eval_noise=0.0,
        loss_noise=0.0,
    )
    assert np.all(np.diff(rising.quality) > 0)
    assert rising.peak_fraction > 1.0
    flat = rlhf_curves(
        FRACTIONS,
        hacking=False,
        world=ALL_PLATEAU,
        rng=np.random.default_rng(seed),
        eval_noise=0.0,
        loss_noise=0.0,
    )
    assert np.all(np.diff(flat.quality) > 0)
    assert flat.peak_fraction == 1.0
    turned = flat_turn(seed) < FRACTIONS
    if turned.sum() >= 2:
        late = np.diff(flat.quality[turned])
        early = np.diff(rising.quality[turned])
        assert np.all(late <= PLATEAU_SLOPE * early.max() * 1.5 + 1e-12)


def flat_turn(seed: int) -> float:
    """The turn of the run drawn from ``seed`` (a hacking run's peak fraction is its turn)."""
    return rlhf_curves(
        FRACTIONS,
        hacking=True,
        world=ALL_PLATEAU,
        rng=np.random.default_rng(seed),
        eval_noise=0.0,
        loss_noise=0.0,
    ).peak_fraction


@given(seeds, st.booleans(), worlds)
def test_crv3_proxy_rises_and_loss_falls_whatever_the_quality(
    seed: int, hacking: bool, world: World
) -> None:
    """CRV-3: the decoupling: noise-free proxy up and loss down at every checkpoint."""
    rng = np.random.default_rng(seed)
    sample = rlhf_curves(
        FRACTIONS, hacking=hacking, world=world, rng=rng, eval_noise=0.0, loss_noise=0.0
    )
    assert sample.proxy_reward is not None
    assert np.all(np.diff(sample.proxy_reward) > 0)
    assert np.all(np.diff(sample.loss) < 0)


@given(seeds)
def test_crv4_dpo_and_lora_saturate_without_declining(seed: int) -> None:
    """CRV-4: saturating quality from q0 towards q0 + G, falling loss."""
    rng = np.random.default_rng(seed)
    sample = saturating_curves(FRACTIONS, rng=rng, eval_noise=0.0, loss_noise=0.0)
    assert np.all(np.diff(sample.quality) > 0)
    assert GAIN_RANGE[0] <= sample.gain <= GAIN_RANGE[1]
    assert INITIAL_RANGE[0] + sample.gain * 0.8 <= sample.quality[-1]
    assert sample.quality[-1] <= INITIAL_RANGE[1] + sample.gain + 1e-12
    assert np.all(np.diff(sample.loss) < 0)
    assert sample.proxy_reward is None


def test_crv5_eval_noise_is_sigma_times_the_gain() -> None:
    """CRV-5: observed - true quality is Gaussian with standard deviation sigma G."""
    rng = np.random.default_rng(7)
    fractions = np.linspace(0.01, 1.0, 20_000)
    sample = rlhf_curves(
        fractions, hacking=True, world=PAPER, rng=rng, eval_noise=0.05, loss_noise=0.0
    )
    residual = sample.eval_score - sample.quality
    assert abs(residual.mean()) < 0.002 * sample.gain
    assert abs(residual.std() - 0.05 * sample.gain) < 0.002 * sample.gain
    noiseless = rlhf_curves(
        fractions, hacking=True, world=PAPER, rng=rng, eval_noise=0.0, loss_noise=0.0
    )
    np.testing.assert_array_equal(noiseless.eval_score, noiseless.quality)


@given(seeds, worlds, st.sampled_from([0.0, 0.05]))
def test_crv6_no_label_before_the_turn(seed: int, world: World, noise: float) -> None:
    """CRV-6: drawn from the same stream, a hacking and a healthy run are identical up to
    their turn (level, gain, noise), and their proxy and loss are identical throughout."""
    make = {
        hacking: rlhf_curves(
            FRACTIONS,
            hacking=hacking,
            world=world,
            rng=np.random.default_rng(seed),
            eval_noise=noise,
            loss_noise=0.01,
        )
        for hacking in (True, False)
    }
    hack, healthy = make[True], make[False]
    before = hack.peak_fraction >= FRACTIONS
    np.testing.assert_array_equal(hack.quality[before], healthy.quality[before])
    np.testing.assert_array_equal(hack.eval_score[before], healthy.eval_score[before])
    assert hack.proxy_reward is not None and healthy.proxy_reward is not None
    np.testing.assert_array_equal(hack.proxy_reward, healthy.proxy_reward)
    np.testing.assert_array_equal(hack.loss, healthy.loss)
    assert hack.gain == healthy.gain


def test_crv8_kl_is_gaos_clock_squared_and_draws_nothing() -> None:
    """CRV-8: an RLHF run's KL is (d* t / P)^2 with d* = exp(0.38 / beta - 1), increasing,
    the same whatever the label; the run's other draws are those of a run without it."""
    from evalstop.sim.curves import ALPHA_RL, rlhf_draw
    from evalstop.sim.worlds import WORLDS

    fractions = np.linspace(0.1, 1.0, 10)
    draws = [
        rlhf_draw(
            fractions,
            hacking=h,
            world=WORLDS["paper"],
            rng=np.random.default_rng(3),
            loss_noise=0.02,
        )
        for h in (True, False)
    ]
    assert draws[0].kl is not None and draws[1].kl is not None
    assert np.array_equal(draws[0].kl, draws[1].kl)
    assert np.all(np.diff(draws[0].kl) > 0)
    rng = np.random.default_rng(3)
    rng.uniform(), rng.uniform()
    rise_peak = rng.uniform(1.5, 4.0)
    rng.uniform()
    beta = rng.uniform(0.118, 0.175)
    expected = (math.exp(ALPHA_RL / beta - 1.0) * fractions / rise_peak) ** 2
    assert np.allclose(draws[0].kl, expected, rtol=1e-12)
    sampled = draws[0].sample(0.05).kl
    assert sampled is not None and np.array_equal(sampled, draws[0].kl)
