"""Jobs from table records: what the table lacks is attached by a declared, seeded rule.

A cluster trace gives arrivals, durations and GPU counts, never a job's kind, its curves or
whether it reward-hacks. :class:`AttachRule` says how those are drawn (spec ``TAB-4``); every
law is the synthetic world's own, nothing is fitted to a trace:

- **kind**, when the record has none: drawn from the synthetic world's posterior
  ``P(kind | GPUs)`` under the rule's mix and :data:`~evalstop.sim.workload.GPU_CHOICES`
  (WRK-3, WRK-4). A GPU count outside every kind's support is classed as the smallest count
  of the law at or above it (the largest, 8, when above all): so 1-GPU jobs are mostly LoRA
  (61.5% with the default mix), 2-GPU mostly DPO (77%), 4-GPU mostly RLHF (80%), and jobs on
  8 or more GPUs are RLHF, as RLHF holds four models at once;
- **hacking**, when the record has none: an RLHF job hacks when its turn step falls before
  its end (CRV-9: the turn law scaled to ``hacking_share``, so longer runs hack more often); a
  record that states its label draws its turn from the law given that label;
- **curves**: the rule's world (WLD, CRV) with its noise;
- **estimate**, when the record has none: WRK-5's law (true duration times
  ``1.2 exp(0.5 N(0, 1))``);
- **schedule**: a record without a step count runs WRK-7's schedule on its duration (whole
  steps of the kind's seconds per step, at least one); a record with one keeps it and its
  duration. The evaluation interval in steps is the record's, or WRK-7's (estimated steps
  over the planned evaluations), widened so that a job makes at most :data:`MAX_EVALS`
  evaluations after its step-0 one and they are at least a second of service apart.

Seeding follows WRK-1: one ``SeedSequence(seed)``, and job ``i``'s kind, label and estimate
from one stream keyed by ``i``, its curves from another (``i`` = rank in arrival order): a job
does not change when jobs are added after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs
import numpy as np

from evalstop.core.model import Job, JobKind, JobSpec
from evalstop.engine.collector import without_collector
from evalstop.sim.clock import ESTIMATE_LOG_SD, ESTIMATE_MEDIAN
from evalstop.sim.runs import StartedRun, finish_runs, run_plan, start_curves
from evalstop.sim.streams import CurveStreams
from evalstop.sim.tables import JobRecord, JobTable, TableError, records_from_rows
from evalstop.sim.workload import (
    DEFAULT_MIX,
    GPU_CHOICES,
    SECONDS_PER_STEP,
    WorkloadConfig,
    checkpoint_steps,
    schedule,
)
from evalstop.sim.worlds import PAPER, World, world_named

__all__ = ["MAX_EVALS", "AttachRule", "TableWorkload", "kind_posterior", "workload_from_records"]

MAX_EVALS = 1_000
"""At most this many evaluations a job after step 0: a table's interval is widened beyond it
(bounds the memory of a month-long job evaluated every few steps)."""

_FINISH_BATCH = 1_024
"""Runs whose curves are evaluated together (``finish_runs``): enough to spread numpy's cost
per call (one run alone spent most of its time there), few enough that their arrays stay
small (at most ``MAX_EVALS + 1`` checkpoints a run)."""


def _to_world(value: str | World) -> World:
    return value if isinstance(value, World) else world_named(value)


@attrs.frozen(slots=True)
class AttachRule:
    """How kinds, labels, curves and estimates are attached to table jobs (module docstring).

    The fields mean what they mean in :class:`~evalstop.sim.workload.WorkloadConfig` and are
    validated by it.
    """

    mix: Mapping[JobKind, float] = attrs.field(default=DEFAULT_MIX)
    hacking_share: float = 0.6
    world: World = attrs.field(default=PAPER, converter=_to_world)
    eval_noise: float | None = None
    loss_noise: float = 0.01
    evals_per_run: int | None = None

    def __attrs_post_init__(self) -> None:
        self.config()

    def config(self) -> WorkloadConfig:
        """The synthetic config whose laws the rule applies (validates every field)."""
        return WorkloadConfig(
            mix=self.mix,
            hacking_share=self.hacking_share,
            eval_noise=self.eval_noise,
            loss_noise=self.loss_noise,
            world=self.world,
            evals_per_run=self.evals_per_run,
        )

    def describe(self) -> dict[str, object]:
        """A JSON-ready statement of the rule (``--json``, results.json)."""
        config = self.config()
        return {
            "kind": "P(kind | GPUs) of the synthetic GPU law under the mix",
            "mix": {kind.value: share for kind, share in config.mix.items()},
            "hacking_share": self.hacking_share,
            "world": self.world.name,
            "eval_noise": config.sigma,
            "loss_noise": self.loss_noise,
            "rlhf_evals": config.rlhf_evals,
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
    """Jobs built from a table.

    Attributes:
        jobs: in arrival order; job ``i`` has id ``i`` and the table's id as its ``name``.
        seed: the seed the attached kinds, labels and curves were drawn with.
        rule: how they were attached.
    """

    jobs: tuple[Job, ...]
    seed: int
    rule: AttachRule


def _kind_of(
    record: JobRecord,
    rule: AttachRule,
    draw: float,
    cache: dict[int, tuple[tuple[JobKind, ...], np.ndarray]],
) -> JobKind:
    """The record's kind, else the posterior's kind at uniform ``draw`` (TAB-4)."""
    if record.kind is not None:
        return record.kind
    if record.hacking:
        return JobKind.RLHF
    if record.gpus not in cache:
        post = kind_posterior(record.gpus, rule.mix)
        cache[record.gpus] = (tuple(post), np.cumsum(list(post.values())))
    names, cumulative = cache[record.gpus]
    return names[min(int(np.searchsorted(cumulative, draw, side="right")), len(names) - 1)]


def _schedule(
    record: JobRecord, kind: JobKind, estimate_factor: float, config: WorkloadConfig
) -> tuple[int, int, int, list[int]]:
    """``(duration, estimate, eval interval, checkpoint steps)`` of a record (TAB-4)."""
    per_step = SECONDS_PER_STEP[kind]
    duration = record.duration
    if duration is None:
        assert record.steps is not None
        duration = record.steps * per_step
    estimate = record.estimate or max(1, round(duration * estimate_factor))
    if record.steps is None:
        duration, interval, steps = schedule(kind, duration, estimate, config)
        total = steps[-1]
    else:
        total = record.steps
        interval = max(1, round(estimate * total / duration / config.planned_evals(kind)))
    if record.eval_interval is not None:
        interval = record.eval_interval
    # At most MAX_EVALS evaluations, and at least a second of service between two of them.
    interval = max(interval, math.ceil(total / MAX_EVALS), math.ceil(total / duration))
    return duration, estimate, interval, checkpoint_steps(interval, total)


def _start(
    index: int,
    record: JobRecord,
    kind: JobKind,
    turn_draw: float,
    estimate_factor: float,
    curve_rng: np.random.Generator,
    config: WorkloadConfig,
) -> tuple[JobSpec, StartedRun]:
    """Job ``index``'s spec and its run with ``curve_rng`` read whole (:func:`_finish` makes
    the job)."""
    duration, estimate, interval, steps = _schedule(record, kind, estimate_factor, config)
    planned = estimate * steps[-1] / duration  # the estimate in the run's own steps
    hacking = record.hacking if kind is JobKind.RLHF else None
    plan = run_plan(kind, turn_draw, planned, steps[-1], config, hacking)
    s = np.array(steps, dtype=np.float64)
    run = (kind, plan, steps, duration, start_curves(kind, plan, s, curve_rng, config))
    spec = JobSpec(
        job_id=index,
        kind=kind,
        gpus=record.gpus,
        submit_time=record.arrival,
        estimated_duration=estimate,
        eval_interval=interval,
        tenant=record.tenant,
        name=record.job_id,
    )
    return spec, run


def _finish(started: list[tuple[JobSpec, StartedRun]], config: WorkloadConfig) -> list[Job]:
    """The jobs of ``started``: their runs' curves evaluated at once (``finish_runs``)."""
    made = finish_runs([run for _, run in started], config)
    return [
        Job(spec, truth, observations)
        for (spec, _), (truth, observations) in zip(started, made, strict=True)
    ]


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
    return _attach(records, rule, seed)


