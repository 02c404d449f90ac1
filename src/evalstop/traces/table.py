"""Generic CSV: a header row, then one row per record; the step and metric are columns.

Lines whose first cell starts with ``#`` are comments and blank lines are skipped, so a CSV
with a provenance preamble reads as is. A long table holding several runs is read one run at a
time with ``where`` (spec ``TRC-9``). Rows are streamed: memory follows the curve kept, not
the file (``TRC-13``).
"""

from __future__ import annotations

import collections
import csv
from collections.abc import Iterator
from pathlib import Path

from evalstop.traces.errors import EmptyTraceError, MalformedTraceError, listing
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options
from evalstop.traces.rows import Row, Table, trace_from_rows
from evalstop.traces.source import text_lines

__all__ = ["read_csv", "read_table"]


def _skip(cells: list[str]) -> bool:
    first = cells[0] if cells else ""
    if first and first[0] != "#" and not first[0].isspace():
        return False  # the common case, decided without joining the row
    return not "".join(cells).strip() or first.lstrip().startswith("#")


def _records(path: Path, label: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(text_lines(path, label, csv=True))
    try:
        for cells in reader:
            if not _skip(cells):
                yield reader.line_num, cells
    except csv.Error as error:
        raise MalformedTraceError(label, f"line {reader.line_num}: {error}") from None


def _header(label: str, line: int, cells: list[str]) -> list[str]:
    header = [cell.strip() for cell in cells]
    counts = collections.Counter(header)
    duplicates = sorted(column for column, count in counts.items() if count > 1)
    if duplicates:
        raise MalformedTraceError(label, f"line {line}: repeated columns {listing(duplicates)}")
    return header


def read_header(path: Path, label: str) -> list[str]:
    """The header row of a CSV file; EmptyTraceError when it has none."""
    for line, cells in _records(path, label):
        return _header(label, line, cells)
    raise EmptyTraceError(label, "no header row")


def read_table(path: Path, label: str) -> Table:
    """The header and a re-readable stream of the rows (with their line numbers)."""
    header = read_header(path, label)

    def rows() -> Iterator[Row]:
        reader = csv.reader(text_lines(path, label, csv=True))
        width = len(header)
        seen_header = False
        try:
            for cells in reader:
                first = cells[0] if cells else ""
                # The common case is decided without calling _skip.
                if (not first or first[0] == "#" or first[0].isspace()) and _skip(cells):
                    continue
                if not seen_header:
                    seen_header = True
                    continue
                if len(cells) != width:
                    raise MalformedTraceError(
                        label,
                        f"line {reader.line_num} has {len(cells)} fields, the header has {width}",
                    )
                yield reader.line_num, dict(zip(header, cells))  # noqa: B905 -- widths checked
        except csv.Error as error:
            raise MalformedTraceError(label, f"line {reader.line_num}: {error}") from None

    return Table(columns=header, rows=rows)


def read_csv(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a generic CSV file."""
    return trace_from_rows(label, TraceFormat.CSV, read_table(path, label), options)
