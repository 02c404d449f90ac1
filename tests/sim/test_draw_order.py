"""A run's scalar draws: one ``random(n)`` call, the same values in the same order (CRV-6)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.model import JobKind
from evalstop.sim.curves import (
    BETA_RL_RANGE,
    GAIN_RANGE,
    INITIAL_RANGE,
    RISE_PEAK_RANGE,
    RunPlan,
    rlhf_draw,
    saturating_draw,
)
from evalstop.sim.worlds import CALIBRATED, PAPER, World

STEPS = np.arange(1, 13, dtype=np.float64) * 70.0
seeds = st.integers(min_value=0, max_value=2**32 - 1)
worlds = st.sampled_from([PAPER, CALIBRATED])


def _one_by_one(
    rng: np.random.Generator, world: World, head: list[tuple[float, float] | None]
) -> list[float]:
    """The reference: each scalar of ``head`` drawn by its own ``uniform`` call (``random``
    for None), then the schedule's four; their values in order."""
    values = [float(rng.random()) if r is None else float(rng.uniform(*r)) for r in head]
    values.append(float(float(rng.random()) < world.step_share))
    values.append(float(rng.uniform(*world.step_drop_range)))
    values.append(float(rng.uniform(*world.step_level_range)))
    low, high = world.noise_spread
    values.append(math.exp(rng.uniform(math.log(low), math.log(high))))
    return values


def _loss_three(rng: np.random.Generator) -> None:
    rng.uniform(0.8, 1.2)
    rng.uniform(0.3, 0.6)
    rng.uniform(math.log(0.1), 0.0)


@given(seeds, worlds)
def test_crv6_rlhf_scalars_are_drawn_as_one_by_one(seed: int, world: World) -> None:
    """CRV-6: an RLHF run's 13 scalars taken from one ``random(13)`` call have the values and
    leave the stream where drawing them one by one (``uniform``, ``random``) does: q0, G, P,
    N', beta, the schedule's four, the proxy's offset, the loss's three, then the noises."""
    plan = RunPlan(turn=400.0, planned_steps=600.0)
    rng = np.random.default_rng(seed)
    draw = rlhf_draw(STEPS, plan=plan, world=world, rng=rng, loss_noise=0.01)
    ref = np.random.default_rng(seed)
    head = [INITIAL_RANGE, GAIN_RANGE, RISE_PEAK_RANGE, None, BETA_RL_RANGE]
    values = _one_by_one(ref, world, head)
    ref.uniform(-1.0, 0.0)
    _loss_three(ref)
    eval_eps = ref.standard_normal(len(STEPS))
    proxy_eps = ref.standard_normal(len(STEPS))
    ref.standard_normal(len(STEPS))  # the loss's noise
    assert draw.gain == values[1] and draw.noise_multiplier == values[8]
    np.testing.assert_array_equal(draw.eval_eps, eval_eps)
    np.testing.assert_array_equal(draw.proxy_eps, proxy_eps)
    assert rng.bit_generator.state == ref.bit_generator.state


@given(seeds, worlds, st.sampled_from([JobKind.DPO, JobKind.LORA]))
def test_crv6_saturating_scalars_are_drawn_as_one_by_one(
    seed: int, world: World, kind: JobKind
) -> None:
    """CRV-6: a DPO or LoRA run's 11 scalars from one ``random(11)`` call are the values of
    drawing q0, G, N', r, the schedule's four and the loss's three one by one."""
    plan = RunPlan(planned_steps=600.0)
    rng = np.random.default_rng(seed)
    draw = saturating_draw(STEPS, kind=kind, plan=plan, world=world, rng=rng, loss_noise=0.01)
    ref = np.random.default_rng(seed)
    values = _one_by_one(ref, world, [INITIAL_RANGE, GAIN_RANGE, None, (2.0, 5.0)])
    _loss_three(ref)
    eval_eps = ref.standard_normal(len(STEPS))
    ref.standard_normal(len(STEPS))
    assert draw.gain == values[1] and draw.noise_multiplier == values[7]
    np.testing.assert_array_equal(draw.eval_eps, eval_eps)
    assert rng.bit_generator.state == ref.bit_generator.state
