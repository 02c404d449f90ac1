"""The detector scoreboard's simulator part inside ``evalstop reproduce`` (spec ``SCB-5``).

Kept apart from the paper's experiments (their plan, runner and report) so that it adds one
measured step: :func:`reproduce_scoreboard` runs the simulated cells of ``evalstop detectors``
on the worlds ``reproduce`` runs, with its jobs per workload and the scoreboard's seed, and
reports the CPU seconds it took; :func:`write_scoreboard` writes its JSON and figure beside
the report's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs

from evalstop.experiments.paper.plan import Settings
from evalstop.experiments.scoreboard.board import Scoreboard, render, sim_scoreboard, to_json
from evalstop.experiments.scoreboard.plot import write_plot

__all__ = ["SCOREBOARD_FILES", "ReproducedScoreboard", "reproduce_scoreboard", "write_scoreboard"]

SCOREBOARD_FILES = ("scoreboard.json", "scoreboard.png")
"""What the scoreboard adds to ``reproduce --out``."""


@attrs.frozen(slots=True)
class ReproducedScoreboard:
    """The simulated scoreboard, its printed section and the CPU seconds it cost.

    Attributes:
        board: the cells and the noise-aware ``z`` trade-off.
        text: the section ``reproduce`` appends to its report.
        cpu_seconds: process CPU time spent building it.
    """

    board: Scoreboard
    text: str
    cpu_seconds: float


def reproduce_scoreboard(settings: Settings, seed: int = 1) -> ReproducedScoreboard:
    """The scoreboard's simulated cells for ``settings`` (its worlds and jobs a workload)."""
    started = time.process_time()
    board = sim_scoreboard(jobs=settings.jobs, seed=seed, worlds=settings.worlds)
    text = "\n\n".join(
        [
            "Detector scoreboard, simulated part (as `evalstop detectors`; the real curves "
            "are in docs/real-traces.md)",
            render(board),
            render(board, board.tradeoff),
        ]
    )
    return ReproducedScoreboard(board, text, time.process_time() - started)


def write_scoreboard(board: Scoreboard, folder: Path, *, plot: bool = True) -> list[Path]:
    """Write ``scoreboard.json`` and, when ``plot`` (and matplotlib is there),
    ``scoreboard.png`` into ``folder``."""
    path = folder / "scoreboard.json"
    path.write_text(json.dumps(to_json(board), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return [path, *(write_plot(board, folder) if plot else [])]
