"""The EvalStop wrapper: trigger, same-event reuse, stop and save, kinds, composition (EVS-*)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import (
    Recorder,
    cluster_view,
    job_view,
    log_lines,
    make_job,
    records_of,
    simulate,
)
from evalstop.core.boundary import ClusterView, EventKind, JobView, Verdict
from evalstop.core.decision import Decision, StopOrder
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.model import Job, JobKind
from evalstop.core.policies import BASE_POLICIES, fifo
from evalstop.core.policy import Policy
from evalstop.core.wrapper import DEFAULT_WATCHED_KINDS, EvalStop, evalstop
from evalstop.engine import JobStatus, Simulator, step
from evalstop.engine.log import LogKind

K2 = DeclineDetector(2)


def verdict(fired: bool, *, detector: str = K2.name, best: int = 20) -> Verdict:
    return Verdict(
        detector=detector,
        fired=fired,
        fired_step=40 if fired else None,
        evals=4,
        best_step=best,
        best_score=0.75,
    )


def hacking_job(job_id: int = 1, **kwargs: Any) -> Job:
    """Peaks at checkpoint 1 (score 0.5), then declines: k=2 fires at checkpoint 3 (t=30 if
    started at 0), one before the end."""
    return make_job(job_id, scores=[0.5, 0.4, 0.3, 0.2], **kwargs)


# --- EVS-1 -----------------------------------------------------------------------------------


def test_evs1_stops_every_running_watched_job_whose_verdict_fired() -> None:
    """EVS-1: running RLHF jobs 1 and 3 have fired: both stopped (in running order); job 2 has
    not fired, job 4 fired but is queued, job 5 has only another detector's verdict."""
    running = [
        job_view(3, running_since=0, verdicts=(verdict(True, best=30),)),
        job_view(2, running_since=0, verdicts=(verdict(False),)),
        job_view(1, running_since=0, verdicts=(verdict(True),)),
        job_view(5, running_since=0, verdicts=(verdict(True, detector="other"),)),
    ]
    queued = [job_view(4, verdicts=(verdict(True),))]
    view = cluster_view(total=6, running=running, queued=queued)
    decision = evalstop(fifo, K2)(view)
    assert [order.job_id for order in decision.stop] == [3, 1]
    assert decision.start == (4,)  # the base policy fills the GPUs (1 free + 2 freed)
    assert decision.preempt == ()


def test_evs1_nothing_fired_is_the_base_decision() -> None:
    """EVS-1: with no verdict fired the wrapper returns exactly the base policy's decision."""
    view = cluster_view(
        total=2,
        running=[job_view(1, running_since=0, verdicts=(verdict(False),))],
        queued=[job_view(2, verdicts=(verdict(False),))],
    )
    for base in BASE_POLICIES.values():
        assert evalstop(base, K2)(view) == base(view)


def test_evs1_default_detector_is_two_declines() -> None:
    """EVS-1: evalstop(base) uses DeclineDetector(2) and is named after detector and base."""
    policy = evalstop(fifo)
    assert policy.detector == DeclineDetector(2)
    assert policy.name == "evalstop(k=2)+fifo"
    assert policy.detectors == (DeclineDetector(2),)


# --- EVS-2 -----------------------------------------------------------------------------------


def test_evs2_gpus_of_a_stopped_job_reused_in_the_same_event() -> None:
    """EVS-2: job 1 holds both GPUs; jobs 2 and 3 queue. At job 1's 3rd checkpoint (t=30) the
    detector fires; that one transition logs the checkpoint, the stop and both starts."""
    jobs = [hacking_job(1, gpus=2), make_job(2, submit=1), make_job(3, submit=2)]
    sim = Simulator(evalstop(fifo, K2), 2, check=True)
    for job in jobs:
        sim.submit(job)
    sim.run(horizon=29)
    event = sim.queue.peek()
    assert event is not None and (event.time, event.job_id, event.index) == (30, 1, 3)
    transition = step(sim.world, sim.state, event)
    assert log_lines(transition.log) == [
        (30, "checkpoint", 1),
        (30, "stop", 1),
        (30, "start", 2),
        (30, "start", 3),
    ]
    assert transition.state.free_gpus == 0
    assert transition.state.running == (2, 3)
    assert transition.state.status(1) is JobStatus.STOPPED


def test_evs2_fire_on_last_checkpoint_finishes_instead() -> None:
    """EVS-2: a detector firing at the last checkpoint finds the job already finished."""
    sim = simulate(evalstop(fifo, K2), [make_job(1, scores=[0.5, 0.4, 0.3])])
    assert sim.state.ended_jobs() == {1: JobStatus.FINISHED}
    assert records_of(sim.log, LogKind.STOP) == []


# --- EVS-3 -----------------------------------------------------------------------------------


