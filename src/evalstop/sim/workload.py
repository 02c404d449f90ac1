"""Synthetic multi-tenant fine-tuning workloads: LoRA, DPO and RLHF jobs (spec ``WRK``).

One seed gives one workload through ``numpy.random.SeedSequence`` (``WRK-1``): job attributes
come from one child stream and each job's curves from a stream keyed by the job's index, so
the first jobs of a workload do not change when more jobs are asked for.

Distributions and their sources (each is a field of :class:`WorkloadConfig`):

- arrivals: Poisson, rate set directly or from a target offered load (``WRK-2``);
- job mix: RLHF-dominant by default, 60% RLHF, 25% DPO, 15% LoRA (the paper's setting names
  the three kinds and calls the workload RLHF-dominant; the split is ours);
- hacking share of RLHF jobs: 60% (the paper's setting);
- duration: Gavel's synthetic Philly-like law, ``60 * 10^U(1.5, 3)`` s with probability 0.8,
  else ``60 * 10^U(3, 4)`` s (Narayanan et al., OSDI 2020);
- GPUs per job: by kind. LoRA adapters are small (1 GPU 80%, 2 GPUs 20%); DPO holds a policy
  and a frozen reference (1: 30%, 2: 40%, 4: 30%); RLHF holds policy, reference, reward and
  value models (4: 50%, 8: 50%);
- evaluations: every 10% of an RLHF run, every 20% of DPO and LoRA runs;
- estimated duration: true duration times a log-normal factor with median 1.2 and log-sd 0.5
  (users over-estimate run times and are often far off; Tsafrir, Etsion & Feitelson 2007).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.core.model import Job, JobKind, JobSpec, JobTruth, Observation
from evalstop.sim.curves import CurveSample, rlhf_curves, saturating_curves

__all__ = [
    "DEFAULT_MIX",
    "GPU_CHOICES",
    "PLANNED_EVALS",
    "SECONDS_PER_STEP",
    "Workload",
    "WorkloadConfig",
    "expected_gpu_seconds",
    "generate",
]

DEFAULT_MIX: Mapping[JobKind, float] = {JobKind.RLHF: 0.6, JobKind.DPO: 0.25, JobKind.LORA: 0.15}

GPU_CHOICES: Mapping[JobKind, tuple[tuple[int, ...], tuple[float, ...]]] = {
    JobKind.LORA: ((1, 2), (0.8, 0.2)),
    JobKind.DPO: ((1, 2, 4), (0.3, 0.4, 0.3)),
    JobKind.RLHF: ((4, 8), (0.5, 0.5)),
}

PLANNED_EVALS: Mapping[JobKind, int] = {JobKind.LORA: 5, JobKind.DPO: 5, JobKind.RLHF: 10}

SECONDS_PER_STEP: Mapping[JobKind, int] = {JobKind.LORA: 2, JobKind.DPO: 6, JobKind.RLHF: 20}
"""Seconds per optimisation step (RLHF steps include rollout generation); only sets step
numbers, which the detectors report but do not use."""

SHORT_PROBABILITY = 0.8
SHORT_EXPONENT = (1.5, 3.0)
LONG_EXPONENT = (3.0, 4.0)
ESTIMATE_MEDIAN = 1.2
ESTIMATE_LOG_SD = 0.5


def _check_fraction(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value!r}")


def _check_positive(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a positive number, got {value!r}")


def _check_non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


def _check_mix(
    _inst: object, attribute: attrs.Attribute[Mapping[JobKind, float]], value: object
) -> None:
    if (
        not isinstance(value, Mapping)
        or not value
        or any(not isinstance(k, JobKind) for k in value)
    ):
        raise ValueError(f"{attribute.name} must map job kinds to shares, got {value!r}")
    shares = list(value.values())
    if any(not (s >= 0 and math.isfinite(s)) for s in shares) or not sum(shares) > 0:
        raise ValueError(f"{attribute.name} shares must be >= 0 with a positive sum: {value!r}")


def _optional_positive(
    _inst: object, attribute: attrs.Attribute[float | None], value: object
) -> None:
    if value is not None and not (isinstance(value, float | int) and value > 0):
        raise ValueError(f"{attribute.name} must be a positive number or None, got {value!r}")


def _freeze_mix(value: Mapping[JobKind, float]) -> Mapping[JobKind, float]:
    return {kind: float(value[kind]) for kind in JobKind if kind in value}


@attrs.frozen(slots=True)
class WorkloadConfig:
    """Parameters of a synthetic workload; every field is documented in the module docstring.

    ``arrival_rate`` is in jobs per hour; when None it is set so that the offered load
    (expected GPU-seconds demanded per second over the cluster's GPUs) equals ``load``.
    """

    n_jobs: int = attrs.field(default=1000, validator=attrs.validators.ge(1))
    gpus: int = attrs.field(default=64, validator=attrs.validators.ge(1))
    load: float = attrs.field(default=0.9, validator=_check_positive)
    arrival_rate: float | None = attrs.field(default=None, validator=_optional_positive)
    mix: Mapping[JobKind, float] = attrs.field(
        default=DEFAULT_MIX, converter=_freeze_mix, validator=_check_mix
    )
    hacking_share: float = attrs.field(default=0.6, validator=_check_fraction)
    eval_noise: float = attrs.field(default=0.02, validator=_check_non_negative)
    loss_noise: float = attrs.field(default=0.01, validator=_check_non_negative)

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
    """A generated workload: its config, seed and jobs in submit order."""

    config: WorkloadConfig
    seed: int
    jobs: tuple[Job, ...]


def _curves(
    kind: JobKind, hacking: bool, n: int, rng: np.random.Generator, config: WorkloadConfig
) -> CurveSample:
    fractions = np.arange(1, n + 1, dtype=np.float64) / n
    if kind is JobKind.RLHF:
        return rlhf_curves(
            fractions,
            hacking=hacking,
            rng=rng,
            eval_noise=config.eval_noise,
            loss_noise=config.loss_noise,
        )
    return saturating_curves(
        fractions, rng=rng, eval_noise=config.eval_noise, loss_noise=config.loss_noise
    )


class _Draws(NamedTuple):
    """The per-job attributes of a workload, drawn as arrays from one stream."""

    kinds: tuple[JobKind, ...]
    submit: npt.NDArray[np.int64]
    kind_index: npt.NDArray[np.int64]
    duration: npt.NDArray[np.int64]
    estimate: npt.NDArray[np.int64]
    hacking_draw: npt.NDArray[np.float64]
    gpu_draw: npt.NDArray[np.float64]


def _draw_attributes(config: WorkloadConfig, rng: np.random.Generator) -> _Draws:
    """Arrivals, kinds, durations, estimates and the uniforms for hacking and GPUs, in order."""
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
    return _Draws(kinds, submit, kind_index, duration, estimate, hacking_draw, gpu_draw)


def _job(i: int, draws: _Draws, curves_seq: np.random.SeedSequence, config: WorkloadConfig) -> Job:
    """Job ``i``: its drawn attributes, and curves from the stream keyed by ``i`` (WRK-1)."""
    kind = draws.kinds[int(draws.kind_index[i])]
    choices, weights = GPU_CHOICES[kind]
    gpus = choices[int(np.searchsorted(np.cumsum(weights), draws.gpu_draw[i], side="right"))]
    hacking = kind is JobKind.RLHF and bool(draws.hacking_draw[i] < config.hacking_share)
    n_evals = PLANNED_EVALS[kind]
    job_duration = max(int(draws.duration[i]), n_evals)
    curve_rng = np.random.default_rng(
        np.random.SeedSequence(curves_seq.entropy, spawn_key=(*curves_seq.spawn_key, i))
    )
    sample = _curves(kind, hacking, n_evals, curve_rng, config)
    steps_per_eval = max(1, job_duration // (n_evals * SECONDS_PER_STEP[kind]))
    proxy = sample.proxy_reward
    observations = tuple(
        Observation(
            step=steps_per_eval * (j + 1),
            eval_score=float(sample.eval_score[j]),
            loss=float(sample.loss[j]),
            proxy_reward=None if proxy is None else float(proxy[j]),
        )
        for j in range(n_evals)
    )
    spec = JobSpec(
        job_id=i,
        kind=kind,
        gpus=min(gpus, config.gpus),
        submit_time=int(draws.submit[i]),
        estimated_duration=int(draws.estimate[i]),
        planned_evals=n_evals,
    )
    truth = JobTruth(
        total_steps=steps_per_eval * n_evals,
        duration=job_duration,
        hacking=hacking,
        quality=sample.quality,
        peak_fraction=sample.peak_fraction,
    )
    return Job(spec, truth, observations)


def generate(config: WorkloadConfig, seed: int) -> Workload:
    """Draw a workload; the same ``(config, seed)`` always gives an equal workload (WRK-1)."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    attributes_seq, curves_seq = np.random.SeedSequence(seed).spawn(2)
    draws = _draw_attributes(config, np.random.default_rng(attributes_seq))
    jobs = tuple(_job(i, draws, curves_seq, config) for i in range(config.n_jobs))
    return Workload(config, seed, jobs)
