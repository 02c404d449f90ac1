"""Hand-built jobs for tests: tiny workloads whose outcomes can be worked out by hand."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
from hypothesis import settings

from evalstop.core.boundary import CheckpointView, ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.model import Job, JobKind, JobSpec, JobTruth, Observation
from evalstop.core.policy import Policy
from evalstop.engine import Simulator
from evalstop.engine.log import LogKind, LogRecord


def make_job(
    job_id: int,
    *,
    submit: int = 0,
    gpus: int = 1,
    scores: Sequence[float] = (0.1, 0.2, 0.3, 0.4),
    duration: int | None = None,
    estimate: int | None = None,
    kind: JobKind = JobKind.RLHF,
    hacking: bool = False,
    quality: Sequence[float] | None = None,
    losses: Sequence[float] | None = None,
    steps_per_eval: int = 10,
) -> Job:
    """A job whose checkpoints report ``scores``; by default 10 s of service per checkpoint.

    ``quality`` (the hidden truth) defaults to the scores themselves.
    """
    n = len(scores)
    duration = 10 * n if duration is None else duration
    losses = [1.0 / (i + 1) for i in range(n)] if losses is None else losses
    quality = list(scores) if quality is None else quality
    observations = [
        Observation(step=steps_per_eval * (i + 1), eval_score=s, loss=loss)
        for i, (s, loss) in enumerate(zip(scores, losses, strict=True))
    ]
    spec = JobSpec(
        job_id=job_id,
        kind=kind,
        gpus=gpus,
        submit_time=submit,
        estimated_duration=duration if estimate is None else estimate,
        eval_interval=steps_per_eval,
    )
    truth = JobTruth(
        total_steps=steps_per_eval * n,
        duration=duration,
        hacking=hacking,
        quality=quality,
        peak_fraction=0.5 if hacking else 2.0,
    )
    return Job(spec, truth, observations)


def with_hidden_truth(
    job: Job,
    *,
    total_steps: int | None = None,
    hacking: bool | None = None,
    quality: Sequence[float] | None = None,
    peak_fraction: float | None = None,
) -> Job:
    """``job`` with other hidden truth but the same spec, duration and observations."""
    truth = job.truth
    new_truth = JobTruth(
        total_steps=truth.total_steps if total_steps is None else total_steps,
        duration=truth.duration,
        hacking=truth.hacking if hacking is None else hacking,
        quality=truth.quality if quality is None else quality,
        peak_fraction=truth.peak_fraction if peak_fraction is None else peak_fraction,
    )
    return Job(job.spec, new_truth, job.observations)


def simulate(
    policy: Policy,
    jobs: Iterable[Job],
    *,
    total_gpus: int = 1,
    preemption_overhead: int = 30,
) -> Simulator:
    """Submit ``jobs`` to a checked simulator, run it to the end and return it."""
    sim = Simulator(policy, total_gpus, preemption_overhead=preemption_overhead, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run()
    return sim


def log_lines(log: Iterable[LogRecord]) -> list[tuple[int, str, int]]:
    """``(time, kind, job id)`` of each record: the skeleton of a log, easy to write by hand."""
    return [(record.time, record.kind.value, record.job_id) for record in log]


def records_of(log: Iterable[LogRecord], kind: LogKind) -> list[LogRecord]:
    """The records of one kind."""
    return [record for record in log if record.kind is kind]


@attrs.frozen
class Stateless:
    """``inner`` without its own state (no ``start_run``): the engine calls it on every
    ``ClusterView``, the plain form a state is checked against (POL-6, ENG-20)."""

    inner: Policy

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return self.inner.detectors

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return self.inner.needs_decision(cause, changed)

    def __call__(self, view: ClusterView) -> Decision:
        return self.inner(view)


@attrs.frozen(eq=False)
class Recorder(Stateless):
    """A policy that delegates to ``inner`` and records every view it is shown."""

    views: list[ClusterView] = attrs.field(factory=list)

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: ClusterView) -> Decision:
        self.views.append(view)
        return self.inner(view)


@attrs.frozen(eq=False)
class Scripted:
    """A policy that returns ``decision`` at time ``when`` and asks ``base`` otherwise."""

    base: Policy
    when: int
    decision: Decision

    @property
    def name(self) -> str:
        return f"scripted+{self.base.name}"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return self.base.detectors

    def needs_decision(self, cause: object, changed: object) -> bool:
        return True

    def __call__(self, view: ClusterView) -> Decision:
        if view.time == self.when:
            return self.decision
        return self.base(view)


def job_view(
    job_id: int,
    *,
    gpus: int = 1,
    submit: int = 0,
    estimate: int = 100,
    kind: JobKind = JobKind.RLHF,
    **fields: Any,
) -> JobView:
    """A hand-built job view (what a policy receives) for direct policy tests."""
    return JobView(
        job_id=job_id,
        kind=kind,
        gpus=gpus,
        submit_time=submit,
        estimated_duration=estimate,
        eval_interval=10,
        **({"tenant": "default", "name": None} | fields),
    )


def cluster_view(
    *,
    total: int,
    queued: Sequence[JobView] = (),
    running: Sequence[JobView] = (),
    time: int = 0,
) -> ClusterView:
    """A cluster view whose free GPUs are what the running jobs leave."""
    free = total - sum(job.gpus for job in running)
    return ClusterView(
        time=time, total_gpus=total, free_gpus=free, queued=tuple(queued), running=tuple(running)
    )


def checkpoint_view(step: int, score: float, *, index: int = 1) -> CheckpointView:
    """What a detector is shown at one report: ``score`` at ``step`` (job 1, RLHF, loss 1)."""
    return CheckpointView(
        job_id=1,
        kind=JobKind.RLHF,
        index=index,
        step=step,
        time=step,
        eval_score=score,
        loss=1.0,
        proxy_reward=None,
        estimated_progress=0.0,
    )


DEFAULT_EXAMPLES = 100
"""The default Hypothesis profile's ``max_examples`` (conftest.py)."""