@without_collector  # WRK-10: library code only (the caller's items are read above), no cycles
def _attach(records: list[JobRecord], rule: AttachRule, seed: int) -> TableWorkload:
    """:func:`workload_from_records` of ``records``, in arrival order."""
    # Job i's attributes and curves come from streams keyed by i alone (TAB-4): each is
    # curve_stream(seq, i)'s, reseeded on one reused generator (WRK-1; building a numpy
    # SeedSequence and generator per job cost about 15 us, twice a job)
    attributes, curves = map(CurveStreams, np.random.SeedSequence(seed).spawn(2))
    config = rule.config()
    cache: dict[int, tuple[tuple[JobKind, ...], np.ndarray]] = {}
    jobs: list[Job] = []
    started: list[tuple[JobSpec, StartedRun]] = []
    for i, record in enumerate(records):
        rng = attributes.stream(i)  # valid until its next call: read before the next job
        kind_draw, hacking_draw = rng.random(2)
        factor = ESTIMATE_MEDIAN * math.exp(ESTIMATE_LOG_SD * rng.standard_normal())
        kind = _kind_of(record, rule, float(kind_draw), cache)
        curve_rng = curves.stream(i)  # read whole by _start
        started.append(_start(i, record, kind, float(hacking_draw), factor, curve_rng, config))
        if len(started) == _FINISH_BATCH:
            jobs += _finish(started, config)
            started = []
    jobs += _finish(started, config)
    return TableWorkload(tuple(jobs), seed, rule)
