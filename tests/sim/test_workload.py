"""Workload generator (WRK-1 to WRK-6, WRK-8)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.core.errors import UnknownNameError
from evalstop.core.model import Job, JobKind, Observation
from evalstop.sim.curves import RunPlan, rlhf_curves, rlhf_draw, saturating_draw
from evalstop.sim.runs import reports_at, run_reports, world_stretch
from evalstop.sim.workload import (
    GPU_CHOICES,
    MAX_HORIZON,
    SECONDS_PER_STEP,
    Workload,
    WorkloadConfig,
    curve_seeds,
    curve_stream,
    expected_gpu_seconds,
    generate,
    generate_noise_sweep,
    generate_sweep,
    sweep_jobs,
)
from evalstop.sim.worlds import CALIBRATED, PAPER, WORLDS, World, world_named


def test_wrk1_same_seed_same_workload_other_seed_differs() -> None:
    """WRK-1: equal (config, seed) give equal workloads; another seed differs."""
    config = WorkloadConfig(n_jobs=50)
    assert generate(config, 3) == generate(config, 3)
    assert generate(config, 3) != generate(config, 4)


def test_wrk1_first_jobs_curves_do_not_depend_on_job_count() -> None:
    """WRK-1: job i's curves come from a stream keyed by i: redrawn from that stream at the
    job's own checkpoints they are the job's, whatever the number of jobs."""
    compared = 0
    for n_jobs in (40, 60):
        config = WorkloadConfig(n_jobs=n_jobs)
        for job in generate(config, 11).jobs[:30]:
            if job.spec.kind is not JobKind.RLHF:
                continue
            steps = np.array([obs.step for obs in job.observations], dtype=np.float64)
            turn = job.truth.peak_fraction * steps[-1] if job.truth.hacking else math.inf
            plan = RunPlan(turn, job.spec.estimated_duration / 20, world_stretch(config.world))
            redrawn = rlhf_curves(
                steps,
                plan=plan,
                world=config.world,
                rng=curve_stream(curve_seeds(11), job.job_id),
                eval_noise=config.sigma,
                loss_noise=config.loss_noise,
            )
            # the turn is rebuilt from peak_fraction * last step: equal to within a rounding
            np.testing.assert_allclose(redrawn.quality, job.truth.quality, rtol=1e-12, atol=0)
            compared += 1
    assert compared >= 10, "too few comparable jobs: the check would be vacuous"


def test_wrk2_poisson_arrivals_match_the_rate() -> None:
    """WRK-2: mean gap is 1/rate; first arrival at 0; submit times non-decreasing."""
    workload = generate(WorkloadConfig(n_jobs=4000, arrival_rate=6.0), 1)
    submits = np.array([job.spec.submit_time for job in workload.jobs])
    assert submits[0] == 0
    assert np.all(np.diff(submits) >= 0)
    mean_gap = submits[-1] / (len(submits) - 1)
    assert abs(mean_gap - 600.0) / 600.0 < 0.06


def test_wrk2_load_sets_the_rate() -> None:
    """WRK-2: without a rate, rate * E[GPU-seconds] / GPUs equals the load."""
    config = WorkloadConfig(gpus=64, load=0.7)
    assert abs(config.jobs_per_second() * expected_gpu_seconds(config) / 64 - 0.7) < 1e-12


def test_wrk3_mix_and_hacking_share() -> None:
    """WRK-3: kind shares and the hacking share of RLHF jobs; only RLHF hacks."""
    workload = generate(WorkloadConfig(n_jobs=5000, hacking_share=0.3), 2)
    kinds = [job.spec.kind for job in workload.jobs]
    assert abs(kinds.count(JobKind.RLHF) / 5000 - 0.6) < 0.03
    assert abs(kinds.count(JobKind.DPO) / 5000 - 0.25) < 0.03
    rlhf = [job for job in workload.jobs if job.spec.kind is JobKind.RLHF]
    assert abs(sum(job.truth.hacking for job in rlhf) / len(rlhf) - 0.3) < 0.03
    assert not any(job.truth.hacking for job in workload.jobs if job.spec.kind is not JobKind.RLHF)
    for share, expected in ((0.0, 0), (1.0, len(rlhf))):
        other = generate(WorkloadConfig(n_jobs=5000, hacking_share=share), 2)
        assert sum(job.truth.hacking for job in other.jobs) == expected


def test_wrk4_sizes_follow_the_documented_laws() -> None:
    """WRK-4: Gavel durations and GPUs by kind."""
    workload = generate(WorkloadConfig(n_jobs=3000), 5)
    durations = np.array([job.truth.duration for job in workload.jobs])
    # rounded down to whole steps (WRK-7): at most one step below the law's minimum
    assert durations.min() >= int(60 * 10**1.5) - max(SECONDS_PER_STEP.values())
    assert durations.max() <= 60 * 10**4 + 1
    long_share = float(np.mean(durations > 60 * 10**3))
    assert abs(long_share - 0.2) < 0.03
    for job in workload.jobs:
        assert job.spec.gpus in GPU_CHOICES[job.spec.kind][0]
    capped = generate(WorkloadConfig(n_jobs=200, gpus=4), 5)
    assert max(job.spec.gpus for job in capped.jobs) == 4


def test_wrk5_estimates_are_biased_and_noisy() -> None:
    """WRK-5: median estimate/true ratio 1.2, log-sd 0.5."""
    workload = generate(WorkloadConfig(n_jobs=5000), 9)
    ratio = np.array([job.spec.estimated_duration / job.truth.duration for job in workload.jobs])
    assert abs(np.median(ratio) - 1.2) < 0.05
    assert abs(np.log(ratio).std() - 0.5) < 0.03


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"gpus": 0}, "gpus"),
        ({"load": -1.0}, "load"),
        ({"arrival_rate": 0.0}, "arrival_rate"),
        ({"arrival_rate": math.inf}, "arrival_rate"),
        ({"arrival_rate": math.nan}, "arrival_rate"),
        ({"load": math.inf}, "load"),
        ({"hacking_share": 1.5}, "hacking_share"),
        ({"eval_noise": -0.1}, "eval_noise"),
        ({"evals_per_run": 0}, "evals_per_run"),
        ({"evals_per_run": 2.5}, "evals_per_run"),
        ({"mix": {JobKind.RLHF: -1.0}}, "mix"),
        ({"mix": {JobKind.RLHF: 0.0}}, "mix"),
    ],
)
def test_wrk6_bad_configs_name_the_field(kwargs: dict[str, object], field: str) -> None:
    """WRK-6: a ValueError naming the field."""
    with pytest.raises(ValueError, match=field):
        WorkloadConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"arrival_rate": 1e-300}, "arrival_rate"), ({"load": 1e-300}, "load")],
)
def test_wrk6_a_rate_past_the_clock_names_its_field(kwargs: dict[str, float], field: str) -> None:
    """WRK-6: a rate at which the jobs would arrive past the clock's exact range is refused
    before any draw, naming the field that set it (it used to fail deep in the draw with
    ``submit_time must be >= 0, got -9223372036854775808``), in both generators."""
    config = WorkloadConfig(n_jobs=5, **kwargs)  # type: ignore[arg-type]
    for draw in (lambda: generate(config, 0), lambda: generate_noise_sweep((config,), 0)):
        with pytest.raises(ValueError, match=f"^{field}: 5 jobs would arrive over about"):
            draw()
    # the edge: a span just under the limit is drawn
    rate = 3600.0 * 5 / (MAX_HORIZON * 0.5)
    assert len(generate(WorkloadConfig(n_jobs=5, arrival_rate=rate), 0).jobs) == 5


def test_wrk6_negative_seed_is_rejected() -> None:
    """WRK-6: seeds are non-negative."""
    with pytest.raises(ValueError, match="seed"):
        generate(WorkloadConfig(n_jobs=1), -1)


@pytest.mark.parametrize("world", ["paper", "calibrated"])
def test_wrk7_evaluation_schedule(world: str) -> None:
    """WRK-7: at step 0 (service 0), every eval_interval steps and at the end; the interval
    comes from the estimate and the planned evaluations; the run is whole steps; RLHF plans
    the world's count, of which about planned / 1.2 happen after step 0."""
    config = WorkloadConfig(n_jobs=2000, world=world)
    workload = generate(config, 4)
    counts = []
    for job in workload.jobs:
        per_step = SECONDS_PER_STEP[job.spec.kind]
        steps = [obs.step for obs in job.observations]
        interval = job.spec.eval_interval
        planned = config.planned_evals(job.spec.kind)
        assert interval == max(1, round(job.spec.estimated_duration / per_step / planned))
        assert steps[0] == 0 and job.checkpoint_service(1) == 0
        assert steps[:-1] == [interval * i for i in range(len(steps) - 1)]
        assert steps[-1] - interval <= steps[-2] < steps[-1]
        assert job.truth.total_steps == steps[-1]
        assert job.truth.duration == steps[-1] * per_step
        assert job.checkpoint_service(job.checkpoints) == job.truth.duration
        if job.spec.kind is JobKind.RLHF:
            counts.append(job.checkpoints - 1)
    # the estimate is 1.2 times the length on median: about planned / 1.2 evaluations happen
    expected = WORLDS[world].rlhf_evals / 1.2
    assert abs(float(np.median(counts)) - expected) <= 1.0
    assert config.planned_evals(JobKind.DPO) == round(WORLDS[world].rlhf_evals / 2)


