"""POL-14: checkpoints that decide nothing are skipped (no view, no report, no decision), and
every log, decision and check is what it was."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import Stateless, examples, job_view
from evalstop.core import ranking
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.policies import BASE_POLICIES, las, loss_aware, srtf_est
from evalstop.core.policy import Policy, PolicyState
from evalstop.core.wrapper import EvalStopState, evalstop
from evalstop.engine import Simulator
from evalstop.engine.errors import EngineError
from evalstop.engine.fast import FastSimulator
from evalstop.engine.log import LogKind
from evalstop.sim.run import Cluster, simulate
from evalstop.sim.workload import WorkloadConfig, generate

WORKLOAD = generate(WorkloadConfig(n_jobs=150, gpus=16, load=1.3), seed=3)


def _counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts of the las state's reports, its checkpoint decisions and its POL-14 answers."""
    counts: Counter[str] = Counter()
    reported, decide = ranking.PriorityState.reported, ranking.PriorityState.decide
    nothing = ranking.PriorityState._decides_nothing

    def counting_reported(self: ranking.PriorityState, job: JobView) -> None:
        counts["reported"] += 1
        reported(self, job)

    def counting_decide(self: ranking.PriorityState, *args: Any) -> Decision:
        counts[f"decide {args[2].name.lower()}"] += 1
        return decide(self, *args)

    def counting_nothing(self: ranking.PriorityState, time: int) -> bool:
        said = nothing(self, time)
        counts[f"nothing {said}"] += 1
        return said

    monkeypatch.setattr(ranking.PriorityState, "reported", counting_reported)
    monkeypatch.setattr(ranking.PriorityState, "decide", counting_decide)
    monkeypatch.setattr(ranking.PriorityState, "_decides_nothing", counting_nothing)
    return counts


def test_pol14_las_skips_the_checkpoints_that_decide_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-14: under las, a checkpoint the state says decides nothing is neither reported to
    it nor decided on; the others are. The log is the pure engine's."""
    counts = _counted(monkeypatch)
    fast = simulate(WORKLOAD, las, Cluster(gpus=16))
    reports = sum(1 for r in fast.log if r.kind is LogKind.CHECKPOINT) - len(WORKLOAD.jobs)
    assert counts["nothing True"] > reports // 2  # most checkpoints decide nothing
    assert counts["nothing False"] > 0
    assert counts["nothing True"] + counts["nothing False"] == reports
    assert counts["reported"] == counts["decide checkpoint"] == counts["nothing False"]
    pure = Simulator(las, 16)
    for job in WORKLOAD.jobs:
        pure.submit(job)
    pure.run()
    assert fast.log == pure.log


@settings(max_examples=examples(12), deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_jobs=st.integers(20, 120),
    gpus=st.sampled_from([4, 8, 16]),
    load=st.sampled_from([0.8, 1.3, 2.0]),
    wrap=st.booleans(),
)
def test_pol14_eng20_every_skipped_checkpoint_decides_nothing_and_later_ones_agree(
    seed: int, n_jobs: int, gpus: int, load: float, wrap: bool
) -> None:
    """POL-14, ENG-20: on any workload, las and evalstop+las run checked (the policy itself
    asked at every skipped checkpoint and every decision) and write the log of the run without
    the skips (the policy called on every cluster view)."""
    work = generate(WorkloadConfig(n_jobs=n_jobs, gpus=gpus, load=load), seed=seed)
    policy: Policy = evalstop(las) if wrap else las
    checked = simulate(work, policy, Cluster(gpus=gpus), check=True)
    plain = evalstop(Stateless(las)) if wrap else Stateless(las)
    assert checked.log == simulate(work, plain, Cluster(gpus=gpus)).log


def test_pol14_only_a_state_whose_reports_move_no_key_can_tell() -> None:
    """POL-14: las's state (reports keep keys, POL-13; move times, POL-7) can tell; srtf-est's
    (falling keys) and loss-aware's (reports move keys) cannot, and the non-preemptive bases'
    and fair share's look at no checkpoint. EvalStop's state says what its base's says."""
    for name, policy in BASE_POLICIES.items():
        state: Any = policy.start_run(8)
        nothing = getattr(state, "decides_nothing", None)
        assert (nothing is not None) == (name == "las"), name
        wrapped: Any = evalstop(policy).start_run(8)
        assert isinstance(wrapped, EvalStopState)
        assert (wrapped.decides_nothing is not None) == (name == "las"), name
    assert srtf_est.start_run(8).decides_nothing is None  # type: ignore[union-attr]
    assert loss_aware.start_run(8).decides_nothing is None  # type: ignore[union-attr]


def test_pol14_the_las_state_says_nothing_only_while_its_packing_stands() -> None:
    """POL-14: under las two running 1-GPU jobs fill 2 GPUs and one waits, after an applied
    decision at t=10: nothing is decided at a checkpoint until a running job's move time (its
    attained service reaching the first threshold, 3,600 GPU-seconds); an arrival not yet
    decided on, or a job ended, makes the next checkpoint decide."""
    running = [job_view(i, running_since=0) for i in range(2)]
    waiting = job_view(2, submit=5)

    def settled() -> ranking.PriorityState:
        state = las.start_run(2)
        assert isinstance(state, ranking.PriorityState)
        for view in running:
            state.started(view)
        state.queued(waiting)
        assert state.decide(10, 0, EventKind.ARRIVAL, None) == Decision()
        return state

    state = settled()
    nothing = state.decides_nothing
    assert nothing is not None
    assert nothing(100) and nothing(3_599)
    assert not nothing(3_600)  # job 0's key moves (level 1): the waiting job may pass it
    cluster = ClusterView(3_600, 2, 0, (waiting,), tuple(running), EventKind.CHECKPOINT)
    assert state.decide(3_600, 0, EventKind.CHECKPOINT, None) == las(cluster) != Decision()

    state = settled()
    state.queued(job_view(3, submit=20))
    assert not _told(state)(30)  # an arrival the state has not decided on
    state = settled()
    state.ended(1)
    assert not _told(state)(30)  # a job ended: the packing changes