def test_evs3_stop_records_detector_and_saved_checkpoint() -> None:
    """EVS-3: the STOP record names the detector and keeps the best checkpoint (step 10, score
    0.5, observed), not the trigger."""
    sim = simulate(evalstop(fifo, K2), [hacking_job(1, quality=[9.0, 8.0, 7.0, 6.0])])
    (stop,) = records_of(sim.log, LogKind.STOP)
    assert (stop.time, stop.reason, stop.step, stop.score, stop.index) == (
        30,
        "evalstop(k=2)",
        10,
        0.5,
        3,
    )


def test_evs3_stop_order_carries_the_verdict() -> None:
    """EVS-3: the StopOrder is (job, detector name, best step, best observed score)."""
    running = job_view(1, running_since=0, verdicts=(verdict(True, best=20),))
    view = cluster_view(total=1, running=[running])
    assert evalstop(fifo, K2)(view).stop == (StopOrder(1, "evalstop(k=2)", 20, 0.75),)


# --- EVS-4 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(JobKind))
def test_evs4_only_rlhf_watched_by_default(kind: JobKind) -> None:
    """EVS-4: by default only RLHF jobs are stopped; DPO and LoRA run to the end."""
    assert frozenset({JobKind.RLHF}) == DEFAULT_WATCHED_KINDS
    sim = simulate(evalstop(fifo, K2), [hacking_job(1, kind=kind)])
    expected = JobStatus.STOPPED if kind is JobKind.RLHF else JobStatus.FINISHED
    assert sim.state.ended_jobs() == {1: expected}
    # the verdict is still computed and shown for every kind
    view = Recorder(evalstop(fifo, K2))
    simulate(view, [hacking_job(1, kind=kind)])
    fired = [j.verdict(K2.name) for v in view.views for j in v.running]
    assert any(v is not None and v.fired for v in fired)


def test_evs4_kinds_widens_the_watch() -> None:
    """EVS-4: kinds= chooses the watched kinds."""
    jobs = [hacking_job(1, kind=JobKind.DPO), hacking_job(2, kind=JobKind.LORA)]
    watched = evalstop(fifo, K2, kinds=frozenset({JobKind.DPO}))
    sim = simulate(watched, jobs, total_gpus=2)
    assert sim.state.ended_jobs() == {1: JobStatus.STOPPED, 2: JobStatus.FINISHED}
    everything = evalstop(fifo, K2, kinds=frozenset(JobKind))
    sim = simulate(everything, [*jobs, hacking_job(3)], total_gpus=3)
    assert set(sim.state.ended_jobs().values()) == {JobStatus.STOPPED}


# --- EVS-5 -----------------------------------------------------------------------------------

WORKLOAD = [
    hacking_job(1, gpus=2),
    make_job(2, submit=1, scores=[0.1, 0.2, 0.3]),
    hacking_job(3, submit=2, estimate=25),
    make_job(4, submit=3, gpus=2, scores=[0.3, 0.3, 0.3]),
]


@pytest.mark.parametrize("name", sorted(BASE_POLICIES))
def test_evs5_composes_with_every_base_policy(name: str) -> None:
    """EVS-5: any base policy can be wrapped: the hacking jobs (1, 3) are stopped at their
    third checkpoint with their best one saved, the others finish; the base policy sees the
    cluster without the stopped job and with its GPUs free."""
    base = Recorder(BASE_POLICIES[name])
    outer = Recorder(evalstop(base, K2))
    sim = simulate(outer, WORKLOAD, total_gpus=3)
    assert sim.state.ended_jobs() == {
        1: JobStatus.STOPPED,
        2: JobStatus.FINISHED,
        3: JobStatus.STOPPED,
        4: JobStatus.FINISHED,
    }
    stops = records_of(sim.log, LogKind.STOP)
    assert [
        (r.job_id, r.index, r.step, r.score) for r in sorted(stops, key=lambda r: r.job_id)
    ] == [
        (1, 3, 10, 0.5),
        (3, 3, 10, 0.5),
    ]
    assert len(outer.views) == len(base.views)
    for before, seen in zip(outer.views, base.views, strict=True):
        stopped = {
            j.job_id for j in before.running if (v := j.verdict(K2.name)) is not None and v.fired
        }
        assert {j.job_id for j in seen.running} == {j.job_id for j in before.running} - stopped
        freed = sum(j.gpus for j in before.running if j.job_id in stopped)
        assert seen.free_gpus == before.free_gpus + freed
        assert seen.queued == before.queued
    assert any(  # the scenario does exercise a stop
        v.free_gpus > w.free_gpus for v, w in zip(base.views, outer.views, strict=True)
    )


def run_log(policy: Policy, jobs: list[Job]) -> list[tuple[Any, ...]]:
    sim = simulate(policy, jobs, total_gpus=3)
    return [(r.time, r.kind, r.job_id, r.step, r.reason) for r in sim.log]


