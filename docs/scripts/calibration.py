"""Summary statistics of the labelled real RLHF curves: the fit of the ``calibrated`` world.

``python docs/scripts/calibration.py`` reads every curve of the packaged real corpus that the
catalogue does not mark ``excluded``, labels it with the corpus's fixed rule and prints the
statistics the ``calibrated`` world is set from (spec ``CRV-7``): the share of healthy runs
that plateau, the speed of the collapse after a hacking run's peak, the eval noise as a
fraction of the gain (per source), the evaluation density, where hacking runs peak, and the
initial levels and gains of the 0-1 metrics. Only the curves and their labels are used: no
detector result enters. The output is committed beside it (``calibration.out``).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np
import numpy.typing as npt

from evalstop.sim.clock import LATE_SHARE, PLATEAU_GAIN
from evalstop.sim.curves import HALF_LOSS_X
from evalstop.traces.corpus import catalogue, default_data_dir, read_label

__all__ = [
    "DOCUMENTED_DROPS",
    "DROP_WINDOW",
    "LATE_SHARE",
    "PLATEAU_GAIN",
    "SUPERVISED",
    "SUPERVISED_RUNS",
    "UNIT_SOURCES",
    "Calibration",
    "CurveStats",
    "calibrate",
    "curve_stats",
    "main",
    "noise_sd",
    "render",
    "step_drops",
]


SUPERVISED = Path(__file__).resolve().parents[2] / "tests" / "data" / "healthy-supervised"
"""The healthy supervised curves, the only ones whose sources document their schedules."""

DOCUMENTED_DROPS = (
    ("cifar10_resnet20_keras_a.csv", "val_acc", 50, "LR step at epoch 50 of 70 (PROVENANCE.md)"),
    (
        "cifar10_resnet18_keras_c.csv",
        "val_acc",
        15,
        "ReduceLROnPlateau (PROVENANCE.md); its first reduced-rate epoch is 16",
    ),
)
"""The supervised runs whose sources document a learning-rate drop after a plateau: file,
metric, the last epoch at the old rate, and where the schedule is documented. The other 8 of
the 10 runs document none (OneCycle, or no schedule named)."""

SUPERVISED_RUNS = 10
"""Runs (files) in ``tests/data/healthy-supervised``."""

DROP_WINDOW = 5
"""A drop's level: the mean of the 5 evaluations up to it (set before reading the curves)."""

UNIT_SOURCES = ("PAR", "Vince")
"""Sources whose gold metric is a 0-1 rate (win rate, accuracy): their first values and gains
set the worlds' absolute levels."""


@attrs.frozen(slots=True)
class CurveStats:
    """The statistics of one labelled curve (gold metric in its own units).

    Attributes:
        name: the curve's display name; source: its study (first word of the name).
        label: hacking or healthy, by ``real_traces.read_label``.
        evals: its number of evaluations; trained: those after step 0 (``evals`` less its
            step-0 evaluation of the initial policy, when it has one).
        first: its first value; gain: its peak minus its first value.
        noise_fraction: the noise standard deviation over the gain (:func:`noise_sd`).
        peak_fraction: the step of its peak over its last step.
        half_loss_ratio: (hacking) the time from the peak until half the gain is lost, over
            the time from the start to the peak; NaN when it never loses half.
        plateau: (healthy) True when it plateaus (:data:`LATE_SHARE`, :data:`PLATEAU_GAIN`).
    """

    name: str
    source: str
    label: str
    evals: int
    trained: int
    first: float
    gain: float
    noise_fraction: float
    peak_fraction: float
    half_loss_ratio: float
    plateau: bool | None


