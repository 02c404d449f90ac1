"""The trade-off page and report are current: what `python docs/scripts/tradeoff_noise_aware.py`
writes on this tree (SCB-8). A change of the simulator, a world or a default must re-run it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

from tradeoff_noise_aware import main

ROOT = Path(__file__).resolve().parents[2]


def test_scb8_committed_report_and_page_are_current(tmp_path: Path) -> None:
    """SCB-8: docs/scripts/tradeoff_noise_aware.out and docs/tradeoffs.md equal a fresh run."""
    out, page = tmp_path / "t.out", tmp_path / "t.md"
    args = ["--out", str(out), "--png", str(tmp_path / "t.png"), "--page", str(page)]
    assert main(args) == 0
    hint = "stale: run `python docs/scripts/tradeoff_noise_aware.py` and commit its outputs"
    committed = ROOT / "docs" / "scripts" / "tradeoff_noise_aware.out"
    assert out.read_text(encoding="utf-8") == committed.read_text(encoding="utf-8"), hint
    page_now = (ROOT / "docs" / "tradeoffs.md").read_text(encoding="utf-8")
    assert page.read_text(encoding="utf-8") == page_now, hint
