"""The figures the source paper reports (``../shared/paper.md``): the one place they are typed.

:data:`PAPER_FIGURES` is read by the report (tables beside ours) and the plots (the composability
band); ``results.json`` carries it under ``paper``. A figure is a number, a ``(low, high)``
range or, for a qualitative claim, a string; None where the paper reports nothing.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

__all__ = ["PAPER_FIGURES", "PaperFigures", "PaperRow", "PaperValue", "paper_json"]

PaperValue = float | tuple[float, float] | str | None


@attrs.frozen(slots=True)
class PaperRow:
    """What the paper reports for one system of its main table (changes against SRTF-Est)."""

    system: str
    jct_change_pct: PaperValue = None
    wasted_change_pct: PaperValue = None
    precision: PaperValue = None
    recall: PaperValue = None
    fpr: PaperValue = None

    def get(self, metric: str) -> PaperValue:
        """The figure for ``metric`` (None for a metric the paper does not report)."""
        value: PaperValue = getattr(self, metric, None)
        return value


@attrs.frozen(slots=True)
class PaperFigures:
    """Every figure of the paper our experiments compare with.

    Attributes:
        main: the main table's rows.
        composability_jct_change_pct: the range of JCT changes over all base policies.
        noise_precision: ``(sigma, EvalStop precision)`` points of the noise sweep.
        base_rate_min_precision: EvalStop's lowest precision over the base rates.
        base_rate_stopat: the paper's claim on StopAt-0.65 across base rates.
        best_k: the k the paper calls the best balance.
    """

    main: tuple[PaperRow, ...]
    composability_jct_change_pct: tuple[float, float]
    noise_precision: tuple[tuple[float, float], ...]
    base_rate_min_precision: float
    base_rate_stopat: str
    best_k: int

    def row(self, system: str) -> PaperRow:
        """The main-table row of ``system`` (an empty row when the paper has none)."""
        for row in self.main:
            if row.system == system:
                return row
        return PaperRow(system)

    def noise_precision_at(self, sigma: float) -> float | None:
        """EvalStop's precision at ``sigma`` if the paper reports it."""
        for point, precision in self.noise_precision:
            if point == sigma:
                return precision
        return None


PAPER_FIGURES: Final = PaperFigures(
    main=(
        PaperRow("srtf-est", jct_change_pct=0.0, wasted_change_pct=0.0),
        PaperRow(
            "evalstop+srtf-est",
            jct_change_pct=-9.4,
            wasted_change_pct=-21.8,
            precision=0.983,
            recall=0.99,
            fpr=0.015,
        ),
        PaperRow(
            "stopat-0.65+srtf-est",
            jct_change_pct="similar to EvalStop",
            precision="= base rate (0.6)",
            fpr=0.645,
        ),
        PaperRow("lossplateau+srtf-est", recall=0.383),
    ),
    composability_jct_change_pct=(-25.2, -8.9),
    noise_precision=((0.01, 1.0), (0.12, 0.81)),
    base_rate_min_precision=0.89,
    base_rate_stopat="= base rate",
    best_k=2,
)


def paper_json(figures: PaperFigures = PAPER_FIGURES) -> dict[str, Any]:
    """``figures`` as plain JSON values (tuples become lists)."""
    return attrs.asdict(figures)
