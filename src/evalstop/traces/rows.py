"""Rows to trace: the shared core of the generic CSV and JSONL readers (spec ``TRC-9``).

A row is a mapping from column (or key) to a raw cell, with the line it came from. The step
column, ``where`` filters and metric are resolved here once for both formats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalstop.traces.errors import EmptyTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import (
    Bad,
    Options,
    Record,
    build_trace,
    check_where,
    choose_metric,
    choose_step_column,
    parse_step,
    parse_value,
)

__all__ = ["Row", "trace_from_rows"]

Row = tuple[int, Mapping[str, object]]
"""``(line, cells)``: one record of a CSV or JSONL file."""


def _cell_text(raw: object) -> str:
    return raw if isinstance(raw, str) else "" if raw is None else str(raw)


def _numeric_columns(rows: Sequence[Row], columns: Sequence[str], skip: str) -> list[str]:
    numeric: list[str] = []
    for column in columns:
        if column == skip:
            continue
        if any(isinstance(parse_value(cells.get(column)), float) for _, cells in rows):
            numeric.append(column)
    return numeric


def trace_from_rows(
    label: str,
    fmt: TraceFormat,
    columns: Sequence[str],
    rows: Sequence[Row],
    options: Options,
) -> Trace:
    """The trace of ``options.metric`` over ``rows`` that match ``options.where``."""
    if not rows:
        raise EmptyTraceError(label, "no data rows")
    step_column = choose_step_column(label, options.step_column, columns)
    where = dict(options.where)
    check_where(label, where, columns)
    selected = [
        (line, cells)
        for line, cells in rows
        if all(_cell_text(cells.get(column)) == value for column, value in where.items())
    ]
    if not selected:
        wanted = ", ".join(f"{column}={value}" for column, value in where.items())
        raise EmptyTraceError(label, f"no rows match {wanted}")
    requested = options.metric
    if requested is not None and requested in columns and requested != step_column:
        metric = requested
    else:
        metric = choose_metric(label, requested, _numeric_columns(selected, columns, step_column))
    records: list[Record] = []
    bad: Bad | None = None
    for line, cells in selected:
        value = parse_value(cells.get(metric))
        if value is None:
            continue
        if isinstance(value, Bad):
            bad = bad or Bad(line, value.text)
            continue
        step = parse_step(cells.get(step_column), label, line, step_column)
        if step is not None:
            records.append((step, value, line))
    return build_trace(label, fmt, metric, records, bad=bad, order=options.order)
