"""Training curves after Gao et al. on the absolute clock (CRV-1 to CRV-13)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.core.model import JobKind
from evalstop.experiments.leakage import mann_whitney_auc
from evalstop.sim.clock import LATE_SHARE, PLATEAU_GAIN
from evalstop.sim.curves import (
    ALPHA_RL,
    BETA_RL_RANGE,
    GAIN_RANGE,
    HALF_LOSS_X,
    INITIAL_RANGE,
    METRIC_RANGE,
    PLATEAU_SLOPE,
    RISE_PEAK_RANGE,
    CurveDraw,
    CurveSample,
    RunPlan,
    gold_shape,
    rlhf_curves,
    rlhf_draw,
    rlhf_finish,
    rlhf_start,
    saturating_curves,
    saturating_draw,
    saturating_finish,
    saturating_start,
)
from evalstop.sim.runs import world_stretch
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import CALIBRATED, PAPER, World

STEPS = np.arange(1, 11, dtype=np.float64) * 100.0
seeds = st.integers(min_value=0, max_value=2**32 - 1)
worlds = st.sampled_from([PAPER, CALIBRATED])
NO_STEPS = attrs.evolve(CALIBRATED, name="no-steps", step_share=0.0)
ALL_STEPS = attrs.evolve(CALIBRATED, name="all-steps", step_share=1.0)


def _rlhf(
    world: World, seed: int, turn: float = math.inf, steps: np.ndarray = STEPS, noise: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    sample = rlhf_curves(
        steps,
        plan=RunPlan(turn, 1000.0, world_stretch(world)),
        world=world,
        rng=np.random.default_rng(seed),
        eval_noise=noise,
        loss_noise=0.0,
    )
    assert sample.proxy_reward is not None
    return sample.quality, sample.eval_score, sample.proxy_reward, sample.peak_fraction


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


@given(seeds)
def test_crv1_crv2_healthy_runs_rise_at_every_checkpoint(seed: int) -> None:
    """CRV-1, CRV-2, CRV-10: a healthy run (no turn, no step schedule) rises at every
    checkpoint, from above q0, and never past q0 + (1 + PLATEAU_SLOPE) G."""
    for world in (PAPER, NO_STEPS):
        quality, _, _, peak = _rlhf(world, seed)
        assert np.all(np.diff(quality) > 0)
        assert quality[0] > INITIAL_RANGE[0]
        assert quality[-1] <= INITIAL_RANGE[1] + GAIN_RANGE[1] * (1 + PLATEAU_SLOPE) + 1e-12
        assert peak == 1.0 or peak > 1.0


LONG = np.array([0.0, *np.geomspace(1.0, 1e9, 40)])
"""Steps from the initial policy to far past any rise's top (the step law's longest RLHF run
is 30,000 steps, a rise tops out within 4 stretches of one)."""


def _sample(
    world: World, seed: int, steps: np.ndarray, turn: float = math.inf, noise: float = 0.0
) -> CurveSample:
    return rlhf_curves(
        steps,
        plan=RunPlan(turn, 1000.0, world_stretch(world)),
        world=world,
        rng=np.random.default_rng(seed),
        eval_noise=noise,
        loss_noise=0.0,
    )


@given(seeds, worlds)
def test_crv1_the_gain_is_from_the_initial_policy_to_the_top(seed: int, world: World) -> None:
    """CRV-1: a healthy run (no step schedule) that runs far past its top has gained G from
    its initial policy (step 0) to its top, plus at most the residual PLATEAU_SLOPE G; the
    calibration's first-to-peak gain is G."""
    sample = _sample(attrs.evolve(world, step_share=0.0), seed, LONG)
    gained = (sample.quality[-1] - sample.quality[0]) / sample.gain
    assert 1.0 < gained <= 1.0 + PLATEAU_SLOPE + 1e-12
    assert GAIN_RANGE[0] <= sample.gain <= GAIN_RANGE[1]


@given(seeds, worlds, st.floats(150.0, 650.0))
def test_crv2_hacking_runs_peak_at_their_turn_and_collapse(
    seed: int, world: World, turn: float
) -> None:
    """CRV-2: a run whose turn falls inside it peaks at the checkpoint next to its turn and
    falls at every checkpoint after it; its peak fraction is its turn over its end."""
    quality, _, _, peak = _rlhf(attrs.evolve(world, step_share=0.0), seed, turn)
    assert peak == turn / STEPS[-1]
    after = turn < STEPS
    assert np.all(np.diff(quality[after]) < 0)
    assert quality[-1] < quality.max()
    assert int(np.argmax(quality)) in {int(np.argmax(after)) - 1, int(np.argmax(after))}