@pytest.mark.parametrize("name", sorted(BASE_POLICIES))
def test_evs5_wrapping_twice_is_harmless(name: str) -> None:
    """EVS-5: wrapping twice with the same detector stops the same jobs, once."""
    base = BASE_POLICIES[name]
    once, twice = evalstop(base, K2), evalstop(evalstop(base, K2), K2)
    assert twice.detectors == (K2,)
    assert run_log(twice, WORKLOAD) == run_log(once, WORKLOAD)
    assert len(records_of(simulate(twice, WORKLOAD, total_gpus=3).log, LogKind.STOP)) == 2


def test_evs5_wrapping_a_wrapper_with_another_detector() -> None:
    """EVS-5: the outer wrapper stops first (k=1 fires at checkpoint 2); the inner k=3 would
    have waited until checkpoint 4. Both detectors are folded and shown on the views."""
    inner = evalstop(fifo, DeclineDetector(3))
    outer = evalstop(inner, DeclineDetector(1))
    assert outer.detectors == (DeclineDetector(3), DeclineDetector(1))
    assert outer.name == "evalstop(k=1)+evalstop(k=3)+fifo"
    sim = simulate(outer, [make_job(1, scores=[0.5, 0.4, 0.3, 0.2, 0.1])])
    (stop,) = records_of(sim.log, LogKind.STOP)
    assert (stop.time, stop.reason) == (20, "evalstop(k=1)")
    sim = simulate(inner, [make_job(1, scores=[0.5, 0.4, 0.3, 0.2, 0.1])])
    (stop,) = records_of(sim.log, LogKind.STOP)
    assert (stop.time, stop.reason) == (40, "evalstop(k=3)")


DETECTOR_CHOICES: list[Detector[Any]] = [
    DeclineDetector(1),
    DeclineDetector(2),
    StopAtProgress(0.5),
    LossPlateau(1, 0.5),
]


@given(
    base=st.sampled_from(sorted(BASE_POLICIES)),
    detector=st.sampled_from(DETECTOR_CHOICES),
    scores=st.lists(st.integers(0, 3).map(float), min_size=2, max_size=5),
)
def test_evs5_double_wrap_equals_single_wrap(
    base: str, detector: Detector[Any], scores: list[float]
) -> None:
    """EVS-5: for any base and detector, wrapping twice gives the same log as once."""
    jobs = [
        make_job(1, scores=scores, gpus=2),
        make_job(2, submit=1, scores=scores[::-1], estimate=5),
        make_job(3, submit=1, scores=scores, kind=JobKind.DPO),
    ]
    once = evalstop(BASE_POLICIES[base], detector)
    twice: EvalStop = evalstop(once, detector)
    assert run_log(twice, jobs) == run_log(once, jobs)


def test_evs5_base_sees_no_stopped_job() -> None:
    """EVS-5: hand-built: the base policy gets the view minus the stopped job, GPUs freed."""
    seen = Recorder(fifo)
    view = cluster_view(
        total=3,
        running=[
            job_view(1, gpus=2, running_since=0, verdicts=(verdict(True),)),
            job_view(2, running_since=0),
        ],
        queued=[job_view(3, gpus=2)],
    )
    decision = evalstop(seen, K2)(view)
    (base_view,) = seen.views
    assert [j.job_id for j in base_view.running] == [2]
    assert base_view.free_gpus == 2
    assert decision == Decision(start=(3,), stop=(StopOrder(1, K2.name, 20, 0.75),))


@attrs.frozen(eq=False)
class Asking:
    """A base policy (fifo's decisions) that answers ``answer`` to every ``needs_decision``
    and records what it was asked."""

    answer: bool
    asked: list[tuple[EventKind, JobView | None]] = attrs.field(factory=list)
    name: str = "asking"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        self.asked.append((cause, changed))
        return self.answer

    def __call__(self, view: ClusterView) -> Decision:
        return fifo(view)


def test_eng13_the_wrapper_asks_its_base_with_the_same_cause_and_view() -> None:
    """ENG-13: unless the reporting job's detector fired, the EvalStop wrapper answers what its
    base policy answers, asked with the same cause and changed view; a fired job needs a
    decision whatever the base says (and the base is not asked)."""
    calm = job_view(1, running_since=0, verdicts=(verdict(False),))
    fired = job_view(2, running_since=0, verdicts=(verdict(True),))
    for answer in (True, False):
        base = Asking(answer)
        wrapper = evalstop(base, K2)
        assert wrapper.needs_decision(EventKind.CHECKPOINT, calm) is answer
        assert wrapper.needs_decision(EventKind.ARRIVAL, None) is answer
        assert wrapper.needs_decision(EventKind.CHECKPOINT, fired) is True
        assert base.asked == [(EventKind.CHECKPOINT, calm), (EventKind.ARRIVAL, None)]
    assert evalstop(fifo, K2).needs_decision(EventKind.CHECKPOINT, calm) is False


