"""The reproduction pipeline (REP-1 to REP-4) on small settings."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalstop.cli import main
from evalstop.experiments import plots
from evalstop.experiments.plan import (
    BASE_RATES,
    BASES,
    DETECTORS,
    KS,
    MAIN_SYSTEMS,
    NOISES,
    Settings,
    plan,
)
from evalstop.experiments.results import build_results
from evalstop.experiments.runner import run_plan
from evalstop.experiments.stats import estimate

SMALL = Settings(seeds=2, jobs=40, gpus=16)


@pytest.fixture(scope="module")
def small_results() -> dict[str, Any]:
    sims = plan(SMALL)
    return build_results(SMALL, run_plan(SMALL, sims, workers=1))


def test_rep1_every_experiment_and_cell_is_there(small_results: dict[str, Any]) -> None:
    """REP-1: five experiments, every swept value and detector, every seed."""
    r = small_results
    assert [row["system"] for row in r["main"]] == list(MAIN_SYSTEMS)
    assert [row["base"] for row in r["composability"]] == list(BASES)
    assert len(r["noise"]) == len(NOISES) * len(DETECTORS)
    assert len(r["base_rate"]) == len(BASE_RATES) * len(DETECTORS)
    assert [row["k"] for row in r["k"]] == list(KS)
    sims = plan(SMALL)
    assert len(sims) == len(set(sims))
    assert {sim.seed for sim in sims} == {0, 1}


def test_rep2_same_results_for_any_worker_count() -> None:
    """REP-2: results.json is byte-identical with one worker and with two."""
    settings = Settings(seeds=2, jobs=30, gpus=16)
    sims = plan(settings)
    one = build_results(settings, run_plan(settings, sims, workers=1))
    two = build_results(settings, run_plan(settings, sims, workers=2))
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_rep3_mean_and_t_interval_by_hand() -> None:
    """REP-3: [1, 2, 3] -> mean 2, half-width t(0.975, 2) * 1 / sqrt(3); NaN left out."""
    est = estimate([1.0, 2.0, math.nan, 3.0])
    assert est.n == 3
    assert est.mean == 2.0
    assert est.ci95 == pytest.approx(4.303 / math.sqrt(3))
    assert math.isnan(estimate([5.0]).ci95)
    assert estimate([]).n == 0


def test_rep3_changes_are_paired_per_seed(small_results: dict[str, Any]) -> None:
    """REP-3: the base against itself is exactly 0; EvalStop's change is the seed mean."""
    main_rows = small_results["main"]
    base = main_rows[0]
    assert base["jct_change_pct"] == 0.0 and base["wasted_change_pct"] == 0.0
    sims = [
        s
        for s in plan(SMALL)
        if s.noise == SMALL.noise
        and s.hacking_share == 0.6
        and s.k == 2
        and s.system in ("srtf-est", "evalstop+srtf-est")
    ]
    figures = run_plan(SMALL, sims)
    changes = []
    for seed in (0, 1):
        pick = {s.system: figures[s] for s in sims if s.seed == seed}
        changes.append(
            100 * (pick["evalstop+srtf-est"]["jct_mean"] / pick["srtf-est"]["jct_mean"] - 1)
        )
    assert main_rows[1]["jct_change_pct"] == pytest.approx(sum(changes) / 2, abs=1e-5)


def test_rep4_cli_writes_results_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-4: tables with the paper beside ours; results.json; plots or a one-line hint."""
    out = tmp_path / "out"
    code = main(
        [
            "reproduce",
            "--quick",
            "--seeds",
            "1",
            "--jobs",
            "30",
            "--out",
            str(out),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "paper" in printed and "-9.4%" in printed and "98.3%" in printed
    assert (out / "report.txt").read_text().startswith("evalstop reproduce:")
    results = json.loads((out / "results.json").read_text())
    for key in ("main", "composability", "noise", "base_rate", "k"):
        assert results[key]
    for row in results["main"]:
        for key in ("system", "jct_change_pct", "wasted_change_pct", "precision", "recall", "fpr"):
            assert key in row
        for key in ("precision", "recall", "fpr"):
            assert row[key] is None or 0.0 <= row[key] <= 1.0
    if plots.plots_available():
        for name in ("noise", "base_rate", "k", "composability", "curves"):
            assert (out / f"{name}.png").stat().st_size > 1000
    else:
        assert plots.PLOTS_HINT in printed


def test_rep4_without_matplotlib_one_line_says_how(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """REP-4: the tables and JSON still come out."""
    from evalstop.cli import reproduce

    monkeypatch.setattr(reproduce, "plots_available", lambda: False)
    code = main(
        [
            "reproduce",
            "--seeds",
            "1",
            "--jobs",
            "20",
            "--out",
            str(tmp_path),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert (tmp_path / "results.json").exists()
    assert printed.count(plots.PLOTS_HINT) == 1
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize(
    "args",
    [["--seeds", "0"], ["--jobs", "0"], ["--workers", "0"]],
)
def test_rep4_bad_options_are_cli_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-4, CLI-1: one line, exit 2."""
    assert main(["reproduce", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstop: error:") and err.count("\n") == 1


def test_rep4_out_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """REP-4, CLI-1: --out naming a file is refused before any work."""
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main(["reproduce", "--out", str(target)]) == 2
    assert "not a directory" in capsys.readouterr().err
