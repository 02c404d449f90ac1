"""``evalstop gym``: its files and its one-line errors (GYM-9, GYM-11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstop.cli import main

SMALL = ["--steps", "20", "--evals", "4", "--proxy-samples", "30", "--eval-samples", "4"]


def test_gym_writes_runs_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GYM-9: --runs 3 --seed 5 writes three run folders and a summary; replay reads them."""
    out = tmp_path / "gym"
    assert (
        main(
            [
                "gym",
                "--runs",
                "3",
                "--seed",
                "5",
                "--out",
                str(out),
                "--workers",
                "1",
                "--no-progress",
                *SMALL,
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "run-0000",
        "run-0001",
        "run-0002",
        "summary.json",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == {"first": 5, "last": 7} and summary["split"] is None
    assert summary["knobs"]["steps"] == 20
    assert "3 runs in" in capsys.readouterr().out
    assert main(["replay", str(out / "run-0000" / "metrics.jsonl"), "--metric", "eval_score"]) == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--runs", "0"], "--runs"),
        (["--seed", "-1"], "--seed"),
        (["--split", "test", "--runs", "20000"], "--runs"),
        (["--split", "valid"], "--split"),
        (["--workers", "0"], "--workers"),
        (["--address", "1.2.3.4:5"], "--address"),
        (["--proxy-samples", "1"], "--proxy-samples"),
        (["--kl-coef", "-0.1"], "--kl-coef"),
        (["--kl-coef", "nan"], "--kl-coef"),
        (["--lr", "0"], "--lr"),
        (["--steps", "0"], "--steps"),
        (["--evals", "2"], "--evals"),
        (["--evals", "50", "--steps", "10"], "--evals"),
        (["--eval-samples", "0"], "--eval-samples"),
        (["--steps", "ten"], "--steps"),
    ],
)
def test_bad_input_is_one_line_naming_the_option(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GYM-11: every knob out of range is one line naming it, exit code 2, nothing written."""
    out = tmp_path / "gym"
    assert main(["gym", "--out", str(out), "--no-progress", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and needle in captured.err
    assert not out.exists() or not any(out.glob("run-*"))


def test_an_unwritable_out_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GYM-11: --out on a file is one line naming --out, exit code 2."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["gym", "--runs", "1", "--out", str(blocker / "sub"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err