def test_pol14_a_job_started_by_the_last_decision_counts_from_its_start() -> None:
    """POL-14: a job the last decision started is ranked at the next decision, but its move
    time is read at its start: once the start is told, a checkpoint before that time decides
    nothing, one at or after it may (its key may have moved later)."""
    state = las.start_run(2)
    assert isinstance(state, ranking.PriorityState)
    first, second = job_view(0, gpus=2), job_view(1)
    state.queued(first)
    state.queued(second)
    assert state.decide(0, 2, EventKind.ARRIVAL, None) == Decision(start=(0,))
    nothing = _told(state)
    assert not nothing(1)  # the decision's start not told yet: not applied (POL-11)
    state.started(attrs.evolve(first, running_since=0))
    assert nothing(1_799)  # 2 GPUs reach 3,600 GPU-seconds at t=1,800
    assert not nothing(1_800)


def test_pol14_the_started_jobs_bound_begins_afresh_once_they_are_ranked() -> None:
    """POL-14: on 3 GPUs, A (2 GPUs, moves at 1,800) and B (1 GPU) start at 0; W and X wait
    and are ranked with A and B at an arrival; A ends at 20 and W starts (X, 2 GPUs, waits).
    At 2,000 A's move time has passed, but A is gone: only W's (3,620) counts, so the
    checkpoint decides nothing."""
    state = las.start_run(3)
    assert isinstance(state, ranking.PriorityState)
    a, b = job_view(0, gpus=2), job_view(1)
    w, x = job_view(2, submit=10), job_view(3, gpus=2, submit=15)
    state.queued(a)
    state.queued(b)
    assert state.decide(0, 3, EventKind.ARRIVAL, None) == Decision(start=(0, 1))
    for view in (a, b):
        state.started(attrs.evolve(view, running_since=0))
    for time, view in ((10, w), (15, x)):
        state.queued(view)
        assert state.decide(time, 0, EventKind.ARRIVAL, None) == Decision()
    state.ended(0)
    assert state.decide(20, 2, EventKind.COMPLETION, None) == Decision(start=(2,))
    state.started(attrs.evolve(w, running_since=20))
    nothing = _told(state)
    assert nothing(2_000)
    assert not nothing(3_600)  # B's move time


def test_pol14_with_nothing_queued_the_state_takes_the_empty_decision() -> None:
    """POL-14: under las with nothing queued a checkpoint decides nothing even once running
    keys have moved (3,600 GPU-seconds passed) and before the jobs started are ranked; the
    state notes that decision as ``decide`` does: a twin state asked instead decides as it
    does at the next arrival, and both as the policy."""
    running = [job_view(0, running_since=0), job_view(1, running_since=0)]
    states = []
    for _ in range(2):
        state = las.start_run(2)
        assert isinstance(state, ranking.PriorityState)
        for view in running:
            state.started(view)
        states.append(state)
    skipping, asked = states
    assert _told(skipping)(5_000)
    assert asked.decide(5_000, 0, EventKind.CHECKPOINT, None) == Decision()
    assert skipping._decided_at == asked._decided_at == 5_000
    newcomer = job_view(2, submit=5_001)
    cluster = ClusterView(5_001, 2, 0, (newcomer,), tuple(running), EventKind.ARRIVAL)
    for state in states:
        state.queued(newcomer)
    decisions = [state.decide(5_001, 0, EventKind.ARRIVAL, None) for state in states]
    assert decisions[0] == decisions[1] == las(cluster) == Decision(start=(2,), preempt=(1,))


def _told(state: ranking.PriorityState) -> Callable[[int], bool]:
    nothing = state.decides_nothing
    assert nothing is not None
    return nothing


class _Lying(ranking.PriorityState):
    """las's state, claiming that every checkpoint decides nothing."""

    @property
    def decides_nothing(self) -> Callable[[int], bool] | None:
        return lambda time: True


@attrs.frozen
class _Liar(Stateless):
    """las with a lying state."""

    inner: Policy = las

    def start_run(self, total_gpus: int) -> PolicyState:
        return _Lying(las, total_gpus)


def test_pol14_eng20_check_catches_a_broken_promise() -> None:
    """POL-14, ENG-20: with ``check=True`` a state that says a checkpoint decides nothing where
    the policy decides something makes the engine raise, naming POL-14; unchecked, the run
    trusts it (and its log is not the policy's)."""
    with pytest.raises(EngineError, match=r"las: at t=\d+ .* decides nothing \(POL-14\)"):
        simulate(WORKLOAD, _Liar(), Cluster(gpus=16), check=True)
    trusted = simulate(WORKLOAD, _Liar(), Cluster(gpus=16))
    assert trusted.log != simulate(WORKLOAD, las, Cluster(gpus=16)).log


def test_pol14_a_fired_job_is_shown_to_the_wrapper() -> None:
    """POL-14: under evalstop+las a checkpoint whose job's verdict fired is not skipped, even
    when the base's state says it decides nothing: the wrapper stops the job there, as the pure
    engine's does."""
    policy = evalstop(las)
    fast = FastSimulator(policy, 16)
    pure = Simulator(policy, 16)
    for job in WORKLOAD.jobs:
        fast.submit(job)
        pure.submit(job)
    fast.run()
    pure.run()
    stops = [r for r in fast.log if r.kind is LogKind.STOP]
    assert stops and fast.log == pure.log
