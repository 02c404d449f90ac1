"""Jobs from table records: what the table lacks is attached by a declared, seeded rule.

A cluster trace gives arrivals, durations and GPU counts, never a job's kind, its curves or
whether it reward-hacks. :class:`AttachRule` says how those are drawn (spec ``TAB-4``):

- **kind**, when the record has none: drawn from the synthetic world's posterior
  ``P(kind | GPUs)`` under the rule's mix and :data:`~evalstop.sim.workload.GPU_CHOICES`
  (WRK-3, WRK-4). A GPU count outside every kind's support is classed as the smallest count
  of the law at or above it (the largest, 8, when above all): so 1-GPU jobs are mostly LoRA
  (61.5% with the default mix), 2-GPU mostly DPO (77%), 4-GPU mostly RLHF (80%), and jobs on
  8 or more GPUs are RLHF, as RLHF holds four models at once.
- **hacking**, when the record has none: an RLHF job hacks with probability ``hacking_share``.
- **curves**: the synthetic world's curves (CRV-1 to CRV-4) with the rule's noise.
- **evaluations**: every ``eval_interval`` seconds of service when the record has one, else
  the kind's default count (RLHF 10, DPO and LoRA 5, WRK-4), the last at the end of the run.
- **estimate**, when the record has none: WRK-5's law (true duration times
  ``1.2 exp(0.5 N(0, 1))``).
- **duration from steps**, when the record has no duration: the kind's seconds per step.

Seeding follows WRK-1: one ``SeedSequence(seed)``; kinds, labels and estimates from one child
stream, job ``i``'s curves from a stream keyed by ``i`` (``i`` = rank in arrival order).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from evalstop.core.model import Job, JobKind, JobSpec, JobTruth, Observation
from evalstop.sim.curves import CurveSample, rlhf_curves, saturating_curves
from evalstop.sim.tables import JobRecord, JobTable, TableError, records_from_rows
from evalstop.sim.workload import (
    DEFAULT_MIX,
    ESTIMATE_LOG_SD,
    ESTIMATE_MEDIAN,
    GPU_CHOICES,
    PLANNED_EVALS,
    SECONDS_PER_STEP,
)

__all__ = ["MAX_EVALS", "AttachRule", "TableWorkload", "kind_posterior", "workload_from_records"]

MAX_EVALS = 1_000
"""At most this many evaluations a job, whatever its interval (bounds memory on long jobs)."""


def _freeze_mix(value: Mapping[JobKind, float]) -> Mapping[JobKind, float]:
    return {kind: float(value[kind]) for kind in JobKind if kind in value}


def _check_mix(_inst: object, _attribute: object, value: Mapping[JobKind, float]) -> None:
    shares = list(value.values())
    if not shares or any(not (s >= 0 and math.isfinite(s)) for s in shares) or sum(shares) <= 0:
        raise ValueError(f"mix shares must be >= 0 with a positive sum, got {value!r}")


def _fraction(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be >= 0, got {value!r}")


@attrs.frozen(slots=True)
class AttachRule:
    """How kinds, labels, curves and estimates are attached to table jobs (module docstring)."""

    mix: Mapping[JobKind, float] = attrs.field(
        default=DEFAULT_MIX, converter=_freeze_mix, validator=_check_mix
    )
    hacking_share: float = attrs.field(default=0.6, validator=_fraction)
    eval_noise: float = attrs.field(default=0.02, validator=_non_negative)
    loss_noise: float = attrs.field(default=0.01, validator=_non_negative)

    def describe(self) -> dict[str, object]:
        """A JSON-ready statement of the rule (for ``--json`` and results.json)."""
        return {
            "kind": "posterior P(kind | GPUs) of the synthetic law under mix",
            "mix": {kind.value: share for kind, share in self.mix.items()},
            "hacking_share": self.hacking_share,
            "eval_noise": self.eval_noise,
            "loss_noise": self.loss_noise,
        }


def _gpu_class(gpus: int) -> int:
    counts = sorted({c for choices, _ in GPU_CHOICES.values() for c in choices})
    return next((c for c in counts if c >= gpus), counts[-1])


def kind_posterior(gpus: int, mix: Mapping[JobKind, float]) -> dict[JobKind, float]:
    """``P(kind | gpus)`` under ``mix`` and the synthetic GPU law (``TAB-4``)."""
    klass = _gpu_class(gpus)
    weights: dict[JobKind, float] = {}
    for kind, share in mix.items():
        choices, probs = GPU_CHOICES[kind]
        weights[kind] = share * dict(zip(choices, probs, strict=True)).get(klass, 0.0)
    total = sum(weights.values())
    if total <= 0:  # the mix has no kind that runs on this class: fall back to the mix
        total = sum(mix.values())
        weights = dict(mix)
    return {kind: w / total for kind, w in weights.items() if w > 0}


@attrs.frozen(slots=True)
class TableWorkload:
    """Jobs built from a table: in arrival order, job ``i`` has id ``i`` and the table's id as
    its ``name``."""

    jobs: tuple[Job, ...]
    seed: int
    rule: AttachRule


def _draw_kinds(
    records: Sequence[JobRecord], rule: AttachRule, rng: np.random.Generator
) -> list[JobKind]:
    draws = rng.random(len(records))
    cache: dict[int, tuple[tuple[JobKind, ...], np.ndarray]] = {}
    kinds = []
    for record, u in zip(records, draws, strict=True):
        if record.kind is not None:
            kinds.append(record.kind)
            continue
        if record.hacking:
            kinds.append(JobKind.RLHF)
            continue
        if record.gpus not in cache:
            post = kind_posterior(record.gpus, rule.mix)
            cache[record.gpus] = (tuple(post), np.cumsum(list(post.values())))
        names, cumulative = cache[record.gpus]
        index = min(int(np.searchsorted(cumulative, u, side="right")), len(names) - 1)
        kinds.append(names[index])
    return kinds


def _curves(
    kind: JobKind, hacking: bool, n: int, rng: np.random.Generator, rule: AttachRule
) -> CurveSample:
    fractions = np.arange(1, n + 1, dtype=np.float64) / n
    if kind is JobKind.RLHF:
        return rlhf_curves(
            fractions,
            hacking=hacking,
            rng=rng,
            eval_noise=rule.eval_noise,
            loss_noise=rule.loss_noise,
        )
    return saturating_curves(
        fractions, rng=rng, eval_noise=rule.eval_noise, loss_noise=rule.loss_noise
    )


def _job(
    index: int,
    record: JobRecord,
    kind: JobKind,
    hacking: bool,
    estimate_factor: float,
    curve_rng: np.random.Generator,
    rule: AttachRule,
) -> Job:
    duration = record.duration
    if duration is None:
        assert record.steps is not None
        duration = record.steps * SECONDS_PER_STEP[kind]
    if record.eval_interval is None:
        n = PLANNED_EVALS[kind]
    else:
        n = min(MAX_EVALS, max(1, duration // record.eval_interval))
    steps = record.steps if record.steps is not None else max(1, duration // SECONDS_PER_STEP[kind])
    n = min(n, steps)
    duration = max(duration, n)
    sample = _curves(kind, hacking, n, curve_rng, rule)
    proxy = sample.proxy_reward
    observations = tuple(
        Observation(
            step=((j + 1) * steps) // n,
            eval_score=float(sample.eval_score[j]),
            loss=float(sample.loss[j]),
            proxy_reward=None if proxy is None else float(proxy[j]),
        )
        for j in range(n)
    )
    estimate = record.estimate or max(1, round(duration * estimate_factor))
    spec = JobSpec(
        job_id=index,
        kind=kind,
        gpus=record.gpus,
        submit_time=record.arrival,
        estimated_duration=estimate,
        planned_evals=n,
        tenant=record.tenant,
        name=record.job_id,
    )
    truth = JobTruth(
        total_steps=steps,
        duration=duration,
        hacking=hacking,
        quality=sample.quality,
        peak_fraction=sample.peak_fraction,
    )
    return Job(spec, truth, observations)


def _as_records(
    items: JobTable | Iterable[JobRecord | Mapping[str, object]],
) -> tuple[JobRecord, ...]:
    """Records of a table, of :class:`JobRecord` values, or of rows as mappings (TAB-2)."""
    if isinstance(items, JobTable):
        return items.records
    listed = list(items)
    if not all(isinstance(item, JobRecord) for item in listed):
        if any(isinstance(item, JobRecord) for item in listed):
            raise TableError("records", None, None, "give JobRecord values or mappings, not both")
        return records_from_rows(listed).records  # type: ignore[arg-type]
    records: list[JobRecord] = [item for item in listed if isinstance(item, JobRecord)]
    seen: dict[str, int] = {}
    for number, record in enumerate(records, start=1):
        if record.job_id in seen:
            problem = f"{record.job_id!r} repeats row {seen[record.job_id]}"
            raise TableError("records", number, "id", problem)
        seen[record.job_id] = number
    return tuple(records)


def workload_from_records(
    items: JobTable | Iterable[JobRecord | Mapping[str, object]],
    rule: AttachRule | None = None,
    seed: int = 0,
) -> TableWorkload:
    """Build every job of a table, or raise :class:`TableError`: nothing partially loaded.

    ``items`` are :class:`JobRecord` values or mappings of field name to value (validated as
    table rows, ``TAB-2``). Jobs are numbered in arrival order (ties: table order).
    """
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    rule = AttachRule() if rule is None else rule
    records = sorted(_as_records(items), key=lambda r: r.arrival)
    if not records:
        raise TableError("records", None, None, "no jobs")
    attributes_seq, curves_seq = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(attributes_seq)
    kinds = _draw_kinds(records, rule, rng)
    hacking_draw = rng.random(len(records))
    factors = ESTIMATE_MEDIAN * np.exp(ESTIMATE_LOG_SD * rng.standard_normal(len(records)))
    jobs = []
    for i, record in enumerate(records):
        hacking = record.hacking
        if hacking is None:
            hacking = kinds[i] is JobKind.RLHF and bool(hacking_draw[i] < rule.hacking_share)
        curve_rng = np.random.default_rng(
            np.random.SeedSequence(curves_seq.entropy, spawn_key=(*curves_seq.spawn_key, i))
        )
        jobs.append(_job(i, record, kinds[i], hacking, float(factors[i]), curve_rng, rule))
    return TableWorkload(tuple(jobs), seed, rule)
