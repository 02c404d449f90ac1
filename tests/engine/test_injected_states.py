"""The engines' checks against states a correct run never reaches, injected by hand: the
fast engine's ``check=True`` invariant checks (ENG-3, ENG-6), the event queue's stress-test
checker (ENG-2) and the engine record's decline fold from any watch (DET-10)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from builders import make_job
from evalstop import EngineError
from evalstop.core.boundary import EventKind
from evalstop.core.detectors import DeclineDetector, Watch, observe_decline
from evalstop.core.folds import DeclineState
from evalstop.core.policies import fifo
from evalstop.engine.events import Event
from evalstop.engine.fast import FastSimulator
from evalstop.engine.queue import EventQueue
from evalstop.engine.record import JobRecord


def broken_fast(**options: Any) -> FastSimulator:
    """A fast engine on 2 GPUs whose free-GPU count was set to -1 while job 1 (1 GPU) runs."""
    sim = FastSimulator(fifo, 2, **options)
    sim.submit(make_job(1))
    sim.advance()  # the arrival: job 1 starts
    sim._free = -1
    return sim


def test_eng3_eng6_a_checked_fast_engine_names_every_broken_invariant() -> None:
    """ENG-15, ENG-3, ENG-6: with check=True the fast engine raises EngineError after the event that
    left a broken state, naming each broken invariant, joined by '; '."""
    sim = broken_fast(check=True)
    expected = "ENG-3: free -1 + allocated 1 != total 2; ENG-6: negative free GPUs -1"
    with pytest.raises(EngineError) as raised:
        sim.advance()
    assert str(raised.value) == expected


def test_eng15_the_fast_engine_checks_invariants_only_when_asked() -> None:
    """ENG-15: check is opt-in (False by default): an unchecked fast engine does not look at
    its state after each event, so the broken state goes unnoticed."""
    sim = broken_fast()
    assert sim.advance()


def test_eng2_the_queue_checker_catches_a_repeated_key_and_an_unissued_sequence() -> None:
    """ENG-2: the event queue's stress-test checker fails on two events with one key and on
    a sequence number the queue has not issued yet (it passes on the queue's own pushes)."""
    first, second = Event(5, EventKind.ARRIVAL, job_id=1), Event(5, EventKind.ARRIVAL, job_id=2)
    queue = EventQueue()
    queue.push(first)
    queue.push(second)
    queue._check()
    queue._items = [(5, 2, 0, first), (5, 2, 0, second)]  # type: ignore[assignment]
    with pytest.raises(AssertionError):
        queue._check()
    queue._items = [(5, 2, queue._seq, first)]  # type: ignore[assignment]  # the next one
    with pytest.raises(AssertionError):
        queue._check()


@pytest.mark.parametrize("declines", [1, 2, 3])
def test_det10_the_engine_record_fires_on_a_nan_after_k_unfired_declines(declines: int) -> None:
    """DET-10: the engine record's fold equals observe_decline from any watch: one with k
    declines (or more) that has not fired (a saved state, a laxer rule's) fires at a NaN
    report; one fewer does not."""
    detector = DeclineDetector(2)
    watch = Watch(DeclineState(declines, 0.5), 3, 10, 0.9, None)
    record = JobRecord(make_job(1), (detector,), (watch,))
    fired = record.fold(40, math.nan)
    assert record.watches == (observe_decline(detector, watch, 40, math.nan),)
    assert fired is (declines >= 2) and record.folding.fired_step == (40 if fired else None)