def test_wrk7_evals_per_run_sets_the_density() -> None:
    """WRK-7: evals_per_run replaces the world's planned RLHF evaluations."""
    base = generate(WorkloadConfig(n_jobs=300), 2)
    dense = generate(WorkloadConfig(n_jobs=300, evals_per_run=40), 2)
    ratios = [
        b.spec.eval_interval / d.spec.eval_interval
        for b, d in zip(base.jobs, dense.jobs, strict=True)
        if b.spec.kind is JobKind.RLHF and d.spec.eval_interval > 20
    ]
    assert ratios and abs(float(np.median(ratios)) - 4.0) < 0.2
    assert [b.truth.duration for b in base.jobs] == [d.truth.duration for d in dense.jobs]


def test_wld1_named_worlds() -> None:
    """WLD-1: two named worlds; an unknown name is an UnknownNameError listing the names."""
    assert set(WORLDS) == {"paper", "calibrated"}
    assert world_named("paper") is PAPER and world_named("calibrated") is CALIBRATED
    with pytest.raises(UnknownNameError, match="calibrated, paper"):
        world_named("real")
    with pytest.raises(ValueError, match="turn_range"):
        World("x", (0.5, 0.2), 1.0, 0.0, 10, 0.02)
    with pytest.raises(ValueError, match="plateau_share"):
        World("x", (0.2, 0.5), 1.0, 1.5, 10, 0.02)
    with pytest.raises(ValueError, match="noise_spread"):
        World("x", (0.2, 0.5), 1.0, None, 10, 0.02, noise_spread=(2.0, 1.0))
    with pytest.raises(ValueError, match="step_share"):
        World("x", (0.2, 0.5), 1.0, None, 10, 0.02, step_share=1.5)
    with pytest.raises(ValueError, match="rise_on_plan"):
        World("x", (0.2, 0.5), 1.0, None, 10, 0.02, rise_on_plan=1)  # type: ignore[arg-type]


