"""Tell a trace file's format from its name and content (spec ``TRC-3``).

A directory or a ``*tfevents*`` file is TensorBoard; ``.jsonl``/``.ndjson`` is JSONL; ``.json``
is a ``trainer_state.json`` when it has ``log_history``, else a checkpoint map; ``.csv`` is a
W&B export when it has ``Step`` and ``<run> - <metric>`` columns, else a generic CSV. Any other
name is sniffed: a whole-file JSON document, then JSON lines, then CSV.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalstop.traces.checkpoints import is_checkpoint_map
from evalstop.traces.errors import MalformedTraceError
from evalstop.traces.model import TraceFormat
from evalstop.traces.source import load_json, parse_json, read_prefix, text_lines
from evalstop.traces.table import read_header
from evalstop.traces.tensorboard import is_event_file, starts_like_event_file
from evalstop.traces.trainer_state import is_trainer_state
from evalstop.traces.wandb_csv import is_wandb_header

__all__ = ["detect_format"]

_JSONL_SUFFIXES = (".jsonl", ".ndjson")


def _json_format(label: str, data: Any) -> TraceFormat:
    if is_trainer_state(data):
        return TraceFormat.TRAINER_STATE
    if is_checkpoint_map(data):
        return TraceFormat.CHECKPOINTS_JSON
    raise MalformedTraceError(
        label,
        "not a recognised JSON layout: expected a trainer_state.json (an object with "
        "log_history) or an object mapping checkpoint names to objects of metrics",
    )


def _csv_format(path: Path, label: str) -> TraceFormat:
    header = read_header(path, label)
    return TraceFormat.WANDB_CSV if is_wandb_header(header) else TraceFormat.CSV


def _json_lines(path: Path, label: str) -> TraceFormat:
    """JSONL when the first non-blank line is a JSON value and more lines follow."""
    lines = (line for line in text_lines(path, label) if line.strip())
    first = next(lines, "")
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return _json_format(label, load_json(path, label))
    if next(lines, None) is not None:
        return TraceFormat.JSONL
    return _json_format(label, parse_json(label, first))


def _sniff(path: Path, label: str) -> TraceFormat:
    if starts_like_event_file(path):
        return TraceFormat.TENSORBOARD
    text = read_prefix(path, label)
    if text.lstrip().startswith(("{", "[")):
        return _json_lines(path, label)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "," in first:
        return _csv_format(path, label)
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
    suffix = path.suffix.lower()
    if suffix in _JSONL_SUFFIXES:
        return TraceFormat.JSONL
    if suffix == ".json":
        return _json_format(label, load_json(path, label))
    if suffix == ".csv":
        return _csv_format(path, label)
    return _sniff(path, label)
