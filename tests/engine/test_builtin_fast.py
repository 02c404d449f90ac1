"""The engine's own decisions for the built-in systems (ENG-18): which systems take the path,
its keys, its information boundary, and its errors. Its equality with the pure engine on
every generated history is in ``test_fast_stateful`` and ``test_engine_stateful``."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.boundary import OBSERVABLE_SPEC_FIELDS, make_job_view
from evalstop.core.detectors import DeclineDetector, StopAtProgress
from evalstop.core.model import JobId, JobKind, JobSpec
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.core.policies import PriorityPolicy, fifo, las, sjf_est, srtf_est
from evalstop.core.policy import Policy
from evalstop.core.registry import make_policy
from evalstop.core.wrapper import evalstop
from evalstop.engine.builtin_fast import (
    BuiltinSimulator,
    Kept,
    builtin_plan,
    fifo_order,
    simulator_for,
    sjf_order,
)
from evalstop.engine.errors import EngineError
from evalstop.engine.fast import FastSimulator
from evalstop.engine.record import JobRecord
from evalstop.sim.workload import WorkloadConfig, generate

TAKEN: list[Policy] = [
    fifo,
    sjf_est,
    evalstop(fifo),
    evalstop(sjf_est, NoiseAwareDetector()),
    evalstop(fifo, StopAtProgress(0.5), kinds=frozenset(JobKind)),
]
NOT_TAKEN: list[Policy] = [
    srtf_est,
    las,
    evalstop(srtf_est),
    evalstop(evalstop(fifo)),  # the base is a wrapper, not the built-in object
    PriorityPolicy("fifo", fifo.key, incremental=True),  # equal to fifo, but not fifo itself
    evalstop(evalstop(fifo, DeclineDetector(3)), DeclineDetector(2)),  # two detectors
]


@pytest.mark.parametrize("policy", TAKEN, ids=lambda p: p.name)
def test_eng18_the_built_in_systems_take_the_path(policy: Policy) -> None:
    """ENG-18: fifo and sjf-est themselves, alone or wrapped once by EvalStop with one
    detector, run on BuiltinSimulator; the plan names the wrapper's detector and kinds."""
    assert type(simulator_for(policy, 4)) is BuiltinSimulator
    plan = builtin_plan(policy)
    assert plan is not None
    spec = make_job(3, submit=5, estimate=7).spec
    assert plan.order(spec) == (fifo_order if "fifo" in policy.name else sjf_order)(spec)
    if policy in (fifo, sjf_est):
        assert (plan.stopper, plan.kinds) == (None, frozenset())
    else:
        assert plan.stopper == policy.detector.name  # type: ignore[attr-defined]
        assert plan.kinds == policy.kinds  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", NOT_TAKEN, ids=lambda p: p.name)
def test_eng18_any_other_policy_runs_on_the_generic_engine(policy: Policy) -> None:
    """ENG-18: every other policy gets FastSimulator; BuiltinSimulator refuses it."""
    assert builtin_plan(policy) is None
    assert type(simulator_for(policy, 4, preemption_overhead=7)) is FastSimulator
    assert simulator_for(policy, 4, preemption_overhead=7)._overhead == 7
    with pytest.raises(
        ValueError, match=f"^{re.escape(policy.name)}: not a system the built-in path takes"
    ):
        BuiltinSimulator(policy, 4)


def test_eng18_simulator_for_passes_its_options() -> None:
    """ENG-18: the overhead and the check flag reach the chosen engine."""
    sim = simulator_for(fifo, 4, preemption_overhead=7, check=True)
    assert (sim._overhead, sim._check, sim._total) == (7, True, 4)
    assert simulator_for(fifo, 4)._overhead == 30
    assert simulator_for(fifo, 4)._check is False


SPECS = st.builds(
    JobSpec,
    job_id=st.integers(0, 50),
    kind=st.sampled_from(JobKind),
    gpus=st.integers(1, 8),
    submit_time=st.integers(0, 100),
    estimated_duration=st.integers(1, 100),
    eval_interval=st.integers(1, 100),
)


@given(spec=SPECS, now=st.integers(0, 1000))
def test_eng18_keys_are_the_policies_keys(spec: JobSpec, now: int) -> None:
    """ENG-18, POL-4: the path's key of a job is its policy's key of the job's view."""
    view = make_job_view(spec)
    assert fifo_order(spec) == fifo.key(view, now=now)
    assert sjf_order(spec) == sjf_est.key(view, now=now)


