"""Metric direction from its name, and the monitor's protective defaults (MON-13)."""

from __future__ import annotations

import pytest

from evalstop.core.detectors import DeclineDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.direction import direction_for, resolve_mode
from evalstop.live.monitor import Monitor


@pytest.mark.parametrize(
    ("metric", "mode"),
    [
        ("eval_loss", "min"),
        ("val/loss", "min"),
        ("top1_error", "min"),
        ("eval_wer", "min"),
        ("test/WER", "min"),
        ("perplexity", "min"),
        ("eval_accuracy", "max"),
        ("answer_power", "max"),  # "wer" inside a word is not WER
        ("win_rate", "max"),
    ],
)
def test_mon13_direction_from_the_name(metric: str, mode: str) -> None:
    """MON-13: loss, error, perplexity anywhere and WER as a word are lower-is-better."""
    assert direction_for(metric) == mode
    assert resolve_mode("auto", metric) == mode


def test_mon13_monitor_defaults() -> None:
    """MON-13: noise-aware by default; auto mode from the metric, max without one."""
    monitor = Monitor()
    assert monitor.detector == NoiseAwareDetector() and monitor.mode == "max"
    assert Monitor(metric="eval_loss").mode == "min"
    assert Monitor(DeclineDetector(), "max", metric="eval_loss").mode == "max"
    resumed = Monitor.from_json(Monitor(metric="eval_loss").to_json())
    assert resumed.mode == "min"
    with pytest.raises(ValueError, match="auto"):
        Monitor(mode="up")  # type: ignore[arg-type]
