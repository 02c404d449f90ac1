"""Generic JSONL: one flat JSON object per line; the step and the metric are keys.

Blank lines are skipped; a line that is not a JSON object is an error naming the line. Keys a
record lacks are missing cells (spec ``TRC-9``). Lines are streamed (``TRC-13``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from evalstop.traces.errors import MalformedTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options
from evalstop.traces.rows import Row, Table, trace_from_rows
from evalstop.traces.source import parse_json, text_lines

__all__ = ["read_jsonl", "read_records"]


def read_records(path: Path, label: str) -> Table:
    """A re-readable stream of the records with their line numbers."""

    def rows() -> Iterator[Row]:
        for number, line in enumerate(text_lines(path, label), start=1):
            if not line.strip():
                continue
            record = parse_json(label, line, f"line {number}")
            if not isinstance(record, dict):
                raise MalformedTraceError(label, f"line {number}: expected a JSON object")
            yield number, record

    return Table(columns=None, rows=rows)


def read_jsonl(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a JSONL file."""
    return trace_from_rows(label, TraceFormat.JSONL, read_records(path, label), options)
