"""The trade-off sweep (SCB-6 to SCB-8) and the keep floors on simulated runs (RGT-6)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from evalstop.core.detectors import DeclineDetector, Detector, LossPlateau, StopAtProgress
from evalstop.core.keep_floor import keep_floors, kept_indices
from evalstop.core.model import JobKind
from evalstop.core.noise_aware import KEEP_MEMORY, NoiseAwareDetector
from evalstop.core.regret import summarize_runs
from evalstop.experiments.grid import TRADEOFF_Z
from evalstop.experiments.plotting import plots_available
from evalstop.experiments.scoreboard.board import sim_scoreboard
from evalstop.experiments.tradeoff import sweep as tradeoff
from evalstop.experiments.tradeoff.report import diagnose, real_misses, render
from evalstop.experiments.tradeoff.sweep import (
    SWEEP,
    OperatingPoint,
    frontier,
    nearest_goal,
    run_tradeoff,
    sim_panel,
)
from evalstop.sim.detection import fold_job, job_run_score
from evalstop.sim.workload import WorkloadConfig, generate
from evalstop.sim.worlds import WORLDS

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "tests" / "data" / "healthy-supervised"


@pytest.fixture(scope="module")
def board() -> tradeoff.Tradeoff:
    return run_tradeoff(jobs=30, healthy=HEALTHY)


@pytest.mark.parametrize(("world", "evals"), [("paper", 10), ("calibrated", 40)])
def test_rgt6_no_detector_beats_its_stop_floor_on_simulated_runs(world: str, evals: int) -> None:
    """RGT-6: run by run, every detector's regret is at least the stop floor of its keep rule
    (best observed for DET-4 keepers, the level for the noise-aware default)."""
    config = WorkloadConfig(n_jobs=60, world=WORLDS[world], eval_noise=0.12, evals_per_run=evals)
    jobs = [job for job in generate(config, 5).jobs if job.spec.kind is JobKind.RLHF]
    detectors: list[Detector[Any]] = [
        NoiseAwareDetector(),
        NoiseAwareDetector(z=1.0, warmup_evals=3),
        NoiseAwareDetector(keep="best"),
        DeclineDetector(1),
        DeclineDetector(2),
        LossPlateau(patience=1),
        StopAtProgress(0.3),
    ]
    for job in jobs:
        steps = [obs.step for obs in job.observations]
        scores = [obs.eval_score for obs in job.observations]
        quality = [float(q) for q in job.truth.quality]
        for detector in detectors:
            level = isinstance(detector, NoiseAwareDetector) and detector.keep == "level"
            memory = KEEP_MEMORY if level else None
            floor = keep_floors(quality, kept_indices(steps, scores, memory)).stop_floor
            floor_regret = job_run_score(job, floor.stop, floor.kept).regret
            assert floor_regret <= job_run_score(job, *fold_job(detector, job)).regret + 1e-12


def test_scb6_floors_bound_every_point_and_every_cell(board: tradeoff.Tradeoff) -> None:
    """SCB-6, RGT-6: per goal cell, the sweep's points and floors; no point's mean regret of a
    best-observed keeper is below that floor."""
    assert [(p.world, p.evals) for p in board.panels] == [
        (w, n) for w in ("paper", "calibrated") for n in (10, 20, 40)
    ]
    for panel in board.panels:
        assert len(panel.points) == len(SWEEP) and len(panel.floors) == 6
        floors = {p.setting: p.summary.mean_regret for p in panel.floors}
        best_floor = floors["stop floor, keep best observed"]
        level_floor = floors[f"stop floor, keep level({KEEP_MEMORY:g})"]
        for point in panel.points:
            bound = level_floor if point.family == "noise-aware" else best_floor
            assert point.summary.mean_regret >= bound - 1e-12
        assert sum(p.default for p in panel.points) == 4


def test_scb6_scoreboard_tradeoff_is_the_warmup4_slice() -> None:
    """SCB-6: the scoreboard's z trade-off equals this sweep's points at the default warm-up
    (same seed)."""
    board = sim_scoreboard(jobs=20, worlds=["paper"])
    panel = sim_panel("paper", 20, 20, 1)
    mine = {p.setting: p.summary for p in panel.points if p.family == "noise-aware"}
    cells = [c for c in board.tradeoff if c.evals == 20]
    assert len(cells) == len(TRADEOFF_Z)
    for cell, z in zip(cells, TRADEOFF_Z, strict=True):
        assert mine[f"z={z:g} warmup={NoiseAwareDetector().warmup_evals}"] == cell.summary


def _point(recall: float, harmful: float) -> OperatingPoint:
    summary = summarize_runs([])
    return OperatingPoint(
        "x", f"{recall},{harmful}", attrs.evolve(summary, recall=recall, harmful_rate=harmful)
    )


def test_scb6_frontier_and_nearest_goal() -> None:
    """SCB-6: dominated points leave the frontier; the nearest points to the goal box."""
    points = [
        _point(0.5, 0.0),
        _point(0.4, 0.01),
        _point(0.8, 0.04),
        _point(0.95, 0.3),
        _point(0.9, 0.5),
        _point(math.nan, 0.0),
    ]
    line = frontier(points)
    assert [p.setting for p in line] == ["0.5,0.0", "0.8,0.04", "0.95,0.3"]
    safe, sure = nearest_goal(points)
    assert safe is line[1] and sure is line[2]
    assert nearest_goal(points[:2]) == (points[0], None)


def test_scb7_misses_say_why(board: tradeoff.Tradeoff) -> None:
    """SCB-7: the real hacking curves the default misses, with their numbers; the real table
    says it is a disclosure, not a tuning."""
    misses = real_misses()
    names = [m.name for m in misses]
    assert "UP-PPO ppo_beta0_aggressive" in names  # 5 points: at most one can fire
    assert "UP-PPO up_ppo_lambda0p1_aggressive" in names
    warmup = NoiseAwareDetector().warmup_evals
    for miss in misses:
        assert miss.reach < 1.0 and miss.eligible == max(miss.points - warmup, 0)
    text = render(board, misses)
    assert "disclosure of sensitivity, NOT a tuning" in text
    assert "nearest the goal box" in text and "stop floor, keep best observed" in text
    real = {p.setting: p for p in board.real if p.family == "noise-aware"}
    rule = NoiseAwareDetector()
    assert real[f"z={rule.z:g} warmup={rule.warmup_evals}"].default
    assert len(board.healthy) == len(SWEEP)


def test_scb7_diagnose_a_steady_fall_reaches_the_threshold() -> None:
    """SCB-7: a curve the detector stops reaches its threshold (reach >= 1)."""
    steps = list(range(10, 130, 10))
    values = [0.1, 0.3, 0.5, 0.6, 0.62, 0.61, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    miss = diagnose("fall", steps, values, NoiseAwareDetector(z=2.25, warmup_evals=4))
    assert miss.points == 12 and miss.eligible == 8 and miss.reach >= 1.0
    assert miss.drop > miss.gain > 0


def test_scb8_script_writes_report_and_figure(tmp_path: Path) -> None:
    """SCB-8: the docs script writes the report, the page and (with matplotlib) the figure."""
    sys.path.insert(0, str(ROOT / "docs" / "scripts"))
    from tradeoff_noise_aware import main

    out, png, page = tmp_path / "t.out", tmp_path / "t.png", tmp_path / "t.md"
    args = ["--jobs", "12", "--out", str(out), "--png", str(png), "--page", str(page)]
    assert main(args) == 0
    assert "calibrated world" in out.read_text(encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert "not a tuning" in text and "stop floor" in text and "img/tradeoffs.png" in text
    assert png.exists() == plots_available()
