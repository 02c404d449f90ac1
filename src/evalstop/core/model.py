"""Domain model: jobs, their hidden truth, and the observations they emit.

Everything here is an immutable value. Simulated time is an integer number of seconds
(spec ``MOD-1``): integer arithmetic makes event times exact, so equal-time ties are real ties
and are ordered deterministically by the engine instead of by floating-point accident.

A :class:`Job` pairs a :class:`JobSpec` (what a platform is told when the job is submitted) with
a :class:`JobTruth` (what only the simulator knows). Schedulers and detectors never receive a
``Job``: they receive views built by :mod:`evalstop.core.boundary`.
"""

from __future__ import annotations

import enum
import math
import numbers
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import repeat

import attrs
import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_TENANT",
    "Job",
    "JobId",
    "JobKind",
    "JobSpec",
    "JobTruth",
    "Observation",
    "frozen_array",
    "trusted_job",
    "trusted_observations",
]

DEFAULT_TENANT = "default"
"""The tenant of a job that names none: one tenant, as in a single-team cluster."""

JobId = int
"""A job's identity: a non-negative integer unique within one workload."""


class JobKind(enum.Enum):
    """The fine-tuning method a job runs (observable: it is in the job's submission)."""

    LORA = "lora"
    DPO = "dpo"
    RLHF = "rlhf"

    def __str__(self) -> str:
        return self.value


def _integer(attribute: attrs.Attribute[int], value: int) -> None:
    # Times and counts are whole numbers (spec MOD-1): a float would make ties inexact.
    if type(value) is int:  # the common case, without the ABC check below
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{attribute.name} must be an integer, got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is int and value >= 0:  # the common case, in one test (every step)
        return
    _integer(attribute, value)
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


def _positive(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    _integer(attribute, value)
    if value <= 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value!r}")


