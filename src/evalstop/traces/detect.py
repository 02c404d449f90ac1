"""Tell a trace file's format from its name and content (spec ``TRC-3``).

A directory or a ``*tfevents*`` file is TensorBoard; ``.jsonl``/``.ndjson`` is JSONL; ``.json``
is a ``trainer_state.json`` when it has ``log_history``, else a checkpoint map; ``.csv`` is a
W&B export when it has ``Step`` and ``<run> - <metric>`` columns, else a generic CSV. Any other
name is sniffed: a whole-file JSON document, then JSON lines, then CSV.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from evalstop.traces.checkpoints import is_checkpoint_map
from evalstop.traces.errors import MalformedTraceError, UnreadableTraceError
from evalstop.traces.model import TraceFormat
from evalstop.traces.parse import read_text
from evalstop.traces.tensorboard import is_event_file
from evalstop.traces.trainer_state import is_trainer_state
from evalstop.traces.wandb_csv import is_wandb_header

__all__ = ["detect_format"]

_JSONL_SUFFIXES = (".jsonl", ".ndjson")


def _json_format(label: str, text: str) -> TraceFormat:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedTraceError(label, f"line {error.lineno}: not JSON ({error.msg})") from None
    if is_trainer_state(data):
        return TraceFormat.TRAINER_STATE
    if is_checkpoint_map(data):
        return TraceFormat.CHECKPOINTS_JSON
    raise MalformedTraceError(
        label,
        "not a recognised JSON layout: expected a trainer_state.json (an object with "
        "log_history) or an object mapping checkpoint names to objects of metrics",
    )


def _csv_format(text: str) -> TraceFormat:
    for cells in csv.reader(io.StringIO(text, newline="")):
        if not cells or not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
            continue
        header = [cell.strip() for cell in cells]
        return TraceFormat.WANDB_CSV if is_wandb_header(header) else TraceFormat.CSV
    return TraceFormat.CSV


def _sniff(label: str, text: str) -> TraceFormat:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            json.loads(text)
        except json.JSONDecodeError:
            return TraceFormat.JSONL
        return _json_format(label, text)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "," in first:
        return _csv_format(text)
    raise MalformedTraceError(
        label,
        "cannot tell the format from the name or content; choose one of "
        f"{', '.join(f.value for f in TraceFormat)}",
    )


def detect_format(path: Path, label: str | None = None) -> TraceFormat:
    """The format of the file at ``path``; ``label`` is how messages name it."""
    label = str(path) if label is None else label
    if path.is_dir() or is_event_file(path):
        return TraceFormat.TENSORBOARD
    if not path.exists():
        raise UnreadableTraceError(label, "cannot read: No such file or directory")
    suffix = path.suffix.lower()
    if suffix in _JSONL_SUFFIXES:
        return TraceFormat.JSONL
    text = read_text(path, label)
    if suffix == ".json":
        return _json_format(label, text)
    if suffix == ".csv":
        return _csv_format(text)
    return _sniff(label, text)
