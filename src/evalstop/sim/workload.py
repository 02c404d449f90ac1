"""Synthetic multi-tenant fine-tuning workloads: LoRA, DPO and RLHF jobs (spec ``WRK``).

One seed gives one workload through ``numpy.random.SeedSequence`` (``WRK-1``): job attributes
come from one child stream and each job's curves from a stream keyed by the job's index, so
the first jobs of a workload do not change when more jobs are asked for.

Distributions and their sources (each is a field of :class:`WorkloadConfig`):

- arrivals: Poisson, rate set directly or from a target offered load (``WRK-2``);
- job mix: RLHF-dominant by default, 60% RLHF, 25% DPO, 15% LoRA (the paper's setting names
  the three kinds and calls the workload RLHF-dominant; the split is ours);
- hacking share of RLHF jobs: 60% (the paper's setting). A job hacks when its turn step, drawn
  on the absolute clock from a law scaled to give this share, falls before its last step
  (``CRV-9``), so longer runs hack more often;
- duration: Gavel's synthetic Philly-like law, ``60 * 10^U(1.5, 3)`` s with probability 0.8,
  else ``60 * 10^U(3, 4)`` s (Narayanan et al., OSDI 2020);
- GPUs per job: by kind. LoRA adapters are small (1 GPU 80%, 2 GPUs 20%); DPO holds a policy
  and a frozen reference (1: 30%, 2: 40%, 4: 30%); RLHF holds policy, reference, reward and
  value models (4: 50%, 8: 50%);
- evaluation schedule (``WRK-7``): a job evaluates every ``eval_interval`` steps, a setting of
  its config that its user chose from the *estimated* length: the estimated steps over the
  evaluations the user plans (the world's ``rlhf_evals``, or ``evals_per_run``, for RLHF and
  half as many for DPO and LoRA), and once more at the end of the run. The interval therefore
  says nothing about the true length that the estimate does not; the number of evaluations a
  job will make is hidden. Steps take ``SECONDS_PER_STEP`` seconds and a run is a whole number
  of steps;
- curves: the world's (``evalstop.sim.worlds``, ``evalstop.sim.curves``);
- estimated duration: true duration times a log-normal factor with median 1.2 and log-sd 0.5
  (users over-estimate run times and are often far off; Tsafrir, Etsion & Feitelson 2007).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from evalstop.core.model import Job, JobKind, JobSpec
from evalstop.engine.collector import without_collector
from evalstop.sim.clock import (
    ESTIMATE_LOG_SD,
    ESTIMATE_MEDIAN,
    LONG_EXPONENT,
    SECONDS_PER_STEP,
    SHORT_EXPONENT,
    SHORT_PROBABILITY,
)
from evalstop.sim.runs import (
    StartedJob,
    SweepSettings,
    draw_run,
    finish_jobs,
    start_job,
    sweep_settings,
)
from evalstop.sim.streams import CurveStreams, curve_seeds, curve_stream
from evalstop.sim.validators import (
    check_fraction,
    check_mix,
    check_non_negative,
    check_optional_count,
    check_optional_non_negative,
    check_optional_positive,
    check_positive,
)
from evalstop.sim.worlds import PAPER, World, world_named

__all__ = [
    "DEFAULT_MIX",
    "GPU_CHOICES",
    "MAX_HORIZON",
    "SECONDS_PER_STEP",
    "Workload",
    "WorkloadConfig",
    "checkpoint_steps",
    "curve_seeds",
    "curve_stream",
    "draw_run",
    "expected_gpu_seconds",
    "generate",
    "generate_noise_sweep",
    "generate_sweep",
    "schedule",
    "sweep_jobs",
]

MAX_HORIZON = float(2**53)
"""Longest expected arrival span, in seconds, a workload may have: event times are integers
built from float sums, exact up to 2^53 (chosen from the clock's arithmetic, not from data)."""

DEFAULT_MIX: Mapping[JobKind, float] = {JobKind.RLHF: 0.6, JobKind.DPO: 0.25, JobKind.LORA: 0.15}

GPU_CHOICES: Mapping[JobKind, tuple[tuple[int, ...], tuple[float, ...]]] = {
    JobKind.LORA: ((1, 2), (0.8, 0.2)),
    JobKind.DPO: ((1, 2, 4), (0.3, 0.4, 0.3)),
    JobKind.RLHF: ((4, 8), (0.5, 0.5)),
}


def _to_world(value: str | World) -> World:
    return value if isinstance(value, World) else world_named(value)


def _freeze_mix(value: Mapping[JobKind, float]) -> Mapping[JobKind, float]:
    return {kind: float(value[kind]) for kind in JobKind if kind in value}


@attrs.frozen(slots=True)
class WorkloadConfig:
    """Parameters of a synthetic workload; the module docstring gives each one's source.

    Attributes:
        n_jobs: jobs in the workload.
        gpus: GPUs in the cluster (a job never asks for more).
        load: the offered load that sets the arrival rate when ``arrival_rate`` is None:
            expected GPU-seconds demanded per second over the cluster's GPUs.
        arrival_rate: jobs per hour; None derives it from ``load``.
        mix: the share of each job kind (normalised).
        hacking_share: the share of RLHF jobs that reward-hack.
        eval_noise: the eval noise sigma; None takes the world's (spec ``WLD-2``).
        loss_noise: the relative noise of the training loss.
        world: a :class:`~evalstop.sim.worlds.World` or its name (``"paper"``, the default,
            or ``"calibrated"``).
        evals_per_run: evaluations planned over an RLHF run; None takes the world's.

    Raises:
        ValueError: a field out of its range (each validator names the field).
    """

    n_jobs: int = attrs.field(default=1000, validator=attrs.validators.ge(1))
    gpus: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    load: float = attrs.field(default=0.9, validator=check_positive)
    arrival_rate: float | None = attrs.field(default=None, validator=check_optional_positive)
    mix: Mapping[JobKind, float] = attrs.field(
        default=DEFAULT_MIX, converter=_freeze_mix, validator=check_mix
    )
    hacking_share: float = attrs.field(default=0.6, validator=check_fraction)
    eval_noise: float | None = attrs.field(default=None, validator=check_optional_non_negative)
    loss_noise: float = attrs.field(default=0.01, validator=check_non_negative)
    world: World = attrs.field(default=PAPER, converter=_to_world)
    evals_per_run: int | None = attrs.field(default=None, validator=check_optional_count)

    @property
    def sigma(self) -> float:
        """The eval noise in use: ``eval_noise``, or the world's default when it is None."""
        return self.world.eval_noise if self.eval_noise is None else float(self.eval_noise)

    @property
    def rlhf_evals(self) -> int:
        """Evaluations planned over an RLHF run's estimated length."""
        return self.world.rlhf_evals if self.evals_per_run is None else self.evals_per_run

    def planned_evals(self, kind: JobKind) -> int:
        """Evaluations planned over a run of ``kind``: :attr:`rlhf_evals` for RLHF, half as
        many (rounded, at least 1) for DPO and LoRA (WRK-7)."""
        n = self.rlhf_evals
        return n if kind is JobKind.RLHF else max(1, round(n / 2))

    def mix_probabilities(self) -> tuple[tuple[JobKind, ...], np.ndarray]:
        """Job kinds and their normalised probabilities."""
        kinds = tuple(self.mix)
        shares = np.array([self.mix[k] for k in kinds], dtype=np.float64)
        return kinds, shares / shares.sum()

    def jobs_per_second(self) -> float:
        """The Poisson arrival rate in jobs per second."""
        if self.arrival_rate is not None:
            return self.arrival_rate / 3600.0
        return float(self.load * self.gpus / expected_gpu_seconds(self))

    def check_horizon(self) -> None:
        """Refuse a rate so low that the jobs' expected arrival span ``n_jobs / rate`` passes
        :data:`MAX_HORIZON`: a ``ValueError`` naming the field that set the rate
        (``arrival_rate``, or ``load``), before any draw (spec ``WRK-6``)."""
        horizon = self.n_jobs / self.jobs_per_second()
        if not horizon <= MAX_HORIZON:
            field = "arrival_rate" if self.arrival_rate is not None else "load"
            raise ValueError(
                f"{field}: {self.n_jobs} jobs would arrive over about {horizon:.3g} s, past "
                f"the simulator's {MAX_HORIZON:.3g} s clock"
            )


def _mean_log_uniform(low: float, high: float) -> float:
    """E[10^U(low, high)]."""
    return float((10.0**high - 10.0**low) / ((high - low) * math.log(10.0)))


def expected_gpu_seconds(config: WorkloadConfig) -> float:
    """Expected GPU-seconds of one job under ``config`` (for the load-to-rate conversion)."""
    mean_duration = 60.0 * (
        SHORT_PROBABILITY * _mean_log_uniform(*SHORT_EXPONENT)
        + (1 - SHORT_PROBABILITY) * _mean_log_uniform(*LONG_EXPONENT)
    )
    kinds, probs = config.mix_probabilities()
    mean_gpus = sum(
        p * float(np.dot(GPU_CHOICES[k][0], GPU_CHOICES[k][1]))
        for k, p in zip(kinds, probs, strict=True)
    )
    return float(mean_duration * mean_gpus)


@attrs.frozen(slots=True)
class Workload:
    """A generated workload.

    Attributes:
        config: the parameters it was drawn with.
        seed: the seed it was drawn with; ``generate(config, seed)`` draws it again.
        jobs: the jobs in submit order, ``job_id`` their index.
    """

    config: WorkloadConfig
    seed: int
    jobs: tuple[Job, ...]


def schedule(
    kind: JobKind, drawn_duration: int, estimate: int, config: WorkloadConfig
) -> tuple[int, int, list[int]]:
    """``(duration, eval_interval, checkpoint steps)`` of a job (WRK-7).

    The run is ``max(1, drawn_duration // SECONDS_PER_STEP[kind])`` whole steps; the interval
    is the estimated steps over the planned evaluations, rounded, at least 1; checkpoints fall
    at step 0 (the initial policy), at every multiple of the interval before the end and at
    the last step (:func:`checkpoint_steps`).
    """
    per_step = SECONDS_PER_STEP[kind]
    total_steps = max(1, drawn_duration // per_step)
    interval = max(1, round(estimate / per_step / config.planned_evals(kind)))
    return total_steps * per_step, interval, checkpoint_steps(interval, total_steps)


def checkpoint_steps(interval: int, total_steps: int) -> list[int]:
    """The steps at which a run of ``total_steps`` steps evaluates every ``interval`` steps
    (WRK-7): its initial policy at step 0, every multiple of the interval before its end, and
    its last step."""
    return [0, *range(interval, total_steps, interval), total_steps]


def _start(
    i: int,
    draws: tuple[JobKind, int, int, int, int, float],
    streams: CurveStreams,
    sweep: SweepSettings[WorkloadConfig],
) -> StartedJob:
    """Job ``i`` of a generated workload from its draws ``(kind, gpus, submit time, estimate,
    drawn duration, turn draw)``: its schedule (WRK-7) and spec, and its curves' draws from
    ``curve_stream(curves_seq, i)`` at each share of the sweep (CRV-9, WRK-8;
    :func:`~evalstop.sim.runs.finish_jobs` makes its jobs)."""
    kind, gpus, submit, estimate, drawn_duration, turn_draw = draws
    duration, interval, steps = schedule(kind, drawn_duration, estimate, sweep[0][0])
    spec = JobSpec(i, kind, gpus, submit, estimate, interval)  # in field order
    planned = estimate / SECONDS_PER_STEP[kind]
    stream = functools.partial(streams.stream, i)
    return start_job(spec, (steps, duration, planned), turn_draw, stream, sweep)


def _gpus(kinds: list[JobKind], gpu_draw: np.ndarray, limit: int) -> list[int]:
    """Each job's GPUs: its kind's choice at its draw (capped at the cluster's ``limit``)."""
    gpus = [0] * len(kinds)
    for kind, (choices, weights) in GPU_CHOICES.items():
        chosen = [i for i, k in enumerate(kinds) if k is kind]
        if chosen:
            picks = np.searchsorted(np.cumsum(weights), gpu_draw[chosen], side="right")
            for i, pick in zip(chosen, picks.tolist(), strict=True):
                gpus[i] = min(choices[pick], limit)
    return gpus


def generate(config: WorkloadConfig, seed: int) -> Workload:
    """Draw a workload; the same ``(config, seed)`` always gives an equal workload (WRK-1).

    Args:
        config: the workload's parameters.
        seed: any integer >= 0.

    Returns:
        The workload, jobs in submit order.

    Raises:
        ValueError: a negative seed, or a rate at which the jobs would arrive past the clock
            (:meth:`WorkloadConfig.check_horizon`).
    """
    return Workload(config, seed, _generate((config,), seed)[0])


def generate_noise_sweep(configs: Sequence[WorkloadConfig], seed: int) -> tuple[Workload, ...]:
    """``generate(config, seed)`` of each config of ``configs``, which differ in
    ``eval_noise`` only: every job is drawn once and its reports scaled at each noise
    (spec ``WRK-8``), so a sweep over noise costs little more than one workload.

    Raises:
        ValueError: no config, configs that differ in more than ``eval_noise``, a
            negative seed, or a rate at which the jobs would arrive past the clock.
    """
    return _workloads(_swept(configs, "eval_noise"), seed)


def generate_sweep(configs: Sequence[WorkloadConfig], seed: int) -> tuple[Workload, ...]:
    """``generate(config, seed)`` of each config of ``configs``, which differ in eval noise
    and hacking share only: every job's curves are drawn once per run plan (an RLHF job's once
    per share, others' once) and reported once per plan and noise level (spec ``WRK-8``).

    Raises:
        ValueError: as :func:`generate_noise_sweep`, for configs that differ in more than
            ``eval_noise`` and ``hacking_share``.
    """
    return _workloads(_swept(configs, "eval_noise and hacking_share"), seed)


def sweep_jobs(
    configs: Sequence[WorkloadConfig], seed: int, kind: JobKind
) -> tuple[tuple[Job, ...], ...]:
    """The jobs of ``kind`` of each workload of :func:`generate_sweep`, in submit order and
    equal to its bit for bit, without the curves and reports of the other jobs (spec
    ``WRK-9``): for a reader of one kind's jobs alone, such as a detector's fold.

    Raises:
        ValueError: as :func:`generate_sweep`.
    """
    return _generate(_swept(configs, "eval_noise and hacking_share"), seed, kind)


def _workloads(configs: tuple[WorkloadConfig, ...], seed: int) -> tuple[Workload, ...]:
    jobs = _generate(configs, seed)
    return tuple(Workload(c, seed, each) for c, each in zip(configs, jobs, strict=True))


def _swept(configs: Sequence[WorkloadConfig], fields: str) -> tuple[WorkloadConfig, ...]:
    """``configs``, checked to differ in ``fields`` only."""
    if not configs:
        raise ValueError("a workload sweep needs at least one config")
    share = 1.0 if "hacking_share" in fields else None
    first, *others = (
        attrs.evolve(c, eval_noise=None, hacking_share=share or c.hacking_share) for c in configs
    )
    if any(other != first for other in others):
        raise ValueError(f"configs of a sweep differ in {fields} only, these in more: {configs!r}")
    return tuple(configs)


@without_collector  # WRK-10: library code only, no reference cycles
def _generate(
    configs: tuple[WorkloadConfig, ...], seed: int, kind: JobKind | None = None
) -> tuple[tuple[Job, ...], ...]:
    """The jobs of one workload per config of ``configs`` (equal but for eval noise and
    hacking share), drawn together; only those of ``kind`` when it is given."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    config = configs[0]
    config.check_horizon()
    root = np.random.SeedSequence(seed)
    attributes_seq, curves_seq = root.spawn(2)
    rng = np.random.default_rng(attributes_seq)
    n = config.n_jobs
    gaps = rng.exponential(1.0 / config.jobs_per_second(), size=n)
    gaps[0] = 0.0
    submit = np.floor(np.cumsum(gaps)).astype(np.int64)
    kinds, probs = config.mix_probabilities()
    kind_index = rng.choice(len(kinds), size=n, p=probs)
    is_long = rng.random(n) >= SHORT_PROBABILITY
    exponent = np.where(
        is_long, rng.uniform(*LONG_EXPONENT, size=n), rng.uniform(*SHORT_EXPONENT, size=n)
    )
    duration = np.maximum(np.rint(60.0 * 10.0**exponent), 1).astype(np.int64)
    estimate_factor = ESTIMATE_MEDIAN * np.exp(ESTIMATE_LOG_SD * rng.standard_normal(n))
    estimate = np.maximum(np.rint(duration * estimate_factor), 1).astype(np.int64)
    hacking_draw = rng.random(n)
    gpu_draw = rng.random(n)

    kind_of = [kinds[k] for k in kind_index.tolist()]
    draws = zip(
        kind_of,
        _gpus(kind_of, gpu_draw, config.gpus),
        submit.tolist(),
        estimate.tolist(),
        duration.tolist(),
        hacking_draw.tolist(),
        strict=True,
    )
    streams, sweep = CurveStreams(curves_seq), sweep_settings(configs)
    started = [
        _start(i, draw, streams, sweep)
        for i, draw in enumerate(draws)
        if kind is None or draw[0] is kind
    ]
    per_job = finish_jobs(started, sweep)  # every run's curves evaluated at once (WRK-8)
    return tuple(tuple(jobs[index] for jobs in per_job) for index in range(len(configs)))
