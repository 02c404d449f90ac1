"""Tampered monitor states and bad observe calls (MON-15, MON-16)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import examples
from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.monitor import Monitor

DETECTORS: list[Detector[Any]] = [
    DeclineDetector(k=2),
    LossPlateau(),
    StopAtProgress(0.5),
    NoiseAwareDetector(warmup_evals=2),
]
BUDGET = examples(50)

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -1, 0, 1, 2, 10, 80, 0.5, 1e308, -1e308]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
streams = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", 3]),
        st.integers(min_value=1, max_value=5),
        st.floats(min_value=-1, max_value=1) | st.just(math.nan),
    ),
    max_size=25,
)


def monitor_after(detector: Detector[Any], stream: list[tuple[Any, int, float]]) -> Monitor:
    monitor = Monitor(detector)
    steps: dict[Any, int] = {}
    for job, gap, score in stream:
        steps[job] = steps.get(job, 0) + 10 * gap
        monitor.observe(job, steps[job], score, loss=abs(score), estimated_progress=0.1 * gap)
    return monitor


def nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += nodes(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += nodes(value, (*path, index))
    return found


def tampered(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copied = copy.deepcopy(doc)
    node = copied
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copied


def continuation(monitor: Monitor) -> list[Any]:
    verdicts: list[Any] = []
    jobs: list[str | int] = ["a", "b", 3, "new"]
    for job in jobs:
        state = monitor.job_state(job)
        step = 0 if state is None else state.last_step
        for i, score in enumerate([0.3, 0.1, -0.2, math.nan, 0.4], 1):
            verdicts.append(monitor.observe(job, step + i, score, loss=0.5))
        verdicts.append(monitor.verdict(job))
    return verdicts


@settings(max_examples=BUDGET)
@given(st.sampled_from(DETECTORS), streams, st.integers(min_value=0), json_values)
def test_tampered_state_is_refused_or_equivalent_mon_15(
    detector: Detector[Any], stream: list[tuple[Any, int, float]], where: int, value: Any
) -> None:
    """MON-15: tamper with one node: ValueError, or a monitor that resumes as itself."""
    document = monitor_after(detector, stream).to_dict()
    paths = nodes(document)
    text = json.dumps(tampered(document, paths[where % len(paths)], value))
    try:
        accepted = Monitor.from_json(text)
    except ValueError:
        return
    again = Monitor.from_json(accepted.to_json())
    assert continuation(accepted) == continuation(again)


def test_deep_and_huge_documents_are_value_errors_mon_15() -> None:
    """MON-15: nesting and huge numbers cannot escape as other exceptions."""
    for text in ["[" * 100_000 + "]" * 100_000, '{"format": ' + "9" * 5000 + "}"]:
        with pytest.raises(ValueError, match="not a saved evalstop monitor"):
            Monitor.from_json(text)


def test_inconsistent_job_fields_are_refused_mon_15() -> None:
    """MON-15: fields that no monitor writes together are refused, naming the problem."""
    monitor = Monitor()
    for step, score in [(1, 0.5), (2, 0.4)]:
        monitor.observe("a", step, score)
    document = monitor.to_dict()
    for key, value, problem in [
        ("evals", 3, "evals exceed"),
        ("best_step", None, "disagree"),
        ("fired_step", 2, "fired"),
        ("best_step", 5, "after last_step"),
        ("seen", 0, "seen an observation"),
    ]:
        bad = tampered(document, ("jobs", 0, key), value)
        with pytest.raises(ValueError, match=problem):
            Monitor.from_dict(bad)


BAD_KEYWORDS: list[tuple[str, Any]] = [
    ("loss", "x"),
    ("loss", 10**400),
    ("loss", None),
    ("proxy_reward", "x"),
    ("proxy_reward", 10**400),
    ("estimated_progress", -0.1),
    ("estimated_progress", math.nan),
    ("estimated_progress", math.inf),
    ("estimated_progress", None),
    ("kind", "rlhf"),
    ("kind", 1),
    ("time", -1),
    ("time", 1.5),
    ("time", True),
]


@pytest.mark.parametrize(("name", "value"), BAD_KEYWORDS)
def test_bad_keywords_raise_and_change_nothing_mon_16(name: str, value: Any) -> None:
    """MON-16: each bad keyword is TypeError/ValueError and the monitor is unchanged."""
    monitor = Monitor()
    monitor.observe("a", 1, 0.5)
    before = monitor.to_json()
    with pytest.raises((TypeError, ValueError)):
        monitor.observe("a", 2, 0.4, **{name: value})
    with pytest.raises((TypeError, ValueError)):
        monitor.observe("new", 1, 0.4, **{name: value})
    assert monitor.to_json() == before


@settings(max_examples=BUDGET)
@given(
    st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2)),
    st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(), json_leaf),
    st.one_of(st.floats(), json_leaf),
)
def test_any_bad_call_is_type_or_value_error_mon_16(job: Any, step: Any, score: Any) -> None:
    """MON-16, MON-1: whatever the arguments, only TypeError/ValueError, state unchanged."""
    monitor = Monitor()
    monitor.observe("a", 1, 0.5)
    before = monitor.to_json()
    try:
        monitor.observe(job, step, score, kind=JobKind.DPO)
    except (TypeError, ValueError):
        assert monitor.to_json() == before
