"""The trade-off page and report are current: what `python docs/scripts/tradeoff_noise_aware.py`
writes on this tree (SCB-8). A change of the simulator, a world or a default must re-run it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

import attrs
from tradeoff_noise_aware import main
from tradeoff_page import _real_verdict

from evalstop.core.regret import RegretSummary
from evalstop.experiments.tradeoff.report import Miss
from evalstop.experiments.tradeoff.sweep import OperatingPoint, Tradeoff

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


def _real_point(setting: str, recall: float, harmful_healthy: int) -> OperatingPoint:
    summary = RegretSummary(
        runs=28, collapsing=17, healthy=11, harmful=harmful_healthy, benign=0,
        missed=0, harmful_healthy=harmful_healthy, recall=recall,
        harmful_rate=harmful_healthy / 11, benign_rate=0.0, mean_regret=0.1,
        stop_regret=0.1, saved_share=0.5, delay=1.0,
    )  # fmt: skip
    return OperatingPoint(family="noise-aware", setting=setting, summary=summary, default=False)


def _miss(eligible: int) -> Miss:
    nan = float("nan")
    return Miss(name="c", points=5, eligible=eligible, sigma=nan, gain=1.0, drop=1.0, reach=0.0)


def test_scb7_real_verdict_names_the_goal_that_gives_way() -> None:
    """SCB-7: the page says, over every swept real point, whether recall >= 90% with no harmful
    stop on a healthy curve is reached, and how many misses the warm-up alone explains."""
    short = Tradeoff(
        panels=(), real=(_real_point("a", 0.95, 1), _real_point("b", 0.80, 0)),
        healthy=(), jobs=1, seed=1,
    )  # fmt: skip
    text = _real_verdict(short, [_miss(0), _miss(0), _miss(3)])
    assert text.startswith("None of the 2 swept points reaches 90% recall")
    assert "recall goal gives way" in text
    assert "Of the 3 hacking curves the default misses, 2 have no point" in text
    met = attrs.evolve(short, real=(*short.real, _real_point("c", 0.90, 0)))
    text = _real_verdict(met, [])
    assert text.startswith("1 of 3 swept points reach 90% recall")
    assert "(noise-aware c)" in text and "gives way" not in text
