"""Generic CSV: a header row, then one row per record; the step and metric are columns.

Lines whose first cell starts with ``#`` are comments and blank lines are skipped, so a CSV
with a provenance preamble reads as is. A long table holding several runs is read one run at a
time with ``where`` (spec ``TRC-9``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from evalstop.traces.errors import EmptyTraceError, MalformedTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options, read_text
from evalstop.traces.rows import Row, trace_from_rows

__all__ = ["read_csv", "read_table"]


def read_table(path: Path, label: str) -> tuple[list[str], list[Row]]:
    """The header and the rows (with their line numbers) of a CSV file."""
    text = read_text(path, label)
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows: list[Row] = []
    try:
        for cells in reader:
            if not cells or not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
                continue
            if header is None:
                header = [cell.strip() for cell in cells]
                duplicates = sorted({c for c in header if header.count(c) > 1})
                if duplicates:
                    raise MalformedTraceError(
                        label, f"line {reader.line_num}: repeated columns {', '.join(duplicates)}"
                    )
                continue
            if len(cells) != len(header):
                raise MalformedTraceError(
                    label,
                    f"line {reader.line_num} has {len(cells)} fields, the header has {len(header)}",
                )
            rows.append((reader.line_num, dict(zip(header, cells, strict=True))))
    except csv.Error as error:
        raise MalformedTraceError(label, f"line {reader.line_num}: {error}") from None
    if header is None:
        raise EmptyTraceError(label, "no header row")
    return header, rows


def read_csv(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a generic CSV file."""
    header, rows = read_table(path, label)
    return trace_from_rows(label, TraceFormat.CSV, header, rows, options)