def test_eng18_a_spec_holds_only_observable_fields() -> None:
    """ENG-18, BND-2: the keys read a JobSpec, whose every field a view may show."""
    assert {field.name for field in attrs.fields(JobSpec)} == set(OBSERVABLE_SPEC_FIELDS)


# --- the boundary, at run time -----------------------------------------------------------

HIDDEN_SLOTS = ("job", "duration", "last_step", "observations", "planned", "next_service")


class LeakError(AssertionError):
    """A decision read a hidden field."""


class Poison:
    """Stands in for a hidden value while a decision is taken: any use of it raises."""

    def __getattr__(self, name: str) -> Any:
        raise LeakError(name)

    def _leak(self, *args: object) -> Any:
        raise LeakError("used")

    __eq__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __sub__ = __radd__ = _leak
    __hash__ = __bool__ = __index__ = __int__ = __len__ = __iter__ = __getitem__ = _leak
    __floordiv__ = __mul__ = __rsub__ = __float__ = _leak


@attrs.frozen
class SpecOnly:
    """What of a job a decision may see through the engine's job table: its spec."""

    spec: JobSpec


class Guarded(BuiltinSimulator):
    """Takes every decision with the active jobs' hidden fields poisoned and the job table
    holding specs only; checks that the keys are computed from a spec alone."""

    def __init__(self, policy: Policy, total_gpus: int, **options: Any) -> None:
        super().__init__(policy, total_gpus, **options)
        order = self._plan.order

        def checked(spec: JobSpec) -> tuple[int, ...]:
            assert type(spec) is JobSpec
            return order(spec)

        self._plan.order = checked
        self.decisions = 0

    @contextmanager
    def poisoned(self) -> Iterator[None]:
        saved = {j: [getattr(r, s) for s in HIDDEN_SLOTS] for j, r in self._active.items()}
        jobs = self._jobs
        for record in self._active.values():
            for slot in HIDDEN_SLOTS:
                setattr(record, slot, Poison())
        self._jobs = {j: SpecOnly(job.spec) for j, job in jobs.items()}  # type: ignore[misc]
        try:
            yield
        finally:
            self._jobs = jobs
            for job_id, values in saved.items():
                for slot, value in zip(HIDDEN_SLOTS, values, strict=True):
                    setattr(self._active[job_id], slot, value)
        self.decisions += 1

    def _choose(self, free: int) -> list[JobId]:
        with self.poisoned():
            return super()._choose(free)

    def _stop_keeps(self, job_id: JobId, record: JobRecord) -> Kept | None:
        with self.poisoned():
            return super()._stop_keeps(job_id, record)


def run(engine: type[E], policy: Policy, seed: int) -> E:
    work = generate(WorkloadConfig(n_jobs=120, gpus=12), seed=seed)
    sim = engine(policy, 12)
    for job in sorted(work.jobs, key=lambda j: (j.spec.submit_time, j.job_id)):
        sim.submit(job)
    sim.run()
    return sim


@pytest.mark.parametrize(
    "system", ["fifo", "sjf-est", "evalstop+fifo", "noise-aware+sjf-est", "stopat-0.5+fifo"]
)
def test_eng18_bnd4_decisions_read_no_hidden_field(system: str) -> None:
    """ENG-18, BND-4: every decision, taken with the true duration, the observations, the
    number of checkpoints and the job itself of every active job replaced by a value that
    raises when used, reads none of them, and decides as before."""
    for seed in (0, 1):
        guarded = run(Guarded, make_policy(system), seed)
        assert guarded.decisions > 100
        assert guarded.log == run(BuiltinSimulator, make_policy(system), seed).log


E = TypeVar("E", bound=BuiltinSimulator)


class Leaky(BuiltinSimulator):
    def _choose(self, free: int) -> list[JobId]:
        for record in self._active.values():
            assert record.duration != -1  # a hidden field
        return super()._choose(free)


class LeakyStop(BuiltinSimulator):
    def _stop_keeps(self, job_id: JobId, record: JobRecord) -> Kept | None:
        assert self._jobs[job_id].truth.hacking in (True, False)
        return super()._stop_keeps(job_id, record)


class GuardedLeaky(Guarded, Leaky):
    pass


class GuardedLeakyStop(Guarded, LeakyStop):
    pass


