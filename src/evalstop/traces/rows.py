"""Rows to trace: the shared core of the generic CSV and JSONL readers (spec ``TRC-9``).

A row is a mapping from column (or key) to a raw cell, with the line it came from. The step
column, ``where`` filters and metric are resolved here once for both formats. Rows are
streamed twice at most -- once to learn the columns and which hold numbers, once to keep the
chosen metric's readings -- so memory follows the curve kept, not the file (``TRC-13``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs

from evalstop.traces.errors import EmptyTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import (
    Bad,
    Options,
    Records,
    build_trace,
    check_where,
    choose_metric,
    choose_step_column,
    parse_step,
    parse_value,
)

__all__ = ["Row", "Table", "trace_from_rows"]

Row = tuple[int, Mapping[str, object]]
"""``(line, cells)``: one record of a CSV or JSONL file."""


@attrs.frozen(slots=True)
class Table:
    """A file's rows, as a function that streams them afresh on each call.

    Attributes:
        columns: the header, or None when only a scan of the rows tells (JSONL).
        rows: returns a new iterator over the rows.
    """

    columns: Sequence[str] | None
    rows: Callable[[], Iterator[Row]]


@attrs.frozen(slots=True)
class _Scan:
    columns: list[str]
    rows: int
    matched: int
    numeric: list[str]


def _cell_text(raw: object) -> str:
    return raw if isinstance(raw, str) else "" if raw is None else str(raw)


def _matches(cells: Mapping[str, object], where: Mapping[str, str]) -> bool:
    for column, value in where.items():
        raw = cells.get(column)
        if (raw if isinstance(raw, str) else _cell_text(raw)) != value:
            return False
    return True


def _scan(table: Table, where: Mapping[str, str], numbers: bool) -> _Scan:
    columns: dict[str, None] = dict.fromkeys(table.columns or ())
    numeric: dict[str, None] = {}
    rows = matched = 0
    for _, cells in table.rows():
        rows += 1
        if table.columns is None:
            columns.update(dict.fromkeys(cells))
        if not _matches(cells, where):
            continue
        matched += 1
        if numbers:
            for column, raw in cells.items():
                if column not in numeric and isinstance(parse_value(raw), float):
                    numeric[column] = None
    ordered = [c for c in columns if c in numeric]
    return _Scan(columns=list(columns), rows=rows, matched=matched, numeric=ordered)


def _empty(label: str, scan: _Scan, where: Mapping[str, str]) -> None:
    if not scan.rows:
        raise EmptyTraceError(label, "no data rows")
    if not scan.matched:
        wanted = ", ".join(f"{column}={value}" for column, value in where.items())
        raise EmptyTraceError(label, f"no rows match {wanted}")


def trace_from_rows(label: str, fmt: TraceFormat, table: Table, options: Options) -> Trace:
    """The trace of ``options.metric`` over the rows that match ``options.where``."""
    where = dict(options.where)
    requested = options.metric
    known = table.columns is not None and requested is not None and requested in table.columns
    scan = None if known else _scan(table, where, numbers=True)
    columns = table.columns if scan is None else scan.columns
    assert columns is not None  # known implies a header
    if scan is not None:
        _empty(label, scan, where)
    step_column = choose_step_column(label, options.step_column, columns)
    check_where(label, where, columns)
    if requested is not None and requested in columns and requested != step_column:
        metric = requested
    else:
        numeric = [] if scan is None else [c for c in scan.numeric if c != step_column]
        metric = choose_metric(label, requested, numeric)
    records = Records()
    bad: Bad | None = None
    rows = matched = 0
    for line, cells in table.rows():
        rows += 1
        if not _matches(cells, where):
            continue
        matched += 1
        value = parse_value(cells.get(metric))
        if value is None:
            continue
        if isinstance(value, Bad):
            bad = bad or Bad(line, value.text)
            continue
        step = parse_step(cells.get(step_column), label, line, step_column)
        if step is not None:
            records.append(step, value, line)
    if scan is None:
        _empty(label, _Scan(columns=[], rows=rows, matched=matched, numeric=[]), where)
    return build_trace(label, fmt, metric, records, bad=bad, order=options.order)