@pytest.mark.parametrize("name", sorted(BASE_POLICIES))
def test_pol6_the_wrapper_keeps_its_bases_ordered_state(name: str) -> None:
    """POL-6: EvalStop over a built-in base provides an ordered state (over the base's), which
    decides what the wrapper decides; over a base without one it provides none."""
    wrapper = evalstop(BASE_POLICIES[name], K2)
    state = wrapper.start_run(4)
    assert state is not None
    view = job_view(1, running_since=0, verdicts=(verdict(False),))
    state.started(view)
    waiting = job_view(2, gpus=3, submit=1)
    state.queued(waiting)
    cluster = cluster_view(total=4, running=[view], queued=[waiting], time=5)
    assert state.decide(5, 3, EventKind.ARRIVAL, None) == wrapper(cluster)
    assert evalstop(Asking(True), K2).start_run(4) is None


@attrs.define
class Told:
    """A base policy state that records what it is told and decides nothing (POL-6)."""

    calls: list[tuple[object, ...]] = attrs.field(factory=list)
    checkpoint_views: bool = True

    def queued(self, job: JobView) -> None:
        self.calls.append(("queued", job.job_id))

    def started(self, job: JobView) -> None:
        self.calls.append(("started", job.job_id))

    def reported(self, job: JobView) -> None:
        self.calls.append(("reported", job.job_id))

    def ended(self, job_id: int) -> None:
        self.calls.append(("ended", job_id))

    def decide(
        self, time: int, free_gpus: int, cause: EventKind, changed: JobView | None
    ) -> Decision:
        self.calls.append(("decide", time, free_gpus, cause, changed))
        return Decision()


@attrs.frozen
class WithState:
    """A user's policy that provides its own state (POL-6): the wrapper keeps it."""

    state: Told
    name: str = "with-state"

    @property
    def detectors(self) -> tuple[Detector[Any], ...]:
        return ()

    def needs_decision(self, cause: EventKind, changed: JobView | None) -> bool:
        return True

    def __call__(self, view: ClusterView) -> Decision:
        return Decision()

    def start_run(self, total_gpus: int) -> Told:
        return self.state


def test_pol6_the_wrapper_state_tells_its_base_the_stop_then_asks_with_its_gpus() -> None:
    """POL-6, EVS-1: the wrapper's state asks its base's state with the engine's own time,
    free GPUs, cause and changed view; when the reporting job has fired, it tells the base
    that job ended, then asks with the job's GPUs freed and no changed view (the base never
    sees the stopped job), and adds the stop order."""
    told = Told()
    state = evalstop(WithState(told), K2).start_run(8)
    assert state is not None
    calm = job_view(1, gpus=2, running_since=0, verdicts=(verdict(False),))
    fired = job_view(2, gpus=3, running_since=0, verdicts=(verdict(True),))
    for cause in (EventKind.CHECKPOINT, EventKind.ARRIVAL):
        assert state.decide(7, 1, cause, calm) == Decision()
        assert told.calls.pop() == ("decide", 7, 1, cause, calm)
        decision = state.decide(9, 1, cause, fired)
        assert decision.stop == (StopOrder(2, K2.name, 20, 0.75),)
        assert told.calls[-2:] == [("ended", 2), ("decide", 9, 4, cause, None)]


@pytest.mark.parametrize("name", sorted(BASE_POLICIES))
def test_pol6_the_wrapper_state_restarts_the_stopped_jobs_gpus(name: str) -> None:
    """POL-6, EVS-1: over a built-in base, a fired job's GPUs go to a queued job that waited
    for them, in the same decision, exactly as the wrapper decides on the cluster view."""
    wrapper = evalstop(BASE_POLICIES[name], K2)
    state = wrapper.start_run(4)
    assert state is not None
    fired = job_view(1, gpus=2, running_since=0, verdicts=(verdict(True),))
    calm = job_view(2, gpus=1, running_since=0, verdicts=(verdict(False),))
    waiting = job_view(3, gpus=3, submit=1)
    for job in (fired, calm):
        state.started(job)
    state.queued(waiting)
    cluster = attrs.evolve(
        cluster_view(total=4, running=[fired, calm], queued=[waiting], time=50),
        cause=EventKind.CHECKPOINT,
        changed=(fired,),
    )
    decision = state.decide(50, 1, EventKind.CHECKPOINT, fired)
    assert decision == wrapper(cluster)
    assert decision.stop == (StopOrder(1, K2.name, 20, 0.75),)
    assert 3 in decision.start