def test_eng18_the_guard_would_catch_a_leak() -> None:
    """ENG-18: (control) a decision that reads a hidden field raises under the guard."""
    with pytest.raises(LeakError):
        run(GuardedLeaky, fifo, 0)
    with pytest.raises(AttributeError, match="truth"):
        run(GuardedLeakyStop, evalstop(fifo, kinds=frozenset(JobKind)), 0)
    assert run(Leaky, fifo, 0).log == run(BuiltinSimulator, fifo, 0).log


# --- errors --------------------------------------------------------------------------------


def started(policy: Policy = fifo) -> BuiltinSimulator:
    """One job submitted at 0 with three checkpoints, arrived and started (its first
    checkpoint is due at 10)."""
    sim = BuiltinSimulator(policy, 2)
    sim.submit(make_job(1, scores=[0.3, 0.2, 0.1]))
    assert sim.advance()
    return sim


@pytest.mark.parametrize("loop", [False, True], ids=["advance", "run"])
def test_eng18_engine_errors(loop: bool) -> None:
    """ENG-1, ENG-18: an event before the clock, for an unknown job, a second arrival and a
    checkpoint out of order are errors, in the one-event path and in the hot loop alike;
    the simulator then refuses further events."""

    def go(sim: BuiltinSimulator) -> None:
        if loop:
            sim.run()
        else:
            while sim.advance():
                pass

    cases: list[tuple[tuple[int, int, int, int, int, int], str]] = [
        ((5, 2, 0, 9, 0, 0), "event for unknown job 9"),
        ((5, 2, 0, 1, 0, 0), "job 1 arrived twice"),
        ((5, 1, 0, 1, 3, 1), "job 1: checkpoint 3, expected 1"),
    ]
    for item, message in cases:
        sim = started()
        heapq.heappush(sim.queue, item)
        with pytest.raises(EngineError, match=f"^{re.escape(message)}$"):
            go(sim)
        with pytest.raises(EngineError, match="broken by an earlier error"):
            sim.advance()
    sim = started()
    sim.run(horizon=10)
    heapq.heappush(sim.queue, (4, 1, 0, 1, 2, 1))
    with pytest.raises(EngineError, match=r"^event at t=4 is before the clock t=10$"):
        sim.advance()


def test_eng18_a_stale_checkpoint_changes_only_the_clock() -> None:
    """ENG-7, ENG-18: a checkpoint of another epoch, or of an ended job, does nothing."""
    for loop in (False, True):
        sim = started()
        heapq.heappush(sim.queue, (5, 1, 0, 1, 1, 7))
        heapq.heappush(sim.queue, (5, 1, 0, 8, 1, 1))
        before = list(sim.log)
        if loop:
            sim.run(horizon=5)
        else:
            assert sim.advance() and sim.advance()
        assert sim.state.time == 5
        assert list(sim.log) == before
        sim.run()
        assert [record.kind.name for record in sim.log][-2:] == ["CHECKPOINT", "FINISH"]


@pytest.mark.parametrize("loop", [False, True], ids=["advance", "run"])
def test_eng1_the_generic_fast_engine_names_the_bad_event(loop: bool) -> None:
    """ENG-1, ENG-15: the generic fast engine (a policy with its own state) refuses an event
    for an unknown job, a second arrival and a checkpoint out of order with messages naming
    them, in the one-event path and in the hot loop alike; and a submission before the
    clock."""
    cases: list[tuple[tuple[int, int, int, int, int, int], str]] = [
        ((5, 2, 0, 9, 0, 0), "event for unknown job 9"),
        ((5, 2, 0, 1, 0, 0), "job 1 arrived twice"),
        ((5, 1, 0, 1, 3, 1), "job 1: checkpoint 3, expected 1"),
    ]
    for item, message in cases:
        sim = FastSimulator(srtf_est, 2)
        sim.submit(make_job(1, scores=[0.3, 0.2, 0.1]))
        assert sim.advance()
        heapq.heappush(sim.queue, item)
        with pytest.raises(EngineError, match=f"^{re.escape(message)}$"):
            if loop:
                sim.run()
            else:
                sim.advance()
    sim = FastSimulator(srtf_est, 2)
    sim.submit(make_job(1))
    sim.run(horizon=10)  # job 1's first checkpoint, at 10
    with pytest.raises(EngineError, match=r"^job 2 submitted at t=4, before the clock t=10$"):
        sim.submit(make_job(2, submit=4))
