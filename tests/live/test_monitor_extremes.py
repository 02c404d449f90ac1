"""Scores at the ends of the float range through the online monitor (NAD-7, MON-11)."""

from __future__ import annotations

import math

import pytest

from evalstop.core.detectors import DeclineDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.live.monitor import Monitor, Reason

EXTREMES = [1.7e308, -1.7e308, 1e308, -1e308, 5e307]


@pytest.mark.parametrize("detector", [None, NoiseAwareDetector(keep="best"), DeclineDetector(k=2)])
def test_nad7_mon11_extreme_scores_keep_the_state_savable(
    detector: NoiseAwareDetector | DeclineDetector | None,
) -> None:
    """NAD-7, MON-11: finite scores spanning the float range are counted, leave the monitor's
    state finite, and its saved state restores to the same verdicts (a noise-aware monitor
    used to hold infinities after them and refuse to save)."""
    monitor = Monitor(detector)
    for step, score in enumerate(EXTREMES * 3, start=1):
        verdict = monitor.observe("job", step, score)
        assert verdict.reason is Reason.COUNTED
    text = monitor.to_json()
    restored = Monitor.from_json(text)
    assert restored.to_json() == text
    for step in range(16, 40):
        score = math.sin(step) / 10
        assert restored.observe("job", step, score) == monitor.observe("job", step, score)


def test_nad7_extreme_scores_change_no_noise_aware_verdict() -> None:
    """NAD-7: a noise-aware monitor stops a collapsing run at the same step whether or not
    scores beyond the span are interleaved (they count as evaluations, nothing more)."""
    curve = [min(step, 12) / 12 - max(0, step - 12) / 4 for step in range(1, 30)]
    plain, noisy = Monitor(), Monitor()
    stops: list[int | None] = []
    for monitor, extras in ((plain, False), (noisy, True)):
        stop = None
        for step, score in enumerate(curve, start=1):
            if extras and step % 5 == 0:
                monitor.observe("job", 100 * step - 50, 1.7e308 * (-1) ** step)
            verdict = monitor.observe("job", 100 * step, score)
            if verdict.stopped and stop is None:
                stop = step
        stops.append(stop)
    assert stops[0] is not None and stops[0] == stops[1]
