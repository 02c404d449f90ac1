"""The batch loop (``evalstop.live.batch``) on the cases a short property run rarely draws:
triples of other types, exact boundaries, a NaN after k unfired declines."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from evalstop.core.detectors import DeclineDetector, Detector, Watch
from evalstop.core.folds import DeclineFold, DeclineState, decline_folder
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.batch import fold_many
from evalstop.live.monitor import Monitor, Reason, Stop
from evalstop.live.records import record_type

NOISE_AWARE = NoiseAwareDetector(warmup_evals=0, warmup_steps=0)


def singly(detector: Detector[Any], stream: list[tuple[Any, Any, Any]]) -> Monitor:
    """A monitor that observed ``stream`` one call at a time."""
    monitor = Monitor(detector)
    for key, step, score in stream:
        monitor.observe(key, step, score)
    return monitor


def states(monitor: Monitor) -> list[str]:
    return [repr(monitor.job_state(key)) for key in monitor]


@pytest.mark.parametrize("detector", [DeclineDetector(1), NOISE_AWARE], ids=["decline", "noise"])
def test_mon17_triples_of_other_types_are_checked_and_normalised_as_observe_does(
    detector: Detector[Any],
) -> None:
    """MON-17, MON-1: a triple whose types are not exactly str/int, int and float (numpy
    scalars, an int score) is folded as observe folds it, in the built-in loop."""
    stream: list[tuple[Any, Any, Any]] = [
        ("a", np.int64(1), np.float32(1.0)),
        ("a", 2, 2),
        ("a", np.int32(3), np.float64(0.5)),
        ("a", 4, -3),
    ]
    one, many = Monitor(detector), Monitor(detector)
    verdicts = [one.observe(key, step, score) for key, step, score in stream]
    stops = many.observe_many(stream)
    fresh = [v for v in verdicts if isinstance(v, Stop) and v.reason is not Reason.ALREADY_STOPPED]
    assert repr(stops) == repr(fresh)
    assert states(many) == states(one)


BAD = [
    (None, 1, 1.0),
    ([1], 1, 1.0),
    ("b", 1.5, 1.0),
    ("b", -1, 1.0),
    ("b", 1, "x"),
    ("b", 1, None),
]


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize("detector", [DeclineDetector(1), NOISE_AWARE], ids=["decline", "noise"])
def test_mon17_a_bad_triple_raises_observes_error_in_the_builtin_loop(
    detector: Detector[Any], bad: tuple[Any, Any, Any]
) -> None:
    """MON-17, MON-1: a bad key, step or score (with valid other fields) raises observe's
    exception and message from the built-in loops, after the triples before it were folded."""
    with pytest.raises((TypeError, ValueError)) as expected:
        Monitor(detector).observe(*bad)
    many = Monitor(detector)
    with pytest.raises(expected.type) as raised:
        many.observe_many([("a", 5, 0.5), bad])
    assert str(raised.value) == str(expected.value)
    assert list(many) == ["a"]


def test_det11_det1_mon17_the_decline_loop_at_its_boundaries() -> None:
    """MON-17, DET-11, DET-1: in the decline loop a report at exactly warmup_steps counts, a
    repeated step is ignored and a tie with the best score keeps the earlier best step, as
    observe does."""
    stream: list[tuple[Any, Any, Any]] = [
        ("a", 4, 1.0),  # in the warm-up
        ("a", 5, 1.0),  # at warmup_steps: counts (previous = 1.0); ties the best
        ("a", 5, 0.1),  # the same step again: ignored
        ("a", 6, 0.2),  # a decline from 1.0: k = 1 fires here
    ]
    detector = DeclineDetector(1, warmup_steps=5)
    one, many = singly(detector, stream), Monitor(detector)
    stops = many.observe_many(stream)
    assert [(s.job_id, s.stop_step, s.best_step, s.best_score) for s in stops] == [("a", 6, 4, 1.0)]
    assert states(many) == states(one)


def test_det10_mon17_a_nan_after_k_unfired_declines_stops_in_the_loop() -> None:
    """MON-17, DET-10: a record with k declines that has not fired (a state a laxer rule
    folded) fires at the next report, a NaN too, with reason non_finite, in fold_many given
    the decline fold."""
    rule = DeclineDetector(2)
    made: list[tuple[object, ...]] = []

    def stop(key: object, step: int, reason: Reason, record: Any) -> Any:
        made.append((key, step, reason, record))
        return len(made)

    def register(key: object, step: int) -> Any:
        raise AssertionError("no new job in this batch")

    reasons = (Reason.COUNTED, Reason.NON_FINITE)
    record = record_type(DeclineFold)(0, 10, 1, Watch(DeclineState(2, 0.5), 1, 10, 0.5, None))
    jobs: dict[Any, Any] = {"a": record}
    fold = decline_folder(rule)
    stops = fold_many([("a", 20, math.nan)], jobs, fold, 1.0, register, stop, reasons)
    first: list[Any] = [1]  # what stop() returned for the first stop it made
    assert stops == first
    assert made == [("a", 20, Reason.NON_FINITE, record)]
    assert (record.fired_step, record.last_step, record.seen) == (20, 20, 2)