@given(seeds, st.booleans(), worlds)
def test_crv3_proxy_rises_and_loss_falls_whatever_the_quality(
    seed: int, hacking: bool, world: World
) -> None:
    """CRV-3: the decoupling: noise-free proxy up and loss down at every checkpoint."""
    sample = rlhf_curves(
        STEPS,
        plan=RunPlan(350.0 if hacking else math.inf, 1000.0, world_stretch(world)),
        world=world,
        rng=np.random.default_rng(seed),
        eval_noise=0.0,
        loss_noise=0.0,
    )
    assert sample.proxy_reward is not None
    assert np.all(np.diff(sample.proxy_reward) > 0)
    assert np.all(np.diff(sample.loss) <= 0)


@given(seeds, worlds, st.floats(150.0, 650.0))
def test_crv13_kl_is_gaos_d_squared_on_the_proxys_clock(
    seed: int, world: World, turn: float
) -> None:
    """CRV-13: sqrt(KL) is proportional to the step and rises at every checkpoint; it is the
    same whatever the turn and the eval noise; its slope over the noise-free proxy's is
    d* beta / (G alpha) (Gao: proxy linear in d, d* = exp(alpha / beta - 1)) for a beta in
    Gao's range."""

    def sample(turn: float, noise: float) -> CurveSample:
        return rlhf_curves(
            STEPS,
            plan=RunPlan(turn, 1000.0, world_stretch(world)),
            world=world,
            rng=np.random.default_rng(seed),
            eval_noise=noise,
            loss_noise=0.0,
        )

    healthy, hacking, noisy = sample(math.inf, 0.0), sample(turn, 0.0), sample(math.inf, 0.1)
    assert healthy.kl is not None and healthy.proxy_reward is not None
    d = np.sqrt(healthy.kl)
    np.testing.assert_allclose(d / STEPS, d[0] / STEPS[0], rtol=1e-12)
    assert np.all(np.diff(healthy.kl) > 0) and healthy.kl[0] > 0
    for other in (hacking, noisy):
        assert other.kl is not None
        np.testing.assert_array_equal(other.kl, healthy.kl)
    proxy_slope = (healthy.proxy_reward[-1] - healthy.proxy_reward[0]) / (STEPS[-1] - STEPS[0])
    ratio = (d[0] / STEPS[0]) / proxy_slope * healthy.gain * ALPHA_RL

    def gao(beta: float) -> float:  # d* beta / alpha times alpha: decreasing in beta
        return beta * math.exp(ALPHA_RL / beta - 1.0)

    low, high = gao(BETA_RL_RANGE[1]), gao(BETA_RL_RANGE[0])
    assert low * (1 - 1e-9) <= ratio <= high * (1 + 1e-9)


@given(seeds, st.sampled_from([JobKind.DPO, JobKind.LORA]))
def test_crv4_dpo_and_lora_saturate_without_declining(seed: int, kind: JobKind) -> None:
    """CRV-4: saturating quality from q0 towards q0 + G, falling loss, no proxy."""
    sample = saturating_curves(
        STEPS,
        kind=kind,
        plan=RunPlan(planned_steps=1000.0),
        world=NO_STEPS,
        rng=np.random.default_rng(seed),
        eval_noise=0.0,
        loss_noise=0.0,
    )
    assert np.all(np.diff(sample.quality) >= 0) and sample.quality[1] > sample.quality[0]
    assert GAIN_RANGE[0] <= sample.gain <= GAIN_RANGE[1]
    assert sample.quality[-1] <= INITIAL_RANGE[1] + sample.gain / (1 - math.exp(-2)) + 1e-12
    assert np.all(np.diff(sample.loss) <= 0) and sample.loss[1] < sample.loss[0]
    assert sample.proxy_reward is None and sample.kl is None


