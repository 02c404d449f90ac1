"""Every field of the monitor's verdicts, compared whole (MON-3, MON-4, MON-12)."""

from __future__ import annotations

from evalstop.core.detectors import DeclineDetector
from evalstop.live.monitor import Continue, Monitor, Reason, Stop


def test_mon12_standing_verdict_is_exact_for_a_running_and_a_stopped_job() -> None:
    """MON-12: the standing verdict names the job, the last accepted step and STANDING, with
    the counts and best checkpoint of the job's state; another job's state is not mixed in."""
    monitor = Monitor(DeclineDetector(2))
    for step, score in ((10, 0.25), (20, 0.5), (30, 0.375)):
        monitor.observe("a", step, score)
    monitor.observe(9, 5, 0.125)
    assert monitor.verdict("a") == Continue("a", 30, Reason.STANDING, 3, 20, 0.5)
    assert monitor.verdict(9) == Continue(9, 5, Reason.STANDING, 1, 5, 0.125)
    monitor.observe("a", 40, 0.25)
    assert monitor.verdict("a") == Stop("a", 40, Reason.STANDING, 4, 40, 20, 0.5)
    monitor.observe("a", 50, 0.75)  # ignored: already stopped (MON-7)
    assert monitor.verdict("a") == Stop("a", 40, Reason.STANDING, 4, 40, 20, 0.5)


def test_mon4_min_mode_standing_and_observed_verdicts_report_caller_units() -> None:
    """MON-4, MON-12: in min mode the best score comes back in the caller's units."""
    monitor = Monitor(DeclineDetector(2), mode="min")
    assert monitor.observe("loss", 1, 2.0) == Continue("loss", 1, Reason.COUNTED, 1, 1, 2.0)
    assert monitor.observe("loss", 2, 1.5) == Continue("loss", 2, Reason.COUNTED, 2, 2, 1.5)
    monitor.observe("loss", 3, 1.75)
    stop = monitor.observe("loss", 4, 2.5)
    assert stop == Stop("loss", 4, Reason.COUNTED, 4, 4, 2, 1.5)
    assert monitor.verdict("loss") == Stop("loss", 4, Reason.STANDING, 4, 4, 2, 1.5)
    assert monitor.observe("loss", 5, 0.5) == Stop("loss", 5, Reason.ALREADY_STOPPED, 4, 4, 2, 1.5)
