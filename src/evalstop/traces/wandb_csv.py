"""W&B chart CSV exports: a ``Step`` column and one ``<run> - <metric>`` column per run.

The ``<run> - <metric>__MIN`` and ``__MAX`` columns (the band W&B draws around a smoothed or
grouped line) are ignored. A metric is named by its full column or by the part after
``" - "`` when one run has it; empty cells are steps at which the run did not log the metric
(spec ``TRC-8``).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from evalstop.traces.errors import MetricNotFoundError, TraceOptionError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options, choose_step_column
from evalstop.traces.rows import trace_from_rows
from evalstop.traces.table import read_table

__all__ = ["SEPARATOR", "is_wandb_header", "read_wandb_csv"]

SEPARATOR = " - "
_BANDS = ("__MIN", "__MAX")


def is_wandb_header(header: list[str]) -> bool:
    """A ``Step`` column and at least one ``<run> - <metric>`` column."""
    return "Step" in header and any(SEPARATOR in column for column in header)


def _resolve(label: str, requested: str | None, candidates: list[str]) -> str:
    if requested is None:
        if len(candidates) == 1:
            return candidates[0]
        raise MetricNotFoundError(label, "no metric chosen and the file has several", candidates)
    if requested in candidates:
        return requested
    matches = [c for c in candidates if c.partition(SEPARATOR)[2] == requested]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise MetricNotFoundError(
            label, f"metric {requested!r} is logged by several runs: name the column", matches
        )
    raise MetricNotFoundError(label, f"metric {requested!r} not found", candidates)


def read_wandb_csv(path: Path, label: str, options: Options) -> Trace:
    """Read one run's metric from a W&B chart CSV export."""
    if options.where:
        raise TraceOptionError(label, "where does not apply to a W&B CSV (one column per run)")
    table = read_table(path, label)
    header = list(table.columns or ())
    step_column = choose_step_column(label, options.step_column, header)
    candidates = [c for c in header if c != step_column and not c.endswith(_BANDS)]
    metric = _resolve(label, options.metric, candidates)
    chosen = attrs.evolve(options, metric=metric, step_column=step_column)
    return trace_from_rows(label, TraceFormat.WANDB_CSV, table, chosen)