def noise_sd(values: npt.ArrayLike) -> float:
    """Robust noise estimate from second differences: for a locally linear curve with i.i.d.
    noise of sd ``s``, ``y[i+1] - 2 y[i] + y[i-1]`` has sd ``s sqrt(6)``; the median absolute
    second difference over 0.6745 estimates that sd robustly."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 3:
        return math.nan
    second = v[2:] - 2 * v[1:-1] + v[:-2]
    return float(np.median(np.abs(second)) / 0.6745 / math.sqrt(6))


def _half_loss_ratio(fractions: np.ndarray, values: np.ndarray, peak: int, gain: float) -> float:
    half = values[peak] - gain / 2
    for i in range(peak, len(values) - 1):
        if values[i + 1] <= half:
            step = (values[i] - half) / (values[i] - values[i + 1])
            crossed = fractions[i] + step * (fractions[i + 1] - fractions[i])
            return float((crossed - fractions[peak]) / fractions[peak])
    return math.nan


def _plateaus(fractions: np.ndarray, values: np.ndarray) -> bool:
    """Whether a curve plateaus: over the last :data:`LATE_SHARE` of its steps its 3-point mean
    gains less than :data:`PLATEAU_GAIN` of its total gain (the rule lives in
    :mod:`evalstop.sim.clock`, which fits the calibrated world's stretch to it, ``CRV-8``)."""
    smooth = values.copy()
    smooth[1:-1] = (values[:-2] + values[1:-1] + values[2:]) / 3
    late = int(np.searchsorted(fractions, 1.0 - LATE_SHARE))
    total = float(smooth.max() - smooth[0])
    return bool(smooth[-1] - smooth[: late + 1].max() < PLATEAU_GAIN * total)


def curve_stats(data_dir: Path) -> tuple[CurveStats, ...]:
    """The statistics of every labelled curve of ``data_dir`` that the corpus scores.

    A curve the catalogue marks ``excluded`` (a duplicate of another run, a per-batch log that
    is not an evaluation) is left out of the fit as it is left out of scoring (``CRV-7``).
    """
    out: list[CurveStats] = []
    for source in catalogue(data_dir):
        if source.excluded:
            continue
        gold = source.read(data_dir, source.gold)
        reading = read_label(gold, source.read(data_dir, source.proxy), source.scale)
        if reading.label == "unlabelled":
            continue
        pairs = [(s, v) for s, v in zip(gold.steps, gold.values, strict=True) if math.isfinite(v)]
        steps = np.array([s for s, _ in pairs], dtype=np.float64)
        values = np.array([v for _, v in pairs], dtype=np.float64)
        fractions = steps / steps[-1]
        peak = int(np.argmax(values))
        gain = reading.peak - reading.first
        hacking = reading.label == "hacking"
        out.append(
            CurveStats(
                name=source.name,
                source=source.name.split()[0],
                label=reading.label,
                evals=len(values),
                trained=len(values) - int(steps[0] == 0),
                first=reading.first,
                gain=gain,
                noise_fraction=noise_sd(values) / gain if gain > 0 else math.nan,
                peak_fraction=float(fractions[peak]),
                half_loss_ratio=(
                    _half_loss_ratio(fractions, values, peak, gain) if hacking else math.nan
                ),
                plateau=None if hacking else _plateaus(fractions, values),
            )
        )
    return tuple(out)


def step_drops(data_dir: Path = SUPERVISED) -> tuple[tuple[str, float, float], ...]:
    """``(file, drop position, level before it)`` of each documented drop (CRV-12): the drop
    epoch over the last epoch, and the mean of the :data:`DROP_WINDOW` evaluations up to it
    minus the first value, over the best 3-point mean minus the first value."""
    out = []
    for name, metric, drop, _ in DOCUMENTED_DROPS:
        with (data_dir / name).open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        epochs = np.array([float(r["epoch"]) for r in rows if r[metric]], dtype=np.float64)
        values = np.array([float(r[metric]) for r in rows if r[metric]], dtype=np.float64)
        at = int(np.searchsorted(epochs, drop))
        smooth = (values[:-2] + values[1:-1] + values[2:]) / 3
        gain = float(smooth.max() - values[0])
        level = float(values[at - DROP_WINDOW + 1 : at + 1].mean() - values[0]) / gain
        out.append((name, drop / float(epochs[-1]), level))
    return tuple(out)


@attrs.frozen(slots=True)
class Calibration:
    """The fitted numbers of the ``calibrated`` world and the curves they come from."""

    curves: tuple[CurveStats, ...]
    plateau_share: float
    half_loss_ratio: float
    decline_rate: float
    noise_fraction: float
    noise_spread: tuple[float, float]
    noise_by_source: tuple[tuple[str, int, float], ...]
    noise_all_by_source: tuple[tuple[str, int, float], ...]
    evals_per_run: float
    turn_range: tuple[float, float]
    initial_range: tuple[float, float]
    gain_range: tuple[float, float]


def calibrate(curves: Sequence[CurveStats]) -> Calibration:
    """The summary statistics of ``curves`` (each number's definition is in ``render``)."""
    hacking = [c for c in curves if c.label == "hacking"]
    healthy = [c for c in curves if c.label == "healthy"]
    ratios = [c.half_loss_ratio for c in hacking if math.isfinite(c.half_loss_ratio)]
    half = statistics.median(ratios)
    sources = sorted({c.source for c in healthy})
    unit = [c for c in curves if c.source in UNIT_SOURCES]
    return Calibration(
        curves=tuple(curves),
        plateau_share=sum(bool(c.plateau) for c in healthy) / len(healthy),
        half_loss_ratio=half,
        decline_rate=(HALF_LOSS_X - 1.0) / half,
        noise_fraction=statistics.median(c.noise_fraction for c in healthy),
        noise_spread=(
            min(c.noise_fraction for c in healthy)
            / statistics.median(c.noise_fraction for c in healthy),
            max(c.noise_fraction for c in healthy)
            / statistics.median(c.noise_fraction for c in healthy),
        ),
        noise_by_source=tuple(
            (
                s,
                sum(c.source == s for c in healthy),
                statistics.median(c.noise_fraction for c in healthy if c.source == s),
            )
            for s in sources
        ),
        noise_all_by_source=tuple(
            (
                s,
                sum(c.source == s for c in curves),
                statistics.median(c.noise_fraction for c in curves if c.source == s),
            )
            for s in sorted({c.source for c in curves})
        ),
        evals_per_run=statistics.median(c.trained for c in curves),
        turn_range=(
            min(c.peak_fraction for c in hacking),
            max(c.peak_fraction for c in hacking),
        ),
        initial_range=(min(c.first for c in unit), max(c.first for c in unit)),
        gain_range=(min(c.gain for c in unit), max(c.gain for c in unit)),
    )


def _g(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3g}"


def render(cal: Calibration) -> str:
    """The fit as a markdown table, then one row per curve."""
    hacking = sum(c.label == "hacking" for c in cal.curves)
    healthy = len(cal.curves) - hacking
    unit = sorted({c.source for c in cal.curves if c.source in UNIT_SOURCES})
    rows = [
        (
            "healthy runs that plateau",
            f"{cal.plateau_share:.2f}",
            f"share of the {healthy} healthy curves whose 3-point mean gains < "
            f"{PLATEAU_GAIN:.0%} of their gain over the last {LATE_SHARE:.0%} of steps",
        ),
        (
            "half-loss time after the peak",
            _g(cal.half_loss_ratio),
            f"median over the {hacking} hacking curves of (step losing half the gain - peak "
            "step) / peak step",
        ),
        (
            "decline rate kappa",
            _g(cal.decline_rate),
            f"({HALF_LOSS_X:.4f} - 1) / half-loss time: Gao's g has lost half its peak "
            f"at x = {HALF_LOSS_X:.4f}",
        ),
        (
            "eval noise / gain",
            _g(cal.noise_fraction),
            "median over healthy curves of the second-difference noise sd over the gain",
        ),
        (
            "noise multiplier m",
            f"logU({cal.noise_spread[0]:.3f}, {cal.noise_spread[1]:.3f})",
            "smallest and largest healthy noise / gain over their median (CRV-11)",
        ),
        *(
            (f"  eval noise / gain, {s}", _g(v), f"{n} healthy curve(s)")
            for s, n, v in cal.noise_by_source
        ),
        *(
            (
                f"  eval noise / gain, {s}, all labelled",
                _g(v),
                f"{n} curve(s); a hacking curve's collapse inflates it",
            )
            for s, n, v in cal.noise_all_by_source
        ),
        (
            "evaluations per run after step 0",
            _g(cal.evals_per_run),
            f"median over all labelled curves ({sum(c.trained < c.evals for c in cal.curves)} "
            f"of {len(cal.curves)} also evaluate the initial policy at step 0)",
        ),
        (
            "hacking turn p",
            f"U({cal.turn_range[0]:.2f}, {cal.turn_range[1]:.2f})",
            "range of the hacking curves' peak step over last step",
        ),
        (
            "initial quality q0",
            f"U({cal.initial_range[0]:.3f}, {cal.initial_range[1]:.3f})",
            f"range of first values, labelled 0-1 metrics ({', '.join(unit)})",
        ),
        (
            "gain G",
            f"U({cal.gain_range[0]:.3f}, {cal.gain_range[1]:.3f})",
            "range of gains (peak - first), same curves",
        ),
    ]
    drops = step_drops()
    rows += [
        (
            "step-schedule share",
            f"{len(drops) / SUPERVISED_RUNS:g}",
            f"{len(drops)} of the {SUPERVISED_RUNS} healthy supervised runs document a "
            "learning-rate drop after a plateau (CRV-12)",
        ),
        (
            "drop position",
            f"U({min(d[1] for d in drops):.2f}, {max(d[1] for d in drops):.2f})",
            "their drop epoch over their last",
        ),
        (
            "level before the drop",
            f"U({min(d[2] for d in drops):.2f}, {max(d[2] for d in drops):.2f})",
            f"mean of the {DROP_WINDOW} evaluations up to the drop over the gain",
        ),
    ]
    lines = ["| statistic | value | definition |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    lines += [
        "",
        "| curve | label | evals | first | gain | noise/gain | peak at | half-loss | plateau |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.name} | {c.label} | {c.evals} | {_g(c.first)} | {_g(c.gain)} | "
        f"{_g(c.noise_fraction)} | {c.peak_fraction:.2f} | {_g(c.half_loss_ratio)} | "
        f"{'-' if c.plateau is None else ('yes' if c.plateau else 'no')} |"
        for c in cal.curves
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the fit of the real traces in ``--data``."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/calibration.py", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    args = parser.parse_args(argv)
    print(render(calibrate(curve_stats(args.data))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
