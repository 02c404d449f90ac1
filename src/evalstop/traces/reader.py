"""``read_trace``: one call that detects the format (or takes a forced one) and reads a trace."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from evalstop.traces.checkpoints import read_checkpoints_json
from evalstop.traces.detect import detect_format
from evalstop.traces.jsonl import read_jsonl
from evalstop.traces.model import Order, Trace, TraceFormat
from evalstop.traces.parse import Options
from evalstop.traces.source import opened
from evalstop.traces.table import read_csv
from evalstop.traces.tensorboard import read_tensorboard
from evalstop.traces.trainer_state import read_trainer_state
from evalstop.traces.wandb_csv import read_wandb_csv

__all__ = ["READERS", "read_trace"]

READERS: Mapping[TraceFormat, Callable[[Path, str, Options], Trace]] = {
    TraceFormat.TRAINER_STATE: read_trainer_state,
    TraceFormat.WANDB_CSV: read_wandb_csv,
    TraceFormat.CSV: read_csv,
    TraceFormat.JSONL: read_jsonl,
    TraceFormat.CHECKPOINTS_JSON: read_checkpoints_json,
    TraceFormat.TENSORBOARD: read_tensorboard,
}


def _format(value: TraceFormat | str) -> TraceFormat:
    try:
        return TraceFormat(value)
    except ValueError:
        choices = ", ".join(f.value for f in TraceFormat)
        raise ValueError(f"unknown trace format {value!r}; choose one of {choices}") from None


def read_trace(
    path: str | os.PathLike[str],
    metric: str | None = None,
    *,
    format: TraceFormat | str | None = None,
    step_column: str | None = None,
    where: Mapping[str, str] | None = None,
    order: Order = "sort",
) -> Trace:
    """Read one metric of one run from a training log.

    Args:
        path: the file (or, for TensorBoard, a directory of event files).
        metric: the metric to read; None reads the file's only metric.
        format: force a format instead of detecting it (spec ``TRC-3``).
        step_column: the step column or key (CSV, W&B CSV, JSONL); default the first of
            ``step``, ``Step``, ``global_step``, ``_step``.
        where: ``{column: value}`` filters selecting one run of a long table (CSV, JSONL).
        order: ``"sort"`` (default) or ``"log"`` for a restarted run's log (spec ``TRC-6``).

    Returns:
        The metric's series with its source: path, metric name, format, steps, values.

    Raises:
        TraceError: any problem with the file, as one line naming it (spec ``TRC-2``).
        ValueError: an unknown ``format`` or ``order``.
    """
    if order not in ("sort", "log"):
        raise ValueError(f"order must be 'sort' or 'log', got {order!r}")
    label = os.fspath(path)
    file = Path(label)
    forced = None if format is None else _format(format)
    options = Options(
        metric=metric,
        step_column=step_column,
        where=tuple((where or {}).items()),
        order=order,
    )
    with opened(file, label) as source:
        fmt = detect_format(source, label) if forced is None else forced
        return READERS[fmt](source, label, options)
