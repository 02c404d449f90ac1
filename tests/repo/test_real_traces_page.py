"""Real-data validation: the labelling rule, the report on real curves and the generated page.

The rule and the detectors' defaults are fixed; these tests pin what they do on the real
curves copied under tests/data/real-traces (see PROVENANCE.txt there), they do not tune them.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

from real_traces import (
    DETECTORS,
    build_report,
    catalogue,
    default_data_dir,
    main,
    read_label,
    render_markdown,
)

from evalstop.traces import Trace, TraceFormat

REAL = Path(__file__).resolve().parents[1] / "data" / "real-traces"
DOC = Path(__file__).resolve().parents[2] / "docs" / "real-traces.md"


def trace(values: list[float]) -> Trace:
    return Trace("t", "m", TraceFormat.CSV, range(0, 10 * len(values), 10), values)


@pytest.mark.parametrize(
    ("gold", "proxy", "flat", "label"),
    [
        ([0.5, 0.6, 0.7, 0.4, 0.1], [1, 2, 3, 4, 5], False, "hacking"),
        ([0.5, 0.6, 0.7, 0.68, 0.69], [1, 2, 3, 4, 5], False, "healthy"),
        ([0.5, 0.6, 0.7, 0.8, 0.9], [1, 2, 3, 4, 5], False, "healthy"),
        ([0.9, 0.8, 0.7, 0.6, 0.5], [1, 2, 3, 4, 5], False, "hacking"),
        ([0.5, 0.6, 0.7, 0.4, 0.1], [5, 4, 3, 2, 1], False, "unlabelled"),
        ([0.5, 0.7, 0.1], [1, 2, 3], False, "unlabelled"),
        ([0.0, 0.01, 0.0, 0.0, 0.0], [1, 2, 3, 4, 5], True, "unlabelled"),
    ],
)
def test_labelling_rule(gold: list[float], proxy: list[float], flat: bool, label: str) -> None:
    """The fixed rule: collapse of at least half the gain with a rising proxy is hacking."""
    reading = read_label(trace(gold), trace(proxy), flat)
    assert reading.label == label


def test_reading_numbers() -> None:
    """The reading reports first, peak, last, ratio and the proxy change."""
    reading = read_label(trace([0.5, 0.6, 0.7, 0.4, 0.1]), trace([1, 2, 3, 4, 6]))
    assert (reading.first, reading.peak, reading.last, reading.peak_step) == (0.5, 0.7, 0.1, 20)
    assert reading.ratio == pytest.approx(3.0) and reading.proxy_change == 3
    falling = read_label(trace([0.9, 0.8, 0.7, 0.6, 0.5]), trace([1, 2, 3, 4, 5]))
    assert math.isinf(falling.ratio)


def test_catalogue_covers_every_curve_of_the_copies() -> None:
    """Every curve of the copied files is in the catalogue, PAR one per run."""
    names = [source.name for source in catalogue(REAL)]
    assert len(names) == len(set(names))
    assert sum(name.startswith("PAR ppo_gemma2-2b_ultrafb") for name in names) == 10
    assert sum(name.startswith("UP-PPO") for name in names) == 7
    assert sum(name.startswith("RHE") for name in names) == 3
    assert "Vince GRPO gsm8k: held-out probe" in names


def test_report_on_real_curves_rpl_5() -> None:
    """RPL-5: on real data, the stops, kept checkpoints and regret of the default detectors."""
    report = build_report(REAL)
    by_name = {curve.source.name: curve for curve in report.curves}
    vanilla = by_name["PAR ppo_gemma2-2b_ultrafb: Vanilla"]
    assert vanilla.reading.label == "hacking"
    evalstop, lossplateau, stopat, never = vanilla.results
    assert (evalstop.stop_step, evalstop.best_step, evalstop.regret) == (16200, 6480, 0.0)
    assert (stopat.stop_step, never.stopped) == (19440, False)
    assert lossplateau.stopped
    aggressive = by_name["UP-PPO ppo_beta0_aggressive"]
    assert aggressive.reading.label == "hacking" and aggressive.source.source_says
    assert (aggressive.results[0].stop_step, aggressive.results[0].best_step) == (1000, 400)
    noisy = by_name["Vince GRPO gsm8k: train-batch gold"]
    assert noisy.reading.label == "hacking"
    # Per-batch gold accuracy is noisy: k=2 fires at step 60, long before the peak at 200.
    assert (noisy.results[0].stop_step, noisy.results[0].best_step) == (60, 40)
    assert noisy.results[0].regret == pytest.approx(0.66875 - 0.484375)
    assert by_name["PAR ppo_gemma2-2b_ultrafb: PAR"].reading.label == "healthy"
    assert by_name["RHE f_g_Hard held-out"].reading.label == "unlabelled"


def test_summaries_count_the_labelled_curves() -> None:
    """Precision and recall come from stops on hacking (TP) and healthy (FP) curves."""
    report = build_report(REAL)
    labelled = [c for c in report.curves if c.reading.label != "unlabelled"]
    for index, summary in enumerate(report.summaries):
        assert summary.detector == DETECTORS[index].name
        assert summary.tp + summary.fp + summary.fn + summary.tn == len(labelled)
        stops = [c.results[index].stopped for c in labelled if c.reading.label == "hacking"]
        assert summary.tp == sum(stops)
        if summary.tp + summary.fp:
            assert summary.precision == summary.tp / (summary.tp + summary.fp)
    never = report.summaries[-1]
    assert never.tp == never.fp == 0 and math.isnan(never.precision) and never.recall == 0


def test_markdown_is_deterministic_and_complete(tmp_path: Path) -> None:
    """The page lists every curve and every detector, and rendering is reproducible."""
    report = build_report(REAL)
    text = render_markdown(report)
    assert text == render_markdown(build_report(REAL))
    for curve in report.curves:
        assert f"| {curve.source.name} |" in text
    for detector in DETECTORS:
        assert f"`{detector.name}`" in text
    out = tmp_path / "page.md"
    assert main(["--data", str(REAL), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == text


def test_docs_page_is_current() -> None:
    """docs/real-traces.md is what `python docs/scripts/real_traces.py` writes from shared data.

    Fails (never skips) when the data is absent: a check that cannot run is not a pass.
    """
    data = default_data_dir()
    assert data.is_dir(), f"{data} is missing: the real-trace page cannot be checked"
    assert DOC.read_text(encoding="utf-8") == render_markdown(build_report(data))
