"""The trade-off figure: recall against harmful stops at every operating point (``SCB-8``).

One panel per goal cell (world x evaluations per run) and one for the real RLHF curves: each
detector family's points, its defaults starred, the recall/harmful frontier as a line and the
goal region (harmful <= 5%, recall >= 90%) shaded. Imports matplotlib lazily; without it,
nothing is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalstop.experiments.plotting import plots_available, pyplot
from evalstop.experiments.tradeoff.sweep import (
    GOAL_HARMFUL,
    GOAL_RECALL,
    GOAL_REGRET,
    OperatingPoint,
    Panel,
    Tradeoff,
    frontier,
)

__all__ = ["write_tradeoff_plot"]

FAMILIES = ("noise-aware", "evalstop", "lossplateau", "stopat")


def _xy(points: Sequence[OperatingPoint]) -> tuple[list[float], list[float]]:
    xs = [100 * p.summary.harmful_rate for p in points]
    ys = [100 * (0.0 if math.isnan(p.summary.recall) else p.summary.recall) for p in points]
    return xs, ys


def _panel(axis: Any, points: Sequence[OperatingPoint], title: str) -> None:
    axis.axvspan(0, 100 * GOAL_HARMFUL, ymin=GOAL_RECALL / 1.05, color="green", alpha=0.12)
    for family in FAMILIES:
        xs, ys = _xy([p for p in points if p.family == family])
        axis.scatter(xs, ys, s=18, alpha=0.7, label=family)
    xs, ys = _xy([p for p in points if p.default])
    axis.scatter(xs, ys, marker="*", s=140, facecolors="none", edgecolors="black", label="default")
    xs, ys = _xy(frontier(points))
    axis.plot(xs, ys, color="black", linewidth=0.9, label="frontier")
    axis.set_xlim(-2, 102)
    axis.set_ylim(0, 105)
    axis.set_title(title, fontsize=9)
    axis.set_xlabel("harmful stops on healthy runs (%)", fontsize=8)
    axis.set_ylabel("collapsing runs stopped (%)", fontsize=8)


def _regret_panel(axis: Any, panels: Sequence[Panel]) -> None:
    """Mean regret per goal cell: the default noise-aware detector, the lowest of the sweep and
    the keep floors of the best-observed keep rule, against the 2% goal."""
    labels = [f"{p.world[:5]} {p.evals}" for p in panels]
    where = range(len(panels))
    series = {
        "noise-aware default": [
            next(q.summary.mean_regret for q in p.points if q.default and q.family == "noise-aware")
            for p in panels
        ],
        "lowest of the sweep": [min(q.summary.mean_regret for q in p.points) for p in panels],
        **{
            name: [
                next(q.summary.mean_regret for q in p.floors if q.setting.startswith(name))
                for p in panels
            ]
            for name in ("hindsight keep", "oracle stop", "stop floor")
        },
    }
    for name, values in series.items():
        axis.plot(list(where), [100 * v for v in values], marker="o", label=name)
    axis.axhline(100 * GOAL_REGRET, color="green", linestyle="--", label="goal (2%)")
    axis.set_xticks(list(where), labels, fontsize=7)
    axis.set_yscale("log")
    axis.set_ylabel("mean regret (% of gain, log)", fontsize=8)
    axis.set_title("mean regret: detectors vs keep floors (best observed)", fontsize=9)
    axis.legend(fontsize=6)


def write_tradeoff_plot(board: Tradeoff, path: Path) -> list[Path]:
    """Write the figure to ``path`` (PNG); returns the paths written (none without
    matplotlib)."""
    if not plots_available():
        return []
    plt = pyplot()
    columns = 4
    rows = math.ceil((len(board.panels) + 1) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False)
    flat = [axis for row in axes for axis in row]
    for axis, panel in zip(flat, board.panels, strict=False):
        title = f"{panel.world}, sigma {panel.noise:g}, {panel.evals} evals/run"
        _panel(axis, panel.points, title)
    _panel(flat[len(board.panels)], board.real, "real RLHF curves (disclosure, not tuning)")
    rest = flat[len(board.panels) + 1 :]
    if rest:
        _regret_panel(rest[0], board.panels)
    for axis in rest[1:]:
        axis.axis("off")
    flat[0].legend(fontsize=6, loc="lower right")
    fig.suptitle(
        f"operating points of every detector (seed {board.seed}, {board.jobs} jobs a workload); "
        "green: the recall and harmful-stop goals",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]
