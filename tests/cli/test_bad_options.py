"""Bad option values that used to end in a traceback are one-line errors (CLI-1)."""

from __future__ import annotations

import pytest

from evalstop.cli import main


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--arrival-rate", "1e-300"], "--arrival-rate"),
        (["--load", "1e-300"], "--load"),
        (["--mix", "rlhf=1e308,dpo=1e308"], "--mix"),
        (["--mix", "rlhf=inf"], "--mix"),
        (["--arrival-rate", "nan"], "--arrival-rate"),
        (["--arrival-rate", "inf"], "--arrival-rate"),
        (["--policy", "stopat-nan+fifo"], "--policy"),
    ],
)
def test_extreme_values_are_one_line_cli_1(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLI-1: values at the edge of a float (tiny rates, overflowing shares) are refused."""
    assert main(["simulate", "--jobs", "5", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and needle in captured.err
