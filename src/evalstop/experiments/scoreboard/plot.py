"""The scoreboard's figure: recall against harmful stops, every detector and cell (``SCB-3``).

One panel per world (simulated cells, marker size by evaluations per run), one for the real
curves (when the board has any), and one for the noise-aware ``z`` trade-off at the goal
cells. Imports matplotlib lazily; without it, nothing is written.
"""

from __future__ import annotations

import math
from pathlib import Path

from evalstop.experiments.grid import SCOREBOARD_DETECTORS
from evalstop.experiments.plotting import plots_available, pyplot
from evalstop.experiments.scoreboard.board import Cell, Scoreboard

__all__ = ["write_plot"]


def _points(cells: list[Cell]) -> tuple[list[float], list[float], list[float]]:
    kept = [c for c in cells if not math.isnan(c.summary.harmful_rate)]
    xs = [100 * c.summary.harmful_rate for c in kept]
    ys = [100 * (0.0 if math.isnan(c.summary.recall) else c.summary.recall) for c in kept]
    sizes = [12.0 + 1.5 * c.evals for c in kept]
    return xs, ys, sizes


def write_plot(board: Scoreboard, out: Path) -> list[Path]:
    """Write ``scoreboard.png`` to ``out``; returns the paths written (none without matplotlib)."""
    if not plots_available():
        return []
    plt = pyplot()
    worlds = sorted({c.world for c in board.cells if c.source == "sim"})
    real = [c for c in board.cells if c.source != "sim"]
    panels = len(worlds) + 1 + bool(real)
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
            axes[-2].scatter(xs, ys, marker=marker, s=60, alpha=0.7, label=f"{name} ({source})")
    if real:
        axes[-2].set_title("real curves (squares: healthy supervised, recall n/a)")
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
