"""docs/slurm.md's C3 table: its simulator rows are what the script computes now (SLM-10).

The measured rows need a real cluster (root, minutes): ``docs/scripts/slurm_c3.py --write``
regenerates them; after a change of the simulator, ``--simulator-only`` rewrites the rows
this test checks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

from slurm_c3 import HEADER, PAGE, page_settings, simulated, simulated_rows

from slurm.jobs import curves


def test_slm10_the_pages_simulator_rows_are_current() -> None:
    """SLM-10: the same jobs, the page's seconds per evaluation and seeds, the same rows."""
    seconds, seeds = page_settings()
    mix = curves()
    rows = simulated_rows(
        simulated(mix, argparse.Namespace(seconds_per_eval=seconds, seeds=seeds)), len(mix)
    )
    text = PAGE.read_text(encoding="utf-8")
    assert HEADER in text
    for row in rows:
        assert row in text.splitlines(), "stale: run docs/scripts/slurm_c3.py --simulator-only"
    measured = [line for line in text.splitlines() if line.startswith("| real Slurm, measured")]
    assert len(measured) == 1