def test_crv5_crv11_eval_noise_is_sigma_times_m_times_the_gain() -> None:
    """CRV-5, CRV-11: observed - true quality is Gaussian with sd sigma m G; m = 1 in the
    paper world and inside the calibrated world's spread, whatever sigma."""
    steps = np.arange(1, 20_001, dtype=np.float64)
    for world in (PAPER, CALIBRATED):
        sample = rlhf_curves(
            steps,
            plan=RunPlan(5_000.0, 20_000.0, world_stretch(world)),
            world=world,
            rng=np.random.default_rng(7),
            eval_noise=0.05,
            loss_noise=0.0,
        )
        m = sample.noise_multiplier
        low, high = world.noise_spread
        assert low <= m <= high
        residual = sample.eval_score - sample.quality
        assert abs(residual.mean()) < 0.002 * m * sample.gain
        assert abs(residual.std() - 0.05 * m * sample.gain) < 0.002 * m * sample.gain
    assert PAPER.noise_spread == (1.0, 1.0)
    multipliers = {
        rlhf_curves(
            STEPS,
            plan=RunPlan(planned_steps=1000.0),
            world=CALIBRATED,
            rng=np.random.default_rng(s),
            eval_noise=0.1,
            loss_noise=0.0,
        ).noise_multiplier
        for s in range(50)
    }
    assert len(multipliers) == 50 and max(multipliers) / min(multipliers) > 2.0


@given(seeds, worlds, st.sampled_from([0.0, 0.05]), st.floats(120.0, 900.0))
def test_crv6_no_label_before_the_turn(seed: int, world: World, noise: float, turn: float) -> None:
    """CRV-6: drawn from the same stream, a run that turns and one that does not are
    identical up to the turn (level, noise), and their proxy and loss are identical."""
    hack = _rlhf(world, seed, turn, noise=noise)
    healthy = _rlhf(world, seed, math.inf, noise=noise)
    before = turn >= STEPS
    np.testing.assert_array_equal(hack[0][before], healthy[0][before])
    np.testing.assert_array_equal(hack[1][before], healthy[1][before])
    np.testing.assert_array_equal(hack[2], healthy[2])


@given(seeds, worlds)
def test_crv8_curves_do_not_depend_on_the_run_length(seed: int, world: World) -> None:
    """CRV-8: a run's curves are functions of its own steps: drawn from the same stream, a
    run of 1,000 steps and one of 2,000 have equal quality, scores and proxy at common steps
    (a run twice as long is not the same curve stretched)."""
    short = _rlhf(world, seed, steps=STEPS)
    long = _rlhf(world, seed, steps=np.arange(1, 21, dtype=np.float64) * 100.0)
    for a, b in zip(short[:3], long[:3], strict=True):
        np.testing.assert_array_equal(a, b[: len(STEPS)])


def _rise(s: np.ndarray, top: np.ndarray) -> np.ndarray:
    """The rise of CRV-1 written out again: ``g(min(s / S, 1)) + PLATEAU_SLOPE (1 - S / s)``
    past the top."""
    x = np.minimum(s / top, 1.0)
    out: np.ndarray = x * (1.0 - np.log(x)) + PLATEAU_SLOPE * (1.0 - top / np.maximum(s, top))
    return out


def test_crv8_the_stretch_gives_the_calibrated_plateau_share() -> None:
    """CRV-8: an independent Monte Carlo (generated runs, its own draws of P, not the reference
    sample): with the calibrated stretch on the planned steps, 0.82 of the healthy RLHF runs
    gain less than 10% of their gain over their last 40% of steps on their true rise; the
    paper world's stretch is 1."""
    assert world_stretch(PAPER) == 1.0
    stretch = world_stretch(CALIBRATED)
    rng = np.random.default_rng(2024)
    jobs = [
        j
        for seed in range(4)
        for j in generate(WorkloadConfig(n_jobs=2500, world=CALIBRATED), seed).jobs
        if j.spec.kind is JobKind.RLHF and not j.truth.hacking
    ]
    end = np.array([j.truth.total_steps for j in jobs], dtype=np.float64)
    planned = np.array([j.spec.estimated_duration / 20 for j in jobs], dtype=np.float64)
    top = stretch * rng.uniform(*RISE_PEAK_RANGE, size=len(jobs)) * planned
    full = _rise(end, top)
    late = _rise((1 - LATE_SHARE) * end, top)
    share = float(np.mean(full - late < PLATEAU_GAIN * full))
    assert CALIBRATED.plateau_share is not None
    assert abs(share - CALIBRATED.plateau_share) < 0.03


