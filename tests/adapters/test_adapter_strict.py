"""``strict`` and ``check_finite`` in every adapter, with the host's defaults (spec ADP-15).

The shared feed is framework-free, so these run in the default session; the real Lightning
callback's behaviour is in ``test_adapter_lightning.py`` (``nox -s adapters``).
"""

from __future__ import annotations

import inspect
import math

import pytest

from evalstop.adapters import MetricFeed, MissingMetricError, hf, lightning, optuna, ray_tune
from evalstop.core.detectors import DeclineDetector
from evalstop.core.errors import EvalStopError
from evalstop.live.monitor import Reason, Stop


def test_adp15_strict_raises_naming_the_keys_and_changes_nothing() -> None:
    """ADP-15: strict: a result without the metric raises a KeyError and EvalStopError that
    names the result's keys; the run's state is untouched. Without strict it is skipped."""
    feed = MetricFeed("val_score", "max", k=2, strict=True)
    feed.feed(0, 1, {"val_score": 0.5})
    with pytest.raises(MissingMetricError, match=r"it has: 'loss', 'val_scroe'") as e:
        feed.feed(0, 2, {"val_scroe": 0.4, "loss": 1.0})
    assert isinstance(e.value, KeyError) and isinstance(e.value, EvalStopError)
    assert "\n" not in str(e.value) and str(e.value).startswith("strict: the metric 'val_score'")
    assert feed.verdict(0) is not None and feed.verdict(0).step == 1  # type: ignore[union-attr]
    assert MetricFeed("val_score", "max", k=2).feed(0, 2, {"loss": 1.0}) is None


def test_adp15_check_finite_stops_at_the_first_non_finite_value() -> None:
    """ADP-15: check_finite: NaN (or inf) stops the run at that step, keeping the best so far;
    the stop latches; forget drops it. Without it a NaN forever never stops the run."""
    feed = MetricFeed("score", "max", k=2, check_finite=True)
    feed.feed("a", 1, {"score": 0.5})
    feed.feed("a", 2, {"score": 0.7})
    verdict = feed.feed("a", 3, {"score": math.nan})
    assert verdict == Stop("a", 3, Reason.NON_FINITE, 2, 3, 2, 0.7)
    assert feed.stopped("a") and feed.stop_step("a") == 3
    assert feed.best("a") is not None and feed.best("a").step == 2  # type: ignore[union-attr]
    later = feed.feed("a", 4, {"score": 0.9})
    assert isinstance(later, Stop) and later.reason is Reason.ALREADY_STOPPED
    assert isinstance(feed.feed("b", 1, {"score": math.inf}), Stop)
    assert feed.forget("b") and not feed.stopped("b")
    lenient = MetricFeed("score", "max", detector=DeclineDetector(2))
    for step in range(1, 50):
        lenient.feed("a", step, {"score": math.nan})
    assert not lenient.stopped("a")


@pytest.mark.parametrize(
    ("factory", "strict", "check_finite"),
    [
        (lightning.EvalStopCallback.__init__, True, True),  # EarlyStopping's defaults
        (hf.EvalStopCallback.__init__, False, False),  # EarlyStoppingCallback only warns
        (ray_tune.EvalStopStopper.__init__, False, False),
        (ray_tune.EvalStopScheduler.__init__, False, False),
        (optuna.EvalStopPruner.__init__, None, True),  # Optuna's pruners prune a NaN
    ],
)
def test_adp15_every_adapter_has_the_knobs_with_its_hosts_defaults(
    factory: object, strict: bool | None, check_finite: bool
) -> None:
    """ADP-15: each adapter takes the knobs (the pruner has no metric name: no strict)."""
    parameters = inspect.signature(factory).parameters  # type: ignore[arg-type]
    assert parameters["check_finite"].default is check_finite
    if strict is None:
        assert "strict" not in parameters
    else:
        assert parameters["strict"].default is strict


def test_adp15_the_knobs_are_checked() -> None:
    """ADP-15, ADP-14: a knob that is not a bool is a TypeError."""
    with pytest.raises(TypeError, match="strict must be a bool"):
        MetricFeed("score", "max", strict=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="check_finite must be a bool"):
        MetricFeed("score", "max", check_finite="yes")  # type: ignore[arg-type]
