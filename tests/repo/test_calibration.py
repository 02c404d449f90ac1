"""The calibrated world is the fit of the real curves' summary statistics (CRV-7)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "scripts"))

import calibration
from calibration import (
    SUPERVISED,
    SUPERVISED_RUNS,
    calibrate,
    curve_stats,
    main,
    noise_sd,
    render,
    step_drops,
)

from evalstop.sim.curves import GAIN_RANGE, INITIAL_RANGE
from evalstop.sim.worlds import CALIBRATED
from evalstop.traces.corpus import CurveSource, catalogue, default_data_dir

ESTIMATE_MEDIAN = 1.2
OUT = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "calibration.out"


def test_crv7_calibrated_world_is_the_fit_of_the_real_curves() -> None:
    """CRV-7: every calibrated number is recomputed from shared/data/real-traces.

    Fails (never skips) when the data is absent: a check that cannot run is not a pass.
    """
    data = default_data_dir()
    assert data.is_dir(), f"{data} is missing: the calibration cannot be checked"
    fit = calibrate(curve_stats(data))
    assert round(fit.plateau_share, 2) == CALIBRATED.plateau_share
    assert round(fit.decline_rate, 2) == CALIBRATED.decline_rate
    assert round(fit.noise_fraction, 3) == CALIBRATED.eval_noise
    assert math.floor(fit.evals_per_run * ESTIMATE_MEDIAN) == CALIBRATED.rlhf_evals
    assert tuple(round(x, 2) for x in fit.turn_range) == CALIBRATED.turn_range
    assert tuple(round(x, 3) for x in fit.initial_range) == INITIAL_RANGE
    assert tuple(round(x, 3) for x in fit.gain_range) == GAIN_RANGE
    assert tuple(round(x, 3) for x in fit.noise_spread) == CALIBRATED.noise_spread
    text = render(fit)
    assert "healthy runs that plateau | 0.82" in text
    assert sum(c.label == "hacking" for c in fit.curves) == 17
    assert sum(c.label == "healthy" for c in fit.curves) == 11


def test_crv7_excluded_curves_never_feed_the_fit() -> None:
    """CRV-7: no curve the catalogue marks ``excluded`` is among the fitted curves.

    The corpus has excluded curves that the labelling rule labels (the duplicate PAR run is
    healthy, the GRPO train-batch log hacking), so a fit that read them would contain them.
    """
    data = default_data_dir()
    excluded = {s.name for s in catalogue(data) if s.excluded}
    assert len(excluded) == 2
    fitted = {c.name for c in curve_stats(data)}
    assert not fitted & excluded
    assert fitted


def test_crv7_marking_a_curve_excluded_removes_it_from_the_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CRV-7: the fit follows the ``excluded`` mark, not a list of names.

    Marking every hacking curve but one excluded leaves one hacking curve in the fit; the
    half-loss time is then that curve's own.
    """
    data = default_data_dir()
    full = curve_stats(data)
    hacking = [c for c in full if c.label == "hacking" and math.isfinite(c.half_loss_ratio)]
    kept = hacking[0]
    dropped = {c.name for c in hacking[1:]}

    def marked(data_dir: Path) -> tuple[CurveSource, ...]:
        return tuple(
            attrs.evolve(s, excluded="test") if s.name in dropped else s
            for s in catalogue(data_dir)
        )

    monkeypatch.setattr(calibration, "catalogue", marked)
    fit = calibrate(curve_stats(data))
    assert [c.name for c in fit.curves if c.label == "hacking"] == [kept.name]
    assert fit.half_loss_ratio == kept.half_loss_ratio
    assert len(fit.curves) == len(full) - len(dropped)


def test_crv7_crv12_step_schedules_are_the_documented_drops() -> None:
    """CRV-7, CRV-12: the step-schedule share, drop positions and levels are those of the
    documented drops of the healthy supervised runs."""
    drops = step_drops()
    assert len(drops) / SUPERVISED_RUNS == CALIBRATED.step_share
    assert (round(min(d[1] for d in drops), 2), round(max(d[1] for d in drops), 2)) == (
        CALIBRATED.step_drop_range
    )
    assert (round(min(d[2] for d in drops), 2), round(max(d[2] for d in drops), 2)) == (
        CALIBRATED.step_level_range
    )
    assert len(list(SUPERVISED.glob("*.csv"))) == SUPERVISED_RUNS


def test_crv7_noise_estimate_recovers_known_noise() -> None:
    """CRV-7: the second-difference noise estimate recovers the sd of noise on a line."""
    rng = np.random.default_rng(3)
    values = 0.5 + 0.01 * np.arange(2000) + 0.03 * rng.standard_normal(2000)
    assert abs(noise_sd(values) - 0.03) < 0.002
    assert math.isnan(noise_sd([1.0, 2.0]))


def test_crv7_script_prints_the_fit(capsys: pytest.CaptureFixture[str]) -> None:
    """CRV-7: ``python docs/scripts/calibration.py`` prints the table."""
    data = default_data_dir()
    assert main(["--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "decline rate kappa | 2.26" in out


def test_crv7_committed_calibration_output_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    """CRV-7: ``docs/scripts/calibration.out`` is what the script prints now.

    Regenerate with ``python docs/scripts/calibration.py > docs/scripts/calibration.out``.
    """
    assert main([]) == 0
    assert capsys.readouterr().out == OUT.read_text(encoding="utf-8")
