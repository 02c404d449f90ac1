"""The scoreboard's figure: recall against harmful stops, every detector and cell (``SCB-3``).

One panel per world (simulated cells, marker size by evaluations per run), one for the real
curves (when the board has any), one for the gym track with its Wilson intervals (when it has
one, ``SCB-10``), and one for the noise-aware ``z`` trade-off at the goal cells. Imports
matplotlib lazily; without it, nothing is written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from evalstop.experiments.grid import SCOREBOARD_DETECTORS
from evalstop.experiments.plotting import plots_available, pyplot
from evalstop.experiments.scoreboard.board import Cell, Scoreboard
from evalstop.experiments.significance import intervals

__all__ = ["write_plot"]


def _points(cells: list[Cell]) -> tuple[list[float], list[float], list[float]]:
    kept = [c for c in cells if not math.isnan(c.summary.harmful_rate)]
    xs = [100 * c.summary.harmful_rate for c in kept]
    ys = [100 * (0.0 if math.isnan(c.summary.recall) else c.summary.recall) for c in kept]
    sizes = [12.0 + 1.5 * c.evals for c in kept]
    return xs, ys, sizes


def _gym_panel(axis: Any, cells: list[Cell]) -> None:
    """The gym track over every density, each detector with its 95% Wilson intervals."""
    for cell in cells:
        s = cell.summary
        ci = intervals(s)
        x, y = 100 * s.harmful_rate, 100 * s.recall
        xerr = [[x - 100 * ci["harmful_rate"][0]], [100 * ci["harmful_rate"][1] - x]]
        yerr = [[y - 100 * ci["recall"][0]], [100 * ci["recall"][1] - y]]
        axis.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt="o", capsize=2, label=cell.detector)
    axis.set_title(f"gym test split ({cells[0].summary.runs} runs, 95% Wilson intervals)")


def write_plot(board: Scoreboard, out: Path) -> list[Path]:
    """Write ``scoreboard.png`` to ``out``; returns the paths written (none without matplotlib)."""
    if not plots_available():
        return []
    plt = pyplot()
    worlds = sorted({c.world for c in board.cells if c.source == "sim"})
    real = [c for c in board.cells if c.source in ("real", "healthy")]
    gym = [c for c in board.cells if c.source == "gym" and c.evals == 0]
    panels = len(worlds) + 1 + bool(real) + bool(gym)
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4.2))
    for axis, world in zip(axes, worlds, strict=False):
        for name in SCOREBOARD_DETECTORS:
            cells = [c for c in board.cells if c.world == world and c.detector == name]
            xs, ys, sizes = _points(cells)
            axis.scatter(xs, ys, s=sizes, alpha=0.6, label=name)
        axis.set_title(f"simulated: {world} world (size: evals per run)")
    for name in SCOREBOARD_DETECTORS if real else ():
        for source, marker in (("real", "o"), ("healthy", "s")):
            cells = [c for c in real if c.detector == name and c.source == source]
            xs, ys, _ = _points(cells)
            if source == "healthy":
                ys = [0.0] * len(xs)
            axis = axes[len(worlds)]
            axis.scatter(xs, ys, marker=marker, s=60, alpha=0.7, label=f"{name} ({source})")
    if real:
        axes[len(worlds)].set_title("real curves (squares: healthy supervised, recall n/a)")
    if gym:
        _gym_panel(axes[-2], gym)
    for world in sorted({c.world for c in board.tradeoff}):
        cells = [c for c in board.tradeoff if c.world == world]
        for evals in sorted({c.evals for c in cells}):
            row = [c for c in cells if c.evals == evals]
            xs, ys, _ = _points(row)
            axes[-1].plot(xs, ys, marker="o", label=f"{world}, {evals} evals")
    axes[-1].set_title("noise-aware z = 1 .. 3 (larger z: fewer harmful stops, to the left)")
    for axis in axes:
        axis.set_xlabel("harmful stops on healthy runs (%)")
        axis.set_ylabel("collapsing runs stopped (%)")
        axis.axvline(5, color="grey", linewidth=0.8, linestyle="--")
        axis.axhline(90, color="grey", linewidth=0.8, linestyle="--")
        axis.legend(fontsize=6)
    fig.tight_layout()
    path = out / "scoreboard.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
