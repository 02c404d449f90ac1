"""POL-11: a preemptive ordered state whose last decision's packing is still a fixed point
(applied, no key moved later since) decides without walking the ranking, and still decides what
the policy decides, over runs of arrivals (in and out of key order), ends, reports, time
passing and applied decisions."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import examples, job_view
from evalstop.core import ranking
from evalstop.core.boundary import ClusterView, EventKind, JobView
from evalstop.core.decision import Decision
from evalstop.core.fairshare import fair_share
from evalstop.core.model import JobKind
from evalstop.core.policies import BASE_POLICIES
from evalstop.core.policy import PolicyState
from evalstop.core.ranking import PriorityState

# ("arrive", gpus, submit delay) | ("late", gpus, 0): an arrival submitted before the others
# | ("end", which, 0) | ("report", which, loss) | ("decide", 0, 0) | ("wait", seconds, 0)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.integers(1, 6), st.integers(0, 3)),
        st.tuples(st.just("late"), st.integers(1, 6), st.just(0)),
        st.tuples(st.just("end"), st.integers(0, 40), st.just(0)),
        st.tuples(st.just("report"), st.integers(0, 40), st.integers(0, 4)),
        st.tuples(st.just("decide"), st.just(0), st.just(0)),
        st.tuples(st.just("wait"), st.integers(0, 3_000), st.just(0)),
    ),
    max_size=60,
)
LOSSES = (2.0, 1.5, 1.0, 0.9, 0.2)


def _report(job: JobView, time: int, loss: float) -> JobView:
    """``job``'s view after a checkpoint at ``time`` reporting ``loss`` (ENG-11, BND-1)."""
    since = job.running_since
    assert since is not None
    return attrs.evolve(
        job,
        evals_done=job.evals_done + 1,
        service=job.attained_service(time),
        running_since=max(since, time),
        first_loss=loss if job.first_loss is None else job.first_loss,
        previous_loss=job.last_loss,
        last_loss=loss,
    )


@settings(max_examples=examples(300))
@given(
    ops=OPS,
    total=st.integers(1, 12),
    name=st.sampled_from(["fair-share", "srtf-est", "las", "loss-aware"]),
)
def test_pol11_settled_state_decides_as_the_policy(
    ops: list[tuple[str, int, int]], total: int, name: str
) -> None:
    """POL-11, POL-6: at every decision the state decides what the policy decides on the view
    of the same jobs; each decision is applied as the engine applies it (preemptions told as
    queued, starts as started), then arrivals, late arrivals (keys before the others'), ends,
    running jobs' reports (told when the policy reads them, POL-6) and time come in
    between."""
    policy = fair_share if name == "fair-share" else BASE_POLICIES[name]
    state = policy.start_run(total)
    assert state is not None
    queued: dict[int, JobView] = {}
    running: dict[int, JobView] = {}
    free, time, submit, late = total, 0, 100, 99
    for op, a, b in ops:
        time += 1
        if op == "wait":
            time += a
            continue
        if op == "report":
            ids = sorted(running)
            if ids:
                job_id = ids[a % len(ids)]
                running[job_id] = _report(running[job_id], time, LOSSES[b])
                if state.checkpoint_views:
                    state.reported(running[job_id])
            continue
        if op in ("arrive", "late"):
            job_id = 1_000 + time
            if op == "late":
                at, late = late, late - 1
            else:
                submit += b
                at = submit
            view = JobView(job_id, JobKind.LORA, min(a, total), at, 50, 1, "one", None)
            queued[job_id] = view
            state.queued(view)
            continue
        if op == "end":
            ids = sorted([*queued, *running])
            if ids:
                job_id = ids[a % len(ids)]
                if job_id in running:
                    free += running.pop(job_id).gpus
                else:
                    del queued[job_id]
                state.ended(job_id)
            continue
        order = sorted(queued.values(), key=lambda v: (v.submit_time, v.job_id))
        cluster = ClusterView(
            time, total, free, tuple(order), tuple(running.values()), EventKind.ARRIVAL
        )
        decided = state.decide(time, free, EventKind.ARRIVAL, None)
        assert decided == policy(cluster)
        free = _apply(decided, state, queued, running, free, time)