def test_wld2_config_takes_a_world_by_name_and_overrides() -> None:
    """WLD-2: world by name or value; eval_noise and evals_per_run override its defaults."""
    assert WorkloadConfig().world is PAPER
    config = WorkloadConfig(world="calibrated")
    assert config.world is CALIBRATED
    assert config.sigma == CALIBRATED.eval_noise
    assert config.rlhf_evals == CALIBRATED.rlhf_evals
    tuned = WorkloadConfig(world=CALIBRATED, eval_noise=0.0, evals_per_run=40)
    assert (tuned.sigma, tuned.rlhf_evals) == (0.0, 40)
    with pytest.raises(UnknownNameError):
        WorkloadConfig(world="nope")
    assert generate(WorkloadConfig(n_jobs=30, world="paper"), 1) != generate(
        WorkloadConfig(n_jobs=30, world="calibrated"), 1
    )


def _reports(workload: Workload) -> list[str]:
    """Every job's reports, floats by repr (bit for bit up to NaN payloads)."""
    return [repr(job.observations) for job in workload.jobs]


def sweep_configs(
    cells: Sequence[tuple[float | None, float]], world: str, n_jobs: int, evals: int | None
) -> list[WorkloadConfig]:
    """A config per ``(eval noise, hacking share)`` cell, the rest shared, on 16 GPUs."""
    return [
        WorkloadConfig(
            n_jobs=n_jobs,
            world=world,
            eval_noise=noise,
            evals_per_run=evals,
            hacking_share=share,
            gpus=16,
        )
        for noise, share in cells
    ]


