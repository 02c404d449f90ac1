"""The event queue: (time, rank, sequence) order and its internal invariants (ENG-2)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.core.boundary import EventKind
from evalstop.engine.events import Event
from evalstop.engine.queue import EventQueue, event_key, precedes

KINDS = list(EventKind)


class NaiveQueue:
    """The reference: a plain list scanned with min() for the smallest (time, rank, seq)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, int, Event]] = []
        self.seq = 0

    def push(self, event: Event) -> None:
        self.items.append((event.time, event.rank, self.seq, event))
        self.seq += 1

    def pop(self) -> Event:
        first = min(self.items, key=lambda item: item[:3])
        self.items.remove(first)
        return first[3]


def random_event(rng: random.Random, serial: int) -> Event:
    return Event(rng.randrange(20), rng.choice(KINDS), job_id=serial, index=rng.randrange(3))


@pytest.mark.parametrize("seed", range(20))
def test_eng2_stress_check_after_every_action(seed: int) -> None:
    """ENG-2: random pushes and pops (sortedcontainers style); _check() after every action.

    Every pop returns what a naive min-scan over (time, rank, insertion order) returns.
    """
    rng = random.Random(seed)
    queue, naive = EventQueue(), NaiveQueue()
    serial = 0
    for _ in range(1_000):
        if rng.random() < 0.55 or not naive.items:
            event = random_event(rng, serial)
            serial += 1
            queue.push(event)
            naive.push(event)
        else:
            assert queue.peek() is min(naive.items, key=lambda item: item[:3])[3]
            assert queue.pop() is naive.pop()
        queue._check()
        assert len(queue) == len(naive.items)
    while naive.items:
        assert queue.pop() is naive.pop()
        queue._check()
    assert len(queue) == 0
    assert queue.peek() is None


@given(
    st.lists(
        st.one_of(
            st.tuples(st.integers(0, 5), st.sampled_from(KINDS)),
            st.none(),
        ),
        max_size=80,
    )
)
def test_eng2_queue_matches_naive_model(actions: list[tuple[int, EventKind] | None]) -> None:
    """ENG-2: with small times (ties everywhere) the queue pops exactly the naive order."""
    queue, naive = EventQueue(), NaiveQueue()
    for serial, action in enumerate(actions):
        if action is None:
            if naive.items:
                assert queue.pop() is naive.pop()
        else:
            event = Event(action[0], action[1], job_id=serial)
            queue.push(event)
            naive.push(event)
        queue._check()
    popped = [queue.pop() for _ in range(len(queue))]
    assert popped == [naive.pop() for _ in range(len(naive.items))]


def test_eng2_equal_times_by_rank_then_insertion() -> None:
    """ENG-2: at one time: completions, then checkpoints, then arrivals; ties by insertion."""
    queue = EventQueue()
    pushed = [
        Event(5, EventKind.ARRIVAL, 1),
        Event(5, EventKind.CHECKPOINT, 2, index=1),
        Event(4, EventKind.ARRIVAL, 3),
        Event(5, EventKind.COMPLETION, 4, index=2),
        Event(5, EventKind.ARRIVAL, 0),
        Event(5, EventKind.CHECKPOINT, 5, index=1),
    ]
    for event in pushed:
        queue.push(event)
    assert [queue.pop().job_id for _ in range(len(pushed))] == [3, 4, 2, 5, 1, 0]


def test_eng2_ranks() -> None:
    """ENG-2: the event ranks of the spec table."""
    assert [(kind.name, kind.value) for kind in EventKind] == [
        ("COMPLETION", 0),
        ("CHECKPOINT", 1),
        ("ARRIVAL", 2),
    ]
    assert Event(0, EventKind.ARRIVAL, 1).rank == 2


def test_eng2_keys_are_unique_and_total() -> None:
    """ENG-2: equal keys cannot occur: the sequence number makes each key unique."""
    queue = EventQueue()
    for _ in range(50):
        queue.push(Event(7, EventKind.ARRIVAL, 1))
    queue._check()
    assert event_key(7, 2, 3) == (7, 2, 3)
    assert precedes((7, 2, 3), (7, 2, 4))
    assert not precedes((7, 2, 4), (7, 2, 3))
    assert precedes((6, 2, 9), (7, 0, 0))


def test_eng1_queue_rejects_negative_time_and_empty_pop() -> None:
    """ENG-1: no event before time 0; popping an empty queue is an IndexError."""
    queue = EventQueue()
    with pytest.raises(ValueError, match="event time must be >= 0"):
        queue.push(Event(-1, EventKind.ARRIVAL, 1))
    assert len(queue) == 0
    with pytest.raises(IndexError, match=r"^pop from an empty event queue$"):
        queue.pop()
