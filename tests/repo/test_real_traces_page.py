"""The real-curve page: generated from the package's corpus and the public healthy curves.

The label rule and the detectors' defaults are fixed (COR-2, NAD-9); these tests pin what the
page shows, they do not tune anything.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

from real_traces import build_report, main, render_markdown

from evalstop.experiments.grid import SCOREBOARD_DETECTORS
from evalstop.traces.corpus import default_data_dir

DOC = Path(__file__).resolve().parents[2] / "docs" / "real-traces.md"


def test_cor4_report_scores_every_curve_with_every_detector() -> None:
    """COR-4: each corpus curve and healthy curve is replayed by every scoreboard detector."""
    report = build_report(default_data_dir())
    assert len(report.curves) == 56 and len(report.healthy) == 12
    for curve in report.curves:
        assert len(curve.results) == len(curve.scores) == len(SCOREBOARD_DETECTORS)
    never = report.corpus_summaries[SCOREBOARD_DETECTORS.index("never")]
    assert never.recall == 0.0 and never.harmful == 0
    names = {curve.source.name: curve for curve in report.curves}
    vanilla = names["PAR ppo_gemma2-2b_ultrafb: Vanilla"]
    assert vanilla.reading.label == "hacking" and vanilla.results[0].stop_step == 16200
    assert names["RHE f_g_Hard held-out"].reading.label == "unlabelled"


def test_docs_page_is_current(tmp_path: Path) -> None:
    """COR-1: docs/real-traces.md is what `python docs/scripts/real_traces.py` writes."""
    out = tmp_path / "page.md"
    assert main(["--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text == render_markdown(build_report(default_data_dir()))
    assert DOC.read_text(encoding="utf-8") == text
