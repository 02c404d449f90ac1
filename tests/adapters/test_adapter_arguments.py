"""Every adapter checks its own arguments before its framework is touched (ADP-14).

These run with and without the frameworks: the checks come before the framework's base class
is built, so a bad argument is TypeError/ValueError either way (never ImportError first).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from evalstop.adapters._core import MetricFeed
from evalstop.adapters.hf import EvalStopCallback as HfCallback
from evalstop.adapters.lightning import EvalStopCallback as LightningCallback
from evalstop.adapters.optuna import EvalStopPruner
from evalstop.adapters.ray_tune import EvalStopScheduler, EvalStopStopper, _Trials
from evalstop.core.detectors import DeclineDetector
from evalstop.live.monitor import Monitor

BAD_K: list[object] = [0, -1, 2.5, True, "2", math.nan, None.__class__]
BAD_DETECTOR: list[object] = ["decline", 3, object(), DeclineDetector]
BAD_NAME: list[object] = [7, "", None, b"acc", ["acc"]]
BAD_PATH: list[object] = [7, b"/tmp/stop", "", "stop\0file", ["stop"]]


def _cases() -> list[tuple[type[Any], dict[str, object]]]:
    """(adapter class, keyword arguments that must be refused)."""
    base: dict[type[Any], dict[str, object]] = {
        EvalStopStopper: {"metric": "acc"},
        EvalStopScheduler: {"metric": "acc"},
        HfCallback: {"metric": "eval_acc"},
        LightningCallback: {"monitor": "val_acc"},
        EvalStopPruner: {},
    }
    cases: list[tuple[type[Any], dict[str, object]]] = []
    for cls, good in base.items():
        cases += [(cls, {**good, "k": k}) for k in BAD_K]
        cases += [(cls, {**good, "detector": d}) for d in BAD_DETECTOR]
        cases += [(cls, {**good, "k": 2, "detector": DeclineDetector(3)})]
        cases += [(cls, {**good, "mode": m}) for m in ("up", 1, "MAX")]
        for name in good:
            cases += [(cls, {**good, name: bad}) for bad in BAD_NAME if bad is not None]
    for cls in (EvalStopStopper, EvalStopScheduler):
        cases += [(cls, {"metric": "acc", "step_key": bad}) for bad in BAD_NAME]
    cases += [(EvalStopStopper, {"metric": None})]
    for cls in (HfCallback, LightningCallback):
        key = "metric" if cls is HfCallback else "monitor"
        cases += [(cls, {key: "acc", "stop_file": bad}) for bad in BAD_PATH]
    cases += [(HfCallback, {"event": bad}) for bad in ("train", None, 1)]
    return cases


def _case_id(value: object) -> str:
    """A test id that is the same in every process (no object address: pytest-xdist's workers
    must collect the same ids)."""
    if isinstance(value, type):
        return value.__name__
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize(("cls", "kwargs"), _cases(), ids=_case_id)
def test_bad_constructor_argument_is_type_or_value_error(
    cls: type[Any], kwargs: dict[str, object]
) -> None:
    """ADP-14: each bad constructor argument of each adapter is TypeError or ValueError, with
    or without the adapter's framework installed."""
    with pytest.raises((TypeError, ValueError)) as raised:
        cls(**kwargs)
    assert not isinstance(raised.value, ImportError)
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 200


@pytest.mark.parametrize("k", [2, 1, 10**30])
def test_good_k_passes_the_feed(k: int) -> None:
    """ADP-14: any int k >= 1, however large, is accepted."""
    feed = MetricFeed("acc", k=k)
    assert isinstance(feed.monitor.detector, DeclineDetector)
    assert feed.monitor.detector.k == k


@pytest.mark.parametrize(
    "result", [None, [("acc", 0.1)], "acc", {"acc": "x", "training_iteration": 3}]
)
def test_bad_tune_result_changes_nothing(result: object) -> None:
    """ADP-14: a Tune result that is not a mapping (or a bad value in one) is a TypeError and
    the trial's state is unchanged (the checks need no Ray)."""
    trials = _Trials(MetricFeed("acc", k=2), "training_iteration")
    trials.observe("t1", {"acc": 0.5, "training_iteration": 1})
    before = trials.feed.monitor.to_json()
    with pytest.raises(TypeError):
        trials.observe("t1", result)  # type: ignore[arg-type]
    assert trials.feed.monitor.to_json() == before


def test_bad_metrics_mapping_changes_nothing() -> None:
    """ADP-14: ``MetricFeed.feed`` with metrics that are not a mapping is a TypeError."""
    feed = MetricFeed("acc")
    feed.feed("run", 1, {"acc": 0.25})
    before = feed.monitor.to_json()
    with pytest.raises(TypeError, match="mapping"):
        feed.feed("run", 2, [0.3])  # type: ignore[arg-type]
    assert feed.monitor.to_json() == before


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"detector": "decline"}, "detector"), ({"metric": 7}, "metric"), ({"detector": 2}, "int")],
)
def test_monitor_checks_detector_and_metric(kwargs: dict[str, Any], needle: str) -> None:
    """ADP-14: ``Monitor`` refuses a detector without a detector's members and a metric name
    that is not a str, at construction (before: accepted, failing at the first observation,
    or an AttributeError)."""
    with pytest.raises(TypeError, match=needle):
        Monitor(**kwargs)
