"""The detector scoreboard and ``evalstop detectors`` (SCB-1 to SCB-4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from evalstop.cli import main
from evalstop.core.registry import make_detector
from evalstop.experiments.grid import DENSITIES, SCOREBOARD_DETECTORS, TRADEOFF_Z
from evalstop.experiments.scoreboard import board as scoreboard
from evalstop.experiments.scoreboard.board import (
    render,
    run_scoreboard,
    to_json,
)
from evalstop.sim.workload import WorkloadConfig
from evalstop.sim.worlds import WORLDS

HEALTHY = Path(__file__).resolve().parents[1] / "data" / "healthy-supervised"


@pytest.fixture(scope="module")
def board() -> scoreboard.Scoreboard:
    return run_scoreboard(jobs=24, healthy=HEALTHY, gym_runs=0)


def test_scb1_every_detector_world_noise_and_density(board: scoreboard.Scoreboard) -> None:
    """SCB-1: one cell per detector, world, noise and density, plus real and healthy curves."""
    sim = [cell for cell in board.cells if cell.source == "sim"]
    for world in WORLDS.values():
        noises = {world.eval_noise, 0.02, 0.05, 0.12}
        cells = [cell for cell in sim if cell.world == world.name]
        assert {(c.noise, c.evals) for c in cells} == {(n, d) for n in noises for d in DENSITIES}
        assert len(cells) == len(noises) * len(DENSITIES) * len(SCOREBOARD_DETECTORS)
    real = {cell.detector: cell.summary for cell in board.cells if cell.source == "real"}
    healthy = {cell.detector: cell.summary for cell in board.cells if cell.source == "healthy"}
    assert set(real) == set(healthy) == set(SCOREBOARD_DETECTORS)
    assert real["never"].recall == 0.0 and healthy["never"].harmful == 0
    assert healthy["noise-aware"].runs == 12 and healthy["noise-aware"].collapsing == 0
    assert len(board.tradeoff) == 2 * len(DENSITIES) * len(TRADEOFF_Z)


def test_scb1_equal_detectors_are_folded_once_and_scored_alike() -> None:
    """SCB-1: equal detectors among a workload's (the trade-off's z = 2 is the default
    noise-aware) are folded once; each gets its own list of the same scores as a fold alone."""
    from evalstop.core.model import JobKind
    from evalstop.core.noise_aware import NoiseAwareDetector
    from evalstop.sim.workload import generate

    folds: list[str] = []

    @attrs.frozen
    class Counted(NoiseAwareDetector):
        """The noise-aware rule (generic path) that counts its folds' first reports."""

        def initial(self) -> Any:
            folds.append(self.name)
            return super().initial()

    jobs = generate(WorkloadConfig(n_jobs=60, eval_noise=0.12), 2).jobs
    rlhf = sum(job.spec.kind is JobKind.RLHF for job in jobs)
    detectors = [Counted(), make_detector("bocpd"), Counted(z=2.0), Counted(z=1.0)]
    rows = scoreboard._scores(detectors, jobs)
    assert len(folds) == 2 * rlhf  # Counted() and Counted(z=2.0) are one detector
    assert rows[0] == rows[2] and rows[0] is not rows[2]
    for detector, row in zip(detectors, rows, strict=True):
        assert row == scoreboard._scores([detector], jobs)[0]


def test_scb2_json_and_table_are_deterministic(board: scoreboard.Scoreboard) -> None:
    """SCB-2: the JSON has every cell with its place, NaN as null; same seed, same numbers."""
    payload = to_json(board)
    text = json.dumps(payload, allow_nan=False)
    assert json.loads(text)["cells"][0]["detector"] == SCOREBOARD_DETECTORS[0]
    assert to_json(run_scoreboard(jobs=24, healthy=HEALTHY, gym_runs=0)) == payload
    table = render(board)
    assert "real RLHF" in table and "healthy" in table and "noise-aware" in table
    header = table.splitlines()[1].split()
    assert header[header.index("regret") + 1 : header.index("regret") + 3] == ["median", "floored"]
    real = next(c for c in payload["cells"] if c["source"] == "real")
    assert real["median_regret"] is not None and real["floored_regret"] is not None  # RGT-5


def test_scb3_scb4_command_writes_json_and_png_and_rejects_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SCB-3, SCB-4: the command writes scoreboard.json (and the PNG); bad input exits 2."""
    import evalstop.cli.detectors as command

    def small(**kwargs: Any) -> scoreboard.Scoreboard:
        kwargs = {k: v for k, v in kwargs.items() if k not in ("quick", "gym_runs")}
        return run_scoreboard(jobs=12, gym_runs=0, **kwargs)

    monkeypatch.setattr(command, "run_scoreboard", small)
    assert main(["detectors", "--quick", "--out", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    payload = json.loads((tmp_path / "scoreboard.json").read_text(encoding="utf-8"))
    assert {"cells", "tradeoff", "seed"} <= set(payload)
    pytest.importorskip("matplotlib")
    assert (tmp_path / "scoreboard.png").stat().st_size > 0
    assert main(["detectors", "--seed", "-1"]) == 2
    assert main(["detectors", "--healthy", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("evalstop: error:") == 2 and "Traceback" not in err


def test_scb5_reproduce_includes_the_simulated_scoreboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SCB-5: reproduce prints and writes the simulated scoreboard of the worlds it runs."""
    out = tmp_path / "out"
    argv = ["reproduce", "--quick", "--seeds", "1", "--jobs", "20", "--world", "paper"]
    code = main([*argv, "--out", str(out), "--workers", "1", "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "Detector scoreboard, simulated part" in printed
    assert "detector scoreboard:" in printed and "s of CPU" in printed
    assert "Detector scoreboard, simulated part" in (out / "report.txt").read_text()
    payload = json.loads((out / "scoreboard.json").read_text())
    assert payload["jobs_per_workload"] == 20 and payload["seed"] == 1
    assert {cell["world"] for cell in payload["cells"]} == {"paper"}
    assert {cell["world"] for cell in payload["tradeoff"]} == {"paper"}
    assert not any(cell["source"] != "sim" for cell in payload["cells"])


def test_scb5_noise_levels_drawn_together_score_as_drawn_alone() -> None:
    """SCB-5, WRK-8: the simulated cells, whose workloads of one world and density are drawn
    as one noise sweep, equal the cells of each workload drawn alone (``sim_scores``)."""
    detectors = [make_detector(name) for name in SCOREBOARD_DETECTORS]
    swept = [
        cell for cells in scoreboard._sim_cells(detectors, 40, 1, ["calibrated"]) for cell in cells
    ]
    world = WORLDS["calibrated"]
    alone: list[scoreboard.Cell] = []
    for noise in dict.fromkeys((world.eval_noise, 0.02, 0.05, 0.12)):
        for evals in DENSITIES:
            config = WorkloadConfig(n_jobs=40, world=world, eval_noise=noise, evals_per_run=evals)
            scores = scoreboard.sim_scores(detectors, config, 1)
            names = SCOREBOARD_DETECTORS
            alone.extend(
                attrs.evolve(cell, world=world.name, noise=noise, evals=evals)
                for cell in scoreboard.compared("sim", names, scores)
            )
    kept = [c for c in swept if "(z=" not in c.detector]
    assert len(kept) == len(alone) and list(map(repr, kept)) == list(map(repr, alone))  # NaNs
