"""The issue's trade-off clause, measured: every detector's operating points at the goal cells.

Run ``python docs/scripts/tradeoff_noise_aware.py`` (about a minute of CPU). It writes
``docs/scripts/tradeoff_noise_aware.out`` (the tables), ``docs/img/tradeoffs.png`` (recall
against harmful stops, one panel per world and density plus the real curves) and the page
``docs/tradeoffs.md``; ``--jobs``, ``--out``, ``--png`` and ``--page`` change the size and the
targets (the tests run it small).

Data: EVALUATION data, as the scoreboard scores it (``evalstop detectors``, spec ``SCB``):
seed 1, the ``paper`` world at sigma 0.12 and the ``calibrated`` world at its own noise, at 10,
20 and 40 evaluations per run, 1000 jobs a workload (their RLHF runs); the real RLHF corpus
the package ships and ``tests/data/healthy-supervised``. The operating-point grid
(:data:`evalstop.experiments.tradeoff.sweep.SWEEP`) and the keep floors (``RGT-6``) were fixed
before this script ran. The detectors' defaults are fixed (noise-aware: chosen in the simulator on
seeds 1001-1002 by ``docs/scripts/tune_noise_aware.py``, ``NAD-9``); nothing here chooses or
changes a parameter. The real-curve table is a disclosure of how sensitive the detectors are to
their knobs on those curves, not a tuning.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tradeoff_page import gain_in_noise, render_page

from evalstop.experiments.tradeoff.plot import write_tradeoff_plot
from evalstop.experiments.tradeoff.report import real_misses, render
from evalstop.experiments.tradeoff.sweep import run_tradeoff

_ROOT = Path(__file__).resolve().parents[2]
HEALTHY = _ROOT / "tests" / "data" / "healthy-supervised"
OUT = _ROOT / "docs" / "scripts" / "tradeoff_noise_aware.out"
PNG = _ROOT / "docs" / "img" / "tradeoffs.png"
PAGE = _ROOT / "docs" / "tradeoffs.md"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep, write the report and the figure; print the CPU seconds to stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs a simulated workload")
    parser.add_argument("--out", type=Path, default=OUT, help="the report")
    parser.add_argument("--png", type=Path, default=PNG, help="the figure")
    parser.add_argument("--page", type=Path, default=PAGE, help="the docs page")
    args = parser.parse_args(argv)
    started = time.process_time()
    board = run_tradeoff(jobs=args.jobs, seed=1, healthy=HEALTHY)
    misses = real_misses()
    args.out.write_text(render(board, misses), encoding="utf-8")
    write_tradeoff_plot(board, args.png)
    gains = [gain_in_noise(p.world, p.evals, args.jobs, 1) for p in board.panels]
    args.page.write_text(render_page(board, misses, gains), encoding="utf-8")
    print(f"cpu seconds: {time.process_time() - started:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