def sweep_cells(
    noises: Sequence[float | None], shares: Sequence[float], most: int
) -> st.SearchStrategy[list[tuple[float | None, float]]]:
    """Lists of 1 to ``most`` ``(eval noise, hacking share)`` cells for :func:`sweep_configs`."""
    return st.lists(
        st.tuples(st.sampled_from(list(noises)), st.sampled_from(list(shares))),
        min_size=1,
        max_size=most,
    )


@settings(max_examples=25, deadline=None)
@given(
    noises=st.lists(
        st.one_of(st.none(), st.sampled_from([0.0, 0.01, 0.02, 0.12]), st.floats(0.0, 2.0)),
        min_size=1,
        max_size=4,
    ),
    world=st.sampled_from(sorted(WORLDS)),
    n_jobs=st.integers(1, 30),
    seed=st.integers(0, 2**32),
    evals=st.one_of(st.none(), st.integers(1, 40)),
    share=st.sampled_from([0.0, 0.6, 1.0]),
)
def test_wrk8_noise_sweep_is_generate_at_each_noise(
    noises: list[float | None],
    world: str,
    n_jobs: int,
    seed: int,
    evals: int | None,
    share: float,
) -> None:
    """WRK-8: a noise sweep gives, for each config, the workload ``generate`` draws alone:
    equal, and its reports equal bit for bit; the jobs' specs and truths are shared."""
    configs = sweep_configs([(noise, share) for noise in noises], world, n_jobs, evals)
    sweep = generate_noise_sweep(configs, seed)
    assert len(sweep) == len(configs)
    for config, workload in zip(configs, sweep, strict=True):
        alone = generate(config, seed)
        assert workload == alone
        assert workload.config == config
        assert _reports(workload) == _reports(alone)
        for job, first in zip(workload.jobs, sweep[0].jobs, strict=True):
            assert job.spec is first.spec and job.truth is first.truth


@settings(max_examples=20, deadline=None)
@given(
    cells=sweep_cells([None, 0.0, 0.05, 0.12], [0.0, 0.2, 0.6, 1.0], 5),
    world=st.sampled_from(sorted(WORLDS)),
    n_jobs=st.integers(1, 30),
    seed=st.integers(0, 2**32),
    evals=st.one_of(st.none(), st.integers(1, 40)),
)
def test_wrk8_a_sweep_over_shares_and_noise_is_generate_at_each(
    cells: list[tuple[float | None, float]],
    world: str,
    n_jobs: int,
    seed: int,
    evals: int | None,
) -> None:
    """WRK-8: a sweep over hacking shares and noise levels gives, for each config, the
    workload ``generate`` draws alone, bit for bit; a DPO or LoRA job is drawn once for every
    share (the same truth), an RLHF job once per share."""
    configs = sweep_configs(cells, world, n_jobs, evals)
    sweep = generate_sweep(configs, seed)
    for config, workload in zip(configs, sweep, strict=True):
        alone = generate(config, seed)
        assert workload == alone and workload.config == config
        assert _reports(workload) == _reports(alone)
        for job, first in zip(workload.jobs, sweep[0].jobs, strict=True):
            assert job.spec is first.spec
            if job.spec.kind is not JobKind.RLHF:
                assert job.truth is first.truth


def test_wrk8_hacking_shares_change_rlhf_curves_only() -> None:
    """WRK-8: two shares of one sweep give every job the same spec and DPO and LoRA jobs the
    same reports, and some RLHF jobs other labels (so the check above is not vacuous)."""
    low, high = generate_sweep(
        [
            WorkloadConfig(n_jobs=60, hacking_share=0.2),
            WorkloadConfig(n_jobs=60, hacking_share=0.8),
        ],
        3,
    )
    assert [j.spec for j in low.jobs] == [j.spec for j in high.jobs]
    for a, b in zip(low.jobs, high.jobs, strict=True):
        if a.spec.kind is not JobKind.RLHF:
            assert a is b
    assert sum(j.truth.hacking for j in low.jobs) < sum(j.truth.hacking for j in high.jobs)
    with pytest.raises(ValueError, match="eval_noise and hacking_share only"):
        generate_sweep([WorkloadConfig(n_jobs=5), WorkloadConfig(n_jobs=6)], 0)
    with pytest.raises(ValueError, match="at least one config"):
        generate_sweep([], 0)


