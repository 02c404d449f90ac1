"""One fast engine, which names no policy and no detector (ENG-18 retired), and the states
that keep their own starts (POL-10)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path
from typing import Any

import attrs

import evalstop.engine
from builders import make_job
from evalstop.core.boundary import (
    CheckpointView,
    ClusterView,
    EventKind,
    JobView,
    checkpoint_report,
)
from evalstop.core.decision import Decision
from evalstop.core.detectors import Detector
from evalstop.core.model import JobId
from evalstop.core.policies import fifo, srtf_est
from evalstop.core.wrapper import evalstop as wrapped
from evalstop.engine import FastSimulator

ENGINE = Path(evalstop.engine.__file__).parent
FORBIDDEN_MODULES = {
    "evalstop.core.policies",
    "evalstop.core.wrapper",
    "evalstop.core.fairshare",
    "evalstop.core.ranking",
    "evalstop.core.firstfit",
    "evalstop.core.noise_aware",
}
"""The core modules that define a policy, a policy's state or a detector class."""
FORBIDDEN_NAMES = {
    "fifo",
    "sjf_est",
    "srtf_est",
    "las",
    "loss_aware",
    "fair_share",
    "PriorityPolicy",
    "FairShare",
    "EvalStop",
    "DeclineDetector",
    "NoiseAwareDetector",
    "LossPlateau",
    "StopAtProgress",
    "Never",
}


def _named(path: Path) -> tuple[set[str], set[str]]:
    """The modules a file imports from and every name it reads or imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            modules.add(node.module)
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return modules, names


def test_eng18_retired_no_engine_module_names_a_policy_or_a_detector() -> None:
    """ENG-18: retired: the third engine is gone, and no module of ``evalstop.engine``
    imports a module that defines a policy, a policy state or a detector class, nor names
    one: the fast engine specialises only through a policy's own state (POL-6, POL-10)."""
    assert not (ENGINE / "builtin_fast.py").exists()
    for path in sorted(ENGINE.glob("*.py")):
        modules, names = _named(path)
        assert not modules & FORBIDDEN_MODULES, (path.name, modules & FORBIDDEN_MODULES)
        assert not names & FORBIDDEN_NAMES, (path.name, names & FORBIDDEN_NAMES)


def test_eng18_retired_the_old_names_give_the_one_fast_engine() -> None:
    """ENG-18: retired: ``BuiltinSimulator`` and ``simulator_for`` still resolve, with a
    DeprecationWarning, to :class:`FastSimulator` (same arguments, same results)."""
    for name in ("BuiltinSimulator", "simulator_for"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(evalstop.engine, name) is FastSimulator
        assert [w.category for w in caught] == [DeprecationWarning]
        assert name not in evalstop.engine.__all__


class Recording:
    """fifo's own state, recording the calls the engine makes and saying ``keeps_starts``."""

    def __init__(self, keeps: bool) -> None:
        inner = fifo.start_run(4)
        assert inner is not None
        self._inner = inner
        self.keeps_starts = keeps
        self.calls: list[str] = []

    @property
    def checkpoint_views(self) -> bool:
        return False

    def queued(self, job: JobView) -> None:
        self.calls.append("queued")
        self._inner.queued(job)

    def started(self, job: JobView) -> None:
        self.calls.append("started")
        self._inner.started(job)

    def reported(self, job: JobView) -> None:
        self.calls.append("reported")

    def ended(self, job_id: JobId) -> None:
        self.calls.append("ended")
        self._inner.ended(job_id)

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        return self._inner.decide(time, free_gpus, cause, changed)


@attrs.frozen
class Fifo:
    """fifo with a :class:`Recording` state."""

    state: Recording
    name: str = "recorded-fifo"
    detectors: tuple[Detector[Any], ...] = ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return fifo.needs_decision(cause, changed)

    def __call__(self, view: ClusterView) -> Decision:
        return fifo(view)

    def start_run(self, total_gpus: int) -> Recording:
        return self.state


def test_pol10_the_engine_does_not_tell_a_state_that_keeps_its_starts() -> None:
    """POL-10: a state that says ``keeps_starts`` is never told ``started``; one that does
    not is told each start; the logs are equal to plain fifo's."""
    jobs = [make_job(job_id, submit=job_id, gpus=1 + job_id % 3) for job_id in range(12)]
    logs = []
    for keeps in (True, False):
        state = Recording(keeps)
        sim = FastSimulator(Fifo(state), 4, check=True)
        for job in jobs:
            sim.submit(job)
        sim.run()
        assert state.calls.count("started") == (0 if keeps else 12)
        assert state.calls.count("queued") == state.calls.count("ended") == 12
        logs.append(sim.log)
    plain = FastSimulator(fifo, 4)
    for job in jobs:
        plain.submit(job)
    plain.run()
    assert logs[0] == logs[1] == plain.log


@attrs.frozen
class Reports:
    """A detector that never fires and puts every report it is shown in ``sink``."""

    sink: list[CheckpointView] = attrs.field(factory=list, eq=False)
    name: str = "reports"

    def initial(self) -> int:
        return 0

    def update(self, state: int, obs: CheckpointView) -> int:
        self.sink.append(obs)
        return state + 1

    def fired(self, state: int) -> bool:
        return False


def test_bnd5_the_fast_engine_reports_checkpoints_through_checkpoint_report() -> None:
    """BND-5, ENG-15: each report a detector not folded in place is shown by the fast engine
    is ``checkpoint_report`` of that checkpoint at the time it was reported, under
    preemption too (srtf-est; a restore changes the time, not the report)."""
    jobs = {
        job_id: make_job(job_id, submit=5 * job_id, gpus=2, estimate=60 - 4 * job_id)
        for job_id in range(8)
    }
    for base in (fifo, srtf_est):
        detector = Reports()
        sim = FastSimulator(wrapped(base, detector), 4)
        for job in jobs.values():
            sim.submit(job)
        sim.run()
        assert len(detector.sink) == sum(job.checkpoints for job in jobs.values())
        for report in detector.sink:
            assert report == checkpoint_report(jobs[report.job_id], report.index, report.time)


@attrs.frozen
class CountingFifo(Fifo):
    """fifo with a state, counting the ``needs_decision`` calls it is asked with no view."""

    asked: list[EventKind] = attrs.field(factory=list)

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        if changed is None:
            self.asked.append(cause)
        return fifo.needs_decision(cause, changed)


def test_eng13_a_policy_with_a_state_is_asked_once_a_run_for_an_event_without_a_view() -> None:
    """ENG-13: the fast engine asks a policy that keeps a state (POL-6) whether it needs a
    decision after an event that changed no view once a run for each kind of event, not at
    every arrival and completion; the log is plain fifo's."""
    jobs = [make_job(job_id, submit=job_id, gpus=1 + job_id % 3) for job_id in range(12)]
    policy = CountingFifo(Recording(True))
    sim = FastSimulator(policy, 4)
    for job in jobs:
        sim.submit(job)
    sim.run()
    assert sorted(policy.asked) == sorted(EventKind)
    plain = FastSimulator(fifo, 4)
    for job in jobs:
        plain.submit(job)
    plain.run()
    assert sim.log == plain.log