def examples(floor: int) -> int:
    """The example budget of a test that needs more than the profile's: ``floor`` under the
    default profile, the profile's own when it is larger (``long``), and ``floor`` scaled down
    as the profile is when it is smaller (``mutants``: 20 of 100 runs a fifth of ``floor``)."""
    budget = settings().max_examples
    if budget >= DEFAULT_EXAMPLES:
        return max(floor, budget)
    return max(1, floor * budget // DEFAULT_EXAMPLES)


def detector_states(detector: Detector[Any], views: Sequence[CheckpointView]) -> list[Any]:
    """A detector's state after each report of ``views``, folded from its initial state."""
    state, states = detector.initial(), []
    for v in views:
        state = detector.update(state, v)
        states.append(state)
    return states


def detector_alarms(detector: Detector[Any], views: Sequence[CheckpointView]) -> list[bool]:
    """Whether the detector has fired after each report of ``views``."""
    return [detector.fired(s) for s in detector_states(detector, views)]


def with_nan_report(views: Sequence[CheckpointView], at: int) -> list[CheckpointView]:
    """``views`` with a report inserted at ``at`` whose eval score is NaN and whose side values
    (proxy reward, KL) are missing, at the step of the report it precedes (the last's at the
    end): the SIG-2 family's "a non-finite score changes no later decision"."""
    gap = attrs.evolve(
        views[min(at, len(views) - 1)], eval_score=math.nan, proxy_reward=None, kl=None
    )
    if at < len(views):
        gap = attrs.evolve(gap, step=views[at].step)
    return [*views[:at], gap, *views[at:]]


def check_nan_report_changes_nothing(
    detector: Detector[Any], views: Sequence[CheckpointView], at: int
) -> None:
    """Assert that :func:`with_nan_report` at ``at`` leaves every decision before it and after
    it as on ``views`` (the inserted report's own decision repeats the one before it)."""
    plain = detector_alarms(detector, views)
    with_gap = detector_alarms(detector, with_nan_report(views, at))
    assert with_gap[:at] == plain[:at]
    assert with_gap[at + 1 :] == plain[at:]


def load_script(path: Path, name: str) -> ModuleType:
    """The script at ``path`` imported as module ``name`` (registered in ``sys.modules``, so
    its attrs classes resolve), with its own folder on ``sys.path`` while it loads (scripts
    in ``docs/scripts`` import their siblings)."""
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(folder)
