"""The fast engine's arrivals, fed into its heap one at a time (ENG-15, ENG-2)."""

from __future__ import annotations

import heapq
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import make_job
from evalstop.core.policies import fifo, srtf_est
from evalstop.engine.arrivals import Arrivals, QueueItem
from evalstop.engine.fast import FastSimulator

ARRIVAL = 2

# an operation: ("submit", time offset, job id) | ("push", time offset, rank) | ("pop", 0, 0)
Op = tuple[str, int, int]
OPS = st.lists(
    st.tuples(st.sampled_from(["submit", "push", "pop"]), st.integers(0, 6), st.integers(0, 1)),
    max_size=80,
)


@given(OPS)
def test_eng15_eng2_fed_arrivals_pop_in_the_order_of_one_heap(ops: list[Op]) -> None:
    """ENG-15, ENG-2: arrivals held outside the heap and fed into it when the fed one is
    handled give the same events in the same order as one heap of everything, for any
    interleaving of submits (in or out of time order, never before the clock), other events
    and pops; the pending count is the same after each operation."""
    one: list[QueueItem] = []
    queue: list[QueueItem] = []
    arrivals = Arrivals()
    now, seq, job = 0, 0, 0
    for name, offset, rank in [*ops, *[("pop", 0, 0)] * 200]:
        if name == "pop":
            if not one:
                assert not queue and not len(arrivals)
                continue
            expected, got = heapq.heappop(one), heapq.heappop(queue)
            assert got == expected
            now = got[0]
            if got[1] == ARRIVAL:
                arrivals.arrived(queue, got[0], got[3])
        else:
            kind = ARRIVAL if name == "submit" else rank
            item = (now + offset, kind, seq, job, 0, 0)
            seq, job = seq + 1, job + 1
            heapq.heappush(one, item)
            if name == "submit":
                arrivals.submit(queue, item)
            else:
                heapq.heappush(queue, item)
        assert len(queue) + len(arrivals) == len(one)
        if one:
            assert queue[0] == one[0]
    assert not one and not queue and not len(arrivals)


def test_eng15_the_heap_holds_one_arrival_however_many_are_submitted() -> None:
    """ENG-15: after 500 submits in time order the heap holds one event (the first arrival)
    and ``pending`` counts all 500; while the jobs run, the heap holds the running jobs'
    events and at most one arrival."""
    for policy in (srtf_est, fifo):
        sim = FastSimulator(policy, 4)
        for job_id in range(500):
            sim.submit(make_job(job_id, submit=10 * job_id))
        assert len(sim.queue) == 1 and sim.pending == 500
        assert sim.queue[0][3] == 0
        sim.run(horizon=2_000)
        assert sum(item[1] == ARRIVAL for item in sim.queue) == 1
        assert len(sim.queue) <= 1 + 4
        sim.run()
        assert sim.pending == 0 and sim.events_handled == 500 * 5


@pytest.mark.parametrize("seed", range(4))
def test_eng15_many_arrivals_in_and_out_of_order_pop_as_one_heap(seed: int) -> None:
    """ENG-15, ENG-2: thousands of arrivals (more than the held list keeps once fed), mostly
    submitted in time order (the first half only in time order) with some out of order, between
    other events and pops: the same pops as one heap; submits in time order are held without
    waiting for a sort."""
    rng = random.Random(seed)
    one: list[QueueItem] = []
    queue: list[QueueItem] = []
    arrivals = Arrivals()
    now, seq, last = 0, 0, 0
    for step in range(6_000):
        roll = rng.random()
        if roll < 0.5:
            late = step >= 3_000 and rng.random() < 0.02  # in time order only, at first
            time = now + rng.randrange(0, 5) if late else max(last, now) + rng.randrange(0, 3)
            last = max(last, time)
            item = (time, ARRIVAL, seq, seq, 0, 0)
            arrivals.submit(queue, item)
            if step < 3_000:
                assert not arrivals._new  # in order: appended, no sort pending
        elif roll < 0.6:
            item = (now + rng.randrange(0, 9), rng.randrange(0, 2), seq, seq, 1, 1)
            heapq.heappush(queue, item)
        else:
            if one:
                expected, got = heapq.heappop(one), heapq.heappop(queue)
                assert got == expected
                now = got[0]
                if got[1] == ARRIVAL:
                    arrivals.arrived(queue, got[0], got[3])
            continue
        heapq.heappush(one, item)
        seq += 1
        assert len(queue) + len(arrivals) == len(one)
    while one:
        expected, got = heapq.heappop(one), heapq.heappop(queue)
        assert got == expected
        if got[1] == ARRIVAL:
            arrivals.arrived(queue, got[0], got[3])
    assert not queue and not len(arrivals)


def test_eng15_fed_arrivals_are_let_go() -> None:
    """ENG-15: the held list lets fed arrivals go as it feeds them: it never keeps more fed
    ones than 1024 or the pending ones it still holds, whichever is more, so its memory
    follows the pending arrivals, not every arrival the run has seen."""
    arrivals, queue = Arrivals(), list[QueueItem]()
    for job_id in range(3_000):
        arrivals.submit(queue, (job_id, ARRIVAL, job_id, job_id, 0, 0))
    while queue:
        time, _, _, job_id, _, _ = heapq.heappop(queue)
        arrivals.arrived(queue, time, job_id)
        held = len(arrivals._items) - arrivals._head  # pending, not yet fed
        assert arrivals._head <= max(1_024, held)
    assert not arrivals._items