def test_wrk8_a_job_healthy_at_two_shares_is_drawn_once() -> None:
    """WRK-8, CRV-9: an RLHF job healthy at two shares of a sweep is one job at one noise
    level (its truth shared across noise levels), one hacking at both has a draw per share,
    and each equals the job ``generate`` draws alone at its share (so sharing changes nothing)."""
    configs = [WorkloadConfig(n_jobs=80, hacking_share=s, eval_noise=n) for s, n in SHARES]
    sweep = generate_sweep(configs, 2)
    alone = [generate(config, 2) for config in configs]
    assert [w.jobs for w in sweep] == [w.jobs for w in alone]
    low, high, noisy = sweep
    kinds = {"healthy": 0, "hacking": 0}
    for a, b, c in zip(low.jobs, high.jobs, noisy.jobs, strict=True):
        if a.spec.kind is not JobKind.RLHF:
            continue
        if not b.truth.hacking:
            kinds["healthy"] += 1
            assert a is b and c.truth is b.truth and c is not b
        elif a.truth.hacking:
            kinds["hacking"] += 1
            assert a.truth is not b.truth
    assert min(kinds.values()) >= 5  # both cases happen (80 jobs, seed 2: 5 and 12)


SHARES = ((0.2, 0.02), (0.8, 0.02), (0.8, 0.1))
"""Two shares at one noise level and the higher at another (the WRK-8 sharing test)."""


@settings(max_examples=20, deadline=None)
@given(
    cells=sweep_cells([None, 0.0, 0.12], [0.0, 0.3, 0.6, 1.0], 4),
    world=st.sampled_from(sorted(WORLDS)),
    n_jobs=st.integers(1, 30),
    seed=st.integers(0, 2**32),
    kind=st.sampled_from(list(JobKind)),
)
def test_wrk9_one_kinds_jobs_are_those_of_the_whole_sweep(
    cells: list[tuple[float | None, float]], world: str, n_jobs: int, seed: int, kind: JobKind
) -> None:
    """WRK-9: ``sweep_jobs`` gives the jobs of one kind of each workload of the whole sweep,
    in order, equal and with the same reports bit for bit; configs it refuses are refused."""
    configs = sweep_configs(cells, world, n_jobs, None)
    whole = generate_sweep(configs, seed)
    some = sweep_jobs(configs, seed, kind)
    assert len(some) == len(whole)
    for jobs, workload in zip(some, whole, strict=True):
        expected = [job for job in workload.jobs if job.spec.kind is kind]
        assert list(jobs) == expected
        assert [repr(j.observations) for j in jobs] == [repr(j.observations) for j in expected]
    with pytest.raises(ValueError, match="eval_noise and hacking_share only"):
        sweep_jobs([WorkloadConfig(n_jobs=5), WorkloadConfig(n_jobs=6)], 0, kind)


def test_wrk8_noise_levels_change_the_reports_only() -> None:
    """WRK-8: two noise levels of one sweep differ in their eval scores and proxy rewards
    (so the check above compares what noise changes), not in steps or losses."""
    low, high = generate_noise_sweep(
        [WorkloadConfig(n_jobs=20, eval_noise=0.0), WorkloadConfig(n_jobs=20, eval_noise=0.5)],
        1,
    )
    assert _reports(low) != _reports(high)
    for a, b in zip(low.jobs, high.jobs, strict=True):
        assert [o.step for o in a.observations] == [o.step for o in b.observations]
        assert [o.loss for o in a.observations] == [o.loss for o in b.observations]
        assert all(o.eval_score == q for o, q in zip(a.observations, a.truth.quality, strict=True))


def test_wrk8_a_sweep_differs_in_eval_noise_only() -> None:
    """WRK-8: configs that differ in anything but eval noise, or no config, are refused."""
    base = WorkloadConfig(n_jobs=10)
    for other in (
        WorkloadConfig(n_jobs=11),
        WorkloadConfig(n_jobs=10, world="calibrated"),
        WorkloadConfig(n_jobs=10, hacking_share=0.5),
        WorkloadConfig(n_jobs=10, evals_per_run=20),
    ):
        with pytest.raises(ValueError, match="eval_noise only"):
            generate_noise_sweep([base, other], 0)
    with pytest.raises(ValueError, match="at least one config"):
        generate_noise_sweep([], 0)
    with pytest.raises(ValueError, match="seed"):
        generate_noise_sweep([base], -1)


