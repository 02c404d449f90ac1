"""The scoreboard's gym track (SCB-10) and its intervals and paired tests (SCB-9), on a few
runs of the gym's development split (the tests never read the test split's numbers)."""

from __future__ import annotations

import json
import math

from evalstop.core.registry import DEFAULT_DETECTOR, make_detector
from evalstop.core.regret import summarize_runs
from evalstop.experiments.grid import DENSITIES, SCOREBOARD_DETECTORS
from evalstop.experiments.scoreboard.board import Scoreboard, gym_cells, render, to_json
from evalstop.experiments.scoreboard.gym import fold_views, gym_runs, gym_scores, run_views
from evalstop.experiments.significance import compare


def test_scb10_cells_per_density_and_overall() -> None:
    """SCB-10, SCB-9: one cell per detector at each density and one over all; the runs of the
    density cells add up to the overall cell; the default has no comparison, every other
    detector one; the JSON carries intervals and the comparison."""
    cells = gym_cells(6, "dev")
    assert len(cells) == (len(DENSITIES) + 1) * len(SCOREBOARD_DETECTORS)
    overall = [c for c in cells if c.evals == 0]
    assert all(c.summary.runs == 6 for c in overall)
    for name in SCOREBOARD_DETECTORS:
        parts = [c.summary.runs for c in cells if c.detector == name and c.evals]
        assert sum(parts) == 6
    for cell in cells:
        assert (cell.comparison is None) == (cell.detector == DEFAULT_DETECTOR)
    board = Scoreboard(tuple(cells), (), 0, 1, 6)
    payload = json.loads(json.dumps(to_json(board), allow_nan=False))
    entry = next(
        c for c in payload["cells"] if c["detector"] == "evalstop" and c["evals_per_run"] is None
    )
    assert set(entry["intervals"]) == {"recall", "harmful_rate", "benign_rate"}
    assert entry["vs_default"]["default"] == DEFAULT_DETECTOR
    assert "gym test n=all" in render(board)


def test_scb10_a_run_is_folded_as_a_platform_sees_it() -> None:
    """SCB-10: each report carries the logged step, score, proxy and KL, progress step/last;
    the scores equal a hand fold; a detector compared with itself differs in nothing."""
    runs = gym_runs("dev", 3)
    views = run_views(runs[0])
    checkpoints = runs[0].run.checkpoints
    assert [v.kl for v in views] == [c.kl for c in checkpoints]
    assert [v.proxy_reward for v in views] == [c.proxy_reward for c in checkpoints]
    assert views[-1].estimated_progress == 1.0
    detector = make_detector("noise-aware")
    (scores,) = gym_scores([detector], runs)
    stop, _ = fold_views(detector, views)
    assert scores[0].stopped == (stop is not None)
    assert all(not math.isnan(s.floored_regret) for s in scores)
    same = compare(scores, scores)
    assert same.recall_p == same.harmful_p == same.regret.p_value == 1.0
    assert not same.significant
    assert summarize_runs(scores).runs == 3