def _label(_inst: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


def _finite(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be finite, got {value!r}")


def frozen_array(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Return a read-only float64 copy of ``values``.

    attrs' ``frozen`` stops attribute assignment but not writes into an array, so every array
    held by a model value goes through this converter.
    """
    array = np.array(values, dtype=np.float64, copy=True)
    array.setflags(write=False)
    return array


_array_eq = attrs.cmp_using(eq=np.array_equal)


def _to_observations(values: Iterable[Observation]) -> tuple[Observation, ...]:
    return tuple(values)


@attrs.frozen(slots=True)
class JobSpec:
    """What the platform is told when a job is submitted (all observable).

    Attributes:
        job_id: identity, unique within a workload.
        kind: LoRA, DPO or RLHF.
        gpus: GPUs the job needs for its whole run (gang-scheduled, all or nothing).
        submit_time: arrival time in seconds.
        estimated_duration: the user's estimate of the job's service time in seconds (noisy
            and biased; the true duration is hidden).
        eval_interval: the job's evaluation interval in training steps (a setting of its
            config); the number of evaluations it will make is hidden, since it reveals the
            true length (spec ``MOD-3``).
        tenant: who submitted the job (a team, a virtual cluster); fair-share policies divide
            the cluster between tenants (spec ``TAB-5``).
        name: the job's id in the table it came from (e.g. ``"cifar10-0"``), or None for a
            generated job; a label only: the engine keys jobs by the integer ``job_id``.
    """

    job_id: JobId = attrs.field(validator=_non_negative)
    kind: JobKind = attrs.field(validator=attrs.validators.instance_of(JobKind))
    gpus: int = attrs.field(validator=_positive)
    submit_time: int = attrs.field(validator=_non_negative)
    estimated_duration: int = attrs.field(validator=_positive)
    eval_interval: int = attrs.field(validator=_positive)
    tenant: str = attrs.field(default=DEFAULT_TENANT, validator=_label)
    name: str | None = attrs.field(default=None, validator=attrs.validators.optional(_label))


@attrs.frozen(slots=True)
class Observation:
    """What a job reports at one evaluation checkpoint.

    Scores may be NaN: a failed evaluation is data, and the detectors say what they do with it
    (spec ``DET-3``).

    Attributes:
        step: the training step of the checkpoint (>= 0).
        eval_score: the world-feedback signal: a downstream, held-out evaluation.
        loss: the training loss.
        proxy_reward: the reward model's score (RLHF only; None otherwise).
        kl: the KL divergence of the policy from its initial policy (RLHF only; None when
            the run does not report it; spec ``SIG-1``).

    Raises:
        ValueError: a negative step.
    """

    step: int = attrs.field(validator=_non_negative)
    eval_score: float
    loss: float
    proxy_reward: float | None = None
    kl: float | None = None


_OBSERVATION_SLOTS = tuple(getattr(Observation, field.name) for field in attrs.fields(Observation))
"""Observation's slot descriptors in field order: their ``__set__`` fills a new object's slots
(what attrs' ``__init__`` does, through ``object.__setattr__``), bypassing the frozen guard."""


def trusted_observations(
    steps: Sequence[int],
    eval_scores: Sequence[float],
    losses: Sequence[float],
    proxy_rewards: Sequence[float] | None = None,
    kls: Sequence[float] | None = None,
) -> tuple[Observation, ...]:
    """One run's observations from its columns, without running :class:`Observation`'s field
    validator (spec ``MOD-5``): ``Observation(steps[i], eval_scores[i], losses[i],
    proxy_rewards[i], kls[i])`` for each ``i`` (a None column gives None fields), equal to
    validated construction, in about two thirds of the time.

    For a caller that guarantees what the validator checks, each step an ``int`` >= 0 (the
    generator's checkpoint steps, ``WRK-7``); a ``Job`` built from them still validates the
    run's steps as a whole (``MOD-2``). The other fields have no validator.

    Raises:
        ValueError: columns of different lengths.
    """
    n = len(steps)
    if (
        len(eval_scores) != n
        or len(losses) != n
        or (proxy_rewards is not None and len(proxy_rewards) != n)
        or (kls is not None and len(kls) != n)
    ):
        raise ValueError(f"observation columns must have one entry per step ({n})")
    columns: tuple[Iterable[object], ...] = (
        steps,
        eval_scores,
        losses,
        repeat(None, n) if proxy_rewards is None else proxy_rewards,
        repeat(None, n) if kls is None else kls,
    )
    out = tuple(map(Observation.__new__, repeat(Observation, n)))
    for slot, column in zip(_OBSERVATION_SLOTS, columns, strict=True):
        deque(map(slot.__set__, out, column), maxlen=0)
    return out


@attrs.frozen(slots=True)
class JobTruth:
    """The hidden truth of a job: never crosses the information boundary.

    Attributes:
        total_steps: true number of optimisation steps the job runs.
        duration: true service time in seconds on its GPUs (excluding preemption overhead).
        hacking: the hidden label; True when the run's true quality peaks inside the run.
        quality: noise-free true quality at each checkpoint (index i is checkpoint i + 1).
        peak_index: index into ``quality`` of its maximum (the best achievable checkpoint).
        peak_fraction: where the continuous quality curve peaks, as a fraction of the run
            (> 1 for a healthy run whose peak lies beyond its last step).
    """

    total_steps: int = attrs.field(validator=_positive)
    duration: int = attrs.field(validator=_positive)
    hacking: bool
    quality: npt.NDArray[np.float64] = attrs.field(converter=frozen_array, eq=_array_eq)
    peak_fraction: float = attrs.field(validator=_finite)

    @property
    def peak_index(self) -> int:
        """Index of the checkpoint with the highest true quality (first one on ties)."""
        return int(np.argmax(self.quality))


@attrs.frozen(slots=True)
class Job:
    """A job as the simulator knows it: public spec, hidden truth and the observations it emits.

    Checkpoint ``i + 1`` happens after ``checkpoint_service(i + 1)`` seconds of service.

    Attributes:
        spec: what the platform is told (crosses the boundary, ``BND-2``).
        truth: what only the simulator and the metrics know.
        observations: ``observations[i]`` is what checkpoint ``i + 1`` reports, its noise
            already drawn, so a simulation is a deterministic function of the workload.

    Raises:
        ValueError: no observation; not one ``truth.quality`` entry per observation; steps
            that are not positive and strictly increasing; or a duration too short to give
            each checkpoint its own second.
    """

    spec: JobSpec
    truth: JobTruth
    observations: tuple[Observation, ...] = attrs.field(converter=_to_observations)

    def __attrs_post_init__(self) -> None:
        n = len(self.observations)
        if n == 0:
            raise ValueError("observations must have at least one entry, got 0")
        if len(self.truth.quality) != n:
            raise ValueError(
                f"truth.quality must have one entry per observation ({n}), "
                f"got {len(self.truth.quality)}"
            )
        steps = [obs.step for obs in self.observations]
        duration, last = self.truth.duration, steps[-1]
        # Plain loops (a job is built per run of every workload): steps strictly increase and
        # the last is > 0; then each checkpoint_service is after the one before (from 0; a
        # step-0 evaluation of the initial policy falls at service 0, MOD-3).
        increasing, previous = last > 0, steps[0]
        for step in steps[1:]:
            if step <= previous:
                increasing = False
                break
            previous = step
        if not increasing:
            raise ValueError(
                f"observation steps must strictly increase and end above 0, got {steps}"
            )
        before = -1 if steps[0] == 0 else 0
        for step in steps:
            service = step * duration // last
            if service <= before:
                raise ValueError(
                    f"truth.duration={self.truth.duration} is too short for checkpoints at "
                    f"steps {steps}: they must fall at distinct seconds"
                )
            before = service

    @property
    def job_id(self) -> JobId:
        return self.spec.job_id

    @property
    def checkpoints(self) -> int:
        """How many checkpoints the job reports (hidden: the last one is the end of the run)."""
        return len(self.observations)

    def checkpoint_service(self, index: int) -> int:
        """Service seconds after which checkpoint ``index`` (1-based) is reached.

        Training steps take equal time: the checkpoint at step ``s`` comes after
        ``floor(s * D / S)`` seconds, ``D`` the true duration and ``S`` the last checkpoint's
        step, which is the end of the run (spec ``MOD-3``).
        """
        n = len(self.observations)
        if not 1 <= index <= n:
            raise ValueError(f"checkpoint index must be in [1, {n}], got {index}")
        return (self.observations[index - 1].step * self.truth.duration) // self.observations[
            -1
        ].step

    def checkpoint_step(self, index: int) -> int:
        """Training step of checkpoint ``index`` (1-based)."""
        return self.observations[index - 1].step


_JOB_SLOTS = tuple(getattr(Job, field.name) for field in attrs.fields(Job))


def trusted_job(spec: JobSpec, truth: JobTruth, observations: tuple[Observation, ...]) -> Job:
    """``Job(spec, truth, observations)`` without its run checks (spec ``MOD-5``): equal to
    validated construction, for a caller that guarantees what they check (``MOD-2``): at
    least one observation, one true-quality point per observation, steps that strictly
    increase and end above 0, and a duration that gives each checkpoint its own second. The
    generator's schedule guarantees them (``WRK-7``): its steps are ``checkpoint_steps``', its
    truth's quality is drawn at those steps, and its duration is its steps times the kind's
    whole seconds per step, so the checkpoint at step ``s`` falls at ``s`` times that."""
    job = Job.__new__(Job)
    for slot, value in zip(_JOB_SLOTS, (spec, truth, observations), strict=True):
        slot.__set__(job, value)
    return job
