"""The real-curve corpus shipped in the package: catalogue, label rule, cleanup (COR-1 to COR-4)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalstop.core.detectors import DeclineDetector
from evalstop.core.noise_aware import NoiseAwareDetector
from evalstop.traces import Trace, TraceFormat
from evalstop.traces.corpus import catalogue, default_data_dir, read_label, score_curve


def trace(values: list[float], metric: str = "score") -> Trace:
    return Trace("t", metric, TraceFormat.CSV, range(0, 10 * len(values), 10), values)


def test_cor1_catalogue_of_the_packaged_corpus() -> None:
    """COR-1: the package ships the corpus; every curve once, in a fixed order."""
    data = default_data_dir()
    assert (data / "PROVENANCE.txt").is_file()
    names = [source.name for source in catalogue(data)]
    assert len(names) == len(set(names)) == 56
    assert names == [source.name for source in catalogue(data)]
    assert sum(name.startswith("PAR ") for name in names) == 26
    assert sum(name.startswith("RHE ") for name in names) == 21


@pytest.mark.parametrize(
    ("gold", "proxy", "scale", "label"),
    [
        ([0.5, 0.6, 0.7, 0.4, 0.1], [1, 2, 3, 4, 5], 1.0, "hacking"),
        ([0.5, 0.6, 0.7, 0.68, 0.69], [1, 2, 3, 4, 5], 1.0, "healthy"),
        ([0.9, 0.8, 0.7, 0.6, 0.5], [1, 2, 3, 4, 5], 1.0, "hacking"),
        ([0.5, 0.6, 0.7, 0.4, 0.1], [5, 4, 3, 2, 1], 1.0, "unlabelled"),
        ([0.5, 0.7, 0.1], [1, 2, 3], 1.0, "unlabelled"),
        ([0.0, 0.01, 0.0, 0.0, 0.0], [1, 2, 3, 4, 5], 1.0, "unlabelled"),  # floor-level
        ([3.0, 3.05, 3.07, 3.02, 3.0], [1, 2, 3, 4, 5], 4.0, "unlabelled"),  # moves < 0.08
        ([3.0, 3.2, 3.4, 3.1, 3.0], [1, 2, 3, 4, 5], 4.0, "hacking"),
    ],
)
def test_cor2_label_rule_with_the_minimum_gain_guard(
    gold: list[float], proxy: list[float], scale: float, label: str
) -> None:
    """COR-2: half the gain given back with a rising proxy is hacking; a floor-level gain is not."""
    assert read_label(trace(gold), trace(proxy), scale).label == label


def test_cor3_duplicate_and_train_batch_curves_are_listed_not_scored() -> None:
    """COR-3: the duplicated PAR run is the same run; the train-batch curve is marked."""
    data = default_data_dir()
    sources = {source.name: source for source in catalogue(data)}
    duplicate = sources["PAR data_efficiency: PARref10"]
    kept = sources["PAR ppo_gemma2-2b_ultrafb: PAR"]
    assert duplicate.excluded and not kept.excluded
    a, b = duplicate.read(data, "winrate"), kept.read(data, "winrate")
    assert len(a) == len(b)
    assert max(abs(x - y) for x, y in zip(a.values, b.values, strict=True)) <= 0.0002 + 1e-12
    assert "not an evaluation" in sources["Vince GRPO gsm8k: train-batch gold"].excluded
    assert sum(bool(source.excluded) for source in sources.values()) == 2


def test_cor4_score_curve_counts_steps_and_regret() -> None:
    """COR-4: regret over the gain, post-peak steps and the steps a stop saves."""
    curve = trace([0.0, 0.5, 1.0, 0.8, 0.6, 0.4, 0.2])  # peak at step 20, last at 60
    score, result = score_curve(curve, DeclineDetector(2), collapsing=True)
    assert result.stop_step == 40 and score.stopped and score.regret == 0.0
    assert (score.post_peak, score.saved, score.delay) == (40.0, 20.0, 2)
    loss = trace([1.0, 0.5, 0.4, 0.6, 0.8], metric="eval_loss")  # lower is better
    score, result = score_curve(loss, DeclineDetector(2), collapsing=False)
    assert result.mode == "min" and result.fired_at_end and not score.stopped
    assert score.regret == pytest.approx(0.4 / 0.6)
    assert math.isnan(score.gain) and math.isnan(score.lost)


def test_rgt5_score_curve_with_a_scale_gives_gain_and_loss() -> None:
    """RGT-5: with the metric's scale, gain and loss in its units, in the mode's direction."""
    loss = trace([1.0, 0.5, 0.4, 0.6, 0.8], metric="eval_loss")
    score, _ = score_curve(loss, DeclineDetector(2), collapsing=False, scale=2.0)
    assert score.gain == pytest.approx(0.3) and score.lost == pytest.approx(0.2)
    assert score.floored_regret == pytest.approx(score.regret)


def test_cor4_healthy_supervised_curves_are_readable(tmp_path: Path) -> None:
    """COR-4: the public healthy curves in tests/data read and score without a harmful stop."""
    folder = Path(__file__).resolve().parents[1] / "data" / "healthy-supervised"
    from evalstop.experiments.scoreboard.board import real_scores

    _, healthy = real_scores(NoiseAwareDetector(), healthy=folder)
    assert len(healthy) == 12
    assert all(not run.collapsing for run in healthy)
