"""The adapters' shared feed checks its arguments (ADP-14); no framework needed."""

from __future__ import annotations

from typing import Any

import pytest

from evalstop.adapters._core import MetricFeed


def deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("metrics", "step"),
    [
        ({"acc": 10**400}, 2),
        ({"acc": "x"}, 2),
        ({"acc": True}, 2),
        ({"acc": deep(10_000)}, 2),
        ({"acc": 0.5}, -1),
        ({"acc": 0.5}, True),
        ({"acc": 0.5}, 1.5),
    ],
)
def test_bad_values_raise_and_change_nothing_adp_14(metrics: dict[str, Any], step: Any) -> None:
    """ADP-14: TypeError or ValueError, the feed's monitor unchanged."""
    feed = MetricFeed("acc")
    feed.feed("run", 1, {"acc": 0.25})
    before = feed.monitor.to_json()
    with pytest.raises((TypeError, ValueError)):
        feed.feed("run", step, metrics)
    assert feed.monitor.to_json() == before


def test_bad_saved_state_and_metric_name_adp_14() -> None:
    """ADP-14: a saved state that is not an object, or a metric that is not a name."""
    feed = MetricFeed("acc")
    with pytest.raises(ValueError, match="got list"):
        feed.restore(deep(10_000))
    with pytest.raises(TypeError, match="got int"):
        MetricFeed(7)  # type: ignore[arg-type]