def _apply(
    decided: Decision,
    state: PolicyState,
    queued: dict[int, JobView],
    running: dict[int, JobView],
    free: int,
    time: int,
) -> int:
    """``decided`` applied as the engine applies it (preemptions told as queued, then starts
    as started); the GPUs free after it."""
    for job_id in decided.preempt:
        job = running.pop(job_id)
        job = queued[job_id] = attrs.evolve(
            job,
            service=job.attained_service(time),
            running_since=None,
            preemptions=job.preemptions + 1,
        )
        free += job.gpus
        state.queued(job)
    for job_id in decided.start:
        job = running[job_id] = attrs.evolve(queued.pop(job_id), running_since=time)
        free -= job.gpus
        state.started(job)
    return free


def counted_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The times at which :meth:`PriorityState._walk` runs from now on in the test (the
    patch is undone by ``monkeypatch`` when the test ends)."""
    walks: list[int] = []
    original = PriorityState._walk

    def counting(self: PriorityState, time: int, *rest: Any) -> object:
        walks.append(time)
        return original(self, time, *rest)

    monkeypatch.setattr(PriorityState, "_walk", counting)
    return walks


def test_pol11_an_arrival_after_an_applied_decision_does_not_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-11: fair share with one tenant (submit order): once a decision is applied, an
    arrival, which ranks after every active job, is decided from the free GPUs alone, without
    walking the ranking; an end makes the next decision walk again."""
    state = fair_share.start_run(4)
    assert state is not None
    inner = state._one  # type: ignore[attr-defined]
    assert isinstance(inner, PriorityState)
    walks = counted_walks(monkeypatch)
    views = [JobView(i, JobKind.LORA, 2, i, 50, 1, "one", None) for i in range(4)]
    state.queued(views[0])
    state.queued(views[1])
    first = state.decide(0, 4, EventKind.ARRIVAL, None)
    assert first.start == (0, 1)  # taken off the queue by the decision itself (FSH-6)
    state.queued(views[2])
    assert state.decide(1, 0, EventKind.ARRIVAL, None).start == ()
    state.queued(views[3])
    assert state.decide(2, 0, EventKind.ARRIVAL, None).start == ()
    assert walks == []
    state.ended(0)
    assert state.decide(3, 2, EventKind.COMPLETION, None).start == (2,)


def test_pol11_a_running_key_that_moved_later_is_above_a_newcomer() -> None:
    """POL-11: under las a running job passes its first threshold (its key moves later, to
    level 1); a 2-GPU job that arrives then ranks before it, so the decision is not the
    newcomers' first fit into the free GPU: it starts the newcomer and preempts the runner,
    as the policy does."""
    state = BASE_POLICIES["las"].start_run(2)
    assert state is not None
    runner = JobView(1, JobKind.LORA, 1, 0, 50, 1, "one", None)
    state.queued(runner)
    assert state.decide(0, 2, EventKind.ARRIVAL, None).start == (1,)
    runner = attrs.evolve(runner, running_since=0)
    state.started(runner)
    assert state.decide(4_000, 1, EventKind.COMPLETION, None) == Decision()
    newcomer = JobView(2, JobKind.LORA, 2, 4_000, 50, 1, "one", None)
    state.queued(newcomer)
    decided = state.decide(4_000, 1, EventKind.ARRIVAL, None)
    cluster = ClusterView(4_000, 2, 1, (newcomer,), (runner,), EventKind.ARRIVAL)
    assert decided == BASE_POLICIES["las"](cluster)
    assert decided.start == (2,) and decided.preempt == (1,)