def test_crv13_rlhf_reports_carry_the_kl_others_none() -> None:
    """CRV-13, SIG-1: every RLHF job's reports carry a finite, rising KL, its checkpoint's;
    DPO and LoRA jobs' carry none; a noise sweep's workloads share each job's KL."""
    low, high = generate_noise_sweep(
        [WorkloadConfig(n_jobs=60, eval_noise=s) for s in (0.0, 0.1)], 5
    )
    for job, other in zip(low.jobs, high.jobs, strict=True):
        kls = [obs.kl for obs in job.observations]
        assert kls == [obs.kl for obs in other.observations]
        if job.spec.kind is JobKind.RLHF:
            finite = [kl for kl in kls if kl is not None and math.isfinite(kl)]
            assert len(finite) == len(kls)
            assert all(b > a for a, b in itertools.pairwise(finite))
        else:
            assert kls == [None] * len(kls)


@given(
    seed=st.integers(0, 2**32),
    world=st.sampled_from([PAPER, CALIBRATED]),
    rlhf=st.booleans(),
    turn=st.floats(50.0, 5_000.0),
    sigmas=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=5),
)
def test_wrk8_a_runs_noise_levels_scored_at_once_are_each_alone(
    seed: int, world: World, rlhf: bool, turn: float, sigmas: list[float]
) -> None:
    """WRK-8, MOD-5: scoring a run's noise levels at once gives, at each, the eval scores and
    proxy rewards of ``quality + (sigma m G) eps`` elementwise, bit for bit (what one noise
    level's sample gives), and reports equal to those built by the validated constructor."""
    steps = [0, *range(40, 1_000, 40), 1_017]
    plan, rng = RunPlan(turn, 900.0, world_stretch(world)), np.random.default_rng(seed)
    s = np.array(steps, dtype=np.float64)
    if rlhf:
        draw = rlhf_draw(s, plan=plan, world=world, rng=rng, loss_noise=0.01)
    else:
        draw = saturating_draw(s, kind=JobKind.DPO, plan=plan, world=world, rng=rng, loss_noise=0)
    scores, proxies = draw.scored(sigmas)
    assert (proxies is None) is (not rlhf)
    for row, sigma in enumerate(sigmas):
        scale = sigma * draw.noise_multiplier * draw.gain
        assert scores[row].tobytes() == (draw.quality + scale * draw.eval_eps).tobytes()
        if draw.proxy is not None and draw.proxy_eps is not None and proxies is not None:
            assert proxies[row].tobytes() == (draw.proxy + scale * draw.proxy_eps).tobytes()
        assert draw.sample(sigma).eval_score.tobytes() == scores[row].tobytes()
    none = [None] * len(steps)
    kls = none if draw.kl is None else draw.kl.tolist()
    for sigma, reports in zip(sigmas, reports_at(draw, steps, sigmas), strict=True):
        alone = draw.sample(sigma)
        proxy = none if alone.proxy_reward is None else alone.proxy_reward.tolist()
        scores, losses = alone.eval_score.tolist(), alone.loss.tolist()
        columns = zip(steps, scores, losses, proxy, kls, strict=True)
        validated = tuple(Observation(*row) for row in columns)
        assert repr(reports) == repr(validated) == repr(run_reports(draw, steps, sigma))


@settings(max_examples=15, deadline=None)
@given(
    cells=sweep_cells([None, 0.0, 0.12], [0.0, 0.3, 1.0], 3),
    world=st.sampled_from(sorted(WORLDS)),
    n_jobs=st.integers(1, 40),
    seed=st.integers(0, 2**32),
    evals=st.one_of(st.none(), st.integers(1, 60)),
)
def test_mod5_every_generated_job_passes_the_validated_constructor(
    cells: list[tuple[float | None, float]],
    world: str,
    n_jobs: int,
    seed: int,
    evals: int | None,
) -> None:
    """MOD-5, WRK-7: the generator builds its jobs and reports on the trusted path, which
    relies on its schedule; every job it gives is one the validated constructors accept and
    equal, its observations included."""
    for workload in generate_sweep(sweep_configs(cells, world, n_jobs, evals), seed):
        for job in workload.jobs:
            rebuilt = [Observation(*attrs.astuple(obs)) for obs in job.observations]
            assert Job(job.spec, job.truth, rebuilt) == job
