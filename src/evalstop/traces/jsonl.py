"""Generic JSONL: one flat JSON object per line; the step and the metric are keys.

Blank lines are skipped; a line that is not a JSON object is an error naming the line. Keys a
record lacks are missing cells (spec ``TRC-9``).
"""

from __future__ import annotations

import json
from pathlib import Path

from evalstop.traces.errors import MalformedTraceError
from evalstop.traces.model import Trace, TraceFormat
from evalstop.traces.parse import Options, read_text
from evalstop.traces.rows import Row, trace_from_rows

__all__ = ["read_jsonl", "read_records"]


def read_records(path: Path, label: str) -> tuple[list[str], list[Row]]:
    """Every key seen (in first-seen order) and the records with their line numbers."""
    text = read_text(path, label)
    columns: dict[str, None] = {}
    rows: list[Row] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise MalformedTraceError(label, f"line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise MalformedTraceError(label, f"line {number}: expected a JSON object")
        columns.update(dict.fromkeys(record))
        rows.append((number, record))
    return list(columns), rows


def read_jsonl(path: Path, label: str, options: Options) -> Trace:
    """Read one metric of a JSONL file."""
    columns, rows = read_records(path, label)
    return trace_from_rows(label, TraceFormat.JSONL, columns, rows, options)
