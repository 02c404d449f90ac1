"""Rows to trace: the shared core of the generic CSV and JSONL readers (spec ``TRC-9``).

A row is a mapping from column (or key) to a raw cell, with the line it came from. The step
column, ``where`` filters and metric are resolved here once for both formats. Rows are
streamed twice at most -- once to learn the columns and which hold numbers, once to keep the
chosen metric's readings -- so memory follows the curve kept, not the file (``TRC-13``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs

from evalstop.traces.errors import EmptyTraceError, MalformedTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import (
    STEP_CANDIDATES,
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


class _Collector:
    """The readings of one metric at one step column, from the rows that match."""

    __slots__ = ("bad", "label", "metric", "records", "step_column")

    def __init__(self, label: str, metric: str, step_column: str) -> None:
        self.label = label
        self.metric = metric
        self.step_column = step_column
        self.records = Records()
        self.bad: Bad | None = None

    def add(self, line: int, cells: Mapping[str, object]) -> None:
        value = parse_value(cells.get(self.metric))
        if value is None:
            return
        if isinstance(value, Bad):
            self.bad = self.bad or Bad(line, value.text)
            return
        step = parse_step(cells.get(self.step_column), self.label, line, self.step_column)
        if step is not None:
            self.records.append(step, value, line)


def _cell_text(raw: object) -> str:
    return raw if isinstance(raw, str) else "" if raw is None else str(raw)


def _matches(cells: Mapping[str, object], where: Mapping[str, str]) -> bool:
    for column, value in where.items():
        raw = cells.get(column)
        if raw != value and (raw.__class__ is str or _cell_text(raw) != value):
            return False
    return True


def _guess(label: str, options: Options, columns: Mapping[str, None]) -> _Collector | None:
    """A collector for the requested metric at the step column the columns so far point to."""
    step_column = options.step_column
    if step_column is None:
        step_column = next((c for c in STEP_CANDIDATES if c in columns), None)
    if options.metric is None or step_column is None or step_column == options.metric:
        return None
    return _Collector(label, options.metric, step_column)


def _scan(label: str, table: Table, options: Options) -> tuple[_Scan, _Collector | None]:
    """Learn the columns and which hold numbers; read the requested metric on the way.

    The readings are collected at the step column the first matching row's columns point to;
    the caller uses them only when the whole file points to the same one and no step was
    malformed (else a second pass reads them, so errors come in the documented order).
    """
    where = dict(options.where)
    columns: dict[str, None] = dict.fromkeys(table.columns or ())
    numeric: dict[str, None] = {}
    collector: _Collector | None = None
    guessed = False
    rows = matched = 0
    for line, cells in table.rows():
        rows += 1
        if table.columns is None:
            columns.update(dict.fromkeys(cells))
        if not _matches(cells, where):
            continue
        matched += 1
        for column, raw in cells.items():
            if column not in numeric and isinstance(parse_value(raw), float):
                numeric[column] = None
        if not guessed:
            collector, guessed = _guess(label, options, columns), True
        if collector is not None:
            try:
                collector.add(line, cells)
            except MalformedTraceError:
                collector = None
    ordered = [c for c in columns if c in numeric]
    scan = _Scan(columns=list(columns), rows=rows, matched=matched, numeric=ordered)
    return scan, collector


def _empty(label: str, scan: _Scan, where: Mapping[str, str]) -> None:
    if not scan.rows:
        raise EmptyTraceError(label, "no data rows")
    if not scan.matched:
        wanted = ", ".join(f"{column}={value}" for column, value in where.items())
        raise EmptyTraceError(label, f"no rows match {wanted}")


def _collect(table: Table, where: Mapping[str, str], collector: _Collector) -> _Scan:
    rows = matched = 0
    for line, cells in table.rows():
        rows += 1
        if _matches(cells, where):
            matched += 1
            collector.add(line, cells)
    return _Scan(columns=[], rows=rows, matched=matched, numeric=[])


def trace_from_rows(label: str, fmt: TraceFormat, table: Table, options: Options) -> Trace:
    """The trace of ``options.metric`` over the rows that match ``options.where``.

    One pass when the metric is requested and the rows agree on the step column (a header, or
    JSONL records with the same keys); two otherwise.
    """
    where = dict(options.where)
    requested = options.metric
    known = table.columns is not None and requested is not None and requested in table.columns
    scan, early = (None, None) if known else _scan(label, table, options)
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
    if early is not None and (early.metric, early.step_column) == (metric, step_column):
        collector = early
    else:
        collector = _Collector(label, metric, step_column)
        counted = _collect(table, where, collector)
        if scan is None:
            _empty(label, counted, where)
    return build_trace(
        label, fmt, metric, collector.records, bad=collector.bad, order=options.order
    )
