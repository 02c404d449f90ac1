"""The one progress bar of ``reproduce`` and ``gym`` (``cli/progress.py``)."""

from __future__ import annotations

import io

import pytest

from evalstop.cli.progress import ProgressBar


def test_plain_lines_every_tenth_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off a terminal: a line at the first report and at each new tenth, naming the label and
    the unit; disabled: nothing."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar = ProgressBar("gym", unit="runs")
    for done in range(1, 21):
        bar(done, 20)
    lines = err.getvalue().splitlines()
    expected = [1, *range(2, 21, 2)]
    assert [line.split(",")[0] for line in lines] == [f"gym: {d}/20 runs" for d in expected]
    quiet = ProgressBar("6 simulations", enabled=False)
    quiet(6, 6)
    assert err.getvalue().splitlines() == lines


def test_one_redrawn_line_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal: the bar is redrawn in place and ends with a newline when done."""
    err = io.StringIO()
    err.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stderr", err)
    bar = ProgressBar("6 simulations")
    bar(3, 6)
    bar(6, 6)
    text = err.getvalue()
    assert text.startswith("\r6 simulations [" + "#" * 15 + "." * 15 + "] 3/6 workloads ")
    assert text.endswith("s\n") and text.count("\n") == 1 and "#" * 30 in text