def test_pol11_a_key_moving_later_past_no_queued_job_does_not_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-11: under loss-aware two running 1-GPU jobs fill 2 GPUs and a queued one waits
    behind them. A report lowers the priority of one running job but leaves it before the
    queued job: decided without walking, nothing done. A later report moves it past the queued
    job, which now fits at its turn: the decision walks, starts it and preempts the runner, as
    the policy does."""
    policy = BASE_POLICIES["loss-aware"]
    state = policy.start_run(2)
    assert isinstance(state, PriorityState)
    walks = counted_walks(monkeypatch)

    def view(job_id: int, drop: float, since: int | None) -> JobView:
        return JobView(
            job_id, JobKind.LORA, 1, job_id, 50, 1, "one", None, service=10,
            running_since=since, first_loss=1.0, previous_loss=1.0, last_loss=1.0 - drop,
        )  # fmt: skip

    runners = {1: view(1, 0.5, 0), 2: view(2, 0.6, 0)}
    waiting = view(3, 0.3, None)
    for runner in runners.values():
        state.started(runner)
    state.queued(waiting)
    assert state.decide(5, 0, EventKind.ARRIVAL, None) == Decision()
    walks.clear()
    for time, drop, walked in ((10, 0.4, []), (20, 0.1, [20])):
        runners[1] = view(1, drop, time)
        state.reported(runners[1])
        cluster = ClusterView(time, 2, 0, (waiting,), tuple(runners.values()), EventKind.CHECKPOINT)
        decided = state.decide(time, 0, EventKind.CHECKPOINT, runners[1])
        assert decided == policy(cluster)
        assert walks == walked
    assert decided.start == (3,) and decided.preempt == (1,)


def test_pol11_a_key_moving_later_at_its_time_past_no_fitting_job_does_not_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-11, POL-7: under las two running 1-GPU jobs fill 2 GPUs and a 2-GPU job waits
    behind them. At 3,600 s the first passes its first threshold (its key moves later, at its
    ``moves_at`` time, past the waiting job, which still lacks a GPU): decided without
    walking, nothing done. At 3,700 s the second passes it too; the waiting job now fits at its
    turn: the decision walks, starts it and preempts both, as the policy does."""
    policy = BASE_POLICIES["las"]
    state = policy.start_run(2)
    assert isinstance(state, PriorityState)
    walks = counted_walks(monkeypatch)
    runners = tuple(
        JobView(i, JobKind.LORA, 1, 0, 50, 1, "one", None, running_since=since)
        for i, since in ((1, 0), (2, 100))
    )
    waiting = JobView(3, JobKind.LORA, 2, 5, 50, 1, "one", None)
    for runner in runners:
        state.started(runner)
    state.queued(waiting)
    assert state.decide(10, 0, EventKind.ARRIVAL, None) == Decision()
    walks.clear()
    for time, walked in ((3_600, []), (3_700, [3_700])):
        cluster = ClusterView(time, 2, 0, (waiting,), runners, EventKind.COMPLETION)
        decided = state.decide(time, 0, EventKind.COMPLETION, None)
        assert decided == policy(cluster)
        assert walks == walked
    assert decided.start == (3,) and decided.preempt == (1, 2)


def test_pol11_the_first_newcomer_that_fits_is_the_walks_first_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POL-11: under srtf-est four running 1-GPU jobs fill 4 GPUs and a 3-GPU job waits
    behind them; once that decision is applied three jobs arrive: an 8-GPU one ranked first
    (it fits nowhere), a 1-GPU one ranked before every runner (it fits) and a 2-GPU one ranked
    between the runners and the waiting job (it does not fit). The walk goes on from the
    1-GPU newcomer, its first change, instead of from the top; the decision (start it, preempt
    the lowest ranked runner) is the policy's."""
    policy = BASE_POLICIES["srtf-est"]
    state = policy.start_run(4)
    assert isinstance(state, PriorityState)
    runners = tuple(job_view(i, estimate=1_000 + i, running_since=0) for i in range(1, 5))
    waiting = job_view(5, gpus=3, estimate=5_000, submit=1)
    for runner in runners:
        state.started(runner)
    state.queued(waiting)
    assert state.decide(10, 0, EventKind.ARRIVAL, None) == Decision()
    firsts: list[object] = []
    original = ranking.walk

    def recording(*args: Any) -> tuple[list[int], list[int]]:
        firsts.append(args[4])
        return original(*args)

    monkeypatch.setattr(ranking, "walk", recording)
    newcomers = (
        job_view(8, gpus=8, estimate=0, submit=20),
        job_view(7, gpus=1, estimate=1, submit=20),
        job_view(6, gpus=2, estimate=2_000, submit=20),
    )
    for newcomer in newcomers:
        state.queued(newcomer)
    decided = state.decide(20, 0, EventKind.ARRIVAL, None)
    cluster = ClusterView(20, 4, 0, (waiting, *newcomers), runners, EventKind.ARRIVAL)
    assert decided == policy(cluster)
    assert decided.start == (7,) and decided.preempt == (4,)
    assert [first[0][-1] for first in firsts] == [7]  # type: ignore[index]
