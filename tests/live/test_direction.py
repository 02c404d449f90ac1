"""Metric direction from its name, and the monitor's protective defaults (MON-13)."""

from __future__ import annotations

import pytest

from evalstop.core.detectors import DeclineDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.direction import UnknownDirectionError, direction_for, resolve_mode
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
        ("win_rate", "max"),
        # issue 24: each was higher-is-better by a guess; replay kept the worst checkpoint.
        ("val_mse", "min"),
        ("mae", "min"),
        ("eval/nll", "min"),
        ("ppl", "min"),
        ("test_cer", "min"),
        ("kl", "min"),
        ("objective/kl", "min"),
        ("eval_rmse", "min"),
        ("eval_f1", "max"),
        ("val/auc", "max"),
        ("rewards/chosen", "max"),
        ("eval_rouge1", "max"),
        ("score", "max"),
        ("top1_error", "min"),
    ],
)
def test_mon13_direction_from_the_name(metric: str, mode: str) -> None:
    """MON-13: a name whose words are all in one table has that table's direction."""
    assert direction_for(metric) == mode
    assert resolve_mode("auto", metric) == mode


@pytest.mark.parametrize("metric", ["answer_power", "val_thing", "x", "reward_loss", "s"])
def test_mon13_an_unknown_or_mixed_name_is_an_error_asking_for_the_mode(metric: str) -> None:
    """MON-13: a name of no known words ("wer" inside a word is not WER), or of words of both
    tables, raises asking for the mode; the monitor too; an explicit mode is taken as is."""
    with pytest.raises(UnknownDirectionError, match="give the mode") as caught:
        resolve_mode("auto", metric)
    assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)
    with pytest.raises(UnknownDirectionError):
        Monitor(metric=metric)
    assert Monitor(mode="min", metric=metric).mode == "min"


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