@given(seeds, st.floats(100.0, 5_000.0), st.sampled_from([0.0, 0.05]))
def test_crv8_a_calibrated_rise_follows_the_plan(seed: int, planned: float, noise: float) -> None:
    """CRV-8: in ``calibrated`` a healthy run planned twice as long has the same curves at
    twice the steps (its rise, proxy, KL, loss and step schedule all scale with the plan); in
    ``paper`` the plan does not move the rise; a calibrated run without a finite plan is
    refused."""
    steps = np.concatenate([[0.0], STEPS])

    def sample(world: World, plan: float, at: np.ndarray) -> CurveSample:
        return rlhf_curves(
            at,
            plan=RunPlan(math.inf, plan, world_stretch(world)),
            world=world,
            rng=np.random.default_rng(seed),
            eval_noise=noise,
            loss_noise=0.0,
        )

    one, two = sample(CALIBRATED, planned, steps), sample(CALIBRATED, 2 * planned, 2 * steps)
    for a, b in (
        (one.quality, two.quality),
        (one.eval_score, two.eval_score),
        (one.loss, two.loss),
    ):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert one.proxy_reward is not None and two.proxy_reward is not None
    assert one.kl is not None and two.kl is not None
    np.testing.assert_allclose(one.proxy_reward, two.proxy_reward, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(one.kl, two.kl, rtol=1e-12, atol=1e-12)
    plain = attrs.evolve(PAPER, name="paper-plain")
    np.testing.assert_array_equal(
        sample(plain, planned, steps).quality, sample(plain, 2 * planned, steps).quality
    )
    with pytest.raises(ValueError, match="planned_steps"):
        rlhf_curves(
            steps,
            plan=RunPlan(),
            world=CALIBRATED,
            rng=np.random.default_rng(seed),
            eval_noise=noise,
            loss_noise=0.0,
        )


def test_crv9_the_turn_law_gives_the_hacking_share_and_the_link() -> None:
    """CRV-9: in generated workloads the share of RLHF runs whose turn falls before their end
    is the hacking share (within 0.03 over ~3,000 runs), at 0 none hacks, and longer runs hack
    more often (the stated link: the true length's label AUC > 0.6)."""
    for world in (PAPER, CALIBRATED):
        for share in (0.0, 0.2, 0.6, 0.8):
            jobs = generate(WorkloadConfig(n_jobs=5000, hacking_share=share, world=world), 3)
            rlhf = [j for j in jobs.jobs if j.spec.kind is JobKind.RLHF]
            labels = [j.truth.hacking for j in rlhf]
            assert abs(sum(labels) / len(rlhf) - share) < 0.03
            if share > 0:
                lengths = [float(j.truth.duration) for j in rlhf]
                assert mann_whitney_auc(lengths, labels) > 0.6


def test_crv10_true_quality_stays_in_the_metric_range() -> None:
    """CRV-10: no true quality of any job of either world leaves [0, 1], and a run that
    turned early collapses toward the floor, not past it."""
    for world in (PAPER, CALIBRATED):
        jobs = generate(WorkloadConfig(n_jobs=3000, world=world), 1).jobs
        low = min(float(j.truth.quality.min()) for j in jobs)
        high = max(float(j.truth.quality.max()) for j in jobs)
        assert METRIC_RANGE[0] <= low and high <= METRIC_RANGE[1]
    for seed in range(20):
        quality = _rlhf(NO_STEPS, seed, turn=150.0)[0]
        assert np.all(quality >= METRIC_RANGE[0]) and np.all(np.diff(quality[1:]) < 0)
        assert quality[-1] < quality[0]


@given(seeds)
def test_crv12_step_schedules_plateau_then_jump(seed: int) -> None:
    """CRV-12: drawn from the same stream, a step-schedule run is below the plain run by at
    least 1 - 0.82 of its rise before its drop (at 43-71% of 1,000 planned steps) and has
    caught up to within 5% of that gap soon after it."""
    stepped = _rlhf(ALL_STEPS, seed)[0]
    plain = _rlhf(NO_STEPS, seed)[0]
    gap = plain - stepped
    before, after = STEPS <= 420, STEPS >= 800
    assert np.all(gap[before] > 0)
    assert np.all(np.abs(gap[after]) < 0.05 * gap[before].max())


@given(seeds, worlds, st.floats(50.0, 900.0), st.sampled_from([0.0, 0.05]))
def test_crv14_the_step_0_report_is_the_initial_policy(
    seed: int, world: World, turn: float, noise: float
) -> None:
    """CRV-14: at step 0 a run reports its initial policy: true quality q0 (in the initial
    range, step schedule or not), proxy r0 in [-1, 0], loss L0 in [0.8, 1.2], KL 0; the eval
    score is q0 plus the run's first noise draw. The report is the same whatever the turn and
    the run's length (CRV-6, CRV-8)."""
    steps = np.concatenate([[0.0], STEPS])
    reports = [
        _sample(world, seed, steps, turn, noise),
        _sample(world, seed, steps, math.inf, noise),
        _sample(world, seed, np.concatenate([[0.0], STEPS * 3]), turn, noise),
    ]
    first, noiseless = reports[0], _sample(world, seed, steps, turn)
    assert first.proxy_reward is not None and first.kl is not None
    assert noiseless.proxy_reward is not None
    assert INITIAL_RANGE[0] <= first.quality[0] <= INITIAL_RANGE[1]
    assert -1.0 <= noiseless.proxy_reward[0] <= 0.0 and 0.8 <= first.loss[0] <= 1.2
    assert first.kl[0] == 0.0
    assert noiseless.eval_score[0] == noiseless.quality[0] == first.quality[0]
    for other in reports[1:]:
        assert other.proxy_reward is not None and other.kl is not None
        assert other.quality[0] == first.quality[0]
        assert other.eval_score[0] == first.eval_score[0]
        assert other.proxy_reward[0] == first.proxy_reward[0]
        assert (other.loss[0], other.kl[0]) == (first.loss[0], first.kl[0])
    stepped = _sample(ALL_STEPS, seed, steps, turn)
    assert stepped.quality[0] == _sample(NO_STEPS, seed, steps, turn).quality[0]


def _bits(draw: CurveDraw) -> list[bytes | float | None]:
    arrays = (draw.quality, draw.eval_eps, draw.proxy, draw.proxy_eps, draw.loss, draw.kl)
    scalars = [draw.peak_fraction, draw.gain, draw.noise_multiplier]
    return [None if a is None else np.asarray(a).tobytes() for a in arrays] + scalars


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(seeds, st.floats(20.0, 3_000.0), st.floats(50.0, 5_000.0), st.integers(1, 60)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([PAPER, CALIBRATED, ALL_STEPS]),
)
def test_wrk8_rlhf_runs_evaluated_together_are_each_alone(
    runs: list[tuple[int, float, float, int]], world: World
) -> None:
    """WRK-8, CRV-6: RLHF runs whose curves are evaluated in one array of all their steps
    (``rlhf_finish``) get, each, the draw ``rlhf_draw`` gives it alone, bit for bit: hacking,
    healthy and step-schedule runs of any length, at any place in the batch; ``rlhf_start``
    reads the stream as ``rlhf_draw`` does."""
    started, alone = [], []
    stretch = world_stretch(world)
    for seed, turn, planned, n in runs:
        steps = np.array([0.0, *np.arange(1, n + 1) * 37.0])
        plan = RunPlan(turn, planned, stretch)
        rng = np.random.default_rng(seed)
        started.append(rlhf_start(steps, plan=plan, world=world, rng=rng))
        ref = np.random.default_rng(seed)
        alone.append(rlhf_draw(steps, plan=plan, world=world, rng=ref, loss_noise=0.01))
        assert rng.bit_generator.state == ref.bit_generator.state
    together = rlhf_finish(started, decline_rate=world.decline_rate, loss_noise=0.01)
    assert [_bits(d) for d in together] == [_bits(d) for d in alone]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(seeds, st.sampled_from([JobKind.DPO, JobKind.LORA]), st.integers(1, 60)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([PAPER, CALIBRATED, ALL_STEPS]),
)
def test_wrk8_saturating_runs_evaluated_together_are_each_alone(
    runs: list[tuple[int, JobKind, int]], world: World
) -> None:
    """WRK-8, CRV-6: DPO and LoRA runs evaluated together (``saturating_finish``) get, each,
    the draw ``saturating_draw`` gives it alone, bit for bit, with and without a step
    schedule; ``saturating_start`` reads the stream as ``saturating_draw`` does."""
    started, alone = [], []
    for seed, kind, n in runs:
        steps = np.array([0.0, *np.arange(1, n + 1) * 23.0])
        plan = RunPlan(planned_steps=20.0 * n)
        rng, ref = np.random.default_rng(seed), np.random.default_rng(seed)
        started.append(saturating_start(steps, kind=kind, plan=plan, world=world, rng=rng))
        draw = saturating_draw(steps, kind=kind, plan=plan, world=world, rng=ref, loss_noise=0.01)
        alone.append(draw)
        assert rng.bit_generator.state == ref.bit_generator.state
    together = saturating_finish(started, loss_noise=0.01)
    assert [_bits(d) for d in together] == [_bits(d) for d in alone]
